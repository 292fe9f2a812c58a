"""Process-level signal handling for the console: SIGHUP (the terminal went away), SIGTERM,
and a terminal that is gone without a SIGHUP (only EOF or EIO arrive: a pty closed while
proctui was not in its session).

SIGTERM stops everything per policy with nobody asked, and so does a lost terminal by
default (``on_hangup = "stop"``); proctui then exits even if the terminal it would write
to is gone for good. With ``on_hangup = "detach"`` a lost terminal stops nothing: the
console closes, proctui goes on as a detached supervisor (its notices to
RUN_DIR/supervisor.log, an "ask" waiting for the next console or a control command)
until someone stops everything."""

from __future__ import annotations

import contextlib
import os
import select
import signal
import threading
import time
from collections.abc import Callable, Iterator

from proctui.commands.api import Core
from proctui.commands.interactive import SetInteractive
from proctui.commands.notice import Notice
from proctui.commands.stop_all import StopAll
from proctui.core.life.stages import Why

POLL = 0.05
GRACE = 3.0  # seconds the console gets to close by itself once everything has ended


class Guard:
    def __init__(self, core: Core, on_lost: Callable[[str, bool], None],
                 cleanup: Callable[[], None], *, detach: bool = False,
                 log: Callable[[str], None] | None = None,
                 go_on: Callable[[str], int] | None = None) -> None:
        self.core = core
        self.on_lost = on_lost  # (why, detached)
        self.cleanup = cleanup
        self.detach = detach
        self.log = log or (lambda _text: None)
        # The detached supervisor's loop and exit work (proctui.daemon.go_on_detached):
        # given why the terminal went, it supervises until everything is stopped and
        # returns the exit status.
        self.go_on = go_on
        self.closed = threading.Event()  # the console closed by itself
        self.lost: str | None = None
        self.detached = False
        self.finished = threading.Event()  # supervising detached failed: stop as usual
        self._stopping = False
        self._lost = threading.Event()
        # Started now, not from a signal handler (starting a thread takes locks).
        threading.Thread(target=self._exit_when_stopped, name="proctui-hangup",
                         daemon=True).start()

    def trigger(self, why: str) -> None:
        """Stop everything with nobody asked: an "ask" acts as a kill. Called from a
        signal handler too: sending takes no lock."""
        if self._stopping:
            return
        self._stopping = True
        self.core.send(SetInteractive(False))
        self.core.send(StopAll(why=(Why.SIGTERM if why == "SIGTERM" else Why.HANGUP).value))
        if self.lost is None:
            self.lost = why
            self.on_lost(why, False)
        else:
            self.core.send(Notice(f"received {why}: stopping everything"))
        self._lost.set()

    def hangup(self, why: str) -> None:
        """The terminal went away: stop everything, or (on_hangup = "detach") go on."""
        if not self.detach:
            self.trigger(why)
            return
        if self.lost is not None:
            return
        self.lost = why
        self.detached = True
        self.on_lost(why, True)
        self._lost.set()

    def _exit_when_stopped(self) -> None:
        """After a hangup, a console can block for ever writing to the terminal that went
        away. Once every process has ended (bounded by the timeouts), give it a moment to
        close by itself, then end proctui: there is nothing left to supervise."""
        self._lost.wait()
        if self.detached:
            try:
                self._supervise_detached()  # ends proctui
            finally:
                self.finished.set()
        while not self.core.snapshot().all_ended:
            time.sleep(POLL)
        if self.closed.wait(GRACE):
            return
        status = self.core.snapshot().exit_status
        with contextlib.suppress(Exception):
            self.cleanup()
        os._exit(status)

    def _supervise_detached(self) -> None:
        """Go on without a terminal, as the detached supervisor does, until someone stops
        everything (proctui down, a console's "stop everything", SIGTERM); its exit work
        done (summary, drainers for what is left running), end proctui."""
        what = self.lost or ""
        if self.go_on is not None:
            status = self.go_on(what)
            os._exit(status)
        _quiet_terminal()
        if not what.startswith("the terminal"):  # (a signal's name: SIGHUP)
            what = f"the terminal went away ({what})"
        self.log(f"{what}: detached (on_hangup = \"detach\"); every process goes on under "
                 f"pid {os.getpid()}")
        core = self.core
        while True:
            snap = core.snapshot()
            if snap.all_ended and (snap.shutting_down or snap.crash):
                break
            time.sleep(POLL * 4)
        from proctui.frontends.policy import summary

        lines, status = summary(core.snapshot())
        for line in lines:
            self.log(line)
        with contextlib.suppress(Exception):
            self.cleanup()
        os._exit(status)


def _quiet_terminal() -> None:
    """Point stdin, stdout and stderr at /dev/null: whatever still writes to the terminal
    that went away (the console closing) neither blocks nor fails."""
    with contextlib.suppress(OSError):
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        os.close(null)


@contextlib.contextmanager
def handled(core: Core, on_lost: Callable[[str, bool], None], cleanup: Callable[[], None],
            *, detach: bool = False, log: Callable[[str], None] | None = None,
            go_on: Callable[[str], int] | None = None) -> Iterator[Guard]:
    """While inside, SIGTERM triggers the guard, and SIGHUP hangs it up."""
    guard = Guard(core, on_lost, cleanup, detach=detach, log=log, go_on=go_on)

    def handler(signum: int, _frame: object) -> None:
        if signum == signal.SIGHUP:
            guard.hangup("SIGHUP")
        else:
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
    if core.snapshot().all_ended:
        return
    core.send(SetInteractive(False))
    core.send(StopAll())
    from proctui.frontends.policy import Ladder, Rung, climb  # not before the first frame

    # Before Textual owns the terminal a ctrl+c is a SIGINT: the first one brought us
    # here, and a second must not leave with a process still stopping, unsupervised.
    ladder = Ladder()
    ladder.press()
    while True:
        try:
            if core.snapshot().all_ended:
                return
            time.sleep(POLL)
        except KeyboardInterrupt:
            rung = ladder.press()
            with contextlib.suppress(OSError):
                os.write(2, f"proctui | {ladder.words(rung, 'ctrl+c')}\r\n".encode())
            climb(core, rung)
            if rung is Rung.ABANDON:
                return
