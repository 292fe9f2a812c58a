"""What the core tells a line-printing frontend, in order: output and proctui's notices.

The core never waits for a reader. Output beyond a byte budget is dropped and counted,
and the reader is told how many lines it missed; notices are never dropped.
"""

from __future__ import annotations

import threading
from collections import deque

from proctui.core.output.lines import Chunk
from proctui.records import dataclass

DEFAULT_BUDGET = 32 << 20  # bytes (estimated) of output waiting for the reader
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
    def __init__(self, budget: int = DEFAULT_BUDGET, keep_output: bool = True) -> None:
        self.budget = budget
        self.keep_output = keep_output  # False: notices only (output goes to log files)
        self._items: deque[Event] = deque()
        self._size = 0
        self._dropped: dict[str, int] = {}
        self._cond = threading.Condition(threading.Lock())
        self._woken = False

    def put_output(self, name: str, stream: int, lines: Chunk) -> None:
        if not self.keep_output:
            return
        size = len(lines.text) + LINE_OVERHEAD * lines.count
        with self._cond:
            if self._size + size > self.budget and self._items:
                self._dropped[name] = self._dropped.get(name, 0) + lines.count
                return
            if self._dropped.get(name):
                self._items.append(Dropped(name, self._dropped.pop(name)))
            self._items.append(Output(name, stream, lines))
            self._size += size
            self._cond.notify()

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
            items = list(self._items)
            self._items.clear()
            self._size = 0
            for name, count in self._dropped.items():
                items.append(Dropped(name, count))
            self._dropped.clear()
            return items
