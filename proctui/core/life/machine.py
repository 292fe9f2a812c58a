"""A process's whole life as a pure state machine: ``step(life, event) -> (life, effects)``.

Waiting for dependencies, waiting for its own leftover to go, starting, running,
backoff, held (a leftover not proven ours), ended; and the decisions around a run: restart
or not, stop now or after its dependents (a staged shutdown), start or refuse. While a run
is live its stop sequence is the nested machine in ``stop.py``; this one hears only that
the run ended. No I/O, no clock, no asyncio: the engine carries the effects out and feeds
back what happened, and the tests feed events and read effects in milliseconds.

    NEW --> WAITING --deps met--> RUNNING (spawn) --run ended--> BACKOFF --> RUNNING
     |         ^                     ^     |                         |
     +--> BLOCKED (own leftover)     +-----+--restart                +--> ENDED
    HELD (leftover in doubt) --operator stops or adopts--> RUNNING
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import Enum

from proctui.config.spec import RestartPolicy

BACKOFF_START = 1.0
BACKOFF_MAX = 30.0
BACKOFF_RESET = 10.0  # a run that lived this long starts the backoff over


class Stage(Enum):
    NEW = "new"  # not launched yet
    BLOCKED = "blocked"  # its own leftover from an earlier run is still being stopped
    WAITING = "waiting"  # for its dependencies
    RUNNING = "running"  # a run is spawned (or failed to spawn): its stop machine decides
    BACKOFF = "backoff"  # ended; waiting to restart
    HELD = "held"  # a leftover not proven ours: waits for the operator, never signalled
    ENDED = "ended"  # over until the operator starts it again


class Leftover(Enum):
    NO = "no"  # a configured process of this run
    PROVEN = "proven"  # an earlier run's process, proven ours: stopped at start-up
    DOUBT = "doubt"  # an earlier run's, not proven: held for the operator
    UNPROVABLE = "unprovable"  # no group of it could be proven: nothing to signal


class Why(Enum):
    """Why a shutdown began: recorded in the journal and said in the summary."""

    QUIT = "quit key"
    DOWN = "proctui down"
    SIGTERM = "SIGTERM"
    SIGINT = "SIGINT"
    HANGUP = "hangup"
    STOP_AFTER = "--stop-after"
    INTERNAL_ERROR = "internal error"
    OPERATOR = "operator"  # a stop-everything command from a frontend
    ALL_ENDED = "all ended"


@dataclass(frozen=True, slots=True)
class Life:
    name: str
    policy: RestartPolicy = RestartPolicy.NO
    has_deps: bool = False
    leftover: Leftover = Leftover.NO
    stage: Stage = Stage.NEW
    blocked: bool = False  # an earlier run's copy of it must be gone before it starts
    blocker_left: int | None = None  # that copy ended, but this pid of it still runs
    restarts: int = 0
    backoff: float = BACKOFF_START  # the next backoff's length
    stop_wanted: bool = False  # asked to stop: no restart, no start
    restart_wanted: bool = False  # asked to restart: start again once the run ends
    shutdown: bool = False  # everything is stopping: nothing starts or restarts
    adopted: bool = False  # a held leftover the operator took as ours
    interactive: bool = True  # someone can answer
    stops_after: tuple[str, ...] = ()  # its stop waits for these dependents to end
    waiting_for: tuple[str, ...] = ()  # dependencies not met yet

    @property
    def over(self) -> bool:
        """Nothing is running, stopping, or waiting to (re)start."""
        return self.stage is Stage.ENDED

    @property
    def deferred(self) -> bool:
        return bool(self.stops_after)


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
class ReleaseStop:
    """Stop now, regardless of order (X, or a second interrupt)."""


@dataclass(frozen=True, slots=True)
class NobodyAnswers:
    """The terminal went away: no operator can decide about a held leftover."""


Event = (Launch | DepsLooked | BlockerEnded | RunEnded | BackoffOver | StopCmd | RestartCmd
         | StartCmd | GiveUpCmd | AdoptCmd | Shutdown | DependentsLeft | ReleaseStop
         | NobodyAnswers)


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

    kind: str
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


Effect = (Spawn | TakeOver | RequestStop | LookAtDeps | ArmBackoff | CancelBackoff | Say
          | Record | HoldForever | Answer | AnswerEnded | Finished)


# -- the machine ----------------------------------------------------------------------------

def step(life: Life, event: Event) -> tuple[Life, list[Effect]]:
    handler = _HANDLERS[type(event)]
    return handler(life, event)


def _end(life: Life, *said: Effect) -> tuple[Life, list[Effect]]:
    return (replace(life, stage=Stage.ENDED, stops_after=(), waiting_for=(),
                    restart_wanted=False), [*said, Finished()])


def _begin(life: Life) -> tuple[Life, list[Effect]]:
    """Past every block: wait for dependencies, or start."""
    if life.has_deps:
        return replace(life, stage=Stage.WAITING), [LookAtDeps()]
    return replace(life, stage=Stage.RUNNING), [Spawn()]


def _not_started(life: Life) -> str:
    return "not started: everything is stopping" if life.shutdown else \
        "not started: stop requested"


def _launch(life: Life, e: Launch) -> tuple[Life, list[Effect]]:
    if life.stage not in (Stage.NEW, Stage.ENDED):
        return life, []
    if life.leftover is Leftover.DOUBT:
        held = replace(life, stage=Stage.HELD)
        if not life.interactive or life.shutdown:
            return _end(held, HoldForever())
        return held, []
    if life.leftover is Leftover.UNPROVABLE:
        return _end(life, Say("no group of it could be proven, so there is nothing proctui "
                              "can signal; stop it yourself"), HoldForever())
    if life.leftover is Leftover.PROVEN:
        return replace(life, stage=Stage.RUNNING), [TakeOver(stop=not life.stops_after)]
    if life.stop_wanted or life.shutdown:
        return _end(life, Say(_not_started(life)))
    if life.blocker_left is not None:
        return _end(life, Say(f"not started: its leftover (pid {life.blocker_left}) is still "
                              "running"))
    if life.blocked:
        return replace(life, stage=Stage.BLOCKED), []
    return _begin(life)


def _deps_looked(life: Life, e: DepsLooked) -> tuple[Life, list[Effect]]:
    if life.stage is not Stage.WAITING:
        return life, []
    if life.stop_wanted or life.shutdown:
        return _end(life, Say(_not_started(life)))
    if e.failed:
        return _end(life, Say(f"not started: {'; '.join(e.failed)} (it ended)"))
    if not e.waiting:
        return replace(life, stage=Stage.RUNNING, waiting_for=()), [Spawn()]
    if e.waiting == life.waiting_for:
        return life, []
    return replace(life, waiting_for=e.waiting), \
        [Record("waiting", (("waits_for", list(e.waiting)),))]


def _blocker_ended(life: Life, e: BlockerEnded) -> tuple[Life, list[Effect]]:
    life = replace(life, blocked=False, blocker_left=e.left_running)
    if life.stage is not Stage.BLOCKED:
        return life, []  # not launched yet: Launch will look
    if life.stop_wanted or life.shutdown:
        return _end(life, Say(_not_started(life)))
    return _launch(replace(life, stage=Stage.NEW), Launch())


def _run_ended(life: Life, e: RunEnded) -> tuple[Life, list[Effect]]:
    if life.stage is not Stage.RUNNING:
        return life, []
    if life.leftover is not Leftover.NO:
        return _end(life)
    if life.restart_wanted and not e.left_running and not life.shutdown:
        return (replace(life, stage=Stage.RUNNING, restart_wanted=False, stop_wanted=False,
                        restarts=life.restarts + 1, backoff=BACKOFF_START, stops_after=()),
                [Spawn()])
    if life.stop_wanted or life.shutdown or not e.restartable or not _policy_restarts(
            life.policy, e.clean):
        return _end(life)
    backoff = BACKOFF_START if e.lived >= BACKOFF_RESET else life.backoff
    return (replace(life, stage=Stage.BACKOFF, backoff=min(backoff * 2, BACKOFF_MAX)),
            [ArmBackoff(backoff)])


def _policy_restarts(policy: RestartPolicy, clean: bool) -> bool:
    if policy is RestartPolicy.ALWAYS:
        return True
    return policy is RestartPolicy.ON_FAILURE and not clean


def _backoff_over(life: Life, e: BackoffOver) -> tuple[Life, list[Effect]]:
    if life.stage is not Stage.BACKOFF:
        return life, []
    if life.stop_wanted or life.shutdown:
        return _end(life, Say("restart cancelled: stop requested"))
    return replace(life, stage=Stage.RUNNING, restarts=life.restarts + 1), [Spawn()]


def _stop(life: Life, e: StopCmd) -> tuple[Life, list[Effect]]:
    name = life.name
    stage = life.stage
    if stage is Stage.HELD:
        # The operator vouches for it: stop it like a proven leftover.
        life = replace(life, stage=Stage.RUNNING, stop_wanted=True)
        return life, [TakeOver(stop=True), Answer(True, f"stopping {name}")]
    if stage is Stage.RUNNING:
        life = replace(life, stop_wanted=True, restart_wanted=False)
        if e.stopping:
            return life, [Answer(False, f"{name} is already stopping")]
        return replace(life, stops_after=()), [RequestStop(), Answer(True, f"stopping {name}")]
    life = replace(life, stop_wanted=True)
    if stage in (Stage.NEW, Stage.BLOCKED, Stage.WAITING):
        return _end(life, Say("not started: stop requested"),
                    Answer(True, f"{name} will not start"))
    if stage is Stage.BACKOFF:
        return _end(life, CancelBackoff(), Say("restart cancelled: stop requested"),
                    Answer(True, f"{name} will not start"))
    return life, [AnswerEnded("stop")]


def _give_up(life: Life, e: GiveUpCmd) -> tuple[Life, list[Effect]]:
    """Kill or abandon of a process that has no live run: whatever was to start, won't."""
    if life.stage is Stage.HELD:
        return _end(replace(life, stop_wanted=True), HoldForever(),
                    Answer(True, f"left {life.name} alone"))
    if life.stage in (Stage.NEW, Stage.BLOCKED, Stage.WAITING):
        return _end(replace(life, stop_wanted=True), Say("not started: stop requested"),
                    AnswerEnded("stop"))
    if life.stage is Stage.BACKOFF:
        return _end(replace(life, stop_wanted=True), CancelBackoff(),
                    Say("restart cancelled: stop requested"), AnswerEnded("stop"))
    return replace(life, stop_wanted=life.stop_wanted or life.stage is Stage.RUNNING), []


