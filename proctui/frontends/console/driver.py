"""Textual's Linux driver, with the one thing the console needs from it: a way to stop
its input thread when the terminal is lost.

A terminal can go away with no SIGHUP (a pty closed while proctui was not in its
session): only EOF or EIO arrive, and the input thread would spin on them until the app
exits, a whole core for as long as the stop sequence runs. The app has no public handle
on its driver (``App._driver`` is private), so this subclass records its instance, and
the app sets the driver's ``exit_event``, which ends that thread's loop.

Idle, the stock input thread woke ten times a second (``select(0.1)``), about 0.1 % of a
core on its own: the parser's ``tick()`` must run while a lone escape waits to be told
from the start of a sequence. This driver's ``run_input_thread`` (a public method,
overridden in this class only) waits with that timeout only for a while after input
came (QUICK_FOR), and otherwise until input comes or ``exit_event`` is set (the event
writes to a pipe the thread waits on too). It reuses Textual's parser; where that cannot
be imported as this was written against (another Textual), the stock thread runs.
An earlier version replaced the ``selectors`` module inside Textual's driver for the
same end; that changed Textual's internals for the whole process, so it went.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import threading
import time
from codecs import getincrementaldecoder
from typing import Any

QUICK = 0.1  # seconds: the stock thread's timeout, while the parser may hold a part
QUICK_FOR = 1.0  # seconds after input during which it is kept (ESCDELAY is 0.1 s)


class WakingEvent(threading.Event):
    """An Event whose set() also wakes a thread that waits in select() on ``fd``."""

    def __init__(self, fd: int) -> None:
        super().__init__()
        self.fd = fd

    def set(self) -> None:
        super().set()
        with contextlib.suppress(OSError):  # (full: it is awake anyway)
            os.write(self.fd, b"x")


def console_driver() -> type[Any] | None:
    """The driver class to give the app, or None to let Textual choose its own."""
    try:
        from textual.drivers.linux_driver import LinuxDriver
    except ImportError:  # not on Linux: Textual picks its driver, and keeps its thread
        return None
    try:
        from textual._parser import ParseError
        from textual._xterm_parser import XTermParser
        from textual.constants import ESCAPE_DELAY
    except ImportError:  # another Textual: its own thread, awake ten times a second
        return _recording(LinuxDriver)

    class ConsoleDriver(_recording(LinuxDriver)):  # type: ignore[misc]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._wake_read, wake_write = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
            self.exit_event = WakingEvent(wake_write)

        def run_input_thread(self) -> None:
            """Textual's loop, which waits without a timeout while no input is recent."""
            try:
                parser = XTermParser(self._debug)
            except Exception:  # (its signature moved: the stock thread)
                super().run_input_thread()
                return
            fileno, wake = self.fileno, self._wake_read
            with contextlib.suppress(OSError):
                while os.read(wake, 512):  # (a set before this start)
                    pass
            selector = selectors.SelectSelector()
            selector.register(fileno, selectors.EVENT_READ)
            selector.register(wake, selectors.EVENT_READ)
            decode = getincrementaldecoder("utf-8")().decode
            quick_for = max(QUICK_FOR, 4 * ESCAPE_DELAY)
            last_input = time.monotonic()

            def process(ready: list[tuple[selectors.SelectorKey, int]],
                        final: bool = False) -> bool:
                got = False
                for key, _mask in ready:
                    if key.fd != fileno:
                        continue
                    data = decode(os.read(fileno, 1024 * 4), final=final)
                    if not data:
                        break  # (stdin piped)
                    got = True
                    for event in parser.feed(data):
                        self.process_message(event)
                for event in parser.tick():
                    self.process_message(event)
                return got

            try:
                while not self.exit_event.is_set():
                    quick = time.monotonic() - last_input < quick_for
                    if process(selector.select(QUICK if quick else None)):
                        last_input = time.monotonic()
                selector.unregister(fileno)  # (as the stock thread ends: a last tick)
                selector.unregister(wake)
                process(selector.select(QUICK), final=True)
            finally:
                selector.close()
                with contextlib.suppress(EOFError, ParseError):
                    for _event in parser.feed(""):
                        pass

        def close(self) -> None:
            super().close()
            for fd in (self._wake_read, self.exit_event.fd):
                with contextlib.suppress(OSError):
                    os.close(fd)

    return ConsoleDriver


def _recording(base: type[Any]) -> type[Any]:
    """``base``, recording its instance (the app has no public handle on its driver)."""

    class Recorded(base):  # type: ignore[misc]
        instance: Any = None

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            type(self).instance = self

    return Recorded


def stop_input(driver_class: type[Any] | None) -> None:
    """Stop the input thread of the driver ``console_driver()`` made, if it runs."""
    driver = getattr(driver_class, "instance", None)
    exit_event = getattr(driver, "exit_event", None)
    if exit_event is not None:
        exit_event.set()
