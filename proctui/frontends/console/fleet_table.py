"""The fleet's table, drawn a line at a time: columns fitted to the width from every row,
and each box's lines made once and kept until its row (or the columns) change, so that a
box whose age moves redraws its own line, not twenty boxes' table.

A row is one line, or more when its link's words or what it needs from the operator are
longer than their column (folded, never cut: an ssh error is read whole). With more lines
than room, the table scrolls to keep the selected box in view and says how many boxes
are above and below it."""

from __future__ import annotations

from rich.cells import cell_len
from rich.console import Console
from rich.style import Style
from rich.text import Text
from textual.geometry import Region
from textual.strip import Strip
from textual.widget import Widget

from proctui.frontends.console.render import name_cells, segments
from proctui.frontends.fleet import FleetRow, LinkState
from proctui.records import dataclass

GAP = 2  # cells between two columns
BOX_MOST = 24  # the widest a box's name is shown (cut in its middle past that)
COUNTS = ("RUN", "READY", "STOP", "FAIL", "ABAND")
COUNTS_ONE = "RUN/RDY/STOP/FAIL/ABAND"  # below WIDE columns: the counts as one column
WIDE = 100  # columns from which each count has a column of its own
LINK_LEAST = 16  # cells the link's words keep when what the box needs takes the rest
AGE_FROM = 90  # columns from which the supervisor's age has its column
COUNTS_FROM = 72  # columns from which the counts have a column (below, what each box
# needs and its link take the row: at 60 the counts' header alone took 23 of 60 cells)
RANK_STYLE = {0: "bold magenta", 1: "bold red", 2: "yellow", 3: "red", 4: "yellow"}
LINK_STYLE = {LinkState.UP: "green", LinkState.CONNECTING: "cyan",
              LinkState.RECONNECTING: "yellow", LinkState.LOST: "bold red",
              LinkState.UNREACHABLE: "bold red", LinkState.ENDED: "bright_black"}
SELECTED = Style(reverse=True)


@dataclass(frozen=True, slots=True)
class Columns:
    """How wide each column is, for one width and one set of rows."""

    width: int
    box: int
    link: int
    age: int  # 0: not shown
    counts: tuple[int, ...]  # five, or one (COUNTS_ONE)
    needs: int


def _needs(row: FleetRow) -> Text:
    """What the box needs from the operator, and how old its counts are when its link
    is down."""
    text = Text(row.worst, style=RANK_STYLE.get(row.rank, ""))
    if row.stale:
        text.append(f" (counts {row.stale})", style="dim")
    return text


def _needs_cells(row: FleetRow) -> int:
    """The cells ``_needs`` takes (made for every row at every look: no Text made)."""
    return cell_len(row.worst) + (cell_len(f" (counts {row.stale})") if row.stale else 0)


def _counted(row: FleetRow) -> bool:
    """Whether the row has counts to show (a box never reached has none)."""
    return not (row.link in (LinkState.CONNECTING, LinkState.UNREACHABLE) or
                (row.link is LinkState.ENDED and not row.age))


def _counts(row: FleetRow, wide: bool) -> tuple[str, ...]:
    numbers = (row.running, row.ready, row.stopping, row.failed, row.abandoned)
    if not _counted(row):
        return ("-",) * (5 if wide else 1)
    if wide:
        return tuple(str(n) for n in numbers)
    return ("/".join(str(n) for n in numbers),)


