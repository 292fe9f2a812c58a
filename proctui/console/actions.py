"""What the console's keys do to its panes: layout, following, wrapping, scrolling,
clearing, searching, and the help and timeline screens. A mixin of the app, kept apart so
that each module holds one idea."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual import events
from textual.widgets import Input

from proctui.console.dialogs import HelpScreen, TimelineScreen

if TYPE_CHECKING:
    from proctui.console.app import ProctuiApp

    _Base = ProctuiApp
else:
    _Base = object


class PaneActions(_Base):
    def action_zoom(self) -> None:
        self.grid = not self.grid
        self._layout()
        self.tick()

    def action_follow(self) -> None:
        output = self.selected_pane.output
        output.follow = not output.follow

    def action_wrap(self) -> None:
        output = self.selected_pane.output
        output.wrap = not output.wrap

    def action_end(self) -> None:
        self.selected_pane.output.end()

    def action_home(self) -> None:
        self.selected_pane.output.home()

    def action_scroll_up_page(self) -> None:
        self.selected_pane.output.page(-1)

    def action_scroll_down_page(self) -> None:
        self.selected_pane.output.page(1)

    def action_clear(self) -> None:
        self._send(self.core.clear_output(self.selected_view.name))
        self.selected_pane.output.end()

    def action_help(self) -> None:
        self.push_screen(HelpScreen())

    def action_timeline(self) -> None:
        from proctui import timeline

        entries = self.core.journal()
        if not entries:
            self.notify("Nothing in the journal yet", markup=False)
            return
        picture = timeline.build(entries)
        self.push_screen(TimelineScreen(timeline.text(picture, max(40, self.size.width - 8))))

    def action_search(self) -> None:
        box = self._search
        box.disabled = False
        box.display = True
        box.focus()

    def _close_search(self) -> None:
        box = self._search
        box.display = False
        box.disabled = True  # a hidden input must never swallow the app's keys
        self.set_focus(None)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id != "search":
            return
        term = event.value.strip()
        output = self.selected_pane.output
        self._close_search()
        output.search = term or None
        output.current_match = None
        if not term:
            return
        got = self.core.buffer(self.selected_view.name).read(0)
        needle = term.lower()
        self._matches = [got.first + i for i, line in enumerate(got.lines)
                         if needle in line.lower()]
        if not self._matches:
            self.notify(f"No match for {term!r}", markup=False)
            return
        self._match_index = len(self._matches) - 1
        self._show_match()

    def on_key(self, event: events.Key) -> None:
        if event.key == "escape" and self._search.display:
            self._close_search()
            event.stop()

    def action_next_match(self, direction: int) -> None:
        if not self._matches:
            self.notify("No search: press / first", markup=False)
            return
        self._match_index = max(0, min(len(self._matches) - 1, self._match_index + direction))
        self._show_match()

    def _show_match(self) -> None:
        output = self.selected_pane.output
        number = self._matches[self._match_index]
        output.current_match = number
        output.show_line(number)
        self.notify(f"match {self._match_index + 1} of {len(self._matches)}", timeout=1.5,
                    markup=False)
