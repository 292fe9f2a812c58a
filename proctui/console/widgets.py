"""The console's widgets. They only read ProcessViews and output buffers; every command
goes through the app to the supervisor."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from rich.console import Console
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.containers import Vertical
from textual.events import MouseScrollDown, MouseScrollUp
from textual.strip import Strip
from textual.widget import Widget

from proctui.console.render import Countdown, ansi_text, bar, countdown, duration, look, memory
from proctui.core.lines import OutputBuffer, Stream
from proctui.core.machine import Phase
from proctui.core.view import ProcessView, Usage

_STREAM_STYLE = {Stream.STDOUT: "", Stream.STDERR: "red", Stream.PROCTUI: "bold cyan"}


@dataclass
class Row:
    view: ProcessView
    usage: Usage | None
    active: bool  # printed something since it was last selected


class ProcessTable(Widget):
    """One row per process: mark, name, pid, state, uptime or countdown or outcome,
    restarts, CPU and memory of its whole group, and an activity mark."""

    DEFAULT_CSS = "ProcessTable { height: auto; }"

    def __init__(self, **kw: object) -> None:
        super().__init__(**kw)  # type: ignore[arg-type]
        self.rows: list[Row] = []
        self.selected = 0
        self.now = 0.0
        self._key: object = None

    def update_rows(self, rows: list[Row], selected: int, now: float) -> None:
        grew = len(rows) != len(self.rows)
        self.rows, self.selected, self.now = rows, selected, now
        # Redraw only when something on screen changes: idle, that is once a second.
        key = (selected, tuple(_row_key(row, now) for row in rows))
        if grew:
            self.refresh(layout=True)
        elif key == self._key:
            return
        self._key = key
        self.refresh()

    def get_content_height(self, container, viewport, width: int) -> int:  # type: ignore[no-untyped-def]
        return len(self.rows) + 1

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        if y == 0:
            return self._strip(self._header(width), width, Style(bold=True, dim=True))
        # More rows than fit: scroll so that the selected one stays in view.
        visible = max(1, self.size.height - 1)
        offset = min(max(0, self.selected - visible + 1), max(0, len(self.rows) - visible))
        index = y - 1 + offset
        if index >= len(self.rows):
            return Strip.blank(width)
        row = self.rows[index]
        # A background, not reverse video: the state colours stay readable on the selection.
        style = Style(bgcolor="bright_black", bold=True) if index == self.selected else Style()
        return self._strip(self._row(row, index == self.selected, width), width, style)

    def _columns(self, width: int) -> tuple[int, bool]:
        """Name width, and whether CPU/memory/restarts fit."""
        names = max((len(r.view.name) for r in self.rows), default=4)
        wide = width >= 70
        fixed = 2 + 2 + 8 + 11 + (17 if wide else 0) + 2
        name_w = max(4, min(names, 22, width - fixed - 16))
        return name_w, wide

    def _header(self, width: int) -> Text:
        name_w, wide = self._columns(width)
        head = f"    {'NAME'.ljust(name_w)} {'PID':>7} {'STATE':<10} "
        tail = f" {'↻':>3} {'CPU':>5} {'MEM':>6}  " if wide else "  "
        detail = max(0, width - len(head) - len(tail))
        return Text(head + "STATUS".ljust(detail) + tail)

    def _row(self, row: Row, selected: bool, width: int) -> Text:
        view = row.view
        name_w, wide = self._columns(width)
        lk = look(view)
        text = Text()
        text.append("▶ " if selected else "  ")
        text.append(lk.mark + " ", style=lk.style)
        name = view.name if len(view.name) <= name_w else view.name[: name_w - 1] + "…"
        text.append(name.ljust(name_w) + " ", style="bold")
        text.append(f"{view.pid or '-':>7} ")
        text.append(f"{lk.label:<10} ", style=lk.style)
        if wide:
            usage = row.usage
            live = usage is not None and view.phase is not Phase.ENDED
            tail = (f" {view.restarts:>3} "
                    f"{(f'{usage.cpu_percent:.0f}%' if live else '-'):>5} "  # type: ignore[union-attr]
                    f"{(memory(usage.rss_bytes) if live else '-'):>6} ")  # type: ignore[union-attr]
        else:
            tail = " "
        room = max(0, width - text.cell_len - len(tail) - 1)
        text.append_text(self._detail(view, room))
        text.append(tail)
        # The activity mark: an unselected process printed something new.
        text.append("•" if row.active and not selected else " ", style="bold yellow")
        return text

    def _detail(self, view: ProcessView, room: int) -> Text:
        cd = countdown(view, self.now)
        if cd is not None:
            return countdown_text(cd, room, short=True)
        if view.phase is Phase.RUNNING and view.started_at is not None:
            words = f"up {duration(self.now - view.started_at)}"
        elif view.phase is Phase.BACKOFF and view.restart_at is not None:
            words = f"restart in {duration(view.restart_at - self.now + 0.999)}"
        elif view.phase is Phase.ENDED and view.outcome is not None:
            ago = f" ({duration(self.now - view.ended_at)} ago)" if view.ended_at else ""
            words = view.outcome.text + ago
        else:
            words = ""
        return fit(Text(words), room)

    def _strip(self, text: Text, width: int, style: Style) -> Strip:
        return Strip(segments(text, self.app.console)).crop_extend(0, width, None) \
            .apply_style(style)


def _view_key(view: ProcessView, now: float) -> tuple[object, ...]:
    """What a row or header shows of a view, at the resolution it is shown."""
    cd = countdown(view, now)
    return (
        view.name, view.phase, view.pid, view.restarts,
        view.outcome.text if view.outcome else None,
        cd.short if cd else None, cd.text if cd else None,
        round(cd.fraction * 40) if cd and cd.fraction is not None else None,
        int(now - view.started_at) if view.started_at is not None else None,
        int(now - view.ended_at) if view.ended_at is not None else None,
        int(view.restart_at - now) if view.restart_at is not None else None,
    )


def _row_key(row: Row, now: float) -> tuple[object, ...]:
    usage = row.usage
    shown = (round(usage.cpu_percent), usage.rss_bytes >> 17) if usage else None
    return (_view_key(row.view, now), shown, row.active)


def segments(text: Text, console: Console) -> list[Segment]:
    """``Text.render`` drops the base style of a Text that has no spans; keep it."""
    if not text.spans and text.style:
        return [Segment(text.plain, console.get_style(text.style))]
    return list(text.render(console))


def fit(text: Text, room: int) -> Text:
    if text.cell_len > room:
        text.truncate(max(0, room), overflow="ellipsis")
    text.pad_right(max(0, room - text.cell_len))
    return text


def countdown_text(cd: Countdown, room: int, short: bool = False) -> Text:
    """The countdown's words with a bar that empties toward the deadline."""
    words = cd.short if short else cd.text
    text = Text(words, style="yellow")
    if cd.fraction is not None and room - len(words) >= 8:
        width = min(20, room - len(words) - 1)
        style = "red" if cd.fraction < 0.25 else "yellow"
        text.append(" ")
        text.append(bar(cd.fraction, width), style=style)
    return fit(text, room)