def columns(rows: tuple[FleetRow, ...], width: int) -> Columns:
    """The columns for ``rows`` at ``width``: the box's name as wide as the widest (up to
    BOX_MOST), the age and the counts as wide as they need, and what is left shared by
    the link's words (two fifths, when both fit whole) and what the box needs (the rest;
    when both do not fit, it comes first and the link's words fold)."""
    wide = width >= WIDE
    box = min(BOX_MOST, max([3, *(cell_len(r.box) for r in rows)]))
    age = max([len("SUPERVISOR"), *(cell_len(r.age or "-") for r in rows)]) \
        if width >= AGE_FROM else 0
    heads = COUNTS if wide else (COUNTS_ONE,) if width >= COUNTS_FROM else ()
    counts = tuple(max([len(h), *(len(_counts(r, wide)[i]) for r in rows)])
                   for i, h in enumerate(heads))
    fixed = 1 + GAP + box + GAP + (age + GAP if age else 0) + sum(counts) + \
        GAP * len(counts) + GAP
    room = max(8, width - fixed)
    link_need = max([4, *(cell_len(r.link_words) for r in rows)])
    needs_need = max([len("NEEDS YOU"), *(_needs_cells(r) for r in rows)])
    if link_need + needs_need <= room:  # both whole: the link's share, as far as it can
        link = min(max(room * 2 // 5, link_need), room - needs_need)  # (columns that stay
    else:  # put while ages move); else what the box needs first, the link folded
        link = max(min(link_need, LINK_LEAST, room // 3), room - needs_need)
    link = max(4, link)
    return Columns(width, box, link, age, counts, max(4, room - link))


def header(cols: Columns) -> Text:
    heads = COUNTS if len(cols.counts) == 5 else (COUNTS_ONE,) if cols.counts else ()
    gap = " " * GAP
    text = " " + gap + "BOX".ljust(cols.box) + gap + "LINK".ljust(cols.link) + gap
    if cols.age:
        text += "SUPERVISOR".ljust(cols.age) + gap
    if heads:
        text += gap.join(h.rjust(w) for h, w in zip(heads, cols.counts, strict=True)) + gap
    return Text(text + "NEEDS YOU", style="bold")


def _fold(text: Text, width: int, console: Console) -> list[Text]:
    """``text`` in lines of at most ``width`` cells, broken between words (a word longer
    than a line is folded), each padded to ``width``."""
    lines = list(text.wrap(console, width, overflow="fold")) if text.plain else [Text()]
    for line in lines:
        line.rstrip()
        line.pad_right(max(0, width - line.cell_len))
    return lines


def row_lines(row: FleetRow, selected: bool, cols: Columns, console: Console) -> list[Text]:
    """A box's row: its first line with every column, then as many more as its link's
    words or what it needs take, folded."""
    link = Text(row.link.value, style=LINK_STYLE[row.link])
    link.append(row.link_words.removeprefix(row.link.value))
    links = _fold(link, cols.link, console)
    needs = _fold(_needs(row), cols.needs, console)
    gap = " " * GAP
    out = []
    for i in range(max(len(links), len(needs))):
        first = i == 0
        line = Text("▸" if selected and first else " ")
        line.append(gap)
        line.append(name_cells(row.box, cols.box) if first else " " * cols.box,
                    style="bold")
        line.append(gap)
        line.append_text(links[i] if i < len(links) else Text(" " * cols.link))
        line.append(gap)
        if cols.age:
            line.append((row.age or "-").ljust(cols.age) if first else " " * cols.age)
            line.append(gap)
        if cols.counts:
            counts = _counts(row, len(cols.counts) == 5)
            line.append(gap.join((c if first else "").rjust(w)
                                 for c, w in zip(counts, cols.counts, strict=True)))
            line.append(gap)
        if i < len(needs):
            line.append_text(needs[i])
        out.append(line)
    return out


class FleetTable(Widget):
    """The table of boxes; ``show`` gives it the rows, and only the lines that changed
    are drawn again."""

    DEFAULT_CSS = "FleetTable { height: 1fr; }"

    def __init__(self, **kw: object) -> None:
        super().__init__(**kw)  # type: ignore[arg-type]
        self.rows: tuple[FleetRow, ...] = ()
        self.selected: str | None = None
        self._cols: Columns | None = None
        self._header: Strip | None = None
        # Each box's lines, and what they were made of (its row, selected, the columns).
        self._made: dict[str, tuple[tuple[FleetRow, bool, Columns], list[Strip]]] = {}
        self._shown: list[Strip] = []  # the lines on screen, top to bottom
        self._first = 0  # the first of the rows' lines shown (scrolled)
        self._more: tuple[str, int, Strip] | None = None  # the last "↓ 3 more" line

    def show(self, rows: list[FleetRow], selected: str | None) -> None:
        self.rows, self.selected = tuple(rows), selected
        self._make()

    def on_resize(self) -> None:
        self._make()

    def _strip(self, text: Text, width: int, style: Style | None = None) -> Strip:
        strip = Strip(segments(text, self.app.console)).crop_extend(0, width, None)
        return strip.apply_style(style) if style is not None else strip

    def _make(self) -> None:
        width, height = self.size.width, self.size.height
        if not width or not height or not self.is_mounted:
            return
        cols = columns(self.rows, width)
        if cols != self._cols or self._header is None:
            self._cols, self._header = cols, self._strip(header(cols), width)
        made: dict[str, tuple[tuple[FleetRow, bool, Columns], list[Strip]]] = {}
        lines: list[Strip] = []
        spans: list[tuple[int, int]] = []  # each box's lines: (first, end)
        chosen = 0
        for i, row in enumerate(self.rows):
            selected = row.box == self.selected
            key = (row, selected, cols)
            entry = self._made.get(row.box)
            if entry is None or entry[0] != key:
                entry = (key, [self._strip(t, width, SELECTED if selected else None)
                               for t in row_lines(row, selected, cols, self.app.console)])
            made[row.box] = entry
            if selected:
                chosen = i
            spans.append((len(lines), len(lines) + len(entry[1])))
            lines.extend(entry[1])
        self._made = made
        shown = [self._header, *self._window(lines, spans, chosen, height - 1, width)]
        self._redraw(shown, width)

    def _window(self, lines: list[Strip], spans: list[tuple[int, int]], chosen: int,
                room: int, width: int) -> list[Strip]:
        """The rows' lines that fit in ``room``, the selected box's among them, and a
        last line saying how many boxes are above and below when not all fit."""
        if len(lines) <= room:
            self._first = 0
            return lines
        room = max(1, room - 1)  # the line that says what is not shown
        first, end = spans[chosen] if spans else (0, 0)
        if first < self._first:
            self._first = first
        elif end > self._first + room:
            self._first = min(first, end - room)
        self._first = max(0, min(self._first, len(lines) - room))
        top, bottom = self._first, self._first + room
        above = sum(1 for s, _e in spans if s < top)
        below = sum(1 for _s, e in spans if e > bottom)
        parts = [f"↑ {above} above" if above else "", f"↓ {below} more" if below else ""]
        more = "  " + "  ".join(p for p in parts if p) + " (↑↓ j k)"
        if self._more is None or self._more[:2] != (more, width):
            self._more = (more, width, self._strip(Text(more, style="dim"), width))
        return [*lines[top:bottom], self._more[2]]

    def _redraw(self, shown: list[Strip], width: int) -> None:
        """Only the lines that changed are drawn again (an unchanged box keeps its very
        strips); everything when the number of lines changed."""
        old, self._shown = self._shown, shown
        if len(old) != len(shown):
            self.refresh()
            return
        y = 0
        while y < len(shown):
            if shown[y] is old[y]:
                y += 1
                continue
            end = y
            while end < len(shown) and shown[end] is not old[end]:
                end += 1
            self.refresh(Region(0, y, width, end - y))
            y = end

    def render_line(self, y: int) -> Strip:
        if y < len(self._shown):
            return self._shown[y]
        return Strip.blank(self.size.width)
