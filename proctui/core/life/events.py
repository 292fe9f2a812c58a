"""What the life machine hears (events) and what it asks for (effects): frozen facts,
no behaviour. ``machine.py`` decides; ``step.py`` turns its effects into the executor's."""

from __future__ import annotations

from proctui.config.spec import RestartPolicy
from proctui.core.life.stages import Why
from proctui.core.store.kinds import Kind
from proctui.records import dataclass

# -- events ---------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Launch:
    """Begin (at start-up, or the operator's start once it had ended)."""


@dataclass(frozen=True, slots=True)
class DepsLooked:
    """What its dependencies are: ``waiting`` not met yet, ``failed`` never will be."""

    waiting: tuple[str, ...]
    failed: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class BlockerEnded:
    """Its leftover is over; ``left_running`` names a pid still there (abandoned)."""

    left_running: int | None = None


@dataclass(frozen=True, slots=True)
class RunEnded:
    restartable: bool  # it ended by itself (exited, or its watchdog fired)
    clean: bool  # exit code 0
    left_running: bool  # abandoned or unkillable: something of it is still there
    lived: float  # seconds from spawn to end


@dataclass(frozen=True, slots=True)
class BackoffOver:
    pass


@dataclass(frozen=True, slots=True)
class StopCmd:
    stopping: bool = False  # its run is already in its stop sequence


@dataclass(frozen=True, slots=True)
class RestartCmd:
    stopping: bool = False
    ran: bool = True
    left_running: int | None = None


@dataclass(frozen=True, slots=True)
class StartCmd:
    left_running: int | None = None  # a pid of its last run still alive (abandoned)
    ran: bool = True  # it had a run (so starting it again counts as a restart)


@dataclass(frozen=True, slots=True)
class GiveUpCmd:
    """Kill or abandon asked of a process with no live run: nothing may start."""


@dataclass(frozen=True, slots=True)
class AdoptCmd:
    pass


@dataclass(frozen=True, slots=True)
class Shutdown:
    """Everything is stopping. ``after``: its live dependents, whose end its stop waits
    for (empty: stop now). ``stage`` of ``stages`` for the words."""

    why: Why = Why.OPERATOR
    after: tuple[str, ...] = ()
    stage: int = 0
    stages: int = 0


@dataclass(frozen=True, slots=True)
class DependentsLeft:
    """Who of its dependents still runs (a staged stop waits until nobody does)."""

    after: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class StopsAfter:
    """Before its launch: its stop waits for these (a leftover whose dependents were
    left running too)."""

    after: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ReleaseStop:
    """Stop now, regardless of order (X, or a second interrupt)."""


@dataclass(frozen=True, slots=True)
class NobodyAnswers:
    """The terminal went away: no operator can decide about a held leftover."""


@dataclass(frozen=True, slots=True)
class RemoveCmd:
    """``reload``: it is no longer in the config. It stops (after ``after``, its removed
    dependents, as a shutdown would), then it is forgotten."""

    after: tuple[str, ...] = ()
    stopping: bool = False  # its run is already in its stop sequence


@dataclass(frozen=True, slots=True)
class ChangedCmd:
    """``reload``: its settings changed (the spec is already the new one): restart it
    with them, now if it runs, or start it again if it had ended."""

    policy: RestartPolicy
    has_deps: bool
    stopping: bool = False
    ran: bool = True
    left_running: int | None = None


Event = (Launch | DepsLooked | BlockerEnded | RunEnded | BackoffOver | StopCmd | RestartCmd
         | StartCmd | GiveUpCmd | AdoptCmd | Shutdown | DependentsLeft | StopsAfter
         | ReleaseStop | NobodyAnswers | RemoveCmd | ChangedCmd)


# -- effects --------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Spawn:
    pass


@dataclass(frozen=True, slots=True)
class TakeOver:
    """Watch an earlier run's leftover as a run; ``stop``: and send it its stop signal."""

    stop: bool


@dataclass(frozen=True, slots=True)
class RequestStop:
    pass


@dataclass(frozen=True, slots=True)
class LookAtDeps:
    pass


@dataclass(frozen=True, slots=True)
class ArmBackoff:
    delay: float


@dataclass(frozen=True, slots=True)
class CancelBackoff:
    pass


@dataclass(frozen=True, slots=True)
class Say:
    text: str


@dataclass(frozen=True, slots=True)
class Record:
    """A journal entry."""

    kind: Kind
    data: tuple[tuple[str, object], ...] = ()


@dataclass(frozen=True, slots=True)
class HoldForever:
    """Leave a held leftover alone for good (its outcome says so)."""


@dataclass(frozen=True, slots=True)
class Answer:
    """The reply to the command this event was."""

    ok: bool
    text: str


@dataclass(frozen=True, slots=True)
class AnswerEnded:
    """The reply is why ``verb`` cannot act on a process that is not running (the
    engine words it from the last outcome)."""

    verb: str


@dataclass(frozen=True, slots=True)
class Finished:
    """Its life is over (for now): everything waiting on it may look again."""


@dataclass(frozen=True, slots=True)
class Forget:
    """It was removed from the config and its life is over: drop it."""


Effect = (Spawn | TakeOver | RequestStop | LookAtDeps | ArmBackoff | CancelBackoff | Say
          | Record | HoldForever | Answer | AnswerEnded | Finished | Forget)


