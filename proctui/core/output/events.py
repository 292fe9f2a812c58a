"""What the core tells a line-printing frontend, in order: output and proctui's notices.

The core never waits for a reader. Output beyond a byte budget is paced instead: the
process whose chunk went over stops being read (``put_output`` says so, and
``when_room`` calls back once the reader took what was queued), so a reader that keeps
reading (a file, ``| wc -l``) gets every line of a flood, the child waiting on its full
pipe as under ``cmd | cat``. Only when the reader takes nothing for ``STALL`` seconds is
output dropped and counted, and the reader told how many lines it missed. Notices are
never dropped.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING

from proctui.core.output.lines import Chunk
from proctui.records import dataclass

if TYPE_CHECKING:
    import asyncio

    from proctui.core.output.pipes import Pipes

DEFAULT_BUDGET = 32 << 20  # bytes (estimated) of output waiting for the reader
STALL = 5.0  # seconds a reader may take nothing before output is dropped, not paced
LINE_OVERHEAD = 56  # bytes a short str costs besides its characters, in CPython


@dataclass(frozen=True, slots=True)
class Output:
    name: str
    stream: int
    lines: Chunk


@dataclass(frozen=True, slots=True)
class Notice:
    name: str | None  # None: about proctui itself
    text: str


@dataclass(frozen=True, slots=True)
class Dropped:
    name: str
    count: int


Event = Output | Notice | Dropped


class EventQueue:
    def __init__(self, budget: int = DEFAULT_BUDGET, keep_output: bool = True,
                 stall: float = STALL, clock: Callable[[], float] = time.monotonic) -> None:
        self.budget = budget
        self.keep_output = keep_output  # False: notices only (output goes to log files)
        self.stall = stall
        self.clock = clock
        self._items: deque[Event] = deque()
        self._size = 0
        self._dropped: dict[str, int] = {}
        self._cond = threading.Condition(threading.Lock())
        self._woken = False
        self._taken_at = clock()  # the reader's last get()
        self._room: list[Callable[[], None]] = []  # called at the reader's next get()
        self._said_seq = -1  # the newest snapshot whose notices are all queued

    def said(self, seq: int) -> None:
        """The notices that speak of snapshot ``seq`` are queued (they follow it: the
        words come after the state they speak of)."""
        with self._cond:
            self._said_seq = max(self._said_seq, seq)
            self._cond.notify_all()

    def wait_said(self, seq: int, timeout: float) -> bool:
        """Wait (at most ``timeout``) until the notices of snapshot ``seq`` are queued: a
        reader that saw everything end must not print its summary before the last
        outcome's line."""
        with self._cond:
            return self._cond.wait_for(lambda: self._said_seq >= seq, timeout)

    def put_output(self, name: str, stream: int, lines: Chunk) -> bool:
        """Queue a chunk; False when the queue is now over its budget and the reader is
        still taking: read no more of this output until ``when_room`` calls back. Over
        the budget with a stalled reader, the chunk is dropped and counted (True)."""
        if not self.keep_output:
            return True
        size = len(lines.text) + LINE_OVERHEAD * lines.count
        with self._cond:
            over = self._size + size > self.budget and bool(self._items)
            if over and self._stalled():
                self._dropped[name] = self._dropped.get(name, 0) + lines.count
                return True
            if self._dropped.get(name):
                self._items.append(Dropped(name, self._dropped.pop(name)))
            self._items.append(Output(name, stream, lines))
            self._size += size
            self._cond.notify()
            return not over

    def when_room(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` (from the reader's thread) once the reader takes what is
        queued; at once if it already has."""
        with self._cond:
            if self._items:
                self._room.append(callback)
                return
        callback()

    def touch(self) -> None:
        """The reader is still at work on what it took (printing a big batch to a slow
        but steady reader): it is not stalled. No lock: one float, from its thread."""
        self._taken_at = self.clock()

    def stalled(self) -> bool:
        """Has the reader taken nothing for ``stall`` seconds while output waits?"""
        with self._cond:
            return self._stalled()

    def _stalled(self) -> bool:
        return bool(self._items) and self.clock() - self._taken_at >= self.stall

    def put_notice(self, name: str | None, text: str) -> None:
        with self._cond:
            if name is not None and self._dropped.get(name):
                self._items.append(Dropped(name, self._dropped.pop(name)))
            self._items.append(Notice(name, text))
            self._cond.notify()

    def wake(self) -> None:
        """Wake a reader waiting in get() with nothing new: something else changed."""
        with self._cond:
            self._woken = True
            self._cond.notify()

    def get(self, timeout: float | None = None) -> list[Event]:
        """Everything queued so far; waits up to ``timeout`` when there is nothing."""
        with self._cond:
            if not self._items and not self._dropped and not self._woken:
                self._cond.wait(timeout)
            self._woken = False
            self._taken_at = self.clock()
            items = list(self._items)
            self._items.clear()
            self._size = 0
            for name, count in self._dropped.items():
                items.append(Dropped(name, count))
            self._dropped.clear()
            room, self._room = self._room, []
        for callback in room:
            callback()
        return items


def pace(events: EventQueue, pipes: Pipes, loop: asyncio.AbstractEventLoop) -> None:
    """The line printer is behind (``put_output`` said so): read no more of ``pipes``
    until it has taken what is queued, or until it is found stalled (then output is
    dropped and counted). On the core's loop."""
    if pipes.paused:
        return
    pipes.pause()
    this = pipes.pauses

    def resume() -> None:
        with contextlib.suppress(RuntimeError):  # the loop is closed: we are done
            loop.call_soon_threadsafe(pipes.resume)

    def look() -> None:  # one look-out per pause, for as long as it lasts
        if pipes.paused and pipes.pauses == this:
            if events.stalled():
                pipes.resume()
            else:
                loop.call_later(events.stall / 4, look)

    events.when_room(resume)
    loop.call_later(events.stall / 4, look)
