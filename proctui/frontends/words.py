"""Words for a process's state, shared by every frontend that shows one: the console's
table and panes, and ``proctui status``. Pure functions of a ProcessView and a clock; no
Textual and no Rich, so the control commands start fast."""

from __future__ import annotations

from proctui.core.life.outcome import OutcomeKind, seconds
from proctui.core.life.stop import Phase
from proctui.core.view import ProcessView
from proctui.frontends.console.keys import shown
from proctui.frontends.report import action_words
from proctui.records import dataclass


@dataclass(frozen=True, slots=True)
class Look:
    label: str
    mark: str
    style: str  # 16-colour names only: legible on TERM=xterm over SSH


_LIVE = {
    Phase.WAITING: Look("waiting", "…", "cyan"),
    Phase.STARTING: Look("starting", "◌", "cyan"),
    Phase.RUNNING: Look("running", "●", "green"),
    Phase.STOPPING: Look("stopping", "◐", "yellow"),
    Phase.DECIDING: Look("decide!", "?", "bold magenta"),
    Phase.KILLING: Look("killing", "◑", "bold red"),
    Phase.BACKOFF: Look("restarting", "↻", "cyan"),
    Phase.HELD: Look("held", "!", "bold yellow"),
}
_ENDED = {
    OutcomeKind.STOPPED: Look("stopped", "■", "green"),
    OutcomeKind.KILLED: Look("killed", "✖", "red"),
    OutcomeKind.ABANDONED: Look("abandoned", "!", "bold yellow"),
    OutcomeKind.UNKILLABLE: Look("unkillable", "!", "bold red"),
    OutcomeKind.HELD: Look("left alone", "!", "bold yellow"),
    OutcomeKind.WATCHDOG: Look("watchdog", "✖", "red"),
}
_PAUSED = Look("paused", "‖", "bold yellow")
_READY = Look("ready", "●", "bold green")
_FAILED = Look("failed", "✖", "bold red")


def look(view: ProcessView) -> Look:
    if view.phase is not Phase.ENDED:
        if view.phase is Phase.RUNNING:
            if view.paused:
                return _PAUSED
            if view.stops_after:
                return Look(f"stage {view.stage}/{view.stages}", "◔", "yellow")
            if view.ready_at is not None:
                return _READY
        return _LIVE[view.phase]
    outcome = view.outcome
    if outcome is None:
        return Look("not started", "○", "bright_black")
    if outcome.kind is OutcomeKind.EXITED:
        return Look("exited", "■", "green") if outcome.clean else Look("exited", "✖", "red")
    return _ENDED.get(outcome.kind, _FAILED)


@dataclass(frozen=True, slots=True)
class Countdown:
    text: str  # "SIGTERM sent 4.2s ago · SIGKILL in 5.8s"
    short: str  # "SIGKILL in 5.8s", for narrow places
    fraction: float | None  # of the current wait still left; None: no deadline
    # For the console: ever shorter forms that keep the process's STATUS beside the
    # countdown ("flushing WAL 4/7 · SIGKILL in 5.7s, extended by the process", ...
    # "flushing WAL 4/7 · 5.7s"); the countdown words shrink before the STATUS is dropped.
    forms: tuple[str, ...] = ()
    status: str = ""
    least: str = ""  # the tersest countdown, to stand beside a STATUS cut short


def started_words(view: ProcessView) -> str:
    """How its stop began: "SIGTERM sent", or "stop command started"."""
    return "stop command started" if view.stop_command else f"{view.stop_signal} sent"


def decide_keys() -> str:
    return f"{shown('kill')} kill, {shown('extend')} extend, {shown('abandon')} abandon"


