"""Textual's Linux driver, made to sleep while nothing happens.

Its input thread waits for keys with a 0.1 s timeout, to look ten times a second whether
it should stop: on an idle console that is most of proctui's CPU. This driver lets that
thread sleep until a key comes or it is told to stop (a pipe wakes it), and keeps the
0.1 s timeout for a second after each key, which a lone Escape needs to be told apart
from the start of an escape sequence. Where Textual's driver is not built as expected,
the stock driver is used unchanged.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import threading
import time
from typing import Any

QUIET_AFTER = 1.0  # seconds after the last key before the input thread sleeps

_local = threading.local()


class _WakingEvent(threading.Event):
    """The driver's exit event: setting it also wakes the sleeping input thread."""

    def __init__(self, wake_fd: int) -> None:
        super().__init__()
        self._wake_fd = wake_fd

    def set(self) -> None:
        super().set()
        with contextlib.suppress(OSError):
            os.write(self._wake_fd, b"x")


class _QuietSelector(selectors.SelectSelector):
    def __init__(self) -> None:
        super().__init__()
        self._wake: int | None = getattr(_local, "wake_fd", None)
        if self._wake is not None:
            super().register(self._wake, selectors.EVENT_READ)
        self._last_key = time.monotonic()

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        watching = len(self.get_map()) > (1 if self._wake is not None else 0)
        quiet = watching and self._wake is not None and \
            time.monotonic() - self._last_key > QUIET_AFTER
        events = super().select(None if quiet else timeout)
        out = []
        for key, mask in events:
            if key.fd == self._wake:
                with contextlib.suppress(OSError):
                    os.read(self._wake, 4096)
                continue
            out.append((key, mask))
        if out:
            self._last_key = time.monotonic()
        return out


class _Selectors:
    """Stands in for the selectors module inside Textual's Linux driver."""

    EVENT_READ = selectors.EVENT_READ
    SelectorKey = selectors.SelectorKey
    SelectSelector = _QuietSelector


def quiet_driver() -> type[Any] | None:
    """The quiet driver class, or None to let Textual choose its own."""
    try:
        from textual.drivers import linux_driver
    except ImportError:
        return None
    base = getattr(linux_driver, "LinuxDriver", None)
    if base is None or getattr(linux_driver, "selectors", None) is not selectors or \
            not hasattr(base, "run_input_thread"):
        return None

    class QuietDriver(base):  # type: ignore[misc, valid-type]
        # The app reaches its driver here (to stop the input thread on a lost terminal),
        # not through App._driver, which is private.
        instance: QuietDriver | None = None

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            type(self).instance = self
            self._wake_r, self._wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
            self.exit_event = _WakingEvent(self._wake_w)

        def run_input_thread(self) -> None:
            _local.wake_fd = self._wake_r
            super().run_input_thread()

    # Private, on purpose: Textual has no public way to change how long its input thread
    # waits, and its 0.1 s select timeout is most of an idle console's CPU. The module's
    # selectors name is used by run_input_thread alone, and only our driver's thread
    # registers a wake pipe (thread-local), so a stock selector elsewhere behaves as
    # before. Checked above: if Textual changes shape, the stock driver runs unchanged.
    linux_driver.selectors = _Selectors
    return QuietDriver