class PaneHeader(Widget):
    """Name, state and, while stopping, the live countdown with its bar."""

    DEFAULT_CSS = "PaneHeader { height: 1; }"

    def __init__(self, **kw: object) -> None:
        super().__init__(**kw)  # type: ignore[arg-type]
        self.view: ProcessView | None = None
        self.now = 0.0
        self.note = ""
        self._key: object = None

    def update_view(self, view: ProcessView, now: float, note: str) -> None:
        self.view, self.now, self.note = view, now, note
        key = (_view_key(view, now), note)
        if key != self._key:
            self._key = key
            self.refresh()

    def set_note(self, note: str) -> None:
        if note != self.note:
            self.note = note
            self._key = None
            self.refresh()

    def render(self) -> Text:
        view = self.view
        if view is None:
            return Text("")
        lk = look(view)
        text = Text()
        text.append(f" {lk.mark} ", style=lk.style)
        text.append(view.name, style="bold")
        text.append(f"  {lk.label}", style=lk.style)
        if view.pid:
            text.append(f"  pid {view.pid}", style="dim")
        text.append("  ")
        room = max(0, self.size.width - text.cell_len - len(self.note) - 2)
        cd = countdown(view, self.now)
        if cd is not None:
            text.append_text(countdown_text(cd, room, short=len(cd.text) + 8 > room))
        elif view.phase is Phase.ENDED and view.outcome is not None:
            text.append_text(fit(Text(view.outcome.text, style=lk.style), room))
        elif view.phase is Phase.RUNNING and view.started_at is not None:
            text.append_text(fit(Text(f"up {duration(self.now - view.started_at)}"), room))
        else:
            text.append_text(fit(Text(""), room))
        if self.note:
            text.append(" " + self.note, style="bold yellow")
        return text


