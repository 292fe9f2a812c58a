"""Turning a child's raw output bytes into lines, and keeping the last N of them.

Hot path: a flooding child produces hundreds of thousands of lines per second, so the
splitter works on whole chunks with C-level str methods and never loops per character.
"""

from __future__ import annotations

import bisect
import codecs
import itertools
import threading
import time
from collections import deque
from dataclasses import field
from enum import IntEnum
from itertools import islice, repeat

from proctui.config import DEFAULT_MAX_LINE_LENGTH, DEFAULT_SCROLLBACK
from proctui.records import dataclass


class Stream(IntEnum):
    STDOUT = 1
    STDERR = 2
    PROCTUI = 3  # proctui's own notices about the process, kept in its pane


class Chunk:
    """Whole lines read at once. A flood's chunk stays one text until somebody needs its
    lines one by one: half a million short strings cost more than everything else
    proctui does with them (the buffer keeps only its last lines, a printer prefixes the
    text in one replace)."""

    __slots__ = ("_lines", "_text", "count")

    def __init__(self, lines: list[str] | None = None, *, text: str = "",
                 count: int = 0) -> None:
        """``lines``, or ``text``: ``count`` lines joined by newlines (none of which may
        hold a newline itself)."""
        self._lines = lines
        self._text: str | None = None if lines is not None else text
        self.count = len(lines) if lines is not None else count

    @property
    def lines(self) -> list[str]:
        """The lines, split once and kept (``split`` does not keep them)."""
        if self._lines is None:
            self._lines = self.split()
        return self._lines

    @property
    def text(self) -> str:
        """The lines joined by newlines (no newline after the last)."""
        if self._text is None:
            self._text = "\n".join(self._lines or ())
        return self._text

    def split(self) -> list[str]:
        """The lines, for a look at each, without keeping them here: a chunk waiting in a
        queue must not hold its text twice."""
        if self._lines is not None:
            return self._lines
        return self._text.split("\n") if self.count and self._text is not None else []

    def tail(self, n: int) -> list[str]:
        """The last ``n`` lines, without making the others (nor keeping them here)."""
        if self.count <= n:
            return self.split()
        if self._lines is not None:
            return self._lines[-n:]
        return self.text.rsplit("\n", n)[1:]

    def __bool__(self) -> bool:
        return self.count > 0

    def __len__(self) -> int:
        return self.count


