"""What a frontend can read about a process: an immutable snapshot, replaced whole by the
core thread after every change. Plain data: it crosses threads and, as JSON, sockets."""

from __future__ import annotations

from dataclasses import field
from enum import Enum

from proctui.core.life.outcome import Outcome
from proctui.core.life.stop import DeadlineAction, Phase
from proctui.records import dataclass

__all__ = ["Action", "DeadlineAction", "Phase", "ProcessView", "Reply", "Usage"]


class Action(Enum):
    """Operator decisions during a stop."""

    KILL = "kill"
    ABANDON = "abandon"
    WAIT = "wait"  # no deadline: wait for the process as long as it takes


@dataclass(frozen=True, slots=True)
class Usage:
    cpu_percent: float  # of one core; may exceed 100 for several busy members
    rss_bytes: int
    members: int


@dataclass(frozen=True, slots=True)
class Reply:
    """The core's answer to a command: did it act, and what to tell the operator."""

    ok: bool
    text: str = ""


@dataclass(frozen=True, slots=True)
class ProcessView:
    """One process as a frontend sees it at one instant. Times are ``time.monotonic()``."""

    name: str
    phase: Phase
    cmd: str
    pid: int | None = None
    pgid: int | None = None
    started_at: float | None = None
    ended_at: float | None = None
    restarts: int = 0
    stop_requested_at: float | None = None
    stop_signal: str = "SIGTERM"
    stop_command: bool = False  # a stop begins with its stop_command, not the signal
    kill_sent_at: float | None = None
    deadline: float | None = None  # when the current wait ends (None: no deadline)
    window_start: float | None = None  # when the current wait began (the bar's 100 %)
    deadline_action: DeadlineAction = DeadlineAction.NONE
    extended: float = 0.0  # seconds the operator added
    extended_by_process: bool = False
    extend_step: float = 30.0
    outcome: Outcome | None = None  # of the current run once it has one (or the last)
    restart_at: float | None = None
    leftover: bool = False
    held: str = ""  # why a leftover is held (not proven ours), else ""
    not_started: str = ""  # why it ended without ever starting, else ""
    paused: bool = False  # SIGSTOPped
    escapees: tuple[int, ...] = ()  # its processes outside its group
    usage: Usage | None = None
    lines: int = 0  # lines in its pane so far, proctui's notices included
    output_lines: int = 0  # lines the process itself printed (something new to see)
    decisions: int = 0  # how often the current stop reached a decision
    status: str = ""  # its last STATUS= (sd_notify)
    ready_at: float | None = None
    ready_check: str = ""  # how it says it is ready ("": no check: running is ready)
    decision_since: float | None = None  # when the current decision began waiting
    notify_dropped: int = 0  # sd_notify datagrams its current run's socket dropped
    waiting_for: tuple[str, ...] = ()  # dependencies it waits for before it starts
    stops_after: tuple[str, ...] = ()  # dependents it waits for before it stops
    silent_since: float | None = None  # running, and no output since (silence_warning)
    stage: int = 0  # shutdown stage, from 1 (0: no dependencies anywhere)
    stages: int = 0
    seq: int = 0  # publication number
    worst: int = 0  # the exit status its runs so far give (0, 1 or 3)
    notes: tuple[str, ...] = field(default=())

    @property
    def alive(self) -> bool:
        """A run exists and has no outcome yet."""
        return self.phase.live
