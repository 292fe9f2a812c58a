"""The words a refused command answers with, from a process's last outcome and stage."""

from __future__ import annotations

from proctui.core.life.machine import Stage
from proctui.core.life.outcome import pids_phrase
from proctui.core.process import Managed
from proctui.core.view import Reply


def not_running(m: Managed, verb: str) -> Reply:
    """Why ``verb`` cannot act on a process that is not running."""
    last = m.outcomes[-1] if m.outcomes else None
    if last is not None and last.left_running and last.left_pids:
        return Reply(False, f"{m.name} is not watched any more ({last.kind.value}): "
                            f"{pids_phrase(last.left_pids)} left running; proctui "
                            f"never signals it again, so it cannot {verb} it")
    if m.life.stage is Stage.BACKOFF:
        return Reply(False, f"{m.name} is waiting to restart; nothing to {verb}")
    if m.life.stage is Stage.WAITING:
        return Reply(False, f"{m.name} has not started yet; nothing to {verb}")
    if last is not None:
        return Reply(False, f"{m.name} has already ended ({last.text}); nothing to "
                            f"{verb}")
    return Reply(False, f"{m.name} is not running; nothing to {verb}")