def _restart(life: Life, e: RestartCmd) -> tuple[Life, list[Effect]]:
    name = life.name
    if life.leftover is not Leftover.NO:
        return life, [Answer(False, f"{name} is a leftover; it is not restarted")]
    if life.shutdown:
        return life, [Answer(False, f"{name} not restarted: everything is stopping")]
    if life.stage is Stage.RUNNING:
        if e.stopping:
            return life, [Answer(False, f"{name} is already stopping")]
        return (replace(life, restart_wanted=True, stop_wanted=True),
                [RequestStop(), Answer(True, f"restarting {name}")])
    if life.stage is Stage.BACKOFF:
        return (replace(life, stage=Stage.RUNNING, restarts=life.restarts + 1),
                [CancelBackoff(), Spawn(), Answer(True, f"restarting {name} now")])
    return _start(life, StartCmd(left_running=e.left_running, ran=e.ran))


def _start(life: Life, e: StartCmd) -> tuple[Life, list[Effect]]:
    name = life.name
    if life.leftover is not Leftover.NO:
        return life, [Answer(False, f"{name} is a leftover; it is not started again")]
    if life.shutdown:
        return life, [Answer(False, f"{name} not started: everything is stopping")]
    if life.stage is not Stage.ENDED:
        return life, [Answer(False, f"{name} is {_words(life.stage)}; start works on a "
                                    "process that has ended")]
    if e.left_running is not None:
        return life, [Answer(False, f"not started again: pid {e.left_running} is still "
                                    "running")]
    life = replace(life, stage=Stage.NEW, stop_wanted=False, restart_wanted=False,
                   blocked=False, blocker_left=None, restarts=life.restarts + (1 if e.ran else 0),
                   backoff=BACKOFF_START)
    life, effects = _launch(life, Launch())
    return life, [*effects, Answer(True, f"starting {name}")]


