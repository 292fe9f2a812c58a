"""Writing to our own stdout without ever waiting for long on whoever reads it.

A thread does the (blocking) writes; the headless runner queues text. When the queue is
at its byte budget the runner waits for the thread to take it, as long as the reader
keeps taking bytes: a file or a steady pipe gets every line, however fast the output
comes (lines were dropped when the thread merely had not had its turn yet, one file in
four lost lines of a 500,000-line run). Only a reader that takes nothing for ``STALL``
seconds counts as stalled: then what does not fit is counted, and reported once the
reader catches up. When the reader is gone (EPIPE, or EIO from a terminal that hung up),
the writer says so, so the runner can treat it as a hangup. A write that fails for any
other reason (a full disk under supervisor.log or under ``run --headless > file``) is no
reader gone: what it held is counted as lost, the next lines are tried again, and once a
write goes through the count is written first. Stopping every process because proctui's
own log could not be written once did exactly that on a full disk. At exit the runner
waits a little for the queue to drain, never for ever.
"""

from __future__ import annotations

import errno
import os
import select
import stat
import threading
import time
from collections import deque
from collections.abc import Callable

BUDGET = 2 << 20  # bytes waiting for the reader before the runner waits for room
STALL = 2.0  # seconds a reader may take nothing before lines are dropped instead
DRAIN_MOST = 60.0  # seconds at exit a slow but steady reader may take the rest, at most
_SLICE = 64 << 10  # bytes a write is given at once: each counts as the reader's progress
_IOV_MAX = 1024  # pieces one writev takes (Linux's and macOS's limit)
_JOIN_OVER = 16  # pieces: more are joined before they are written
_RETRY_PAUSE = 0.2  # seconds between tries of an output whose writes fail (a full disk)
_WRITABLE_WAIT = 1.0  # seconds one wait for a non-blocking output to take more


