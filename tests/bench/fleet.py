"""The fleet console's cost by the number of boxes: N supervisors on this machine (each
``proctui up`` with three sleeping processes), ``attach --fleet`` on a pty at 120x40.
For each N: the console's RSS once every box is up, and its CPU while nothing changes (a
share of one core), in two windows: its first minute (from 5 s after every box is up
until a minute after it started: every box's link age and its supervisor's move every
ten seconds there), and the --seconds after it (ages move once a minute).

With --ssh, each box is reached over a real sshd on 127.0.0.1 (tests/sshd.py starts it,
one server for every box), as ``ssh = "box"`` in the fleet file: then also the ssh
clients the console owns (one a box) and the stdio helpers on the box's side (one a
box), their RSS together (and PSS: shared pages divided among those that share them) and
their CPU after the first minute.

    python tests/bench/fleet.py [--counts 1,5,10,20] [--seconds 60] [--ssh]

The target (issue 41): RSS and CPU grow linearly; idle under 1 % of a core at 20 boxes."""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from ptylab import OnPty, cpu_seconds

FIRST_MINUTE = 60.0  # seconds from the console's start
SETTLE = 5.0  # seconds after every box is up before the first window


def rss_mb(pid: int) -> float:
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def pss_mb(pid: int) -> float:
    """What the process's memory costs the machine, its shared pages divided among those
    that share them (ssh clients share their libraries: their RSS counts them each)."""
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) / 1024
    return 0.0


def _cmdline(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace") \
            .split("\0")
    except OSError:
        return []


def _children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError, ValueError, IndexError):
                raw = Path(f"/proc/{entry}/stat").read_text()
                if int(raw[raw.rindex(")") + 2:].split()[1]) == pid:
                    found.append(int(entry))
    return found


def ssh_clients(console: int) -> list[int]:
    """The ssh processes the console owns (one a box)."""
    return [p for p in _children(console)
            if Path(_cmdline(p)[0] or "x").name == "ssh"]


def helpers(where: Path) -> list[int]:
    """The stdio helpers on the boxes' side (``proctui stdio``, started by sshd) of the
    boxes under ``where``."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            args = _cmdline(int(entry))
            if "stdio" in args and any(a.startswith(str(where)) for a in args):
                found.append(int(entry))
    return found


def cpu_of(pids: list[int]) -> float:
    total = 0.0
    for pid in pids:
        with contextlib.suppress(OSError, ValueError):
            total += cpu_seconds(pid)
    return total


def boxes(proctui: list[str], where: Path, count: int) -> list[Path]:
    run_dirs = []
    for n in range(count):
        box = where / f"box{n}"
        box.mkdir()
        (box / "proctui.toml").write_text("".join(
            f'[processes.s{i}]\ncmd = "sleep 100000"\n' for i in range(3)))
        subprocess.run([*proctui, "up", "--run-dir", str(box / "run")], cwd=box, check=True,
                       capture_output=True, timeout=120)
        run_dirs.append(box / "run")
    return run_dirs


def down(proctui: list[str], run_dirs: list[Path]) -> None:
    for run_dir in run_dirs:
        subprocess.run([*proctui, "down", "--run-dir", str(run_dir)], capture_output=True,
                       timeout=120)


@contextlib.contextmanager
def reached(proctui: list[str], ssh: bool, where: Path) -> Iterator[tuple[str, dict[str, str]]]:
    """How the fleet file reaches a box (``ssh = "box"``, or nothing: a run directory
    here), and the console's environment."""
    if not ssh:
        yield "", {}
        return
    from tests.sshd import SSH, Unavailable, serving

    try:
        with serving(where) as server:
            yield 'ssh = "box"\n', {
                "PROCTUI_SSH": f"{SSH} -F {shlex.quote(str(server.config))}",
                "PROCTUI_REMOTE": shlex.join(proctui)}
    except Unavailable as e:
        sys.exit(f"--ssh: {e}")


