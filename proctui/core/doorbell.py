"""A doorbell between a core and its frontend: rung on every change, heard once.

An idle frontend needs no timer to notice news, and a busy core must not flood it:
the bell rings the listeners once, then stays quiet until the frontend has looked
(rearm) and can be told again.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable


class Doorbell:
    def __init__(self) -> None:
        self._listeners: list[Callable[[], None]] = []
        self._rung = False

    def listen(self, callback: Callable[[], None]) -> None:
        """``callback`` runs on the ringing thread, so it must only schedule work."""
        self._listeners = [*self._listeners, callback]  # (a ring iterates its own list)

    def unlisten(self, callback: Callable[[], None]) -> None:
        """No more rings for ``callback`` (a frontend's screen that is gone)."""
        self._listeners = [c for c in self._listeners if c != callback]

    def rearm(self) -> None:
        self._rung = False

    def ring(self) -> None:
        if not self._rung and self._listeners:
            self._rung = True
            for callback in self._listeners:
                with contextlib.suppress(Exception):  # a frontend's bug must not stop the core
                    callback()
