"""What the step function asks for: the executor's verbs (spawn, signal, arm a timer,
write the journal, a PID file) and the engine's (look at dependencies again, answer the
command, forget a process). Each names the process it is for by the step's caller; run
effects name the run. Plain frozen data: a test reads them as a history."""

from __future__ import annotations

from proctui.core.life.outcome import EndKind, Reason
from proctui.core.life.state import Proc, RunState
from proctui.core.reply import Fault
from proctui.core.store.kinds import Kind
from proctui.records import dataclass

# -- the executor's -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Spawn:
    """Start run ``number`` of the process (the executor reports Spawned or SpawnFailed)."""

    number: int


@dataclass(frozen=True, slots=True)
class Watch:
    """Watch a run that exists: its leader's exit, its escapees (a leftover taken over:
    no pipes, not our child)."""

    run: RunState


@dataclass(frozen=True, slots=True)
class Signal:
    """Send ``sig`` to the run's group and its escapees (those in ``spare`` excepted)."""

    number: int
    sig: int
    reason: Reason
    find_escapees: bool = False  # walk the tree first, so that escapees get it too


@dataclass(frozen=True, slots=True)
class ArmDeadline:
    """The run's stop deadline at this instant (None: none); a stop command running is
    bounded by it too."""

    number: int
    at: float | None


@dataclass(frozen=True, slots=True)
class ArmBackoff:
    at: float | None  # None: cancel


@dataclass(frozen=True, slots=True)
class LookGone:
    """Is everything of the run gone? Look after ``delay`` seconds (GroupLooked)."""

    number: int
    delay: float
    newer_than: float | None = None  # the walk must know of orphans re-parented since


@dataclass(frozen=True, slots=True)
class Conclude:
    """The stop machine decided how the run ends: gather the facts (Concluded)."""

    number: int
    end: EndKind


@dataclass(frozen=True, slots=True)
class StartStopCommand:
    run: RunState


@dataclass(frozen=True, slots=True)
class EndStopCommand:
    number: int
    why: str


@dataclass(frozen=True, slots=True)
class StartChecks:
    """Readiness checks and the watchdog of a run that just started."""

    run: RunState


@dataclass(frozen=True, slots=True)
class ExtendReady:
    """The process asked for more time to become ready: its ready deadline moves."""

    number: int
    at: float


@dataclass(frozen=True, slots=True)
class StopWatching:
    """The run has its outcome: timers, pidfds, checks and sockets of it go; its pipes are
    read on until their last writer is gone."""

    number: int
    keep_leader: bool  # something of it is left running: never wait for the leader


@dataclass(frozen=True, slots=True)
class Notice:
    """A line of proctui's own about the process: its pane, the printer."""

    text: str


@dataclass(frozen=True, slots=True)
class Journal:
    kind: Kind
    data: tuple[tuple[str, object], ...] = ()
    at: float | None = None  # when it happened, if before the entry is written


@dataclass(frozen=True, slots=True)
class WritePidFile:
    """Write (or rewrite) the run's PID file from what it is now."""

    proc: Proc


@dataclass(frozen=True, slots=True)
class RemovePidFile:
    pid_name: str


@dataclass(frozen=True, slots=True)
class TreeChanged:
    """A spawn, an end or a stop: the tree walk looks closely again."""


# -- the engine's -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LookAtDeps:
    """What does it wait for? (The engine answers with DepsLooked, from the table.)"""


@dataclass(frozen=True, slots=True)
class LookAgain:
    """Something others wait on changed (a start, a readiness, an end)."""


@dataclass(frozen=True, slots=True)
class Answer:
    """The reply to the command being taken."""

    ok: bool
    text: str
    fault: Fault | None = None


@dataclass(frozen=True, slots=True)
class Finished:
    """Its life is over (for now)."""


@dataclass(frozen=True, slots=True)
class Forget:
    """Removed from the config, and its life is over: drop it."""


Effect = (Spawn | Watch | Signal | ArmDeadline | ArmBackoff | LookGone | Conclude
          | StartStopCommand | EndStopCommand | StartChecks | ExtendReady | StopWatching
          | Notice | Journal | WritePidFile | RemovePidFile | TreeChanged | LookAtDeps
          | LookAgain | Answer | Finished | Forget)