class OutputView(Widget):
    """The scrollback of one process, drawn straight from the core's ring buffer: only
    the lines on screen are ever turned into styled text."""

    DEFAULT_CSS = "OutputView { height: 1fr; }"

    def __init__(self, buffer: OutputBuffer, **kw: object) -> None:
        super().__init__(**kw)  # type: ignore[arg-type]
        self.buffer = buffer
        self.follow = True
        self.top = 0  # line number at the top of the screen when not following
        self.wrap = True
        self.search: str | None = None
        self.current_match: int | None = None
        self._rows: list[Strip] = []
        self._first_visible = 0
        self._key: tuple[object, ...] | None = None
        self._position = ""
        self.on_position: Callable[[str], None] | None = None

    # -- scrolling --------------------------------------------------------------------

    def scroll_lines(self, delta: int) -> None:
        if self.follow:
            if delta >= 0:
                return
            self.pause()
        buf = self.buffer
        self.top = max(buf.first, min(self.top + delta, max(buf.first, buf.total - 1)))
        if delta > 0 and self.top >= buf.total - max(1, self.size.height):
            self.follow = True
        self.update_rows()

    def pause(self) -> None:
        """Stop following; keep what is on screen where it is."""
        self.follow = False
        self.top = self._first_visible
        self.update_rows()

    def page(self, direction: int) -> None:
        self.scroll_lines(direction * max(1, self.size.height - 1))

    def home(self) -> None:
        self.follow = False
        self.top = self.buffer.first
        self.update_rows()

    def end(self) -> None:
        self.follow = True
        self.update_rows()

    def show_line(self, number: int) -> None:
        """Scroll so that line ``number`` is on screen (about a third from the top)."""
        self.follow = False
        self.top = max(self.buffer.first, number - self.size.height // 3)
        self.update_rows()

    def on_mouse_scroll_up(self, event: MouseScrollUp) -> None:
        self.scroll_lines(-3)
        event.stop()

    def on_mouse_scroll_down(self, event: MouseScrollDown) -> None:
        self.scroll_lines(3)
        event.stop()

    def on_resize(self) -> None:
        self.update_rows(force=True)

    # -- drawing ----------------------------------------------------------------------

    def update_rows(self, force: bool = False) -> None:
        buf = self.buffer
        width, height = self.size
        key = (buf.total, buf.partial, buf.cleared_before, width, height, self.follow,
               self.top, self.wrap, self.search, self.current_match)
        if key == self._key and not force:
            return
        self._key = key
        if width <= 0 or height <= 0:
            self._rows = []
            return
        console = self.app.console
        if self.follow:
            rows = self._rows_from_bottom(console, width, height)
        else:
            rows = self._rows_from_top(console, width, height)
        self._rows = rows
        self.refresh()
        position = self.position
        if position != self._position and self.on_position is not None:
            self.on_position(position)  # the header says "paused" at once, not next tick
        self._position = position

    def _lines(self, start: int, count: int) -> list[tuple[int, str, int]]:
        got = self.buffer.read(start, count)
        return [(got.first + i, line, stream)
                for i, (line, stream) in enumerate(zip(got.lines, got.streams, strict=True))]

    def _rows_from_bottom(self, console: Console, width: int, height: int) -> list[Strip]:
        buf = self.buffer
        start = max(buf.first, buf.total - height)
        lines = self._lines(start, height)
        if buf.partial:
            lines.append((buf.total, buf.partial, Stream.STDOUT))
        rows: list[Strip] = []
        firsts: list[int] = []
        for number, line, stream in reversed(lines):
            wrapped = self._render(console, number, line, stream, width)
            rows[:0] = wrapped
            firsts[:0] = [number] * len(wrapped)
            if len(rows) >= height:
                break
        rows, firsts = rows[-height:], firsts[-height:]
        self._first_visible = firsts[0] if firsts else buf.total
        return rows

    def _rows_from_top(self, console: Console, width: int, height: int) -> list[Strip]:
        buf = self.buffer
        self.top = max(self.top, buf.first)
        lines = self._lines(self.top, height)
        if buf.partial and len(lines) < height:
            lines.append((buf.total, buf.partial, Stream.STDOUT))
        rows: list[Strip] = []
        for number, line, stream in lines:
            rows.extend(self._render(console, number, line, stream, width))
            if len(rows) >= height:
                break
        self._first_visible = self.top
        return rows[:height]

    def _render(self, console: Console, number: int, line: str, stream: int,
                width: int) -> list[Strip]:
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
                text.truncate(width - 1)
                text.append("…", style="dim")
            pieces = [text]
        return [Strip(segments(piece, console) if piece.cell_len else [Segment("")])
                .crop_extend(0, width, None) for piece in pieces]

    def render_line(self, y: int) -> Strip:
        if y < len(self._rows):
            return self._rows[y]
        return Strip.blank(self.size.width)

    @property
    def position(self) -> str:
        """Where the view is, for the pane header."""
        if self.follow:
            return ""
        return f"paused at {self._first_visible + 1}/{self.buffer.total} (End follows)"


class ProcessPane(Vertical):
    """A header and the output of one process."""

    DEFAULT_CSS = "ProcessPane { height: 1fr; }"

    def __init__(self, name: str, buffer: OutputBuffer, **kw: object) -> None:
        super().__init__(**kw)  # type: ignore[arg-type]
        self.proc_name = name
        self.header = PaneHeader()
        self.output = OutputView(buffer)
        self.output.on_position = self.header.set_note

    def compose(self):  # type: ignore[no-untyped-def]
        yield self.header
        yield self.output


class ShutdownPanel(Widget):
    """While the console quits: every process still stopping, with its countdown."""

    DEFAULT_CSS = "ShutdownPanel { height: auto; display: none; }"

    def __init__(self, **kw: object) -> None:
        super().__init__(**kw)  # type: ignore[arg-type]
        self.views: list[ProcessView] = []
        self.now = 0.0

    def update_views(self, views: list[ProcessView], now: float) -> None:
        stopping = [v for v in views if v.phase.stopping or v.phase is Phase.STARTING]
        grew = len(stopping) != len(self.views)
        self.views, self.now = stopping, now
        self.refresh(layout=grew)

    def get_content_height(self, container, viewport, width: int) -> int:  # type: ignore[no-untyped-def]
        return len(self.views) + 1

    def render(self) -> Text:
        text = Text()
        count = len(self.views)
        width = self.size.width
        title = (f"Quitting: waiting for {count} process{'es' if count != 1 else ''} to stop"
                 " · q again: kill all now · Q: abandon all and exit")
        if len(title) > width:  # one line, always: the rows below must all stay in view
            title = f"Quitting: {count} stopping · q: kill all · Q: abandon all"
        text.append_text(fit(Text(title, style="bold"), width))
        width = self.size.width
        name_w = max((len(v.name) for v in self.views), default=4)
        for view in self.views:
            text.append("\n")
            lk = look(view)
            text.append(f" {lk.mark} ", style=lk.style)
            text.append(view.name.ljust(name_w), style="bold")
            text.append(f"  {view.pid or '-':>7}  ")
            room = max(0, width - 3 - name_w - 11)
            cd = countdown(view, self.now)
            if cd is not None:
                text.append_text(countdown_text(cd, room))
        return text
