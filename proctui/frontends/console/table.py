"""The process table: one row per process, scrolled so the selected row stays in view,
with a "+N more" line when some rows do not fit."""

from __future__ import annotations

from rich.cells import cell_len
from rich.style import Style
from rich.text import Text
from textual.reactive import reactive
from textual.strip import Strip
from textual.widget import Widget

from proctui.core.life.stop import Phase
from proctui.core.view import ProcessView, Usage
from proctui.frontends.console.render import (
    bar_column,
    countdown_text,
    fit,
    memory,
    name_cells,
    restart_words,
    segments,
)
from proctui.frontends.words import countdown, duration, look, running_words
from proctui.records import dataclass


@dataclass(frozen=True, slots=True)
class Row:
    view: ProcessView
    usage: Usage | None
    active: bool  # printed something since it was last selected
    number: int  # 1-9: its shortcut; 0: none


class ProcessTable(Widget):
    """Mark, number, name, pid, state, uptime or countdown or outcome, restarts, CPU and
    memory of its processes, and an activity mark."""

    DEFAULT_CSS = "ProcessTable { height: auto; }"

    rows: reactive[tuple[Row, ...]] = reactive((), layout=True)
    selected: reactive[int] = reactive(0)
    now: reactive[float] = reactive(0.0)  # the tick's one reading of the clock

    def get_content_height(self, container, viewport, width: int) -> int:  # type: ignore[no-untyped-def]
        return len(self.rows) + 1

    @property
    def window(self) -> tuple[int, int, int]:
        """(first row shown, rows shown, rows hidden)."""
        count = len(self.rows)
        room = max(1, self.size.height - 1)
        if count <= room:
            return 0, count, 0
        room = max(1, room - 1)  # the "+N more" line takes one
        first = min(max(0, self.selected - room + 1), count - room)
        return first, room, count - room

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        if y == 0:
            return self._strip(self._header(width), width, Style(bold=True, dim=True))
        first, room, hidden = self.window
        if y - 1 < room:
            index = first + y - 1
            if index >= len(self.rows):
                return Strip.blank(width)
            selected = index == self.selected
            # A background, not reverse video: state colours stay readable on it.
            style = Style(bgcolor="bright_black", bold=True) if selected else Style()
            return self._strip(self._row(self.rows[index], selected, width), width, style)
        if y - 1 == room and hidden:
            above, below = first, len(self.rows) - first - room
            parts = [f"↑ {above} above" if above else "", f"↓ {below} more" if below else ""]
            text = "  " + "  ".join(p for p in parts if p) + " (j/k)"
            return self._strip(Text(text, style="dim"), width, Style())
        return Strip.blank(width)

    def _columns(self, width: int) -> tuple[int, bool]:
        """Name width, and whether CPU/memory/restarts fit."""
        names = max((cell_len(r.view.name) for r in self.rows), default=4)
        # Narrow: no PID, CPU or memory (the pane's header has the pid); STATUS needs it.
        wide = width >= 70
        fixed = 4 + 11 + (8 + 17 if wide else 0) + 2
        # Up to a quarter of a wide screen (22 cells at 80 columns, 30 at 120).
        return max(4, min(names, max(22, width // 4), width - fixed - 16)), wide

    def _header(self, width: int) -> Text:
        name_w, wide = self._columns(width)
        pid = f"{'PID':>7} " if wide else ""
        head = f"    {'NAME'.ljust(name_w)} {pid}{'STATE':<10} "
        tail = f" {'↻':>3} {'CPU':>5} {'MEM':>6}  " if wide else "  "
        return Text(head + "STATUS".ljust(max(0, width - len(head) - len(tail))) + tail)

    def _row(self, row: Row, selected: bool, width: int) -> Text:
        text, tail, merged = self._lead(row, selected, width)
        view = row.view
        room = max(0, width - text.cell_len - len(tail) - 1)
        detail = self._detail(view, room, self._bar(width))
        if merged:
            detail.stylize(look(view).style, 0, len(look(view).label))
        text.append_text(detail)
        text.append(tail)
        text.append("•" if row.active and not selected else " ", style="bold yellow")
        return text

    _bars: tuple[object, ...] = ()
    _bar_column: tuple[int, int] | None = None

    def _bar(self, width: int) -> tuple[int, int] | None:
        """Where this frame's countdown bars stand, and their length (render.bar_column)."""
        key = (self.rows, self.now, width)
        if key != self._bars:
            now = self.now
            rows = []
            for row in self.rows:
                cd = countdown(row.view, now)
                if cd is not None:
                    text, tail, _ = self._lead(row, False, width)
                    rows.append((cd, max(0, width - text.cell_len - len(tail) - 1), True))
            self._bars, self._bar_column = key, bar_column(rows)
        return self._bar_column

    def _lead(self, row: Row, selected: bool, width: int) -> tuple[Text, str, bool]:
        """A row up to its status, what follows the status, and whether the outcome
        stands in the STATE column."""
        view = row.view
        name_w, wide = self._columns(width)
        lk = look(view)
        text = Text()
        text.append(f"{row.number if row.number else ' '}", style="dim")
        text.append("▶" if selected else " ")
        text.append(lk.mark + " ", style=lk.style)
        text.append(name_cells(view.name, name_w) + " ", style="bold")
        if wide:
            text.append(f"{view.pid or '-':>7} ")
        outcome = _ended_words(view)
        # An ended process's outcome begins with its state ("stopped after 7.0s: ..."):
        # it starts in the STATE column, and has no CPU or memory to show either, so it
        # takes their room too (at 60 and 80 columns its exit code was cut off).
        merged = bool(outcome) and outcome.startswith(lk.label)
        if not merged:
            text.append(f"{lk.label:<10} ", style=lk.style)
        if wide and view.alive:
            usage = row.usage
            cpu = f"{usage.cpu_percent:.0f}%" if usage else "-"
            mem = memory(usage.rss_bytes) if usage else "-"
            tail = f" {view.restarts:>3} {cpu:>5} {mem:>6} "
        elif wide and view.restarts and not outcome:
            tail = f" {view.restarts:>3} {'-':>5} {'-':>6} "
        else:
            tail = " "
        return text, tail, merged

    def _detail(self, view: ProcessView, room: int, column: tuple[int, int] | None) -> Text:
        now = self.now
        cd = countdown(view, now)
        if cd is not None:
            return countdown_text(cd, room, short=True, column=column)
        if view.phase is Phase.RUNNING and view.started_at is not None:
            words = running_words(view, now)
        elif view.phase is Phase.BACKOFF and view.restart_at is not None:
            words = restart_words(view, now)
        elif view.phase in (Phase.WAITING, Phase.STARTING) and view.waiting_for:
            words = f"waiting for {', '.join(view.waiting_for)}"
        elif view.phase is Phase.HELD:
            words = f"held: {view.held}"
        elif _ended_words(view):
            ago = f" ({duration(now - view.ended_at)} ago)" if view.ended_at else ""
            again = f" · ↻ {view.restarts}" if view.restarts else ""
            # The outcome is the news; when, and how often it restarted, only where the
            # room allows it.
            words = _ended_words(view)
            for extra in (again, ago):
                words += extra if len(words + extra) <= room else ""
        else:
            words = ""
        return fit(Text(words), room)

    def _strip(self, text: Text, width: int, style: Style) -> Strip:
        return Strip(segments(text, self.app.console)).crop_extend(0, width, None) \
            .apply_style(style)


def _ended_words(view: ProcessView) -> str:
    """What an ended process's row says from its STATE column on: its outcome, or why it
    never started ("not started" alone, beside 50 empty columns, left the operator to
    find the reason in its pane)."""
    if view.phase is not Phase.ENDED:
        return ""
    if view.outcome is not None:
        return view.outcome.text
    return f"not started: {view.not_started}" if view.not_started else ""
