"""What the stop machine (``stop.py``) hears and what it asks for: its events, each with
the time it happened, and its effects. Plain frozen data, re-exported by ``stop``."""

from __future__ import annotations

from proctui.core.life.outcome import EndKind, Reason, Who
from proctui.records import dataclass

# -- events -------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class StopRequested:
    at: float
    watchdog_sec: float | None = None  # set when a missed watchdog asks for the stop
    ready_timeout: float | None = None  # set when the process never became ready


@dataclass(frozen=True, slots=True)
class KillRequested:
    at: float


@dataclass(frozen=True, slots=True)
class ExtendRequested:
    at: float
    by: float
    who: Who = Who.OPERATOR


@dataclass(frozen=True, slots=True)
class AbandonRequested:
    at: float


@dataclass(frozen=True, slots=True)
class WaitRequested:
    """Wait for the process with no deadline at all."""

    at: float


@dataclass(frozen=True, slots=True)
class DeadlineReached:
    at: float


@dataclass(frozen=True, slots=True)
class GroupGone:
    at: float


@dataclass(frozen=True, slots=True)
class SignalFailed:
    at: float
    sig: int
    error: str


@dataclass(frozen=True, slots=True)
class WaitFailed:
    at: float
    error: str


@dataclass(frozen=True, slots=True)
class InteractiveChanged:
    at: float
    interactive: bool


@dataclass(frozen=True, slots=True)
class StopCommandEnded:
    """The stop command ended (by itself, or killed at the deadline)."""

    at: float


@dataclass(frozen=True, slots=True)
class StopCommandFailed:
    """The stop command could not be started at all: the stop signal goes instead, as
    systemd sends it after a failed ExecStop (it was never sent, and the process would
    otherwise be killed at the deadline for no reason it was told)."""

    at: float
    error: str


Event = (StopRequested | KillRequested | ExtendRequested | AbandonRequested | WaitRequested
         | DeadlineReached | GroupGone | SignalFailed | WaitFailed | InteractiveChanged
         | StopCommandEnded | StopCommandFailed)


# -- effects ------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Send:
    sig: int
    reason: Reason


@dataclass(frozen=True, slots=True)
class Arm:
    """Arm the deadline timer for this instant (None: disarm)."""

    deadline: float | None


@dataclass(frozen=True, slots=True)
class Say:
    text: str


@dataclass(frozen=True, slots=True)
class Finish:
    end: EndKind


@dataclass(frozen=True, slots=True)
class StartStopCommand:
    """Run the process's stop command (instead of, or before, the stop signal)."""


@dataclass(frozen=True, slots=True)
class EndStopCommand:
    """The deadline came (or a kill): the stop command's whole group is killed."""

    why: str = "its deadline came"


Effect = Send | Arm | Say | Finish | StartStopCommand | EndStopCommand
