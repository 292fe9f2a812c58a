"""Deadlines at scale: N process groups that ignore SIGTERM (a shell and its child each),
stopped together with stop_timeout 3 and kill_timeout 5. How late does each SIGKILL land
after its deadline? Read from the run's own journal: each process's last deadline before
the kill (``deadline`` entries) against the instant the kill was journaled (``signal``
SIGKILL entries, written once the signal has gone out).

    python tests/bench/deadlines.py [--counts 500,1000,2000] [--proctui PATH]

Prints, for each count: the median, the 99th percentile and the largest lateness, and
how long ``down`` took. The target: every SIGKILL within 100 ms of its deadline."""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

STOP, KILL = 3, 5
SCRIPT = "trap '' TERM; sleep 1001 & wait"


def config(path: Path, count: int) -> None:
    lines = [f"[defaults]\nstop_timeout = {STOP}\nkill_timeout = {KILL}\n"]
    for n in range(count):
        lines.append(f'[processes.p{n}]\ncmd = ["/bin/sh", "-c", "{SCRIPT}"]\n')
    path.write_text("".join(lines))


def run(proctui: list[str], count: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        where = Path(tmp)
        config(where / "proctui.toml", count)
        run_dir = where / "run"
        env = dict(os.environ)
        subprocess.run([*proctui, "up", "--run-dir", str(run_dir)], cwd=where, env=env,
                       check=True, capture_output=True, timeout=600)
        try:
            deadline = time.monotonic() + 300
            while time.monotonic() < deadline:
                got = subprocess.run([*proctui, "status", "--json", "--run-dir", str(run_dir)],
                                     cwd=where, capture_output=True, text=True, timeout=60)
                states = [p["state"] for p in json.loads(got.stdout)["processes"]]
                if states.count("running") == count:
                    break
                time.sleep(0.5)
            time.sleep(1.0)  # every shell has set its trap
            began = time.monotonic()
            subprocess.run([*proctui, "down", "--run-dir", str(run_dir)], cwd=where,
                           capture_output=True, timeout=900)
            took = time.monotonic() - began
        finally:
            _clean(run_dir)
        late = lateness(run_dir / "journal.jsonl")
    late.sort()
    return {"count": count, "kills": len(late), "median": statistics.median(late),
            "p99": late[int(0.99 * (len(late) - 1))], "max": late[-1], "down_s": took}


def lateness(journal: Path) -> list[float]:
    """Seconds from each process's deadline to its SIGKILL, from the journal."""
    deadlines: dict[str, float] = {}
    late = []
    for line in journal.read_text().splitlines():
        e = json.loads(line)
        name = e.get("name")
        if e.get("kind") == "deadline" and e.get("deadline") is not None and \
                e.get("phase") == "stopping":
            deadlines[name] = e["deadline"]
        elif e.get("kind") == "signal" and e.get("signal") == "SIGKILL" and name in deadlines:
            late.append(e["t"] - deadlines.pop(name))
    return late


def _clean(run_dir: Path) -> None:
    """Whatever is left of the run (nothing, normally): its processes by their PID files."""
    for pid_file in run_dir.glob("*.pid"):
        try:
            pid = json.loads(pid_file.read_text())["pid"]
            os.killpg(pid, signal.SIGKILL)
        except (OSError, ValueError, KeyError):
            pass


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--counts", default="500,1000,2000")
    parser.add_argument("--proctui", default=None)
    args = parser.parse_args()
    proctui = [args.proctui] if args.proctui else [sys.executable, "-m", "proctui"]
    print(f"{'groups':>7} {'kills':>6} {'median':>8} {'p99':>8} {'max':>8} {'down':>7}")
    for count in (int(c) for c in args.counts.split(",")):
        r = run(proctui, count)
        print(f"{r['count']:>7} {r['kills']:>6} {r['median'] * 1000:>6.1f}ms "
              f"{r['p99'] * 1000:>6.1f}ms {r['max'] * 1000:>6.1f}ms {r['down_s']:>6.1f}s",
              flush=True)


if __name__ == "__main__":
    main()
