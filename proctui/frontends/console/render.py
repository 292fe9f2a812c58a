"""Words, colours and bars for the console: pure functions of a ProcessView and a clock.

Everything shown here that came from a process (its name, its output) is untrusted text:
it is only ever put into ``rich.text.Text`` objects, never parsed as markup.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from rich.cells import cell_len
from rich.console import Console
from rich.segment import Segment
from rich.text import Text

from proctui.core.life.stop import Phase
from proctui.core.output.text import clean
from proctui.core.view import ProcessView
from proctui.frontends.printer import cut_middle
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


COALESCE = 0.05  # seconds a figure may lag so that neighbouring changes share a redraw


def restart_words(view: ProcessView, now: float) -> str:
    """A restart's countdown, the same words in the row and in the pane: whole seconds
    rounded up, so it never says 0s before the restart happens."""
    left = max(0.0, (view.restart_at or now) - now)
    return f"restart in {math.ceil(left)}s" if left < 60 else f"restart in {duration(left)}"


def _age(view: ProcessView, now: float) -> float | None:
    since = view.started_at if view.phase is Phase.RUNNING else \
        view.ended_at if view.phase is Phase.ENDED else None
    return None if since is None else max(0.0, now - since)


def _age_step(age: float) -> float:
    """How finely ``duration`` shows an age of ``age`` seconds."""
    return 1.0 if age < 10 else 10.0 if age < 60 else 60.0


def clock_face(views: Sequence[ProcessView], now: float) -> tuple[object, ...]:
    """Every figure of the clock on screen, as it reads at ``now``: the console redraws
    when this changes. Each figure comes from the real clock and the view's own instant
    (started_at, restart_at, deadline), so no figure ever goes backwards, and the row and
    the pane, given the same ``now``, read the same."""
    face: list[object] = []
    for view in views:
        if view.phase.stopping:
            face.append(round(now, 1))  # countdowns show tenths
            continue
        if view.phase is Phase.BACKOFF and view.restart_at is not None:
            face.append(restart_words(view, now))
            continue
        age = _age(view, now)
        face.append(None if age is None else duration(age))
    return tuple(face)


def next_change(views: Sequence[ProcessView], now: float) -> float:
    """Seconds until some figure of ``clock_face`` next changes (at most a minute)."""
    soonest = 60.0
    for view in views:
        if view.phase.stopping:
            return 0.1
        if view.phase is Phase.BACKOFF and view.restart_at is not None:
            left = view.restart_at - now
            soonest = min(soonest, left - math.floor(left) if left > 0 else 1.0)
            continue
        age = _age(view, now)
        if age is not None:
            step = _age_step(age)
            soonest = min(soonest, step - age % step)
    # Just past the boundary, never just before it; the slack lets processes started
    # together (their boundaries milliseconds apart) share one redraw instead of one each.
    return max(0.01, soonest + COALESCE)


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


def name_cells(name: str, cells: int) -> str:
    """A process's name in exactly ``cells`` terminal cells (wide characters count two):
    padded, or cut in the middle with "…", so that names sharing a long prefix stay
    apart ("worker-with-a…-name-01", not "worker-with-a-long-n…" on every row)."""
    return cut_middle(name, cells, cell_len)


def fit(text: Text, room: int) -> Text:
    """``text`` in exactly ``room`` cells: padded, or cut after a whole word with " …"
    (a word is cut only when the first one alone does not fit)."""
    room = max(0, room)
    if text.cell_len > room:
        text = cut_words(text, room)
    text.pad_right(max(0, room - text.cell_len))
    return text


def cut_words(text: Text, room: int) -> Text:
    plain = text.plain
    best = -1
    for i, char in enumerate(plain):
        if char == " " and i and plain[i - 1] != " ":
            if cell_len(plain[:i]) + 2 > room:
                break
            best = i
    if best <= 0:
        text.truncate(room, overflow="ellipsis")
        return text
    kept = text[:best]
    kept.append(" …", style="dim")
    return kept


BAR_LEAST = 8  # columns a countdown's bar needs (a space and seven cells) to be read


def countdown_text(cd: Countdown, room: int, short: bool = False,
                   column: tuple[int, int] | None = None) -> Text:
    """The countdown's words with a bar that empties toward the deadline: the fullest form
    that fits ``room`` beside the bar, else the fullest that fits alone (``short``: never
    the form that says when the stop signal went), so that a STATUS stays beside the
    countdown while its words shrink, and the bar does not vanish when they grow (a
    deadline extended by the process, at 80 columns). ``column``: where the bars of a
    column of countdowns begin and how long they are (``bar_column``)."""
    words, own = _countdown_parts(cd, room, short)
    if not own:
        return fit(words, room)
    width = own
    if column is not None:
        words, width = fit(words, column[0]), min(own, column[1])
    style = "red" if cd.fraction is not None and cd.fraction < 0.25 else "yellow"
    words.append(" ")
    words.append(bar(cd.fraction or 0.0, width), style=style)
    return fit(words, room)


def bar_column(rows: Iterable[tuple[Countdown, int, bool]]) -> tuple[int, int] | None:
    """For countdowns one under another (each with its room and ``short``): the cells
    their words take (the longest's) and one bar length, the most every row has room for
    after that, so that the bars stand in one column, one length (8 and 9 cells one under
    the other, at 80 columns, read as different amounts of time left). None: no bars."""
    barred = [(cell_len(words), room) for cd, room, short in rows
              if (parts := _countdown_parts(cd, room, short))[1]
              for words in (parts[0].plain,)]
    if not barred:
        return None
    words = max(w for w, _ in barred)
    return words, max(1, min(20, min(room for _, room in barred) - words - 1))


def _countdown_parts(cd: Countdown, room: int, short: bool) -> tuple[Text, int]:
    """The countdown's words (unpadded), and its bar's width alone in ``room`` (0: none)."""
    forms = (*(() if short else (cd.text,)), *(cd.forms or (cd.short,)))
    with_status = [form for form in forms if cd.status and cd.status in form]
    beside = BAR_LEAST if cd.fraction is not None else 0

    def fullest(candidates: list[str] | tuple[str, ...]) -> str | None:
        # The bar may displace words beyond the countdown's own ("sent 4.2s ago",
        # "extended by the process"), never those ("SIGKILL in 5.8s" before "5.8s ▇▇▇").
        barred = (form for form in candidates if beside and cd.short in form and
                  cell_len(form) + beside <= room)
        return next(barred, None) or next(
            (form for form in candidates if cell_len(form) <= room), None)

    words = fullest(with_status)
    tail = f" · {cd.least}"
    if words is None and with_status and room - cell_len(tail) >= 8:
        # Not even the tersest form fits: the STATUS is cut (after a word), not dropped.
        text = fit(Text(cd.status), room - cell_len(tail))
        text.rstrip()
        text.append(tail)
        text.stylize("yellow")
        return text, 0
    if words is None:
        words = fullest(forms)
    words = words if words is not None else (cd.short if short else cd.text)
    if cd.fraction is not None and room - cell_len(words) >= BAR_LEAST:
        return Text(words, style="yellow"), min(20, room - cell_len(words) - 1)
    return Text(words, style="yellow"), 0
    if words is None:
        words = fullest(forms)
    words = words if words is not None else (cd.short if short else cd.text)
    text = Text(words, style="yellow")
    if cd.fraction is not None and room - cell_len(words) >= BAR_LEAST:
        width = min(20, room - cell_len(words) - 1)
        style = "red" if cd.fraction < 0.25 else "yellow"
        text.append(" ")
        text.append(bar(cd.fraction, width), style=style)
    return fit(text, room)
