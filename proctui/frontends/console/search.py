"""Searching the selected pane: / opens the box, Enter finds, n and N go from match to
match, over the lines that came since as well."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from textual.screen import Screen

from proctui.commands.api import Core
from proctui.frontends.console.output import ProcessPane
from proctui.frontends.console.type_ahead import TypeAhead

if TYPE_CHECKING:  # (Textual's Input loads at the first search, not before the first frame)
    from textual.widgets import Input


class Search:
    def __init__(self, screen: Screen[Any], core: Core, type_ahead: TypeAhead,
                 pane: Callable[[], ProcessPane]) -> None:
        self.screen = screen  # the main screen: the box goes in it, above the key bar
        self.core = core
        self.type_ahead = type_ahead
        self.pane = pane  # the selected process's pane: what is searched
        self.box: Input | None = None  # made on the first / (not before the first frame)
        # Never changed in place: each search and each look at new lines makes new ones.
        self.matches: list[int] = []  # line numbers, oldest first
        self.index = -1
        self.searched: tuple[str, str] = ("", "")  # the pane's process, the term lowercased
        self.scanned = 0  # the lines looked at: those below this number
        self.renumbered = 0  # the buffer's renumberings when it was looked at (attached)

    @property
    def is_open(self) -> bool:
        return self.box is not None and self.box.display

    def forget(self) -> None:
        self.matches, self.index, self.searched = [], -1, ("", "")

    async def open(self) -> None:
        """/: the search box, empty, with the focus."""
        self.type_ahead.arm()
        box = self.box
        if box is None:  # the first search: Textual's Input loads now, not at start-up
            from textual.widgets import Input

            box = Input(placeholder="search the pane (Enter finds, Escape closes)",
                        id="search")
            await self.screen.mount(box, before="#notice")
            self.box = box
        box.disabled = False
        box.display = True
        box.value = ""  # a new search: '/web' after '/stop' searched for 'stopweb'
        box.focus()

    def close(self) -> None:
        box = self.box
        if box is not None:
            box.display = False
            box.disabled = True  # a hidden input must never swallow the app's keys
        self.screen.set_focus(None)

    def submitted(self, value: str) -> None:
        """Enter in the box: the newest match of what it holds."""
        term = value.strip()
        pane = self.pane()
        output = pane.output
        self.close()
        output.search = term or None
        output.current_match = None
        if not term:
            return
        self.searched = (pane.proc_name, term.lower())
        self.matches, self.scanned = [], 0
        self._more_matches()
        if not self.matches:
            self.screen.notify(f"No match for {term!r} yet (n looks again)", markup=False)
            return
        self.index = len(self.matches) - 1
        self._show_match()

    def next_match(self, direction: int) -> None:
        """n (-1, older) and N (1, newer)."""
        if not self.searched[1]:
            self.screen.notify("No search: press / first", markup=False)
            return
        self._more_matches()
        if not self.matches:
            self.screen.notify(f"No match for {self.searched[1]!r} in what the pane holds",
                               markup=False)
            return
        self.index = max(0, min(len(self.matches) - 1, self.index + direction))
        self._show_match()

    def _more_matches(self) -> None:
        """The search goes on over what came since it was last looked at: it found only
        the lines there were when Enter was pressed, and n stopped at the last of them
        with newer matches on the screen. Matches that left the scrollback are dropped."""
        name, needle = self.searched
        buf = self.core.output.buffer(name)
        if buf.renumbered != self.renumbered:  # an attached console's lines took new
            self.renumbered = buf.renumbered  # numbers (a gap): look at them all again
            self.matches, self.scanned = [], 0
        got = buf.read(self.scanned)
        self.matches = self.matches + [got.first + i for i, line in enumerate(got.lines)
                                       if needle in line.lower()]
        self.scanned = got.first + len(got.lines)
        oldest, gone = buf.first, 0
        while gone < len(self.matches) and self.matches[gone] < oldest:
            gone += 1
        if gone:
            self.matches = self.matches[gone:]
            self.index = max(0, self.index - gone)

    def _show_match(self) -> None:
        output = self.pane().output
        number = self.matches[self.index]
        output.current_match = number
        output.show_line(number)
        self.screen.notify(f"match {self.index + 1} of {len(self.matches)}", timeout=1.5,
                           markup=False)
