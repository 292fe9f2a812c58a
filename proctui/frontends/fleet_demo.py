"""``proctui demo --fleet``: three "boxes" on this machine, each a supervisor of its own
started with ``proctui up`` in a directory of its own, and the fleet console over them:
the fleet view without owning three machines. Leaving it stops the three boxes (they are
the demo's), each with its countdowns, and prints one summary with the box on each line.

The same view of real boxes: ``proctui attach --host a --host b`` or ``--fleet FILE``."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from proctui.demo import _toml_string

_PROGRAM = '[processes.{name}]\ncmd = [{python}, "-m", "proctui.demo", "{name}"]\n'

BOXES = {
    # The demo's services; stop web on it and watch db wait for it.
    "edge-1": ('[defaults]\nstop_timeout = 5\n', ("clean-web", "chatty", "db", "web")),
    # ignores-term: stop it (s), and at its deadline the fleet says it waits for you.
    "edge-2": ('[defaults]\nstop_timeout = 4\non_timeout = "ask"\n',
               ("ignores-term", "slow-8s")),
    # A crash loop: the fleet puts its failure on its row.
    "edge-3": ('[defaults]\nstop_timeout = 3\n', ("crash-loop", "forks-child")),
}


def config(defaults: str, names: tuple[str, ...], python: str) -> str:
    text = defaults + "".join(_PROGRAM.format(name=n, python=_toml_string(python))
                              for n in names)
    if "db" in names:
        text += "[processes.db.ready]\nnotify = true\n"
    if "web" in names:
        text = text.replace('"proctui.demo", "web"]\n',
                            '"proctui.demo", "web"]\ndepends_on = ["db"]\n')
    if "crash-loop" in names:
        text = text.replace('"proctui.demo", "crash-loop"]\n',
                            '"proctui.demo", "crash-loop"]\nrestart = "on-failure"\n')
    return text


def run(refresh_hz: float | None = None) -> int:
    from proctui.frontends import control, hosts
    from proctui.frontends.console.fleet import run_fleet
    from proctui.frontends.fleet import FleetBox

    if not sys.stdin.isatty() or not sys.stdout.isatty():
        sys.stderr.write("proctui: error: demo --fleet needs a terminal\n")
        return 2
    with tempfile.TemporaryDirectory(prefix="proctui-fleet-demo-") as tmp:
        where = Path(tmp)
        started: list[tuple[str, Path]] = []
        try:
            for name, (defaults, programs) in BOXES.items():
                box = where / name
                box.mkdir()
                (box / "proctui.toml").write_text(config(defaults, programs, sys.executable))
                got = subprocess.run([sys.executable, "-m", "proctui", "up", "--run-dir",
                                      str(box / "run")], cwd=box, capture_output=True,
                                     text=True, stdin=subprocess.DEVNULL, timeout=60)
                if got.returncode != 0:
                    sys.stderr.write(f"proctui: error: the demo's box {name} did not start:"
                                     f" {(got.stderr or got.stdout).strip()[:300]}\n")
                    return 1
                started.append((name, box / "run"))
            run_fleet([FleetBox(name, control.dialer(None, run_dir, None))
                       for name, run_dir in started], refresh_hz=refresh_hz,
                      again=lambda name: f"proctui attach --run-dir {where / name / 'run'}",
                      leaving="Leave (stops the demo's boxes)")
        finally:
            if started:
                sys.stdout.write("stopping the demo's boxes:\n")
                sys.stdout.flush()
                hosts.down([n for n, _ in started],
                           [control.dialer(None, d, None) for _, d in started], sys.stdout)
    return 0
