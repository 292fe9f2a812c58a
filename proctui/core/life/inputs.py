"""What the step function hears about a process besides its life's own events
(``events.py``): the operator's commands on its run, and the facts the executor and the
sensors report (a spawn done, the leader's exit, a signal sent, readiness, a notify
message). Plain frozen data.

A fact names the run it is about (``number``): a late fact about an earlier run (its
pidfd readable after a restart) is ignored, never taken for the current run's."""

from __future__ import annotations

from proctui.config import ProcessSpec
from proctui.core.life.outcome import EndKind, ExitStatus, Reason, Who
from proctui.core.life.state import Escapee
from proctui.core.view import Usage
from proctui.records import dataclass

# -- the operator's commands on a run ------------------------------------------------------


@dataclass(frozen=True, slots=True)
class KillCmd:
    pass


@dataclass(frozen=True, slots=True)
class AbandonCmd:
    pass


@dataclass(frozen=True, slots=True)
class WaitCmd:
    """Wait for it with no deadline at all."""


@dataclass(frozen=True, slots=True)
class ExtendCmd:
    by: float | None = None  # None: its extend_step
    who: Who = Who.OPERATOR


@dataclass(frozen=True, slots=True)
class InteractiveCmd:
    """Whether anybody can answer an "ask" from now on."""

    interactive: bool


@dataclass(frozen=True, slots=True)
class SignalCmd:
    """Send ``sig`` to its whole group (and escapees), as the operator asked; nothing
    else changes (the process decides what the signal means)."""

    sig: int


@dataclass(frozen=True, slots=True)
class Reconfigure:
    """``reload``: its settings changed. It is restarted with them (now if it runs, at
    once if it had ended); ``left_running``: a pid of its last run still alive."""

    spec: ProcessSpec
    left_running: int | None = None


# -- facts from the executor ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Spawned:
    number: int
    pid: int
    start_ticks: int | None
    token: str
    wall: float


@dataclass(frozen=True, slots=True)
class SpawnFailed:
    number: int
    error: str


@dataclass(frozen=True, slots=True)
class LeaderExited:
    number: int
    status: ExitStatus
    at: float  # when its exit was seen (it may be looked at later)


@dataclass(frozen=True, slots=True)
class GroupLooked:
    """A look at whether everything of the run is gone: its group, and its processes
    outside the group (their pidfds say when they end; this is what is alive now)."""

    number: int
    group_alive: bool
    escapees: tuple[Escapee, ...] = ()  # newly found outside the group (re-parented orphans)


@dataclass(frozen=True, slots=True)
class LookFailed:
    """The look itself failed (the kernel refused): watching for the end failed."""

    number: int
    error: str
    retry: bool  # out of descriptors for now: look again later


@dataclass(frozen=True, slots=True)
class EscapeeEnded:
    number: int
    pid: int


@dataclass(frozen=True, slots=True)
class SignalDone:
    number: int
    sig: int
    reason: Reason
    reached: bool
    at: float  # when it went out (monotonic)
    # Live members when it went out (SIGKILL only: what it was meant to end).
    reached_pids: tuple[int, ...] | None = None
    failures: tuple[str, ...] = ()  # escapees it could not reach, in words
    escapees: tuple[Escapee, ...] = ()  # found outside the group just before it


@dataclass(frozen=True, slots=True)
class SignalFailed:
    number: int
    sig: int
    reason: Reason
    error: str


@dataclass(frozen=True, slots=True)
class DeadlineReached:
    number: int


@dataclass(frozen=True, slots=True)
class Concluded:
    """The facts of a run's end, gathered by the executor once the stop machine decided:
    what is still alive of it, and what the survivors are doing."""

    number: int
    end: EndKind
    left: tuple[int, ...] = ()
    state_word: str = ""
    exit: ExitStatus | None = None  # the leader's status, reaped just now


@dataclass(frozen=True, slots=True)
class StopCommandStarted:
    number: int
    pid: int


@dataclass(frozen=True, slots=True)
class StopCommandEnded:
    number: int
    status: ExitStatus
    killed: str = ""  # why proctui killed it, else ""
    left: tuple[int, ...] = ()  # its processes that escaped its group, killed at its end


@dataclass(frozen=True, slots=True)
class StopCommandFailed:
    """The stop command could not be started (not found, not executable)."""

    number: int
    error: str


# -- facts from the sensors (readiness, notify, the tree walk) -----------------------------


@dataclass(frozen=True, slots=True)
class Ready:
    number: int
    how: str


@dataclass(frozen=True, slots=True)
class ReadyTimedOut:
    number: int
    timeout: float


@dataclass(frozen=True, slots=True)
class WatchdogMissed:
    number: int
    interval: float


@dataclass(frozen=True, slots=True)
class StatusSaid:
    number: int
    status: str


@dataclass(frozen=True, slots=True)
class ProcessExtends:
    """EXTEND_TIMEOUT_USEC: more time to stop, or to become ready."""

    number: int
    by: float


@dataclass(frozen=True, slots=True)
class Observed:
    """What the walk of the tree saw of a live run."""

    number: int
    paused: bool
    usage: Usage | None
    notify_dropped: int


@dataclass(frozen=True, slots=True)
class SilenceLooked:
    """Its output's silence, as the walk judged it (silence_warning): since when it has
    said nothing, or None."""

    number: int
    silent_since: float | None


Input = (KillCmd | AbandonCmd | WaitCmd | ExtendCmd | InteractiveCmd | SignalCmd
         | Reconfigure | Spawned
         | SpawnFailed | LeaderExited | GroupLooked | LookFailed | EscapeeEnded | SignalDone
         | SignalFailed | DeadlineReached | Concluded | StopCommandStarted | StopCommandEnded
         | StopCommandFailed | Ready | ReadyTimedOut | WatchdogMissed | StatusSaid
         | ProcessExtends | Observed | SilenceLooked)
