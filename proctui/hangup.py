"""Process-level signal handling for the console: SIGHUP (the terminal went away), SIGTERM,
and a terminal that is gone without a SIGHUP (only EOF or EIO arrive: a pty closed while
proctui was not in its session). Each stops everything per policy with nobody asked,
and proctui then exits even if the terminal it would write to is gone for good."""

from __future__ import annotations

import contextlib
import os
import select
import signal
import threading
import time
from collections.abc import Callable, Iterator

from proctui.core.api import Core

POLL = 0.05
GRACE = 3.0  # seconds the console gets to close by itself once everything has ended


class Guard:
    def __init__(self, core: Core, on_lost: Callable[[str], None],
                 cleanup: Callable[[], None]) -> None:
        self.core = core
        self.on_lost = on_lost
        self.cleanup = cleanup
        self.closed = threading.Event()  # the console closed by itself
        self.lost: str | None = None
        self._lost = threading.Event()
        # Started now, not from a signal handler (starting a thread takes locks).
        threading.Thread(target=self._exit_when_stopped, name="proctui-hangup",
                         daemon=True).start()

    def trigger(self, why: str) -> None:
        """Nobody is at the terminal any more: an "ask" acts as a kill, everything stops.
        Called from a signal handler too: it takes no lock of its own."""
        if self.lost is not None:
            return
        self.lost = why
        self.core.set_interactive(False)
        self.core.stop_all()
        self.on_lost(why)
        self._lost.set()

    def _exit_when_stopped(self) -> None:
        """After a hangup, a console can block for ever writing to the terminal that went
        away. Once every process has ended (bounded by the timeouts), give it a moment to
        close by itself, then end proctui: there is nothing left to supervise."""
        self._lost.wait()
        while not self.core.all_ended():
            time.sleep(POLL)
        if self.closed.wait(GRACE):
            return
        status = self.core.exit_status()
        with contextlib.suppress(Exception):
            self.cleanup()
        os._exit(status)


@contextlib.contextmanager
def handled(core: Core, on_lost: Callable[[str], None],
            cleanup: Callable[[], None]) -> Iterator[Guard]:
    """While inside, SIGHUP and SIGTERM trigger the guard."""
    guard = Guard(core, on_lost, cleanup)

    def handler(signum: int, _frame: object) -> None:
        guard.trigger(signal.Signals(signum).name)

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGHUP, signal.SIGTERM)}
    try:
        yield guard
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def watch_terminal(driver: object, on_lost: Callable[[str], None]) -> None:
    """Call ``on_lost`` once the terminal the console reads hangs up (POLLHUP, an
    error, a closed descriptor), from a thread that sleeps in poll() until then: it
    reads nothing, so the console's own input is never taken from it."""
    fd = getattr(driver, "fileno", None)
    if not isinstance(fd, int):
        return

    def watch() -> None:
        poller = select.poll()
        try:
            poller.register(fd, 0)  # no input events: only a hangup or an error wake us
            while True:
                events = poller.poll()
                if any(mask & (select.POLLHUP | select.POLLERR | select.POLLNVAL)
                       for _, mask in events):
                    break
        except (OSError, ValueError):
            pass
        with contextlib.suppress(Exception):
            on_lost("the terminal went away")

    threading.Thread(target=watch, name="proctui-terminal", daemon=True).start()


def finish_stop(core: Core) -> None:
    """The console ended without finishing the stop (it crashed, or the terminal went
    away): finish it here, bounded by the same timeouts, with nobody asked."""
    if core.all_ended():
        return
    core.set_interactive(False)
    core.stop_all()
    while not core.all_ended():
        time.sleep(POLL)
