"""How quiet proctui is: CPU while ten processes sleep (console, headless and the detached
supervisor of ``up``), and the bytes a console writes to its terminal while a process
floods, at the default refresh and with --refresh 2 for a slow link.

    python tests/bench/quiet.py [--seconds S] [--only console,headless,detached]
                                [--skip-idle] [--skip-traffic] [--mprocs PATH]

With ``--mprocs`` the same ten sleepers run under mprocs on a pty too, measured the same
way in the same run (its first minute and after). Without ``--proctui`` it runs
``python -m proctui``, which takes the current directory's proctui before PYTHONPATH's: to
measure another tree (a before/after), run it from a directory with none.

The console's clock shows every second only in a process's first ten seconds, then tens
of seconds until a minute, then minutes; so its idle cost is measured twice: in the first
minute (from 3 s to 33 s), and after it. CPU is read from schedstat (nanoseconds).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ptylab import OnPty, cpu_seconds

SLEEPERS = [f"s{i}=sleep 1000" for i in range(10)]
FLOOD = (f"flood={sys.executable} -c "
         "'import sys\nwhile True: sys.stdout.write(\"x\" * 100 + \"\\n\")'")


def busy(pid: int, seconds: float) -> float:
    before = cpu_seconds(pid)
    time.sleep(seconds)
    return (cpu_seconds(pid) - before) / seconds * 100


def console(command: list[str], seconds: float, ready: bytes) -> tuple[float, float]:
    """CPU in the first minute (from 3 s) and after it, of a console on a pty."""
    term = OnPty(command, 120, 30)
    term.wait_for(ready)
    time.sleep(3)
    first = busy(term.proc.pid, seconds)
    time.sleep(max(0.0, 62 - 3 - seconds))
    after = busy(term.proc.pid, seconds)
    term.stop()
    return first, after


KINDS = ("console", "headless", "detached")


def idle(proctui: list[str], work: Path, seconds: float, only: Iterable[str] = KINDS,
         mprocs: str | None = None) -> dict[str, float]:
    got: dict[str, float] = {}
    if "console" in only:
        got["console_first_minute"], got["console_after"] = console(
            [*proctui, "run", "--run-dir", str(work / "ic"), *SLEEPERS], seconds, b"running")
    if mprocs:
        got["mprocs_first_minute"], got["mprocs_after"] = console(
            [mprocs, *(s.split("=", 1)[1] for s in SLEEPERS)], seconds, b"sleep")
    if "headless" in only:
        headless = subprocess.Popen([*proctui, "run", "--headless", "--run-dir",
                                     str(work / "ih"), *SLEEPERS],
                                    stdout=subprocess.DEVNULL, start_new_session=True)
        time.sleep(3)
        got["headless"] = busy(headless.pid, seconds)
        headless.terminate()
        headless.wait(60)
    if "detached" in only:
        where = ["--run-dir", str(work / "id")]
        subprocess.run([*proctui, "up", *where, *SLEEPERS], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        pid = int((work / "id" / "lock").read_text().strip())
        time.sleep(3)
        got["detached"] = busy(pid, seconds)
        subprocess.run([*proctui, "down", *where], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
    return got


def traffic(proctui: list[str], work: Path, refresh: float | None,
            seconds: float = 5.0) -> float:
    extra = ["--refresh", str(refresh)] if refresh else []
    term = OnPty([*proctui, "run", "--run-dir", str(work / f"t{refresh}"), *extra, FLOOD],
                 120, 30)
    term.wait_for(b"xxxxxxxxxx")
    time.sleep(1)
    before = term.total
    time.sleep(seconds)
    rate = (term.total - before) / seconds
    term.stop()
    return rate


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--proctui", default=None)
    parser.add_argument("--only", default=",".join(KINDS))
    parser.add_argument("--mprocs", default=None, help="mprocs to measure beside proctui")
    parser.add_argument("--skip-idle", action="store_true")
    parser.add_argument("--skip-traffic", action="store_true")
    args = parser.parse_args()
    proctui = [args.proctui] if args.proctui else [sys.executable, "-m", "proctui"]
    with tempfile.TemporaryDirectory(prefix="proctui-quiet-") as tmp:
        work = Path(tmp)
        if not args.skip_idle:
            only = set(args.only.split(","))
            for key, value in idle(proctui, work, args.seconds, only, args.mprocs).items():
                print(f"idle_{key} {value:.2f} % of one core")
        if not args.skip_traffic:
            for refresh in (None, 2.0):
                rate = traffic(proctui, work, refresh)
                print(f"traffic_refresh_{refresh or 'default'} {rate / 1024:.1f} KiB/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