def countdown(view: ProcessView, now: float) -> Countdown | None:
    """Where a stopping process is in its shutdown, from the core's monotonic deadline.
    The bar measures the current window: after an extend it starts full again."""
    phase = view.phase
    if not phase.stopping:
        return None
    deadline, start = view.deadline, view.window_start
    if phase is Phase.KILLING:
        if deadline is None:
            return Countdown("SIGKILL sent · waiting without a deadline", "SIGKILL sent", None)
        left = max(0.0, deadline - now)
        total = max(deadline - (start or view.kill_sent_at or now), 1e-9)
        return Countdown(f"SIGKILL sent · giving up in {seconds(left)}",
                         f"giving up in {seconds(left)}", left / total)
    since = view.stop_requested_at or now
    ago = f"{started_words(view)} {seconds(now - since)} ago"
    status = f" · {view.status}" if view.status else ""
    said = view.status or ""

    def forms(*tails: str) -> tuple[str, ...]:
        """Each countdown form, with the STATUS before it while there is one."""
        kept = [f"{said} · {tail}" for tail in tails] if said else []
        return tuple(dict.fromkeys([*kept, *tails]))

    if phase is Phase.DECIDING:
        short = "decide: " + " / ".join(shown(a) for a in ("kill", "extend", "abandon"))
        return Countdown(f"{ago}{status} · stop timeout reached: your decision "
                         f"({decide_keys()})", short, None, forms(short, "decide"), said,
                         "decide")
    if deadline is None:
        return Countdown(f"{ago}{status} · waiting without a deadline", "no deadline", None,
                         forms("no deadline"), said, "no deadline")
    left = max(0.0, deadline - now)
    total = max(deadline - (start or since), 1e-9)
    action = action_words(view)
    short = f"{action} in {seconds(left)}"
    # "SIGKILL in 5.8s, by the process" read as if the process would send the SIGKILL.
    by = (f"{short}, extended by the process", f"{short}, extended") \
        if view.extended_by_process else ()
    return Countdown(f"{ago}{status} · {by[0] if by else short}", short, left / total,
                     forms(*by, short, seconds(left)), said, seconds(left))


def running_words(view: ProcessView, now: float) -> str:
    """A running process's detail: what it waits for before it stops, or its age (and
    how long it took to be ready) and its STATUS."""
    if view.stops_after:
        return f"stops after {', '.join(view.stops_after)}"
    words = f"up {duration(now - (view.started_at or now))}"
    if view.ready_at is not None and view.started_at is not None:
        words += f", ready in {seconds(view.ready_at - view.started_at)}"
    if view.silent_since is not None:
        words += f" · silent {duration(now - view.silent_since)}"
    return words + (f" · {view.status}" if view.status else "")


def duration(value: float) -> str:
    """An age for people: 7s, then tens of seconds (40s), then whole minutes (12m, 3h05m,
    2d03h). Every second only in the first ten, so that a console of idle processes
    changes what it shows every ten seconds in their first minute, then once a minute."""
    value = max(0, int(value))
    if value < 10:
        return f"{value}s"
    if value < 60:
        return f"{value // 10 * 10}s"
    if value < 3600:
        return f"{value // 60}m"
    if value < 86400:
        return f"{value // 3600}h{value % 3600 // 60:02d}m"
    return f"{value // 86400}d{value % 86400 // 3600:02d}h"


def duration_step(value: float) -> int:
    """Seconds between two changes of ``duration``'s words for an age of ``value``."""
    whole = max(0, int(value))
    return 1 if whole < 10 else 10 if whole < 60 else 60 if whole < 86400 else 3600


def duration_changes(value: float) -> float:
    """Seconds until ``duration`` of an age that is ``value`` now (and grows) says
    something else: at most 1 in its first ten seconds, 10 until its first minute, then
    60 (3600 past a day). A view drawn again only then changes no word of it."""
    step = duration_step(value)
    return (max(0, int(value)) // step + 1) * step - max(0.0, value)


def run_mark(old: ProcessView | None, new: ProcessView | None) -> str:
    """A line for ``logs -f`` where one run ends and the next begins: the output of
    two runs must not read as one."""
    if old is None or new is None:
        return ""
    words = []
    if new.outcome is not None and (new.outcome, new.ended_at) != (old.outcome, old.ended_at):
        words.append(new.outcome.text)
    if new.pid is not None and new.pid != old.pid:
        words.append(f"restarted (pid {new.pid}, restarts: {new.restarts})"
                     if new.restarts else f"started (pid {new.pid})")
    return "; ".join(words)