class LineSplitter:
    """Incremental bytes -> lines for one stream.

    - UTF-8 is decoded incrementally, invalid bytes become U+FFFD.
    - ``\\n`` and ``\\r\\n`` end a line. A lone ``\\r`` means "the text that follows
      replaces the current line" (progress bars); the replaced text is dropped on purpose.
    - A line longer than ``max_len`` is cut into ``max_len`` pieces; no character between
      pieces is lost.
    - ``partial`` is the unterminated current line, for frontends that want to show a
      live progress bar before its newline arrives.
    """

    __slots__ = ("_cr_pending", "_decoder", "_replace_next", "max_len", "partial")

    def __init__(self, max_len: int = DEFAULT_MAX_LINE_LENGTH) -> None:
        if max_len < 1:
            raise ValueError("max_len must be >= 1")
        self.max_len = max_len
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.partial = ""
        # The text in ``partial`` was followed by a lone \r: the next text replaces it.
        self._replace_next = False
        # A chunk ended in \r: it may be the first half of \r\n.
        self._cr_pending = False

    def feed(self, data: bytes) -> list[str]:
        return self._split(self._decoder.decode(data))

    def feed_chunk(self, data: bytes) -> Chunk:
        """``feed``, with the lines kept as one text when nothing in them needs care: no
        carriage return, no line over ``max_len``, no replacement pending."""
        text = self._decoder.decode(data)
        end = text.rfind("\n")
        limit = self.max_len
        if (end < 0 or self._cr_pending or self._replace_next or "\r" in text
                or len(self.partial) + text.find("\n") > limit or _long_run(text, limit)):
            return Chunk(self._split(text))
        body = text[:end]
        if self.partial:
            body = self.partial + body
        self.partial = text[end + 1:]
        return Chunk(text=body, count=text.count("\n", 0, end) + 1)

    def finish(self) -> list[str]:
        """End of stream: flush the decoder and the unterminated last line."""
        text = self._decoder.decode(b"", final=True)
        lines = self._split(text) if text else []
        if self._cr_pending:
            self._cr_pending = False
            self._replace_next = True
        if self.partial:
            lines.append(self.partial)
        self.partial = ""
        self._replace_next = False
        return lines

    def _split(self, text: str) -> list[str]:
        if not text:
            return []
        done: list[str] = []
        if self._cr_pending:
            self._cr_pending = False
            if text[0] == "\n":
                # "...\r" + "\n..." across two chunks is one CRLF.
                done.append(self.partial)
                self.partial = ""
                self._replace_next = False
                text = text[1:]
            else:
                self._replace_next = True
        if text and text[-1] == "\r":
            self._cr_pending = True
            text = text[:-1]
        if not text:
            return self._cut(done)
        has_cr = "\r" in text
        if has_cr:
            text = text.replace("\r\n", "\n")
        pieces = text.split("\n")
        if self._replace_next and pieces[0]:
            self.partial = ""
        if len(pieces) == 1:
            if pieces[0]:
                self._replace_next = False
            line = self.partial + pieces[0]
            self.partial = _after_cr(line) if has_cr else line
            lines = done
        else:
            self._replace_next = False
            pieces[0] = self.partial + pieces[0]
            last = pieces.pop()
            if has_cr:
                pieces = [_after_cr(p) for p in pieces]
                last = _after_cr(last)
            self.partial = last
            lines = done + pieces if done else pieces
        # The common case, every line short, is told from a few characters of the text.
        out = lines if not _long_run(text, self.max_len) and all(
            len(line) <= self.max_len for line in lines[:2]) else self._cut(lines)
        if len(self.partial) > self.max_len:
            out.extend(self._cut_partial())
        return out

    def _cut(self, lines: list[str]) -> list[str]:
        limit = self.max_len
        if not lines or max(map(len, lines)) <= limit:
            return lines
        out: list[str] = []
        for line in lines:
            if len(line) <= limit:
                out.append(line)
            else:
                out.extend(line[i : i + limit] for i in range(0, len(line), limit))
        return out

    def _cut_partial(self) -> list[str]:
        limit = self.max_len
        text = self.partial
        full = len(text) - len(text) % limit
        if full == len(text):
            # Keep the last full piece pending: the line might end right after it.
            full -= limit
        self.partial = text[full:]
        return [text[i : i + limit] for i in range(0, full, limit)]


def _long_run(text: str, limit: int) -> bool:
    """Might ``text`` hold more than ``limit`` characters without a newline? Such a run
    covers a multiple of ``limit``: only those places are looked at, from the newlines
    around them (two searches in C each), not every line's length."""
    find, rfind = text.find, text.rfind
    for at in range(limit, len(text), limit):
        end = find("\n", at)
        if (len(text) if end < 0 else end) - (rfind("\n", 0, at) + 1) > limit:
            return True
    return False


def _after_cr(text: str) -> str:
    """A lone \\r inside one line: only the text after the last one is shown."""
    if "\r" not in text:
        return text
    # "abc\r" at the end of a line (as in "abc\r\r\n") still shows "abc".
    return text.rstrip("\r").rsplit("\r", 1)[-1]


@dataclass(frozen=True, slots=True)
class OutputSlice:
    """Lines read from a buffer: ``lines[i]`` is line number ``first + i`` (0-based)."""

    first: int
    lines: list[str]
    streams: list[int]
    dropped: int  # lines the reader asked for that had already left the buffer
    partial: str  # the current unterminated line (e.g. a progress bar), or ""
    # (index into lines, order) where each append's lines begin: ``order`` numbers every
    # append of every buffer in one sequence, so a reader of several buffers (down) can
    # print them in the order they happened (db's SIGTERM came after web's end).
    stamps: tuple[tuple[int, int], ...] = field(default=(), compare=False)


