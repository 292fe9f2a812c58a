"""Words every frontend shares: the summary at the end, and the countdown of a stop."""

from __future__ import annotations

from proctui.core.life.outcome import seconds
from proctui.core.life.stop import DeadlineAction, Phase
from proctui.core.snapshot import CoreSnapshot
from proctui.core.view import ProcessView
from proctui.frontends.printer import cells


def summary_lines(snapshot: CoreSnapshot) -> list[str]:
    """One line per process: its last outcome (and how often it was restarted), those a
    reload removed, and the pids left behind that no run could be proven to own; all
    from one snapshot."""
    finals = snapshot.final()
    strays = snapshot.strays
    restarts = {v.name: v.restarts for v in snapshot.views}
    why_not = {v.name: v.not_started for v in snapshot.views if v.not_started}
    width = max((cells(n) for n, _ in finals), default=0)
    lines = ["summary:"]
    for name, outcome in finals:
        text = outcome.text if outcome is not None else \
            f"not started: {why_not[name]}" if name in why_not else "not started"
        count = restarts.get(name, 0)
        if count:
            text += " (restarted once)" if count == 1 else f" (restarted {count} times)"
        lines.append(f"  {name}{' ' * (width - cells(name))}  {text}")  # 日本 is 4 wide
    if strays:
        pids = ", ".join(map(str, strays[:8]))
        lines.append(f"  left behind, owner unknown: pid{'s' if len(strays) > 1 else ''} "
                     f"{pids} still running")
    return lines


def action_words(view: ProcessView) -> str:
    """What happens at the deadline: "SIGKILL", "abandon", "decision", "giving up"."""
    if view.deadline_action is DeadlineAction.GIVE_UP:
        return "giving up"
    return str(view.deadline_action.value)


def still_stopping(view: ProcessView, now: float, way_out: str = "") -> str:
    """A headless countdown line: where a stopping process is. ``way_out``: what ends a
    wait with no end in sight (``down``: "ctrl+c kills it"), said with it: every 5 s
    "waiting without a deadline" and nothing else read as a hang."""
    since = seconds(now - (view.stop_requested_at or view.kill_sent_at or now))
    out = f" ({way_out})" if way_out else ""
    if view.phase is Phase.DECIDING:
        return f"still stopping after {since}: waiting for a decision{out}"
    if view.deadline is None:
        return f"still stopping after {since}: waiting without a deadline{out}"
    return (f"still stopping after {since}: {action_words(view)} in "
            f"{seconds(view.deadline - now)}")
