"""How many rows each line of a pane takes with wrap on, and where a row falls.

The output pane scrolls by rows, so its scrollbar is true when long lines wrap: the
scroll range is the sum of every held line's rows, and the top of the screen is found by
row. A flood must stay cheap, so a new line is first given an estimate in O(1) (exact
for the lines that do not wrap, which is nearly all of a flood), and lines whose estimate
may be off are counted exactly later, a few at a time, or as they are drawn.
"""

from __future__ import annotations

import re
import time
from array import array
from bisect import bisect_right
from collections import deque
from collections.abc import Callable, Iterable
from itertools import accumulate

from rich.cells import cell_len

from proctui.core.output.lines import OutputBuffer, Stream

BLOCK = 256  # lines per block sum: row <-> line walks the sums, then one block

_WORD = re.compile(r"\s*\S+\s*")  # a word and the spaces after it, as Rich wraps
_SGR = re.compile(r"\x1b\[[0-9;:]*m")


def count_rows(text: str, width: int) -> int:
    """Rows that ``text`` takes when the pane wraps it at ``width`` (Rich's Text.wrap
    with overflow "fold"): Rich's own walk over the words (rich._wrap.divide_line), for
    text whose every character is one cell wide (plain ASCII: no tab, escape, control
    character or newline). A test holds it to Rich's answer."""
    if len(text) <= width or width <= 0:
        return 1
    breaks = offset = 0
    for word in _WORD.finditer(text):
        start, end = word.span()
        size = end - start
        bare = len(word.group().rstrip())
        if width - offset >= bare:
            offset += size
        elif bare > width:
            # A word wider than the row is folded into pieces of the row's width.
            pieces = -(-size // width)
            breaks += pieces if start else pieces - 1
            offset = size - (pieces - 1) * width
        elif offset and start:
            breaks += 1
            offset = size
    return breaks + 1


def estimate(lines: list[str], streams: list[int], width: int) -> tuple[list[int],
                                                                       list[int]]:
    """Rows each line takes at ``width``, cheaply, and which of them (indices) may be off
    and want counting exactly. A line of plain ASCII no wider than the row is one row
    for sure (a flood of such lines is settled in C); proctui's own notices, drawn with
    a mark before them, never are."""
    if not lines:
        return [], []
    notices = Stream.PROCTUI in streams
    if not notices and max(map(len, lines)) <= width:
        joined = "".join(lines)  # at most a row's width a line
        if joined.isascii() and "\t" not in joined:
            return [1] * len(lines), []
    rows: list[int] = []
    unsure: list[int] = []
    step = max(1, width)
    for i, line in enumerate(lines):
        if "\x1b" in line:
            line = _SGR.sub("", line)  # colours take no cells (and escapes never add any)
        ascii_ = line.isascii()
        notice = notices and streams[i] == Stream.PROCTUI
        if ascii_ and len(line) <= width and "\t" not in line and not notice:
            rows.append(1)
            continue
        cells = len(line) if ascii_ else cell_len(line)
        rows.append(max(1, -(-cells // step)))
        unsure.append(i)
    return rows, unsure


class RowMap:
    """The rows of each held line (numbered as the buffer numbers them) and their sums
    by block of ``BLOCK`` line numbers. Old lines leave from the front as the ring drops
    them, new ones come at the end; both cost O(1) a line. ``pending`` holds the lines
    whose rows are only estimated, oldest first."""

    def __init__(self) -> None:
        self.reset(0)

    def reset(self, first: int) -> None:
        self.first = first  # the oldest line held
        self.end = first  # one past the newest
        self.total = 0  # rows of the lines held
        self._base = first  # the line number of _rows[0] (the front is cut lazily)
        self._rows = array("I")  # 4 bytes a line
        self._block0 = first // BLOCK  # the block number of _sums[0]
        self._sums: list[int] = []
        self.pending: deque[int] = deque()

    def _add(self, line: int, rows: list[int] | array[int], sign: int) -> None:
        """Add (or take away) ``rows``, of the lines from ``line`` on, to the block sums."""
        i, n = 0, len(rows)
        sums = self._sums
        while i < n:
            block = line // BLOCK
            k = block - self._block0
            if k >= len(sums):
                sums.extend([0] * (k + 1 - len(sums)))
            take = min(n - i, (block + 1) * BLOCK - line)
            sums[k] += sign * sum(rows[i:i + take])
            i += take
            line += take

    def extend(self, rows: list[int], unsure: Iterable[int] = ()) -> None:
        """The rows of the lines numbered from ``end`` on."""
        start = self.end
        self._rows.extend(rows)
        self._add(start, rows, 1)
        self.total += sum(rows)
        self.end += len(rows)
        self.pending.extend(start + i for i in unsure)

    def drop_to(self, first: int) -> None:
        """The lines before ``first`` have left the buffer."""
        if first <= self.first:
            return
        if first >= self.end:
            self.reset(first)
            return
        gone = self._rows[self.first - self._base:first - self._base]
        self._add(self.first, gone, -1)
        self.total -= sum(gone)
        self.first = first
        pending = self.pending
        while pending and pending[0] < first:
            pending.popleft()
        skip = first - self._base
        if skip > 4 * BLOCK and 2 * skip > len(self._rows):
            # Cut the front only now and then: each line is moved O(1) times in all.
            blocks = first // BLOCK - self._block0
            del self._rows[:skip]
            del self._sums[:blocks]
            self._base = first
            self._block0 += blocks

    def rows(self, line: int) -> int:
        return self._rows[line - self._base] if self.first <= line < self.end else 1

    def set(self, line: int, rows: int) -> bool:
        """The exact rows of ``line`` (drawn, or counted): whether that changed anything."""
        if not self.first <= line < self.end:
            return False
        i = line - self._base
        old = self._rows[i]
        if old == rows:
            return False
        self._rows[i] = rows
        self._sums[line // BLOCK - self._block0] += rows - old
        self.total += rows - old
        return True

    def row_of(self, line: int) -> int:
        """The row where ``line`` begins (before the first: 0; past the end: the total)."""
        if line <= self.first:
            return 0
        if line >= self.end:
            return self.total
        block = line // BLOCK
        before = sum(self._sums[self.first // BLOCK - self._block0:block - self._block0])
        start = max(self.first, block * BLOCK)
        return before + sum(self._rows[start - self._base:line - self._base])

    def line_at(self, row: int) -> tuple[int, int]:
        """The line that ``row`` falls in, and how many of its rows come before it. Rows
        past the end fall in the line numbered ``end`` (a partial line, if any)."""
        if row >= self.total:
            return self.end, max(0, row - self.total)
        row = max(0, row)
        k0 = self.first // BLOCK - self._block0
        running = list(accumulate(self._sums[k0:]))
        k = bisect_right(running, row)  # the block holding the row
        above = running[k - 1] if k else 0
        line = max(self.first, (self._block0 + k0 + k) * BLOCK)
        i = line - self._base
        rows = self._rows
        while above + rows[i] <= row:
            above += rows[i]
            i += 1
        return self._base + i, row - above


Exact = Callable[[str, int, int], int]  # (line, stream, width) -> its rows, exactly


class ScrollRows:
    """A pane's scroll range and where each line falls in it: with wrap on, rows (each
    held line's at one width, and the partial line's after them); with wrap off, lines."""

    def __init__(self, buffer: OutputBuffer) -> None:
        self.buffer = buffer
        self.map = RowMap()
        self.width: int | None = None  # the width rows are counted at; None: wrap off
        self._renumbered = -1
        self.first = 0  # the oldest line in the range
        self._lines = 0  # with wrap off: the lines in the range
        self.partial_rows = 0
        self._partial = ""  # the partial line partial_rows counts

    def measure(self, total: int, first: int, partial: str, width: int | None,
                exact: Exact) -> None:
        """Take in the buffer as it stands (its ``total``, ``first`` and ``partial``):
        new lines estimated, old ones dropped, everything anew at another width."""
        if width is None or width <= 0:
            self.width = None
            self.map.reset(first)
            self.first = first
            self._lines = max(0, total - first) + (1 if partial else 0)
            return
        rows = self.map
        if width != self.width or self.buffer.renumbered != self._renumbered:
            self.width, self._renumbered = width, self.buffer.renumbered
            self._partial = ""
            rows.reset(first)
        rows.drop_to(first)
        if rows.end < total:
            got = self.buffer.read(rows.end, total - rows.end)
            if got.first > rows.end:  # all it held left the ring while it was read
                rows.reset(got.first)
            counts, unsure = estimate(got.lines, got.streams, width)
            rows.extend(counts, unsure)
        self.first = rows.first
        if partial != self._partial or not partial:
            self._partial = partial
            self.partial_rows = exact(partial, Stream.STDOUT, width) if partial else 0

    def count_some(self, exact: Exact, seconds: float) -> bool:
        """Count exactly, for about ``seconds``, lines whose rows are only estimated,
        newest first; whether the range changed."""
        rows, width = self.map, self.width
        if width is None:
            return False
        changed = False
        deadline = time.perf_counter() + seconds
        while rows.pending and time.perf_counter() < deadline:
            batch = [rows.pending.pop() for _ in range(min(64, len(rows.pending)))]
            low = max(rows.first, batch[-1])
            got = self.buffer.read(low, batch[0] + 1 - low)
            for number in batch:
                i = number - got.first
                if 0 <= i < len(got.lines):
                    count = exact(got.lines[i], got.streams[i], width)
                    changed = rows.set(number, count) or changed
        return changed

    def drawn(self, number: int, count: int, width: int, growing: bool) -> bool:
        """Line ``number`` (``growing``: the partial line) was drawn in ``count`` rows at
        ``width``: its rows are known exactly now. Whether the range changed. (A line
        newer than the range, come since it was measured, waits for the next measure.)"""
        if width != self.width:
            return False
        if not growing:
            return self.map.set(number, count)
        if number != self.map.end or count == self.partial_rows:
            return False
        self.partial_rows = count
        return True

    @property
    def range(self) -> int:
        if self.width is None:
            return self._lines
        return self.map.total + self.partial_rows

    def row_of(self, line: int) -> int:
        """The row where ``line`` begins."""
        if self.width is None:
            return max(0, line - self.first)
        return self.map.row_of(line)

    def at(self, row: int) -> tuple[int, int]:
        """The line at ``row``, and how many of its rows are above that row."""
        if self.width is None:
            return self.first + max(0, row), 0
        return self.map.line_at(row)

    def rows(self, line: int) -> int:
        if self.width is None:
            return 1
        if line >= self.map.end:
            return max(1, self.partial_rows)
        return self.map.rows(line)
