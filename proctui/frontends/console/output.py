"""A process's output pane: a header with its state and countdown, and its scrollback
drawn straight from the core's ring buffer with Textual's line API (a ScrollView that
renders only the lines on screen, as Textual's own Log and Toolong do).

The scroll position counts lines of the buffer (a wrapped line takes several rows but
one step). Following means showing the newest line at the bottom; scrolling up holds
the pane still while output goes on arriving.
"""

from __future__ import annotations

from collections.abc import Callable

from rich.console import Console
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.cache import LRUCache
from textual.containers import Vertical
from textual.geometry import Size
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widget import Widget

from proctui.core.life.stop import Phase
from proctui.core.output.lines import OutputBuffer, Stream
from proctui.core.view import ProcessView
from proctui.frontends.console.render import (
    ansi_text,
    countdown,
    countdown_text,
    fit,
    look,
    restart_words,
    running_words,
    segments,
)

STRIP_CACHE = 2000  # lines: a few screens of a tall pane, wrapped or not
_STREAM_STYLE = {Stream.STDOUT: "", Stream.STDERR: "red", Stream.PROCTUI: "bold cyan"}


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
        self._first = 0  # buffer line number at virtual line 0
        self._data: tuple[int, int, str, int, int] | None = None
        self._renumbered = 0
        self._rows: list[Strip] = []
        self._rows_key: tuple[object, ...] | None = None
        # Each buffer line's rows, drawn once (as Textual's Log keeps a strip per line): a
        # line's number names its text for good, so a new line costs one line's drawing
        # and the rest of the screen comes from here.
        self._strips: LRUCache[tuple[object, ...], list[Strip]] = LRUCache(STRIP_CACHE)
        self.drawn = 0  # lines drawn (not taken from the cache): for tests
        self._base = Style()  # the pane's own style, read once per screen drawn
        self._top_shown = 0  # line number at the top of the screen, as last drawn
        self.on_position: Callable[[str], None] | None = None
        self._room_key: tuple[object, ...] | None = None
        self._room_size = Size(0, 0)

    # -- the data -------------------------------------------------------------------

    def sync(self) -> None:
        """Take in what the core has added (called each tick): lines, a cleared pane, a
        progress bar's partial line."""
        buf = self.buffer
        data = (buf.total, buf.first, buf.partial, buf.cleared_before, buf.renumbered)
        if data == self._data:
            return
        if self._renumbered != buf.renumbered:
            self._renumbered = buf.renumbered
            self._strips.clear()  # the lines it holds took new numbers: see receive
        self._data = data
        held = self._top_shown
        self._first = buf.first
        count = buf.total - buf.first + (1 if buf.partial else 0)
        # As wide as the room beside the scrollbar, never wider: see DEFAULT_CSS.
        # The scroll position counts lines. With wrap on, the last screen holds fewer lines
        # than rows: the end of the scroll range is where the last line is at the bottom,
        # so the scrollbar reaches its end exactly when the newest line is in view.
        width, height = self._room
        at_end = self._lines_at_end(width, height)
        self.virtual_size = Size(width, count - at_end + height if count > at_end else count)
        if self.follow:
            self._scroll(self.max_scroll_y)
        else:
            # Old lines leave the ring as new ones come: keep the same line on top.
            self._scroll(max(0, held - self._first))
        self.refresh()

    # The operator's own scrolling (wheel, scrollbar) decides following: up holds the
    # pane still, back at the end follows again. Watched on the public scroll_y, with our
    # own moves (following, holding a line, paging, a resize) marked so they never count.
    _ours = False

    def _scroll(self, y: float) -> None:
        self._ours = True
        try:
            self.scroll_to(y=y, animate=False, immediate=True)
        finally:
            self._ours = False

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        if not self._ours:
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
        self._data = None  # the lines on the last screen change: so does the scroll range
        self.sync()
        self.refresh()
        self._tell_position()

    def _lines_at_end(self, width: int, height: int) -> int:
        """How many whole lines fit in the bottom ``height`` rows, the last at the bottom
        (drawn through the strip cache: the last screen is drawn anyway)."""
        if not self.wrap or width <= 0 or height <= 0 or not self.is_mounted:
            return height
        self._base = self.rich_style
        buf = self.buffer
        lines = self._lines(max(buf.first, buf.total - height), height)
        if buf.partial:
            lines.append((buf.total, buf.partial, Stream.STDOUT))
        used = fitted = 0
        for number, line, stream in reversed(lines):
            used += len(self._render(self.app.console, number, line, stream, width))
            if used > height:
                break
            fitted += 1
        return max(1, fitted)

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
        self._scroll(max(0, min(self.max_scroll_y, self.top_line - self._first + step)))
        if direction > 0:
            self._user_scrolled()
        self._tell_position()

    def show_line(self, number: int) -> None:
        """Hold the pane with line ``number`` about a third of the way down."""
        self.follow = False
        self._scroll(max(0, number - self._first - self._room.height // 3))
        self._tell_position()

    @property
    def top_line(self) -> int:
        return self._first + int(self.scroll_y)

    @property
    def position(self) -> str:
        """Where the pane is, for its header."""
        if self.follow:
            return ""
        return f"held at {self.top_line + 1}/{self.buffer.total} (End follows)"

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
        self._base = self.rich_style  # once per screen: it walks the widget's ancestors
        console = self.app.console
        buf = self.buffer
        if self.follow:
            start = max(buf.first, buf.total - height)
            lines = self._lines(start, height)
            if buf.partial:
                lines.append((buf.total, buf.partial, Stream.STDOUT))
            rows: list[Strip] = []
            top = buf.total
            for number, line, stream in reversed(lines):
                rows[:0] = self._render(console, number, line, stream, width)
                top = number
                if len(rows) >= height:
                    break
            self._top_shown = top
            return rows[-height:]
        top = self.top_line
        lines = self._lines(top, height)
        if buf.partial and len(lines) < height:
            lines.append((buf.total, buf.partial, Stream.STDOUT))
        rows = []
        for number, line, stream in lines:
            rows.extend(self._render(console, number, line, stream, width))
            if len(rows) >= height:
                break
        self._top_shown = top
        return rows[:height]

    def _lines(self, start: int, count: int) -> list[tuple[int, str, int]]:
        got = self.buffer.read(start, count)
        return [(got.first + i, line, stream)
                for i, (line, stream) in enumerate(zip(got.lines, got.streams, strict=True))]

    def _render(self, console: Console, number: int, line: str, stream: int,
                width: int) -> list[Strip]:
        partial = line if number >= self.buffer.total else None  # still growing
        key = (number, partial, stream, width, self.wrap, self.search,
               self.search is not None and number == self.current_match, self._base)
        cached = self._strips.get(key)
        if cached is None:
            cached = self._strips[key] = self._draw(console, number, line, stream, width)
        return cached

    def _draw(self, console: Console, number: int, line: str, stream: int,
              width: int) -> list[Strip]:
        self.drawn += 1
        if stream == Stream.PROCTUI:
            text = Text("── " + line, style=_STREAM_STYLE[Stream.PROCTUI], no_wrap=True)
        else:
            text = ansi_text(line, _STREAM_STYLE.get(stream, ""))
        if self.search:
            style = "reverse bold" if number == self.current_match else "reverse"
            text.highlight_words([self.search], style=style, case_sensitive=False)
        if self.wrap and text.cell_len > width:
            pieces = text.wrap(console, width, overflow="fold", no_wrap=False)
        else:
            if text.cell_len > width:
                text.truncate(max(1, width - 1))
                text.append("…", style="dim")
            pieces = [text]
        base = self._base
        return [Strip(segments(piece, console) if piece.cell_len else [Segment("")])
                .crop_extend(0, width, base).apply_style(base) for piece in pieces]

    def text(self) -> str:
        """What the pane shows, as plain text (for tests and screen readers)."""
        return "\n".join(strip.text for strip in self._rows)


class PaneHeader(Widget):
    """Name, state and, while stopping, the live countdown with its bar."""

    DEFAULT_CSS = "PaneHeader { height: 1; }"

    view: reactive[ProcessView | None] = reactive(None, layout=False)
    now: reactive[float] = reactive(0.0)  # the tick's one reading of the clock
    note: reactive[str] = reactive("")

    def render(self) -> Text:
        view = self.view
        if view is None:
            return Text("")
        now = self.now
        lk = look(view)
        text = Text()
        text.append(f" {lk.mark} ", style=lk.style)
        text.append(view.name, style="bold")
        text.append(f"  {lk.label}", style=lk.style)
        if view.pid:
            text.append(f"  pid {view.pid}", style="dim")
        text.append("  ")
        room = max(0, self.size.width - text.cell_len - len(self.note) - 2)
        cd = countdown(view, now)
        if cd is not None:
            text.append_text(countdown_text(cd, room, short=len(cd.text) + 8 > room))
        elif view.phase is Phase.ENDED and view.outcome is not None:
            text.append_text(fit(Text(view.outcome.text, style=lk.style), room))
        elif view.phase is Phase.RUNNING and view.started_at is not None:
            text.append_text(fit(Text(running_words(view, now)), room))
        elif view.phase is Phase.BACKOFF and view.restart_at is not None:
            text.append_text(fit(Text(restart_words(view, now)), room))
        elif view.phase is Phase.WAITING:
            text.append_text(fit(Text(f"waiting for {', '.join(view.waiting_for)}"), room))
        else:
            text.append_text(fit(Text(view.held or ""), room))
        if self.note:
            text.append(" " + self.note, style="bold yellow")
        return text


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
