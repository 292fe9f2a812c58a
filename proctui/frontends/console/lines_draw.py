"""Drawing one line of a process's output into the rows of its pane, once: each line's
rows are kept (as Textual's Log keeps a strip per line), since a line's number names its
text for good, so a new line costs one line's drawing and the rest of the screen comes
from the cache. Also how many rows a line takes, counted without drawing it."""

from __future__ import annotations

from rich.console import Console
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.cache import LRUCache
from textual.strip import Strip

from proctui.core.output.lines import Stream
from proctui.core.output.text import clean
from proctui.frontends.console.render import ansi_text, segments
from proctui.frontends.console.wrapped_rows import count_rows

STRIP_CACHE = 2000  # lines: a few screens of a tall pane, wrapped or not
_STREAM_STYLE: dict[int, str] = {Stream.STDOUT: "", Stream.STDERR: "red",
                                 Stream.PROCTUI: "bold cyan"}


class LineDrawer:
    """Each line's rows, drawn with Rich and kept by line number."""

    def __init__(self) -> None:
        self._strips: LRUCache[tuple[object, ...], list[Strip]] = LRUCache(STRIP_CACHE)
        self.drawn = 0  # lines drawn (not taken from the cache): for tests

    def clear(self) -> None:
        self._strips.clear()

    def rows(self, console: Console, number: int, line: str, stream: int, width: int, *,
             growing: bool, wrap: bool, search: str | None, current: bool,
             base: Style) -> tuple[list[Strip], bool]:
        """A line's rows, and whether they were drawn now (not taken from the cache).
        ``growing``: the partial line, whose text still changes under its number."""
        key = (number, line if growing else None, stream, width, wrap, search, current,
               base)
        cached = self._strips.get(key)
        if cached is not None:
            return cached, False
        self.drawn += 1
        text = text_of(line, stream)
        if search:
            text.highlight_words([search], style="reverse bold" if current else "reverse",
                                 case_sensitive=False)
            if not wrap:
                text = _to_match(text, search, width)
        cached = self._strips[key] = [
            Strip(segments(piece, console) if piece.cell_len else [Segment("")])
            .crop_extend(0, width, base).apply_style(base)
            for piece in pieces(console, text, width, wrap)]
        return cached, True


def text_of(line: str, stream: int) -> Text:
    """A line as the pane shows it: proctui's own notices marked, output's colours kept."""
    if stream == Stream.PROCTUI:
        return Text("── " + line, style=_STREAM_STYLE[Stream.PROCTUI], no_wrap=True)
    return ansi_text(line, _STREAM_STYLE.get(stream, ""))


def _to_match(text: Text, search: str, width: int) -> Text:
    """With wrap off, a line whose first match lies past the cut is shown from a little
    before it, after a "…": the pane held at "match 1 of 1" showed the line cut well
    before it, and nothing of the match."""
    at = text.plain.lower().find(search.lower())
    if at < 0 or text.cell_len <= width or at + len(search) < width - 1:
        return text
    start = max(0, at - width // 3, at + len(search) - (width - 2))
    shown = Text("…", style="dim")
    shown.append_text(text[start:])
    return shown


def pieces(console: Console, text: Text, width: int, wrap: bool) -> list[Text]:
    """The rows of one line: word-wrapped as Rich does, or cut with …."""
    if wrap and text.cell_len > width:
        return list(text.wrap(console, width, overflow="fold", no_wrap=False))
    if text.cell_len > width:
        text.truncate(max(1, width - 1))
        text.append("…", style="dim")
    return [text]


def exact_rows(console: Console, line: str, stream: int, width: int) -> int:
    """The rows a line takes wrapped at ``width``: counted quickly for plain ASCII (most
    output), by Rich's own wrapping otherwise."""
    if stream != Stream.PROCTUI:
        plain = clean(line)
        if plain.isascii() and "\x1b" not in plain and "\n" not in plain:
            return count_rows(plain, width)
    return len(pieces(console, text_of(line, stream), width, True))
