"""Screens to read and scroll: the help (every key, from the key table) and this run's
timeline."""

from __future__ import annotations

from collections.abc import Callable

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from proctui.frontends.console.keys import READING, bindings, every_row, reading_line
from proctui.frontends.console.notices import NoticeLine, Notices


class ReadingScreen(ModalScreen[None]):
    """A long text to read (the help, the timeline): it scrolls with the reading keys of
    the key table, whatever has focus, and its first line says how."""

    BINDINGS = bindings(READING)
    TITLE_WORDS = ""
    HIDES_ALL = True  # the whole screen: a question come due meanwhile is said under it

    def __init__(self, notices: Notices | None = None) -> None:
        super().__init__()
        self.notices = notices  # the console's answers, on a line under the text

    def body(self, columns: int) -> Text:
        """The text, for ``columns`` cells of room."""
        raise NotImplementedError

    def _columns(self) -> int:
        return max(20, self.app.size.width - 6)  # a border, a space each side, a scrollbar

    def compose(self) -> ComposeResult:
        with Vertical(id="help"):
            yield Static(Text(f"{self.TITLE_WORDS} · {reading_line()}", style="bold"),
                         id="help-title")
            with VerticalScroll(id="help-keys", can_focus=False):
                yield Static(self.body(self._columns()), id="help-body")
        if self.notices is not None:
            yield NoticeLine(self.notices)

    _where = 0.0  # how far down the reader is, as a share of the whole (1.0: the end)

    def on_resize(self) -> None:
        # The text wraps anew, so the same line number is elsewhere in it: End at 120
        # columns showed the middle at 60. The place is kept as a share of the whole.
        self.query_one("#help-body", Static).update(self.body(self._columns()))
        view, where = self.query_one("#help-keys", VerticalScroll), self._where
        self.call_after_refresh(lambda: view.scroll_to(
            y=round(where * view.max_scroll_y), animate=False, immediate=True))

    def action_scroll(self, way: str) -> None:
        # From where the last key sent it, at once: Textual's scroll_down and
        # scroll_page_down wait for the next refresh, or start from where the view is
        # drawn, so five j in one read (key repeat over SSH) moved one line.
        view = self.query_one("#help-keys", VerticalScroll)
        y, page = view.scroll_target_y, max(1, view.scrollable_content_region.height)
        target = {"up": y - 1, "down": y + 1, "page_up": y - page, "page_down": y + page,
                  "home": 0, "end": view.max_scroll_y}[way]
        y = max(0, min(target, view.max_scroll_y))
        view.scroll_to(y=y, animate=False, immediate=True)
        self._where = y / view.max_scroll_y if view.max_scroll_y else 0.0

    def action_close(self) -> None:
        self.dismiss(None)


class HelpScreen(ReadingScreen):
    """Every key, from the key table itself."""

    BINDINGS = [Binding("question_mark,f1", "close", "Close")]  # as they opened it
    TITLE_WORDS = "proctui keys"

    def __init__(self, read_only: bool = False, notices: Notices | None = None) -> None:
        super().__init__(notices)
        self.read_only = read_only

    def body(self, columns: int) -> Text:
        import textwrap

        text = Text()
        if self.read_only:
            text.append("Read-only view (attached with --read-only): the keys that act say "
                        "so and do nothing; d and q detach.\n\n", style="bold yellow")
        rows = every_row()
        width = max(len(k) for _, k, _ in rows)
        hang = " " * (width + 4)  # a long description goes on under itself, not the key
        last = None
        for group, key, words in rows:
            if group != last:
                text.append(("\n" if last else "") + group + "\n", style="bold")
                last = group
            text.append(f"  {key.ljust(width)}  ", style="bold cyan")
            lines = textwrap.wrap(words, max(10, columns - len(hang)),
                                  break_on_hyphens=False) or [""]
            text.append(("\n" + hang).join(lines) + "\n")
        return text


class TimelineScreen(ReadingScreen):
    """This run's timeline so far, drawn from the journal as `proctui timeline` does."""

    BINDINGS = [Binding("t", "close", "Close")]
    TITLE_WORDS = "timeline of this run"

    def __init__(self, draw: Callable[[int], list[str]],
                 notices: Notices | None = None) -> None:
        super().__init__(notices)
        self.draw = draw  # its lines for a width: drawn anew at each size, not kept

    def body(self, columns: int) -> Text:
        # (Its lanes drawn at 120 columns wrapped into three rows each at 60.)
        return Text("\n".join(self.draw(max(40, columns - 2))))
