"""Searching the selected pane: / opens the box, Enter finds, n and N go from match to
match, over the lines that came since as well."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from textual.widgets import Input

    from proctui.frontends.console.app import ProctuiApp

    _Base = ProctuiApp
else:
    _Base = object


class SearchActions(_Base):
    # Never changed in place: each search and each look at new lines makes new ones.
    _matches: list[int] = []  # line numbers, oldest first
    _match_index = -1
    _searched: tuple[str, str] = ("", "")  # the pane's process and the term, lowercased
    _scanned = 0  # the lines looked at: those below this number
    _renumbered = 0  # the buffer's renumberings when it was looked at (an attached one's)

    def _forget_search(self) -> None:
        self._matches, self._match_index, self._searched = [], -1, ("", "")

    async def action_search(self) -> None:
        self._typed_ahead, self._ahead_since = [], time.monotonic()
        box = self._search
        if box is None:  # the first search: Textual's Input loads now, not at start-up
            from textual.widgets import Input

            box = Input(placeholder="search the pane (Enter finds, Escape closes)",
                        id="search")
            await self.mount(box, before="#keys")
            self._search = box
        box.disabled = False
        box.display = True
        box.value = ""  # a new search: '/web' after '/stop' searched for 'stopweb'
        box.focus()

    def _close_search(self) -> None:
        box = self._search
        if box is not None:
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
        self._searched = (self.selected_view.name, term.lower())
        self._matches, self._scanned = [], 0
        self._more_matches()
        if not self._matches:
            self.notify(f"No match for {term!r} yet (n looks again)", markup=False)
            return
        self._match_index = len(self._matches) - 1
        self._show_match()

    def action_next_match(self, direction: int) -> None:
        if not self._searched[1]:
            self.notify("No search: press / first", markup=False)
            return
        self._more_matches()
        if not self._matches:
            self.notify(f"No match for {self._searched[1]!r} in what the pane holds",
                        markup=False)
            return
        self._match_index = max(0, min(len(self._matches) - 1, self._match_index + direction))
        self._show_match()

    def _more_matches(self) -> None:
        """The search goes on over what came since it was last looked at: it found only
        the lines there were when Enter was pressed, and n stopped at the last of them
        with newer matches on the screen. Matches that left the scrollback are dropped."""
        name, needle = self._searched
        buf = self.core.buffer(name)
        if buf.renumbered != self._renumbered:  # an attached console's lines took new
            self._renumbered = buf.renumbered  # numbers (a gap): look at them all again
            self._matches, self._scanned = [], 0
        got = buf.read(self._scanned)
        self._matches = self._matches + [got.first + i for i, line in enumerate(got.lines)
                                         if needle in line.lower()]
        self._scanned = got.first + len(got.lines)
        oldest, gone = buf.first, 0
        while gone < len(self._matches) and self._matches[gone] < oldest:
            gone += 1
        if gone:
            self._matches = self._matches[gone:]
            self._match_index = max(0, self._match_index - gone)

    def _show_match(self) -> None:
        output = self.selected_pane.output
        number = self._matches[self._match_index]
        output.current_match = number
        output.show_line(number)
        self.notify(f"match {self._match_index + 1} of {len(self._matches)}", timeout=1.5,
                    markup=False)
