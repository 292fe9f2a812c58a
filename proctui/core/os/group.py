"""Watching a run's leader for its exit: held by a pidfd (a reused pid is never taken
for it), reaped when it is our child, polled when no pidfd can be had. The group and the
processes outside it are the executor's to signal and look at; this only says when the
leader ended, and how."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Callable

from proctui.core.life.outcome import ExitStatus
from proctui.core.os.oslayer import OSLayer

POLL_NO_PIDFD = 0.1  # watching the leader without a pidfd (out of descriptors)


class Leader:
    def __init__(self, os_layer: OSLayer, loop: asyncio.AbstractEventLoop, pid: int,
                 start_ticks: int | None, leftover: bool) -> None:
        self.os = os_layer
        self.loop = loop
        self.pid = pid
        self.start_ticks = start_ticks
        self.leftover = leftover  # an earlier proctui's: not our child, not reaped here
        self.exit: ExitStatus | None = None
        self._pidfd: int | None = None
        self._on_exit: Callable[[ExitStatus], None] | None = None
        self._closed = False

    def watch(self, on_exit: Callable[[ExitStatus], None]) -> None:
        """Call ``on_exit`` with its status once the leader has ended."""
        self._on_exit = on_exit
        try:
            self._pidfd = self.os.pidfd_open(self.pid)
        except OSError:
            self._pidfd = -1  # out of descriptors, or no pidfds here: poll instead
        if self._pidfd is None:
            self._ended(None)  # already gone
        elif self._pidfd < 0:
            self.loop.call_later(POLL_NO_PIDFD, self._poll)
        else:
            self.loop.add_reader(self._pidfd, self._readable)

    def _poll(self) -> None:
        if self._closed:
            return
        if self.leftover:
            st = self.os.read_stat(self.pid)
            if st is not None and st.live and st.start_ticks == self.start_ticks:
                self.loop.call_later(POLL_NO_PIDFD, self._poll)
                return
            self._ended(ExitStatus(known=False))
            return
        status = self.os.reap(self.pid)
        if status is None:
            self.loop.call_later(POLL_NO_PIDFD, self._poll)
            return
        self._ended(status)

    def _readable(self) -> None:
        self._close_pidfd()
        self._ended(None)

    def _ended(self, status: ExitStatus | None) -> None:
        if self._closed or self.exit is not None:
            return
        if status is None:
            status = ExitStatus(known=False) if self.leftover else \
                (self.os.reap(self.pid) or ExitStatus(known=False))
        self.exit = status
        if self._on_exit is not None:
            self._on_exit(status)

    def reap_now(self) -> ExitStatus | None:
        """The leader may have ended without our noticing yet: its status if so."""
        if self.exit is None and not self.leftover:
            self.exit = self.os.reap(self.pid)
        return self.exit

    def _close_pidfd(self) -> None:
        if self._pidfd is not None and self._pidfd >= 0:
            self.loop.remove_reader(self._pidfd)
            with contextlib.suppress(OSError):
                os.close(self._pidfd)
        self._pidfd = None

    def close(self) -> None:
        """Stop watching (after the outcome)."""
        self._closed = True
        self._close_pidfd()
