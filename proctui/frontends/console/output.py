"""A process's output pane: a header with its state and countdown, and its scrollback
drawn straight from the core's ring buffer with Textual's line API (a ScrollView that
renders only the lines on screen, as Textual's own Log and Toolong do).

With wrap on the scroll position counts rows, so the scrollbar is true when long lines
wrap (wrapped_rows holds each line's rows); with wrap off a line is a row. Following
means showing the newest line at the bottom; scrolling up holds the pane still while
output goes on arriving.
"""

from __future__ import annotations

from collections.abc import Callable

from rich.console import Console
from rich.segment import Segment
from rich.style import Style
from textual.containers import Container, Vertical
from textual.geometry import Size
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from proctui.core.output.lines import OutputBuffer, Stream
from proctui.core.view import ProcessView
from proctui.frontends.console.header import PaneHeader
from proctui.frontends.console.lines_draw import LineDrawer, exact_rows
from proctui.frontends.console.wrapped_rows import ScrollRows

COUNT_EVERY = 0.05  # seconds between rounds of counting estimated lines exactly
COUNT_FOR = 0.002  # seconds a round may take


class OutputView(ScrollView, can_focus=False):
    # The pane never scrolls sideways (long lines wrap or are cut with …): a horizontal
    # scrollbar would take the bottom row and hide the newest line under it.
    DEFAULT_CSS = """
    OutputView { height: 1fr; scrollbar-size-vertical: 1; overflow-x: hidden; overflow-y: auto; }
    """

    follow: reactive[bool] = reactive(True)
    wrap: reactive[bool] = reactive(True)
    search: reactive[str | None] = reactive(None)
    current_match: reactive[int | None] = reactive(None)

    def __init__(self, buffer: OutputBuffer, **kw: object) -> None:
        super().__init__(**kw)  # type: ignore[arg-type]
        self.buffer = buffer
        self._data: tuple[int, int, str, int, int] | None = None
        self._renumbered = 0
        self._rows: list[Strip] = []
        self._rows_key: tuple[object, ...] | None = None
        self._drawer = LineDrawer()  # each line's rows, drawn once
        self._base = Style()  # the pane's own style, read once per screen drawn
        self._space = ScrollRows(buffer)  # the scroll range: rows with wrap on
        self._counting = False  # a timer will count estimated lines exactly
        self._resyncing = False  # lines drawn changed the range: sync soon
        self.on_position: Callable[[str], None] | None = None
        self._room_key: tuple[object, ...] | None = None
        self._room_size = Size(0, 0)

    # -- the data -------------------------------------------------------------------

    def sync(self, held: tuple[int, int] | None = None) -> None:
        """Take in what the core has added (called each tick): lines, a cleared pane, a
        progress bar's partial line. Held (not following), the same row of the same line
        stays on top: ``held``, or the one on top now."""
        buf = self.buffer
        mark = buf.mark()
        data = (mark.total, mark.first, mark.partial, mark.cleared_before, buf.renumbered)
        if data == self._data:
            return
        space = self._space
        if held is None and not self.follow:
            held = space.at(int(self.scroll_y))  # in the range as it is, before it moves
        if self._renumbered != buf.renumbered:
            self._renumbered = buf.renumbered
            self._drawer.clear()  # the lines it holds took new numbers: see receive
        self._data = data
        # As wide as the room beside the scrollbar, never wider: see DEFAULT_CSS.
        width = self._room.width
        space.measure(mark.total, mark.first, mark.partial, width if self.wrap else None,
                      self._exact)
        self._count_later()
        self.virtual_size = Size(width, space.range)
        if self.follow:
            self._scroll(self.max_scroll_y)
        elif held is not None:
            # Old lines leave the ring as new ones come: keep the same line on top.
            line, into = held
            into = min(into, space.rows(line) - 1)
            self._scroll(space.row_of(line) + into if line >= space.first else 0)
        self.refresh()

    def _exact(self, line: str, stream: int, width: int) -> int:
        return exact_rows(self.app.console, line, stream, width)

    def _count_later(self) -> None:
        if self._space.map.pending and not self._counting and self.is_mounted:
            self._counting = True
            self.set_timer(COUNT_EVERY, self._count)

    def _count(self) -> None:
        """A few milliseconds counting estimated lines exactly: the scroll range comes
        true without a flood paying for it, the same line held on top."""
        self._counting = False
        held = None if self.follow else self._space.at(int(self.scroll_y))
        if self._space.count_some(self._exact, COUNT_FOR):
            self._data = None
            self.sync(held)
        self._count_later()

    def _drawn_rows(self, number: int, count: int, growing: bool) -> None:
        if self._space.drawn(number, count, self._room.width, growing):
            self._resync_soon()  # the lines on screen moved the end of the range

    def _resync_soon(self) -> None:
        if not self._resyncing:
            self._resyncing = True
            self.call_later(self._resync)

    def _resync(self) -> None:
        self._resyncing = False
        self._data = None
        self.sync()

    # The operator's own scrolling (wheel, scrollbar) decides following: up holds the
    # pane still, back at the end follows again. Watched on the public scroll_y, with our
    # own moves (following, holding a line, paging, a resize) marked so they never count,
    # and Textual's: a move up onto the end is the range cut short under it (a taller
    # pane), which made a pane held with f follow again, the text being read scrolling on.
    _ours = False

    def _scroll(self, y: float) -> None:
        self._ours = True
        try:
            self.scroll_to(y=y, animate=False, immediate=True)
        finally:
            self._ours = False

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        if not self._ours and not old_value > new_value >= self.max_scroll_y:
            self._user_scrolled()

    def _user_scrolled(self) -> None:
        self.follow = self.scroll_y >= self.max_scroll_y
        self._tell_position()

    def _tell_position(self) -> None:
        """The pane's header says where the pane is held, at once, not at the next tick."""
        if self.on_position is not None:
            self.on_position(self.position)

    def watch_follow(self) -> None:
        if self.follow:
            self._scroll(self.max_scroll_y)
        self.refresh()
        self._tell_position()

    def watch_wrap(self) -> None:
        self._data = None  # the scroll range changes unit: rows, or lines
        self.sync()
        self.refresh()
        self._tell_position()

    def watch_search(self) -> None:
        self.refresh()

    def watch_current_match(self) -> None:
        self.refresh()

    def on_resize(self) -> None:
        self._data = None
        self.sync()

    # -- moving ---------------------------------------------------------------------

    def end(self) -> None:
        self.follow = True

    def home(self) -> None:
        self.follow = False
        self._scroll(0)
        self._tell_position()

    def page(self, direction: int) -> None:
        step = max(1, self._room.height - 1) * direction
        self.follow = False
        self._scroll(max(0, min(self.max_scroll_y, int(self.scroll_y) + step)))
        if direction > 0:
            self._user_scrolled()
        self._tell_position()

    def show_line(self, number: int) -> None:
        """Hold the pane with line ``number`` about a third of the way down."""
        self.follow = False
        self._scroll(max(0, self._space.row_of(number) - self._room.height // 3))
        self._tell_position()

    @property
    def top_line(self) -> int:
        return self._space.at(int(self.scroll_y))[0]

    @property
    def position(self) -> str:
        """Where the pane is, for its header."""
        if self.follow:
            return ""
        top, total = self.top_line, self.buffer.total
        if top >= total:  # nothing yet below a clear (it read "held at 43/42")
            return "held at the end (End follows)"
        return f"held at {top + 1}/{total} (End follows)"

    # -- drawing --------------------------------------------------------------------

    @property
    def _room(self) -> Size:
        """The rows and columns the lines are drawn in: the pane less its scrollbar. Asked
        for every row drawn: worked out once per size and scrollbar (a walk of styles)."""
        key = (self.size, self.show_vertical_scrollbar, self.show_horizontal_scrollbar)
        if key != self._room_key:
            self._room_key, self._room_size = key, self.scrollable_content_region.size
        return self._room_size

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._room_key = None  # (the grid's CSS takes the scrollbar away at the same size)

    def render_line(self, y: int) -> Strip:
        width, height = self._room
        key = (self._data, self.follow, int(self.scroll_y), width, height, self.wrap,
               self.search, self.current_match)
        if key != self._rows_key:
            self._rows_key = key
            self._rows = self._layout(width, height)
        if y < len(self._rows):
            return self._rows[y]
        return Strip.blank(width, self.rich_style)

    def _layout(self, width: int, height: int) -> list[Strip]:
        if width <= 0 or height <= 0:
            return []
        if self.wrap and width != self._space.width:
            # The scrollbar came or went (Textual sends no Resize): count at this width.
            self._resync_soon()
        self._base = self.rich_style  # once per screen: it walks the widget's ancestors
        console = self.app.console
        buf = self.buffer
        if self.follow:
            start = max(buf.first, buf.total - height)
            lines = self._lines(start, height)
            if buf.partial:
                lines.append((buf.total, buf.partial, Stream.STDOUT))
            rows: list[Strip] = []
            for number, line, stream in reversed(lines):
                strips = self._line_strips(console, number, line, stream, width)
                room = height - len(rows)
                if len(strips) > room:
                    # The line at the top does not fit: its beginning, cut with "…", not
                    # its tail ("wait)" alone, in a pane of two rows beside a question).
                    rows[:0] = [*strips[:room - 1], _cut(strips[room - 1], width)]
                    break
                rows[:0] = strips
                if len(rows) >= height:
                    break
            return rows
        top, into = self._space.at(int(self.scroll_y))
        lines = self._lines(top, height)
        if buf.partial and len(lines) < height:
            lines.append((buf.total, buf.partial, Stream.STDOUT))
        rows = []
        for number, line, stream in lines:
            rows.extend(self._line_strips(console, number, line, stream, width)[into:])
            into = 0
            if len(rows) >= height:
                break
        return rows[:height]

    def _lines(self, start: int, count: int) -> list[tuple[int, str, int]]:
        got = self.buffer.read(start, count)
        return [(got.first + i, line, stream)
                for i, (line, stream) in enumerate(zip(got.lines, got.streams, strict=True))]

    def _line_strips(self, console: Console, number: int, line: str, stream: int,
                     width: int) -> list[Strip]:
        growing = number >= self.buffer.total
        strips, _drawn = self._drawer.rows(
            console, number, line, stream, width, growing=growing, wrap=self.wrap,
            search=self.search, base=self._base,
            current=self.search is not None and number == self.current_match)
        if self.wrap:
            self._drawn_rows(number, len(strips), growing)
        return strips

    @property
    def drawn(self) -> int:
        """Lines drawn (not taken from the cache): for tests."""
        return self._drawer.drawn

    def text(self) -> str:
        """What the pane shows, as plain text (for tests and screen readers)."""
        return "\n".join(strip.text for strip in self._rows)


def _cut(row: Strip, width: int) -> Strip:
    """``row`` with its last cell a dim "…": the line goes on beyond it."""
    return Strip.join([row.crop(0, max(0, width - 1)), Strip([Segment("…", _DIM)], 1)])


_DIM = Style(dim=True)


class ProcessPane(Vertical):
    """A header and the output of one process."""

    DEFAULT_CSS = "ProcessPane { height: 1fr; }"

    def __init__(self, name: str, buffer: OutputBuffer, **kw: object) -> None:
        super().__init__(**kw)  # type: ignore[arg-type]
        self.proc_name = name
        self.header = PaneHeader()
        self.output = OutputView(buffer)
        self.output.on_position = self._position

    def compose(self):  # type: ignore[no-untyped-def]
        yield self.header
        yield self.output

    def _position(self, _position: str) -> None:
        self.header.note = self.note

    @property
    def note(self) -> str:
        """The pane's state beside its header: where it is held, and "wrap off" (the
        default, wrapping, says nothing)."""
        output = self.output
        return " · ".join(part for part in (output.position,
                                             "" if output.wrap else "wrap off") if part)

    def show(self, view: ProcessView, now: float) -> None:
        """Bring the pane up to date (each tick, with the clock as finely as the screen
        shows it); reactives redraw only what changed."""
        self.header.view = view
        self.header.now = now
        self.header.note = self.note
        self.output.sync()


class Panes(dict[str, ProcessPane]):
    """The panes made so far, by process name: asking for one not yet made makes it
    (``get`` does not: a pane never shown needs no drawing)."""

    def __init__(self, make: Callable[[str], ProcessPane]) -> None:
        super().__init__()
        self._make = make

    def __missing__(self, name: str) -> ProcessPane:
        pane = self[name] = self._make(name)
        return pane


class PaneArea(Container):
    """The panes' room. The grid's page is worked out from its size, which is known only
    once the screen is laid out again: at the app's own resize it is still the old one
    (a grid of three panes stayed at 60x15, and a page of one at 120x30 again).
    ``resized`` is told each new size."""

    def __init__(self, resized: Callable[[], None], **kw: object) -> None:
        super().__init__(**kw)  # type: ignore[arg-type]
        self._resized = resized

    def on_resize(self) -> None:
        self._resized()
