"""Writing to our own stdout without ever waiting on whoever reads it.

A thread does the (blocking) writes; the headless runner only queues text. When the
reader stalls, the queue stops growing at a byte budget and what does not fit is
counted and reported once the reader catches up. When the reader is gone (EPIPE, or EIO
from a terminal that hung up), the writer says so, so the runner can treat it as a
hangup. At exit the runner waits a little for the queue to drain, never for ever.
"""

from __future__ import annotations

import errno
import os
import threading
from collections import deque
from collections.abc import Callable

BUDGET = 2 << 20  # bytes waiting for a slow reader before lines are dropped
_IOV_MAX = 1024  # pieces one writev takes (Linux's and macOS's limit)
_JOIN_OVER = 16  # pieces: more are joined before they are written


class Writer:
    def __init__(self, fd: int, on_broken: Callable[[str], None] | None = None,
                 budget: int = BUDGET) -> None:
        self.fd = fd
        self.budget = budget
        self.on_broken = on_broken
        self.note_prefix = "proctui | "  # the printer's own, padded and coloured as its lines
        self.broken: str | None = None
        self._queue: deque[bytes] = deque()
        self._size = 0
        self._dropped = 0  # lines
        self._busy = False
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._run, name="proctui-stdout", daemon=True)
        self._thread.start()

    def write(self, text: str, lines: int = 1) -> None:
        self.write_pieces((text.encode("utf-8", "replace"),), lines)

    def write_pieces(self, pieces: tuple[bytes, ...], lines: int = 1) -> None:
        """``lines`` lines, written as these pieces one after the other (never joined
        here: a flood's pieces go to the kernel as they are)."""
        size = sum(map(len, pieces))
        with self._cond:
            if self.broken is not None:
                return
            if self._size + size > self.budget and self._queue:
                self._dropped += lines
                return
            if self._dropped:
                note = (f"{self.note_prefix}{self._dropped} lines not printed: the reader "
                        "of this output fell behind\n").encode()
                self._queue.append(note)
                self._size += len(note)
                self._dropped = 0
            self._queue.extend(pieces)
            self._size += size
            self._cond.notify()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._queue:
                    self._busy = False
                    self._cond.notify_all()
                    self._cond.wait()
                self._busy = True
                pieces = list(self._queue)
                self._queue.clear()
                self._size = 0
            try:
                _write_all(self.fd, pieces)
            except OSError as e:
                self._break(e)
                return

    def _break(self, e: OSError) -> None:
        reason = "broken pipe" if e.errno == errno.EPIPE else \
            "terminal gone" if e.errno == errno.EIO else str(e)
        with self._cond:
            self.broken = reason
            self._queue.clear()
            self._busy = False
            self._cond.notify_all()
        if self.on_broken is not None:
            self.on_broken(reason)

    def drain(self, timeout: float) -> bool:
        """Wait until everything queued is written (or the reader is gone); False when
        the reader did not take it within ``timeout`` seconds."""
        with self._cond:
            return self._cond.wait_for(lambda: self.broken is not None or
                                       (not self._queue and not self._busy), timeout)


def _write_all(fd: int, pieces: list[bytes]) -> None:
    """Write every piece, in order, with as few calls as the kernel allows, however
    little each call takes: a few big pieces (a flood's) as they are, by writev; many
    (lines piled up behind a slow reader) joined first, as walking them one by one in
    Python cost 15 to 20 times the join."""
    if len(pieces) > _JOIN_OVER:
        pieces = [b"".join(pieces)]
    views = [memoryview(p) for p in pieces if p]
    i = 0
    while i < len(views):
        written = os.writev(fd, views[i:i + _IOV_MAX])
        while written and i < len(views):
            if written >= len(views[i]):
                written -= len(views[i])
                i += 1
            else:
                views[i] = views[i][written:]
                written = 0