class Writer:
    def __init__(self, fd: int, on_broken: Callable[[str], None] | None = None,
                 budget: int = BUDGET, stall: float = STALL,
                 on_trouble: Callable[[str | None], None] | None = None) -> None:
        self.fd = fd
        self.budget = budget
        self.stall = stall
        self.on_broken = on_broken
        # Called on the writer's thread when writes begin to fail (with why) and when
        # one goes through again (None): it must only note it, never block.
        self.on_trouble = on_trouble
        self.note_prefix = "proctui | "  # the printer's own, padded and coloured as its lines
        self.broken: str | None = None  # the reader is gone: nothing more is written
        self.failed = False  # some output was lost to a failed write (not a reader gone)
        self.failing: str | None = None  # why the latest write failed, until one succeeds
        self.lost = 0  # lines lost to failed writes, in all
        self._lost_now = 0  # of them, since the last write that went through
        self._cut_line = False  # a failed write stopped in the middle of a line
        # Set (from a signal handler too: no lock) when proctui exits at once: no more
        # waiting for the reader, what does not fit is counted.
        self.hurry = False
        self._queue: deque[bytes] = deque()
        self._size = 0
        self._dropped = 0  # lines
        self._busy = False
        self._taken = 0  # bytes the kernel took so far (the reader's progress)
        self._in_flight = 0  # bytes of the write under way not taken yet
        self._batch_taken = 0  # bytes of the write under way taken so far
        self._stalled_at: int | None = None  # _taken when the reader was found stalled
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
            if self._size + size > self.budget and self._queue and \
                    not self._room_for(size):
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

    def _room_for(self, size: int) -> bool:
        """Wait (the lock held by the caller, released while waiting) until ``size``
        bytes fit, or the queue is empty; False when the reader took nothing for
        ``stall`` seconds, and at once while it still takes nothing after that."""
        if self._stalled_at == self._taken or self.hurry:
            return False
        seen, since = self._taken, time.monotonic()
        while self._size + size > self.budget and self._queue and self.broken is None:
            if self.hurry:
                return False
            now = time.monotonic()
            if self._taken != seen:
                seen, since = self._taken, now
            elif now - since >= self.stall:
                self._stalled_at = seen
                return False
            # In slices: the thread counts each write's bytes without waking us.
            self._cond.wait(min(0.05, since + self.stall - now))
        return self.broken is None

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
                self._in_flight, self._size = self._size, 0
                self._cond.notify_all()  # room again for a runner waiting in write
            note = self._loss_note()
            if note:
                pieces.insert(0, note)
            self._batch_taken = 0
            try:
                _write_all(self.fd, pieces, self._took)
            except OSError as e:
                if self._reader_gone(e):
                    self._break(e)
                    return
                self._lose(e, pieces, self._batch_taken, len(note))
                continue
            if self.failing is not None:
                self._recovered()

    def _reader_gone(self, e: OSError) -> bool:
        """EPIPE, or EIO from a terminal that hung up: nobody reads us any more. EIO from
        a file is the disk's error, and the reader (the file) is still there."""
        if e.errno == errno.EPIPE:
            return True
        if e.errno != errno.EIO:
            return False
        try:
            return not stat.S_ISREG(os.fstat(self.fd).st_mode)
        except OSError:
            return True

    def _loss_note(self) -> bytes:
        """What goes first once writes go through again: the end of the line a failed
        write cut, and how many lines were lost and why."""
        if self.failing is None:
            return b""
        cut = b"\n" if self._cut_line else b""
        if not self._lost_now:
            return cut
        return cut + (f"{self.note_prefix}{self._lost_now} lines of output not written: "
                      f"{self.failing}\n").encode()

    def _lose(self, e: OSError, pieces: list[bytes], written: int, note: int) -> None:
        """A write failed (a full disk): what it did not take is lost, counted; the next
        lines are tried again."""
        data = b"".join(pieces)
        lost = data[max(written, note):].count(b"\n")  # the note is no line of theirs
        if written:
            self._cut_line = data[written - 1] != 0x0A
        reason = str(e)
        first = self.failing is None
        with self._cond:
            self.failed = True
            self.failing = reason
            self.lost += lost
            self._lost_now += lost
            self._in_flight = 0
        if first and self.on_trouble is not None:
            self.on_trouble(reason)
        # Each try of a full disk fails at once: a flood of lines must not make the
        # thread spin on it. The next lines wait a little, and are written together.
        time.sleep(_RETRY_PAUSE)

    def _recovered(self) -> None:
        with self._cond:
            self.failing = None
            self._lost_now = 0
            self._cut_line = False
        if self.on_trouble is not None:
            self.on_trouble(None)

    def _took(self, count: int) -> None:
        self._taken += count  # only this thread writes it; readers poll it
        self._batch_taken += count
        self._in_flight = max(0, self._in_flight - count)

    def _break(self, e: OSError) -> None:
        reason = "broken pipe" if e.errno == errno.EPIPE else "terminal gone"
        with self._cond:
            self.broken = reason
            self._queue.clear()
            self._busy = False
            self._cond.notify_all()
        if self.on_broken is not None:
            self.on_broken(reason)

    def drain(self, timeout: float, most: float = DRAIN_MOST) -> bool:
        """Wait until everything queued is written (or the reader is gone): while the
        reader keeps taking bytes, up to ``most`` seconds in all; False when it took
        nothing for ``timeout`` seconds, or ``most`` passed. (A fixed 2 s lost a slow but
        steady reader's last megabyte at exit, and said nothing of it.)"""
        end = time.monotonic() + most
        with self._cond:
            seen, since = self._taken, time.monotonic()
            while not (self.broken is not None or (not self._queue and not self._busy)):
                now = time.monotonic()
                if self._taken != seen:
                    seen, since = self._taken, now
                if self.hurry:  # exiting at once: a fast reader still gets the last lines
                    timeout, end = min(timeout, 0.5), min(end, now + 2.0)
                if now - since >= timeout or now >= end:
                    return False
                self._cond.wait(min(0.05, since + timeout - now, end - now))
            return True

    def waiting(self) -> int:
        """Bytes not written yet (queued, or in the write under way)."""
        with self._cond:
            return self._size + self._in_flight


def _write_all(fd: int, pieces: list[bytes],
               took: Callable[[int], None] | None = None) -> None:
    """Write every piece, in order, with as few calls as the kernel allows, however
    little each call takes: a few big pieces (a flood's) as they are, by writev; many
    (lines piled up behind a slow reader) joined first, as walking them one by one in
    Python cost 15 to 20 times the join."""
    if len(pieces) > _JOIN_OVER:
        pieces = [b"".join(pieces)]
    views = [memoryview(p) for p in pieces if p]
    i = 0
    while i < len(views):
        # In slices: a blocking write of 2 MiB to a pipe returned only once a slow
        # reader had taken all of it, which looked like no progress (a stall) meanwhile.
        batch, size = [], 0
        for view in views[i:i + _IOV_MAX]:
            if size >= _SLICE:
                break
            batch.append(view[:_SLICE - size] if size + len(view) > _SLICE else view)
            size += len(batch[-1])
        try:
            written = os.writev(fd, batch)
        except BlockingIOError:
            # Our stdout may be non-blocking (a parent set it so): a full pipe is a slow
            # reader, not a failure. Wait for room; the stall rule still applies.
            select.select([], [fd], [], _WRITABLE_WAIT)
            continue
        if took is not None:
            took(written)
        while written and i < len(views):
            if written >= len(views[i]):
                written -= len(views[i])
                i += 1
            else:
                views[i] = views[i][written:]
                written = 0
