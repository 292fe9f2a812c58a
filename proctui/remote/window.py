"""How many pushes may be on the way to a client that acknowledges them, and how many
bytes of output the next may carry: the link's pace, read from the acknowledgements
(push.py says why a slow link needs it)."""

from __future__ import annotations

import asyncio
import time
from collections import deque

BATCH = 256 << 10  # bytes of output in one push (more follow at the next tick)
IN_FLIGHT = 2  # pushes a client that acknowledges may have unacknowledged
LAG = 0.25  # seconds of the link's bytes one push may carry
LEAST = 4 << 10  # bytes of output a push may always carry
FIRST = 8 << 10  # ... and carries before the link's pace is known
CATCH_UP = 2.0  # seconds of the link's pace a process may be behind before it jumps


class Window:
    """The pushes on the way to one client that acknowledges them, and the budget of the
    next: LAG seconds of the link's pace, read from the acknowledgements. Everything it
    is told comes from the client: an acknowledgement of a push never sent, or sent
    twice, moves nothing but this client's own pace, and that within bounds."""

    def __init__(self, most: int = BATCH) -> None:
        self.most = most
        self.budget = min(FIRST, most)
        self.pace: float | None = None  # bytes a second the link carried, lately
        self.room = asyncio.Event()  # fewer than IN_FLIGHT on the way
        self.room.set()
        self.idle = asyncio.Event()  # nothing on the way
        self.idle.set()
        self._on_the_way: deque[tuple[int, float, int]] = deque()  # (k, sent at, bytes)
        self._last_ack = 0.0
        self._next = 1

    def pushed(self, size: int) -> int:
        """A push of ``size`` bytes has been written: its number, for the mark that ends
        it."""
        k, self._next = self._next, self._next + 1
        self._on_the_way.append((k, time.monotonic(), size))
        self.idle.clear()
        if len(self._on_the_way) >= IN_FLIGHT:
            self.room.clear()
        return k

    def acked(self, k: int) -> None:
        """The client has read everything up to the mark of push ``k``."""
        now = time.monotonic()
        read = 0
        began: float | None = None
        while self._on_the_way and self._on_the_way[0][0] <= k:
            number, sent, size = self._on_the_way.popleft()
            read += size
            if number == k:  # (one never sent: everything counts as read, and no pace)
                # Its bytes began to move when it was sent or, behind another push, when
                # that one arrived: the pace is theirs over the time since.
                began = max(sent, self._last_ack)
        self._last_ack = now
        if began is not None and read >= LEAST and now > began:
            pace = read / (now - began)
            # Up at once, down gently: one push that waited behind a burst of replies
            # (a journal page) must not halve it.
            self.pace = pace if self.pace is None or pace > self.pace else \
                0.75 * self.pace + 0.25 * pace
            self.budget = int(min(self.most, max(LEAST, self.pace * LAG)))
        if len(self._on_the_way) < IN_FLIGHT:
            self.room.set()
        if not self._on_the_way:
            self.idle.set()

    def far(self, seconds: float = CATCH_UP) -> float | None:
        """Bytes of a process's output this client may be behind before it is given the
        newest lines instead: ``seconds`` of the link (None: its pace is not known yet,
        and only the scrollback's end makes it jump; 0: whenever it is behind)."""
        if seconds <= 0:
            return 0.0
        return None if self.pace is None else self.pace * seconds