def _words(stage: Stage) -> str:
    return {Stage.BLOCKED: "starting", Stage.NEW: "starting"}.get(stage, stage.value)


def _adopt(life: Life, e: AdoptCmd) -> tuple[Life, list[Effect]]:
    if life.stage is not Stage.HELD:
        return life, [Answer(False, f"{life.name} is not a held leftover; nothing to adopt")]
    return (replace(life, stage=Stage.RUNNING, adopted=True, stop_wanted=False),
            [TakeOver(stop=False),
             Answer(True, f"adopted {life.name}: it is watched, and stopped on quit")])


def _shutdown(life: Life, e: Shutdown) -> tuple[Life, list[Effect]]:
    first = not life.shutdown
    life = replace(life, shutdown=True)
    stage = life.stage
    if stage is Stage.HELD:
        # Not proven ours: never signalled unless the operator says so, and no reason to
        # wait for it either.
        return _end(replace(life, stop_wanted=True), HoldForever())
    if stage in (Stage.NEW, Stage.BLOCKED, Stage.WAITING):
        return _end(replace(life, stop_wanted=True), Say("not started: everything is stopping"))
    if stage is Stage.BACKOFF:
        return _end(replace(life, stop_wanted=True), CancelBackoff(),
                    Say("restart cancelled: everything is stopping"))
    if stage is not Stage.RUNNING or not first or life.stop_wanted:
        return replace(life, stop_wanted=True, restart_wanted=False), []
    life = replace(life, stop_wanted=True, restart_wanted=False)
    if e.after:
        return replace(life, stops_after=e.after), [
            Say(f"stops after {', '.join(e.after)} (stage {e.stage} of {e.stages})"),
            Record("stage", (("stage", e.stage), ("of", e.stages), ("after", list(e.after))))]
    return life, [RequestStop()]


def _dependents_left(life: Life, e: DependentsLeft) -> tuple[Life, list[Effect]]:
    if not life.stops_after or life.stage is not Stage.RUNNING:
        return life, []
    if e.after:
        return replace(life, stops_after=e.after), []
    return replace(life, stops_after=()), [RequestStop()]


def _release(life: Life, e: ReleaseStop) -> tuple[Life, list[Effect]]:
    if not life.stops_after or life.stage is not Stage.RUNNING:
        return life, []
    return replace(life, stops_after=()), [RequestStop()]


def _nobody(life: Life, e: NobodyAnswers) -> tuple[Life, list[Effect]]:
    life = replace(life, interactive=False)
    if life.stage is Stage.HELD:
        return _end(replace(life, stop_wanted=True), HoldForever())
    return life, []


_HANDLERS = {
    Launch: _launch, DepsLooked: _deps_looked, BlockerEnded: _blocker_ended,
    RunEnded: _run_ended, BackoffOver: _backoff_over, StopCmd: _stop, RestartCmd: _restart,
    StartCmd: _start, GiveUpCmd: _give_up, AdoptCmd: _adopt, Shutdown: _shutdown,
    DependentsLeft: _dependents_left, ReleaseStop: _release, NobodyAnswers: _nobody,
}