def one(proctui: list[str], count: int, seconds: float, ssh: bool) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        where = Path(tmp)
        (where / "sshd").mkdir()
        run_dirs = boxes(proctui, where, count)
        r: dict[str, float] = {"boxes": float(count)}
        try:
            with reached(proctui, ssh, where / "sshd") as (how, env):
                fleet = where / "fleet.toml"
                fleet.write_text("".join(f'[boxes.box{n}]\n{how}run_dir = "{d}"\n'
                                         for n, d in enumerate(run_dirs)))
                term = OnPty([*proctui, "attach", "--fleet", str(fleet)], 120, 40, env=env)
                try:
                    term.wait_for(f"{count} up".encode(), timeout=180)
                    time.sleep(SETTLE)
                    pid = term.proc.pid
                    before, at = cpu_seconds(pid), time.monotonic()
                    time.sleep(max(1.0, term.started + FIRST_MINUTE - at))
                    r["first_pct"] = (cpu_seconds(pid) - before) / \
                        (time.monotonic() - at) * 100
                    r["rss_mb"] = rss_mb(pid)
                    clients, helping = ssh_clients(pid), helpers(where)
                    r["ssh_n"], r["helpers_n"] = len(clients), len(helping)
                    r["ssh_rss_mb"] = sum(rss_mb(p) for p in clients)
                    r["helpers_rss_mb"] = sum(rss_mb(p) for p in helping)
                    r["ssh_pss_mb"] = sum(pss_mb(p) for p in clients)
                    r["helpers_pss_mb"] = sum(pss_mb(p) for p in helping)
                    before, at = cpu_seconds(pid), time.monotonic()
                    side = cpu_of(clients), cpu_of(helping)
                    time.sleep(seconds)
                    took = time.monotonic() - at
                    r["after_pct"] = (cpu_seconds(pid) - before) / took * 100
                    r["ssh_pct"] = (cpu_of(clients) - side[0]) / took * 100
                    r["helpers_pct"] = (cpu_of(helping) - side[1]) / took * 100
                finally:
                    term.keys(b"q")
                    try:
                        term.proc.wait(30)
                    except subprocess.TimeoutExpired:
                        term.stop()
        finally:
            down(proctui, run_dirs)
    return r


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--counts", default="1,5,10,20")
    parser.add_argument("--seconds", type=float, default=60.0,
                        help="the window after the first minute")
    parser.add_argument("--proctui", default=None)
    parser.add_argument("--ssh", action="store_true",
                        help="every box over a real sshd on 127.0.0.1")
    args = parser.parse_args()
    proctui = [args.proctui] if args.proctui else [sys.executable, "-m", "proctui"]
    print(f"load {os.getloadavg()[0]:.2f}")
    head = (f"{'boxes':>6} {'RSS':>9} {'RSS/box':>9} {'CPU 1st min':>12} {'CPU after':>10} "
            f"{'after/box':>10}")
    if args.ssh:
        head += f" {'ssh: n RSS (PSS) CPU':>30} {'helpers: n RSS (PSS) CPU':>32}"
    print(head)
    first: dict[str, float] | None = None
    for count in (int(c) for c in args.counts.split(",")):
        r = one(proctui, count, args.seconds, args.ssh)
        first = first or r
        extra = (r["rss_mb"] - first["rss_mb"]) / max(1, count - first["boxes"]) \
            if count > first["boxes"] else 0.0
        line = (f"{count:>6} {r['rss_mb']:>7.1f}MB {extra:>7.2f}MB {r['first_pct']:>11.2f}% "
                f"{r['after_pct']:>9.2f}% {r['after_pct'] / count:>9.3f}%")
        if args.ssh:
            line += (f" {r['ssh_n']:>3.0f} {r['ssh_rss_mb']:>7.1f}MB ({r['ssh_pss_mb']:.1f}MB)"
                     f" {r['ssh_pct']:>6.2f}% {r['helpers_n']:>5.0f} "
                     f"{r['helpers_rss_mb']:>7.1f}MB ({r['helpers_pss_mb']:.1f}MB) "
                     f"{r['helpers_pct']:>6.2f}%")
        print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
