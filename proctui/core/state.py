"""What a frontend can read about a process: a phase and a plain, immutable view."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from proctui.core.lines import OutputBuffer
from proctui.core.outcome import Outcome


class Phase(Enum):
    STARTING = "starting"
    RUNNING = "running"
    STOPPING = "stopping"  # stop signal sent; waiting for the group to go, up to a deadline
    DECIDING = "deciding"  # on_timeout = "ask": parked at the deadline for the operator
    KILLING = "killing"  # SIGKILL sent; waiting up to kill_timeout
    BACKOFF = "backoff"  # exited; waiting to restart
    ENDED = "ended"  # has its outcome

    @property
    def stopping(self) -> bool:
        return self in (Phase.STOPPING, Phase.DECIDING, Phase.KILLING)


class Action(Enum):
    """Operator decisions during a stop."""

    KILL = "kill"
    ABANDON = "abandon"
    WAIT = "wait"  # no deadline: wait for the process as long as it takes


@dataclass(frozen=True, slots=True)
class ProcessView:
    """One process as a frontend sees it at one instant. Times are ``time.monotonic()``."""

    name: str
    phase: Phase
    pid: int | None
    pgid: int | None
    cmd: str
    started_at: float | None
    ended_at: float | None
    restarts: int
    stop_requested_at: float | None
    stop_signal_name: str
    kill_sent_at: float | None
    deadline: float | None  # when the current wait ends (None: no deadline)
    deadline_action: str  # what happens then: "SIGKILL", "abandon", "ask", "give up"
    extend_step: float
    outcome: Outcome | None  # of the current (or last) run, once it has one
    restart_at: float | None
    leftover: bool
    buffer: OutputBuffer
