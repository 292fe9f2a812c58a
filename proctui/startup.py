"""What is left of the old entry point (the command is ``proctui.cli:main`` now), kept
only while modules outside the command line still call it: ``resume`` and ``paused``
no longer do anything.

It used to hold the garbage collector back while proctui started, and to have asyncio
load without ``ssl``. Measured here with tests/bench/startup.py's console (ten
processes, 120x30), neither bought more than 5 % of the first frame: the collections it
spared were 4 to 5 % of it (their own time, medians of 7 and 11 runs), ssl's import 1.4
to 2.1 %. The pause ran across four layers (the console, headless, the control socket
and the core's tree walk turned it back on or waited for it) and is gone; the freeze at
exit, one line with no such reach, stayed in ``proctui.cli.main``."""

from __future__ import annotations


def resume() -> None:
    """Nothing: the collector is never paused now."""


def paused() -> bool:
    """False: start-up never pauses the collector now."""
    return False
