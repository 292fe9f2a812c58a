"""Process-level signal handling for the console: SIGHUP (the terminal went away) and
SIGTERM stop everything per policy with nobody asked, and proctui then exits even if the
terminal it would write to is gone for good."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator

from proctui.core.api import Core

POLL = 0.05
GRACE = 3.0  # seconds the console gets to close by itself once everything has ended


@contextlib.contextmanager
def handled(core: Core, on_signal: Callable[[str], None],
            cleanup: Callable[[], None]) -> Iterator[threading.Event]:
    """While inside: SIGHUP and SIGTERM stop everything (an "ask" acts as a kill, since
    nobody can answer) and call ``on_signal`` with the signal's name. Yields an event
    to set once the console has closed by itself."""
    closed = threading.Event()

    def handler(signum: int, _frame: object) -> None:
        core.set_interactive(False)
        core.stop_all()
        on_signal(signal.Signals(signum).name)
        threading.Thread(target=exit_when_stopped, name="proctui-hangup", daemon=True).start()

    def exit_when_stopped() -> None:
        """After a hangup, a console can block for ever writing to the terminal that went
        away. Once every process has ended (bounded by the timeouts), give it a moment to
        close by itself, then end proctui: there is nothing left to supervise."""
        while not core.all_ended():
            time.sleep(POLL)
        if closed.wait(GRACE):
            return
        status = core.exit_status()
        with contextlib.suppress(Exception):
            cleanup()
        os._exit(status)

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGHUP, signal.SIGTERM)}
    try:
        yield closed
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def finish_stop(core: Core) -> None:
    """The console ended without finishing the stop (it crashed, or the terminal went
    away): finish it here, bounded by the same timeouts, with nobody asked."""
    if core.all_ended():
        return
    core.set_interactive(False)
    core.stop_all()
    while not core.all_ended():
        time.sleep(POLL)
