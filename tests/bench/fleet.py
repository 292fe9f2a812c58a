"""The fleet console's cost by the number of boxes: N supervisors on this machine (boxes
without ssh, each ``proctui up`` with three sleeping processes), ``attach --fleet`` on a
pty at 120x40. For each N: the console's RSS once every box is up, and its CPU while
nothing changes (a share of one core, over --seconds), per box too. Over ssh each box
adds one ssh client here and one stdio helper there (tests/test_ssh.py counts them); this
measures what grows in the console itself.

    python tests/bench/fleet.py [--counts 1,5,10,20] [--seconds 30]

The target (issue 41): RSS and CPU grow linearly; idle under 1 % of a core at 20 boxes."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ptylab import OnPty, cpu_seconds


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


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


def one(proctui: list[str], count: int, seconds: float) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        where = Path(tmp)
        run_dirs = boxes(proctui, where, count)
        try:
            fleet = where / "fleet.toml"
            fleet.write_text("".join(f'[boxes.box{n}]\nrun_dir = "{d}"\n'
                                     for n, d in enumerate(run_dirs)))
            term = OnPty([*proctui, "attach", "--fleet", str(fleet)], 120, 40)
            try:
                term.wait_for(f"{count} up".encode(), timeout=120)
                time.sleep(5)  # settled
                rss = rss_mb(term.proc.pid)
                before = cpu_seconds(term.proc.pid)
                time.sleep(seconds)
                cpu = (cpu_seconds(term.proc.pid) - before) / seconds * 100
            finally:
                term.keys(b"q")
                try:
                    term.proc.wait(30)
                except subprocess.TimeoutExpired:
                    term.stop()
        finally:
            down(proctui, run_dirs)
    return {"boxes": count, "rss_mb": rss, "cpu_pct": cpu}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--counts", default="1,5,10,20")
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--proctui", default=None)
    args = parser.parse_args()
    proctui = [args.proctui] if args.proctui else [sys.executable, "-m", "proctui"]
    print(f"load {os.getloadavg()[0]:.2f}")
    print(f"{'boxes':>6} {'RSS':>9} {'RSS/box':>9} {'CPU':>8} {'CPU/box':>9}")
    first: dict[str, float] | None = None
    for count in (int(c) for c in args.counts.split(",")):
        r = one(proctui, count, args.seconds)
        first = first or r
        extra = (r["rss_mb"] - first["rss_mb"]) / max(1, count - first["boxes"]) \
            if count > first["boxes"] else 0.0
        print(f"{count:>6} {r['rss_mb']:>7.1f}MB {extra:>7.2f}MB {r['cpu_pct']:>7.2f}% "
              f"{r['cpu_pct'] / count:>8.3f}%", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
