"""Where a process is in its life, and what its life remembers between events."""

from __future__ import annotations

from enum import Enum

from proctui.config.spec import RestartPolicy
from proctui.records import dataclass

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
    AGENT = "an agent (proctui mcp --allow down)"  # the down tool, where allowed
    GRANTED = "an agent's request, granted"  # an operator granted an agent's request
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
    stop_stage: int = 0  # its stage of a staged shutdown (0: none), of ``stop_stages``
    stop_stages: int = 0
    waiting_for: tuple[str, ...] = ()  # dependencies not met yet
    removed: bool = False  # no longer in the config (reload): forgotten once it ends
    not_started: str = ""  # why it ended without ever starting ("db failed to start")

    @property
    def over(self) -> bool:
        """Nothing is running, stopping, or waiting to (re)start."""
        return self.stage is Stage.ENDED

    @property
    def deferred(self) -> bool:
        return bool(self.stops_after)


