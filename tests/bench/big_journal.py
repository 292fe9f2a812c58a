"""How long `proctui timeline` takes on a big journal, and how much memory (issue 17).

    python tests/bench/big_journal.py [--mb 150] [--source DIR]

Writes a journal of about ``--mb`` MB (eight processes, each started, stopped, signalled
and ended in turn, between them chatter: notify messages with statuses of 100 to 3,900
bytes (``--status``), extensions, stages) and runs ``proctui timeline`` on it in text and
in SVG, each in its own process, reporting wall time and peak RSS (from wait4).
``--source`` runs the proctui found in another tree, to compare with an older version
(e.g. ``git archive a3f425d | tar -x -C /tmp/old``).

Measured on the development machine (2 shared cores, 2026-12-03), 150 MB journals:

    journal                         before (a3f425d)          after (streamed)
    1.5M short lines (--status 10)  16-20 s, 1571 MB peak    9-12 s, 24 MB peak
    42k long lines (default)        2.4-2.8 s, 543 MB peak   1.0-1.2 s, 24 MB peak

(issue 17 saw 23 s and 2.3 GB on its own 153 MB journal.) Memory no longer grows with
the journal: one summary per process, at most 100 processes and 300 marks each.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def write_journal(path: Path, megabytes: int, status: int = 3900) -> int:
    rng = random.Random(17)
    names = [f"svc{i}" for i in range(8)]
    t, size = 1000.0, 0
    with path.open("w") as f:
        def put(**entry: object) -> None:
            nonlocal size
            line = json.dumps({"t": round(t, 4), "wall": 1.7e9 + t, **entry}) + "\n"
            f.write(line)
            size += len(line)

        for name in names:
            put(kind="start", name=name, pid=100, cmd="sleep 1000", ready=True)
        while size < megabytes << 20:
            t += 0.001
            name = rng.choice(names)
            roll = rng.random()
            if roll < 0.9:
                put(kind="notify", name=name, pid=100, uid=1000,
                    status="x" * rng.randint(min(100, status), status))
            elif roll < 0.95:
                put(kind="extend", name=name, who="process", usec=1_000_000)
            else:
                put(kind="stage", name=name, stage="flush")
        for name in names:
            t += 0.5
            put(kind="stop", name=name)
            put(kind="deadline", name=name, phase="stopping", deadline=t + 3)
            put(kind="signal", name=name, signal="SIGTERM")
            put(kind="outcome", name=name, outcome="stopped", text="stopped after 0.5s")
    return size


def measure(argv: list[str], env: dict[str, str]) -> tuple[float, float, int]:
    """Wall seconds, peak RSS in MB and exit status of one command."""
    began = time.monotonic()
    child = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    return time.monotonic() - began, usage.ru_maxrss / 1024, child.returncode


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=int, default=150)
    parser.add_argument("--status", type=int, default=3900,
                        help="longest notify status (bytes); 10 makes 1.5M short lines")
    parser.add_argument("--source", type=Path, default=Path(__file__).parents[2])
    args = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": str(args.source.resolve())}
    os.chdir(tempfile.gettempdir())  # -m puts the cwd first on sys.path
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "run"
        run.mkdir()
        size = write_journal(run / "journal.jsonl", args.mb, args.status)
        print(f"journal: {size / (1 << 20):.0f} MB, {args.source}")
        base = [sys.executable, "-m", "proctui", "timeline", "--run-dir", str(run)]
        for what, extra in (("text", ["--width", "120"]),
                            ("svg", ["-o", str(Path(tmp) / "out.svg")])):
            took, rss, status = measure(base + extra, env)
            print(f"  {what:4}  {took:6.1f} s  peak RSS {rss:7.0f} MB  exit {status}")


if __name__ == "__main__":
    main()
