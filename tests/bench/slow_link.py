"""An attached console on a slow link during a flood: how late a stop reaches it, and how
much waits on the way.

    python tests/bench/slow_link.py [--rates 20000,100000] [--runs 3] [--flood 5]

The link is the tests' relay (tests/test_slow_link.py): it holds up to 2 MB of what the
supervisor sends, as sshd's channel window does, and passes it on at a fixed rate. For
each rate: the seconds from ``stop`` to the console's view of it, the most bytes held on
the way, and the flood's lines the console was shown and told it missed. A real SSH link
behaves the same way (the closing note of the change that bounded it has those rounds).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from proctui.core.life.stop import Phase
from proctui.remote.client import Connection, RemoteCore
from tests.test_slow_link import SlowLink, phase, served


def one(rate: int, flood: float) -> tuple[float, int, int, int]:
    with tempfile.TemporaryDirectory(prefix="proctui-slow-") as tmp, \
            served(Path(tmp)) as (sup, run_dir):
        link = SlowLink(run_dir, rate)
        core = RemoteCore(Connection.over(Connection(link.client, where="slow link",
                                                     local=False)))
        try:
            deadline = time.monotonic() + flood
            while time.monotonic() < deadline:  # the flood fills whatever it may
                time.sleep(0.05)
            began = time.monotonic()
            sup.stop("idle")
            while phase(core, "idle") is Phase.RUNNING:
                if time.monotonic() - began > 300:
                    break
                time.sleep(0.01)
            took = time.monotonic() - began
            shown = len(core.buffer("flood").read(0).lines)
            return took, link.peak, shown, core.dropped
        finally:
            core.close()
            link.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rates", default="20000,100000", help="bytes a second")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--flood", type=float, default=5.0,
                        help="seconds of flood before the stop")
    args = parser.parse_args()
    for rate in (int(r) for r in args.rates.split(",")):
        results = [one(rate, args.flood) for _ in range(args.runs)]
        took = statistics.median(r[0] for r in results)
        peak = max(r[1] for r in results)
        print(f"rate {rate / 1000:.0f} KB/s: stop shown after {took:.2f} s (runs: "
              f"{', '.join(f'{r[0]:.2f}' for r in results)}); at most {peak / 1024:.0f} KiB "
              f"held on the way; lines shown {statistics.median(r[2] for r in results):.0f},"
              f" told missed {statistics.median(r[3] for r in results):.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
