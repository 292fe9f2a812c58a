"""Keys typed after / or p before its box has the focus (in the same read, or while the
box loads): kept for the box. They went to the main screen, where '/stop' typed fast
stopped the selected process and opened the timeline. Once the box has the focus it
takes every printable key itself: none comes here."""

from __future__ import annotations

import time
from collections.abc import Callable

from textual import events
from textual.widget import Widget

AHEAD = 3.0  # seconds a search or pick box may take to open, keys typed meanwhile kept


class TypeAhead:
    def __init__(self) -> None:
        self.typed: list[str] | None = None  # keys typed before a box opening had the focus
        self.since = 0.0

    @property
    def armed(self) -> bool:
        """A box is opening: keys are kept for it."""
        return self.typed is not None

    def arm(self) -> None:
        """A box opens now (/ or p)."""
        self.typed, self.since = [], time.monotonic()

    def catch(self, event: events.Key) -> bool:
        """Keep ``event`` for the box, if one is opening; True when it was kept (it goes
        nowhere else: not to the main screen's bindings)."""
        typed = self.typed
        if typed is None:
            return False
        if time.monotonic() - self.since > AHEAD:
            self.typed = None  # (no box took the focus: keys act as usual again)
            return False
        if event.is_printable and event.character:
            typed.append(event.character)
        elif event.key == "enter":  # "/term⏎" pasted, or typed fast: the search runs
            typed.append("\r")
        elif event.key == "backspace":
            del typed[-1:]
        else:
            return False
        event.prevent_default()  # (before the app's own handler runs the key's binding)
        event.stop()
        return True

    def focused(self, widget: Widget, later: Callable[[Callable[[], object]], object]) -> None:
        """A widget took the focus: the box, if it is one, gets the keys kept for it
        (and the search runs, when Enter was among them, ``later``)."""
        from textual.widgets import Input

        typed, self.typed = self.typed, None
        if typed and isinstance(widget, Input):
            text, enter, _after = "".join(typed).partition("\r")
            widget.insert_text_at_cursor(text)
            if enter and widget.id == "search":  # (the picker's list is not yet in)
                later(widget.action_submit)
