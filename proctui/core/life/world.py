"""What the core knows beyond any one process, as one frozen value changed only by
``world_step``: whether everything is stopping and why, whether anybody can answer an
"ask", the interrupt ladder, what keeps proctui from keeping a promise (a full disk),
processes left behind that no run could be proven to own, the last word of the
processes a reload removed, and the agents' requests for a decision (``asks.py``). The
engine turns what this decides into each process's events (its life and stop machines
decide the rest)."""

from __future__ import annotations

from dataclasses import replace
from enum import Enum

from proctui.core.life.asks import (
    Answered,
    Asked,
    AskEvent,
    Asks,
    Expired,
    Moot,
    Said,
    Stopping,
    asks_step,
)
from proctui.core.life.outcome import Outcome
from proctui.core.life.stages import Why
from proctui.records import dataclass


class Rung(Enum):
    """What one more interrupt does (headless, down, a console before its first frame)."""

    STOP = 1  # every stop sequence, with its countdowns
    KILL = 2  # SIGKILL to whatever is still stopping
    ABANDON = 3  # leave what is left running, name it, and exit


@dataclass(frozen=True, slots=True)
class World:
    interactive: bool = True
    shutdown_why: Why | None = None
    shutdown_ordered: bool = True
    abandon_all: bool = False  # everything left was abandoned: proctui exits now
    interrupts: int = 0  # SIGINT and friends, as the ladder counts them
    troubles: tuple[tuple[str, str], ...] = ()  # (area, what keeps its promise)
    strays: tuple[int, ...] = ()
    crash: str | None = None
    removed: tuple[tuple[str, Outcome | None], ...] = ()  # reload: name, last outcome
    asks: Asks = Asks()  # agents' requests for a decision only an operator takes

    @property
    def shutting_down(self) -> bool:
        return self.shutdown_why is not None


# -- what the world hears -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StopAll:
    why: Why = Why.OPERATOR
    ordered: bool = True  # in dependency order (False: everything now)


@dataclass(frozen=True, slots=True)
class KillAll:
    """SIGKILL now to everything still stopping."""


@dataclass(frozen=True, slots=True)
class AbandonAll:
    """Leave everything still running or stopping as it is, and exit."""


@dataclass(frozen=True, slots=True)
class Interrupt:
    """A signal to proctui itself: SIGINT climbs the ladder (stop, kill, abandon); the
    first of any kind (SIGTERM, SIGHUP too) stops everything."""

    signal: str  # its name: "SIGINT"
    climbs: bool = True  # SIGINT climbs; a second SIGTERM only repeats the stop
    left: str = ""  # what is alive as it comes ("web pid 4121, db pid 4130"): named if abandoned


@dataclass(frozen=True, slots=True)
class SetInteractive:
    interactive: bool


@dataclass(frozen=True, slots=True)
class Trouble:
    area: str
    text: str | None  # None: no longer


@dataclass(frozen=True, slots=True)
class Strays:
    pids: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Crashed:
    text: str


@dataclass(frozen=True, slots=True)
class Removed:
    name: str
    last: Outcome | None


WorldEvent = (StopAll | KillAll | AbandonAll | Interrupt | SetInteractive | Trouble | Strays
              | Crashed | Removed | AskEvent)


# -- what it decides ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Decided:
    """What the engine is to do for an event: ``rung`` of the ladder to carry out (STOP,
    KILL, ABANDON), the shutdown to begin (``why``), words to say and journal."""

    rung: Rung | None = None
    why: Why | None = None
    ordered: bool = True
    first: bool = False  # the shutdown began with this event
    interactive: bool | None = None  # tell every process
    said: tuple[str, ...] = ()
    trouble: tuple[str, str | None] | None = None  # said once: (area, text or None)
    asks: Said | None = None  # what a request for a decision brought (asks.py)


_WHY = {"SIGINT": Why.SIGINT, "SIGTERM": Why.SIGTERM, "SIGHUP": Why.HANGUP}


def world_step(w: World, e: WorldEvent) -> tuple[World, Decided]:
    if isinstance(e, StopAll):
        first = w.shutdown_why is None
        if first:
            w = replace(w, shutdown_why=e.why, shutdown_ordered=e.ordered)
        return w, Decided(Rung.STOP, e.why, e.ordered, first)
    if isinstance(e, KillAll):
        return w, Decided(Rung.KILL)
    if isinstance(e, AbandonAll):
        first = w.shutdown_why is None
        w = replace(w, abandon_all=True, shutdown_why=w.shutdown_why or Why.OPERATOR)
        return w, Decided(Rung.ABANDON, w.shutdown_why, first=first)
    if isinstance(e, Interrupt):
        return _interrupt(w, e)
    if isinstance(e, SetInteractive):
        return replace(w, interactive=e.interactive), Decided(interactive=e.interactive)
    if isinstance(e, Trouble):
        return _trouble(w, e)
    if isinstance(e, Strays):
        return replace(w, strays=e.pids), Decided()
    if isinstance(e, Crashed):
        if w.crash is not None:
            return w, Decided()
        return replace(w, crash=e.text), Decided()
    if isinstance(e, Removed):
        return replace(w, removed=(*w.removed, (e.name, e.last))), Decided()
    if isinstance(e, Asked | Answered | Expired | Moot | Stopping):
        asks, said = asks_step(w.asks, e, shutting_down=w.shutting_down)
        return (w if asks is w.asks else replace(w, asks=asks)), Decided(asks=said)
    raise TypeError(f"unknown world event {e!r}")


def _interrupt(w: World, e: Interrupt) -> tuple[World, Decided]:
    """Once: stop everything (nobody is asked: "ask" acts as kill). A second SIGINT kills
    what is still stopping; a third abandons what is left, and proctui exits."""
    if w.interrupts == 0:
        why = _WHY.get(e.signal, Why.OPERATOR)
        first = w.shutdown_why is None
        w = replace(w, interrupts=1, interactive=False,
                    shutdown_why=w.shutdown_why or why)
        return w, Decided(Rung.STOP, why, first=first, interactive=False,
                          said=(f"received {e.signal}: stopping everything (ctrl+c again "
                                "kills what is still stopping)",))
    if not e.climbs or w.abandon_all:
        return w, Decided()
    presses = w.interrupts + 1
    w = replace(w, interrupts=presses)
    if presses == 2:
        return w, Decided(Rung.KILL, said=(f"received {e.signal} again: killing what is "
                                           "still stopping (ctrl+c once more abandons it)",))
    w = replace(w, abandon_all=True)
    return w, Decided(Rung.ABANDON, said=(f"received {e.signal} again: abandoning what is "
                                          f"left ({e.left or 'nothing'}) and exiting",))


def _trouble(w: World, e: Trouble) -> tuple[World, Decided]:
    troubles = dict(w.troubles)
    before = troubles.get(e.area)
    if e.text == before:
        return w, Decided()
    if e.text is None:
        del troubles[e.area]
    else:
        troubles[e.area] = e.text
    w = replace(w, troubles=tuple(troubles.items()))
    if before is None or e.text is None:
        return w, Decided(trouble=(e.area, e.text))
    return w, Decided()