@dataclass(frozen=True, slots=True)
class Mark:
    """Where a buffer stands, read at one instant under its lock: a reader on another
    thread compares marks instead of reading fields the core is writing."""

    total: int  # lines ever appended
    first: int  # the oldest line still held
    partial: str
    cleared_before: int
    output_total: int


_ORDER = itertools.count(1)  # every append of every buffer, in the order they happened


def stamp_at(stamps: tuple[tuple[int, int], ...] | list[tuple[int, int]], index: int) -> int:
    """The order of the append that line ``index`` came in (0 when none is known)."""
    i = bisect.bisect_right(stamps, (index, float("inf"))) - 1
    return stamps[i][1] if i >= 0 else 0


class OutputBuffer:
    """A bounded ring of the last ``capacity`` lines of one process, thread-safe.

    The core thread appends; frontends read by line number. ``total`` counts every
    line ever appended, so a reader can tell what it missed.
    """

    PENDING_MAX = 32  # chunks held unsplit at most: with a big scrollback none fills it

    def __init__(self, capacity: int = DEFAULT_SCROLLBACK) -> None:
        if capacity < 1:
            raise ValueError("capacity must be >= 1")
        self.capacity = capacity
        self._lines: deque[str] = deque(maxlen=capacity)
        self._streams: deque[int] = deque(maxlen=capacity)
        # Chunks appended, not yet split (oldest first): headless, nobody reads a flood,
        # and splitting the last lines of every read cost more than printing them.
        self._pending: list[tuple[int, Chunk]] = []
        self._pending_count = 0
        self._lock = threading.Lock()
        self.total = 0
        self.output_total = 0  # lines the process printed (not proctui's notices)
        self.partial = ""
        self.cleared_before = 0  # line numbers below this were cleared by the operator
        self.renumbered = 0  # times a mirror's held lines took new numbers (see receive)
        self.appended_at = 0.0  # when output last came (monotonic): has it gone quiet?
        # (line number, order) where each append began, for the lines held (see
        # OutputSlice.stamps); trimmed as lines leave the ring.
        self._stamps: deque[tuple[int, int]] = deque()

    def append(self, stream: int, lines: list[str] | Chunk,
               partial: str | None = None) -> None:
        count = len(lines)
        self.appended_at = time.monotonic()
        with self._lock:
            if count:
                self._stamp(self.total, next(_ORDER))
                if isinstance(lines, Chunk):
                    self._pending.append((stream, lines))
                    self._pending_count += count
                    # Waiting text stays one ring's worth: the oldest chunk goes once the
                    # newer ones fill the ring.
                    while self._pending_count - self._pending[0][1].count >= self.capacity:
                        self._pending_count -= self._pending.pop(0)[1].count
                        self._lines.clear()
                        self._streams.clear()
                    if len(self._pending) >= self.PENDING_MAX:
                        self._settle()
                else:
                    self._settle()
                    self._lines.extend(lines)
                    self._streams.extend(repeat(stream, len(lines)))
                self.total += count
                if stream != Stream.PROCTUI:
                    self.output_total += count
            if partial is not None:
                self.partial = partial

    def _stamp(self, line: int, order: int) -> None:
        stamps = self._stamps
        stamps.append((line, order))
        oldest = self.total - self._held()
        while len(stamps) > 1 and stamps[1][0] <= oldest:
            stamps.popleft()

    def _settle(self) -> None:
        """Split the pending chunks into the ring (under the lock): only the newest
        ``capacity`` lines of them, the rest would be pushed out at once."""
        if not self._pending:
            return
        room = self.capacity
        keep = 0
        for _stream, chunk in reversed(self._pending):
            keep += 1
            room -= chunk.count
            if room <= 0:
                break
        if room <= 0:
            self._lines.clear()
            self._streams.clear()
        for stream, chunk in self._pending[-keep:]:
            lines = chunk.tail(self.capacity)
            self._lines.extend(lines)
            self._streams.extend(repeat(stream, len(lines)))
        self._pending.clear()
        self._pending_count = 0

    def _held(self) -> int:
        return min(self.capacity, len(self._lines) + self._pending_count)

    def mark(self) -> Mark:
        with self._lock:
            first = max(self.total - self._held(), self.cleared_before)
            return Mark(self.total, first, self.partial, self.cleared_before,
                        self.output_total)

    @property
    def first(self) -> int:
        """Line number of the oldest line still held."""
        return max(self.total - self._held(), self.cleared_before)

    def __len__(self) -> int:
        with self._lock:
            return self.total - self.first

    def kept(self) -> int:  # the oldest line kept, cleared or not (what logs reads)
        return self.total - self._held()

    def read(self, start: int, count: int | None = None, *, cleared: bool = False) -> OutputSlice:
        """Lines ``start`` .. ``start + count`` (or to the end); ``cleared``: past a clear."""
        with self._lock:
            self._settle()
            held = len(self._lines)
            oldest = self.total - held
            first = max(start, oldest, 0 if cleared else self.cleared_before)
            dropped = first - start
            end = self.total if count is None else min(self.total, max(start + count, first))
            if first >= end:
                return OutputSlice(max(first, start), [], [], dropped, self.partial)
            stamps = self._slice_stamps(first, end)
            i, j = first - oldest, end - oldest
            if i == 0 and j == held:
                lines, streams = list(self._lines), list(self._streams)
            elif held - i < i:
                # Nearer the newest line, where a following reader always is: walk from
                # there. From the oldest, the last 40 of a million lines took 9 ms.
                lines = list(islice(reversed(self._lines), held - j, held - i))
                streams = list(islice(reversed(self._streams), held - j, held - i))
                lines.reverse()
                streams.reverse()
            else:
                lines = list(islice(self._lines, i, j))
                streams = list(islice(self._streams, i, j))
            return OutputSlice(first, lines, streams, dropped, self.partial, stamps)

    def _slice_stamps(self, first: int, end: int) -> tuple[tuple[int, int], ...]:
        """The stamps of lines ``first`` .. ``end``, as indexes into the slice: the one
        its first line came under, and each that begins inside it."""
        stamps = self._stamps
        at = max(0, bisect.bisect_right(stamps, (first, float("inf"))) - 1)
        out = []
        for line, order in islice(stamps, at, None):
            if line >= end:
                break
            out.append((max(0, line - first), order))
        return tuple(out)

    def receive(self, first: int, lines: list[str], streams: list[int], output_total: int,
                partial: str, cleared_before: int, gap: str | None = None,
                stamps: tuple[tuple[int, int], ...] = ()) -> None:
        """A mirror of another process's buffer (an attached console's): lines numbered
        from ``first``. A gap (lines that left the sender's scrollback before they could be
        sent) restarts the numbering there, so line numbers always match the sender's.
        With ``gap`` (words saying what was missed), the lines held are kept and the words
        become one PROCTUI line just before ``first``: the held lines are renumbered, and
        ``renumbered`` counts that for readers that keep anything by line number."""
        with self._lock:
            self._settle()
            if gap is not None and first > self.total:
                self._lines.append(gap)
                self._streams.append(Stream.PROCTUI)
                self.total = first
                self.renumbered += 1
            elif first != self.total:
                self._lines.clear()
                self._streams.clear()
                self._stamps.clear()
                self.total = first
            base = self.total
            for index, order in stamps:
                if 0 <= index < len(lines):
                    self._stamp(base + index, order)
            self._lines.extend(lines)
            self._streams.extend(streams)
            self.total += len(lines)
            self.output_total = output_total
            self.partial = partial
            self.cleared_before = cleared_before

    def clear(self) -> None:
        """The operator's ``c``: panes show nothing before here; ``logs`` reads on."""
        with self._lock:
            self.cleared_before = self.total
            self.partial = ""
