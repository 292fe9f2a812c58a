"""Words, colours and bars for the console: pure functions of a ProcessView and a clock.

Everything shown here that came from a process (its name, its output) is untrusted text:
it is only ever put into ``rich.text.Text`` objects, never parsed as markup.
"""

from __future__ import annotations

from rich.console import Console
from rich.segment import Segment
from rich.text import Text

from proctui.core.life.stop import Phase
from proctui.core.output.text import clean
from proctui.core.view import ProcessView
from proctui.frontends.words import (  # noqa: F401  (the console's words live with the others)
    Countdown,
    Look,
    countdown,
    decide_keys,
    duration,
    look,
    running_words,
)


def bar(fraction: float, width: int) -> str:
    """A bar that empties toward the deadline: full at the start of a wait."""
    fraction = min(1.0, max(0.0, fraction))
    full = round(fraction * width)
    return "█" * full + "░" * (width - full)


def quantum(views: list[ProcessView], now: float) -> float:
    """How finely the clock shows anywhere on screen (see words.duration): tenths while a
    countdown runs, seconds while an age is under ten or a restart is due, tens of
    seconds while one is under a minute, else minutes."""
    step = 60.0
    for view in views:
        if view.phase.stopping:
            return 0.1
        since = view.started_at if view.phase is Phase.RUNNING else view.ended_at
        age = now - since if since is not None else None
        if view.phase is Phase.BACKOFF or (age is not None and age < 11):
            step = 1.0
        elif age is not None and age < 61:
            step = min(step, 10.0)
    return step


def memory(value: int) -> str:
    size = float(value)
    for unit in ("B", "K", "M", "G"):
        if size < 1024 or unit == "G":
            return f"{size:.0f}{unit}" if unit in ("B", "K") or size >= 10 else \
                f"{size:.1f}{unit}"
        size /= 1024
    return f"{size:.0f}G"


def ansi_text(line: str, style: str = "") -> Text:
    """A line of process output as styled Text: its SGR colours rendered, nothing parsed."""
    line = clean(line)
    if "\x1b" in line:
        return Text.from_ansi(line, style=style, no_wrap=True)
    return Text(line, style=style, no_wrap=True)


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
