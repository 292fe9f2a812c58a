"""Words, colours and bars for the console: pure functions of a ProcessView and a clock.

Everything shown here that came from a process (its name, its output) is untrusted text:
it is only ever put into ``rich.text.Text`` objects, never parsed as markup.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text

from proctui.core.machine import Phase
from proctui.core.outcome import OutcomeKind, seconds
from proctui.core.report import action_words
from proctui.core.text import clean
from proctui.core.view import ProcessView


@dataclass(frozen=True, slots=True)
class Look:
    label: str
    mark: str
    style: str  # 16-colour names only: legible on TERM=xterm over SSH


_RUNNING = {
    Phase.STARTING: Look("starting", "◌", "cyan"),
    Phase.RUNNING: Look("running", "●", "green"),
    Phase.STOPPING: Look("stopping", "◐", "yellow"),
    Phase.DECIDING: Look("decide!", "?", "bold magenta"),
    Phase.KILLING: Look("killing", "◑", "bold red"),
    Phase.BACKOFF: Look("restarting", "↻", "cyan"),
}
_ENDED = {
    OutcomeKind.STOPPED: Look("stopped", "■", "green"),
    OutcomeKind.KILLED: Look("killed", "✖", "red"),
    OutcomeKind.ABANDONED: Look("abandoned", "!", "bold yellow"),
    OutcomeKind.UNKILLABLE: Look("unkillable", "!", "bold red"),
    OutcomeKind.STOP_FAILED: Look("failed", "✖", "bold red"),
    OutcomeKind.KILL_FAILED: Look("failed", "✖", "bold red"),
    OutcomeKind.WAIT_FAILED: Look("failed", "✖", "bold red"),
    OutcomeKind.FAILED_TO_START: Look("failed", "✖", "bold red"),
}


def look(view: ProcessView) -> Look:
    if view.phase is not Phase.ENDED:
        return _RUNNING[view.phase]
    outcome = view.outcome
    if outcome is None:
        return Look("not started", "○", "bright_black")
    if outcome.kind is OutcomeKind.EXITED:
        return Look("exited", "■", "green") if outcome.clean else Look("exited", "✖", "red")
    return _ENDED[outcome.kind]


def bar(fraction: float, width: int) -> str:
    """A bar that empties toward the deadline: full at the start of a wait."""
    fraction = min(1.0, max(0.0, fraction))
    full = round(fraction * width)
    return "█" * full + "░" * (width - full)


@dataclass(frozen=True, slots=True)
class Countdown:
    text: str  # "SIGTERM sent 4.2s ago · SIGKILL in 5.8s"
    short: str  # "SIGKILL in 5.8s", for narrow places
    fraction: float | None  # of the current wait still left; None: no deadline


def countdown(view: ProcessView, now: float) -> Countdown | None:
    """Where a stopping process is in its shutdown, from the core's monotonic deadline."""
    phase = view.phase
    if not phase.stopping:
        return None
    sig = view.stop_signal
    if phase is Phase.KILLING:
        start = view.kill_sent_at or now
        if view.deadline is None:
            return Countdown("SIGKILL sent · waiting without a deadline", "SIGKILL sent", None)
        left = max(0.0, view.deadline - now)
        total = max(view.deadline - start, 1e-9)
        return Countdown(f"SIGKILL sent · giving up in {seconds(left)}",
                         f"giving up in {seconds(left)}", left / total)
    start = view.stop_requested_at or now
    ago = f"{sig} sent {seconds(now - start)} ago"
    if phase is Phase.DECIDING:
        return Countdown(f"{ago} · stop timeout reached: your decision (K kill, e extend, "
                         "a abandon)", "decide: K / e / a", None)
    if view.deadline is None:
        return Countdown(f"{ago} · waiting without a deadline", "no deadline", None)
    left = max(0.0, view.deadline - now)
    total = max(view.deadline - start, 1e-9)
    action = action_words(view)
    return Countdown(f"{ago} · {action} in {seconds(left)}", f"{action} in {seconds(left)}",
                     left / total)


def status_line(view: ProcessView, now: float) -> str:
    """The words for a process's current state: uptime, countdown, or its outcome."""
    cd = countdown(view, now)
    if cd is not None:
        return cd.text
    if view.phase is Phase.ENDED:
        return view.outcome.text if view.outcome is not None else "not started"
    if view.phase is Phase.BACKOFF and view.restart_at is not None:
        last = view.outcome.text if view.outcome is not None else ""
        return f"{last} · restarting in {seconds(view.restart_at - now)}"
    if view.started_at is not None and view.phase is Phase.RUNNING:
        return f"up {duration(now - view.started_at)}"
    return look(view).label


def duration(value: float) -> str:
    value = max(0, int(value))
    if value < 60:
        return f"{value}s"
    if value < 3600:
        return f"{value // 60}m{value % 60:02d}s"
    if value < 86400:
        return f"{value // 3600}h{value % 3600 // 60:02d}m"
    return f"{value // 86400}d{value % 86400 // 3600:02d}h"


def memory(value: int) -> str:
    for unit in ("B", "K", "M", "G"):
        if value < 1024 or unit == "G":
            return f"{value:.0f}{unit}" if unit in ("B", "K") or value >= 10 else \
                f"{value:.1f}{unit}"
        value /= 1024  # type: ignore[assignment]
    return f"{value}G"


def ansi_text(line: str, style: str = "") -> Text:
    """A line of process output as styled Text: its SGR colours rendered, nothing parsed."""
    line = clean(line)
    if "\x1b" in line:
        text = Text.from_ansi(line, style=style, no_wrap=True)
    else:
        text = Text(line, style=style, no_wrap=True)
    return text
