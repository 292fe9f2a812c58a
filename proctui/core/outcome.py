"""How a process run ended, worded so that nobody has to guess."""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass, field
from enum import Enum


class OutcomeKind(Enum):
    EXITED = "exited"
    STOPPED = "stopped"
    KILLED = "killed"
    ABANDONED = "abandoned"
    UNKILLABLE = "unkillable"
    STOP_FAILED = "stop-failed"
    KILL_FAILED = "kill-failed"
    WAIT_FAILED = "wait-failed"
    FAILED_TO_START = "failed-to-start"


# Kinds after which the process (or part of its group) may still be running.
LEFT_RUNNING = frozenset(
    {OutcomeKind.ABANDONED, OutcomeKind.UNKILLABLE, OutcomeKind.STOP_FAILED,
     OutcomeKind.KILL_FAILED, OutcomeKind.WAIT_FAILED}
)


@dataclass(frozen=True, slots=True)
class Sent:
    """One signal proctui sent to a process group, ``at`` seconds after the run started."""

    signal: signal.Signals
    at: float
    reason: str  # "stop request", "stop timeout", "operator", ...


@dataclass(frozen=True, slots=True)
class ExitStatus:
    """The leader's wait status, decoded. ``known`` is False for a process we cannot
    reap (a leftover from an earlier run is not our child)."""

    code: int | None = None
    signal: signal.Signals | int | None = None
    core_dumped: bool = False
    known: bool = True

    @classmethod
    def from_wait_status(cls, status: int) -> ExitStatus:
        if os.WIFSIGNALED(status):
            return cls(signal=_signal(os.WTERMSIG(status)), core_dumped=os.WCOREDUMP(status))
        if os.WIFEXITED(status):
            return cls(code=os.WEXITSTATUS(status))
        return cls(known=False)

    def describe(self, stop_signal: signal.Signals | None = None) -> str:
        if not self.known:
            return "exit status unknown (not a child of this proctui)"
        if self.signal is not None:
            name = signal_name(self.signal)
            verb = "terminated" if self.signal == stop_signal else "killed"
            core = " (core dumped)" if self.core_dumped else ""
            return f"{verb} by {name}{core}"
        return f"exit code {self.code}"


@dataclass(frozen=True, slots=True)
class Outcome:
    kind: OutcomeKind
    text: str
    pid: int | None = None
    status: ExitStatus | None = None
    duration: float | None = None  # seconds from the stop request (or start) to the end
    sent: tuple[Sent, ...] = field(default_factory=tuple)
    # Descendants still running after the group was gone: they left the process group
    # (setsid, double fork) and no group signal reaches them.
    left_behind: tuple[int, ...] = ()

    @property
    def clean(self) -> bool:
        """Ended as asked: stopped on request, or exited by itself with code 0, and
        nothing of it left running."""
        if self.left_behind:
            return False
        if self.kind is OutcomeKind.STOPPED:
            return True
        return (
            self.kind is OutcomeKind.EXITED
            and self.status is not None
            and self.status.code == 0
        )

    @property
    def left_running(self) -> bool:
        return self.kind in LEFT_RUNNING or bool(self.left_behind)

    def __str__(self) -> str:
        return self.text


def exit_status_for(outcomes: list[Outcome]) -> int:
    """proctui's own exit status: 3 if anything was left running, else 1 if anything was
    killed, crashed or failed, else 0."""
    if any(o.left_running for o in outcomes):
        return 3
    if any(not o.clean for o in outcomes):
        return 1
    return 0


def signal_name(sig: signal.Signals | int) -> str:
    try:
        return signal.Signals(sig).name
    except ValueError:
        return f"signal {int(sig)}"


def _signal(num: int) -> signal.Signals | int:
    try:
        return signal.Signals(num)
    except ValueError:
        return num


def seconds(value: float) -> str:
    """A duration for people: 0.4s, 1.2s, 12s, 2m05s."""
    if value < 0:
        value = 0.0
    if value < 10:
        return f"{value:.1f}s"
    if value < 120:
        return f"{round(value)}s"
    minutes, secs = divmod(round(value), 60)
    return f"{minutes}m{secs:02d}s"


def setting(value: float) -> str:
    """A configured duration as the user wrote it: 10 -> 10s, 2.5 -> 2.5s."""
    return f"{value:g}s"
