"""The core's answer to a command, whatever door it came through: was it done, the words
for the operator, and when it was not, the fault that says why as a code a script can
test (supervisord's Faults). The control protocol carries these as they are."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field
from enum import Enum
from typing import Any

from proctui.records import dataclass


class Fault(Enum):
    """Why a command was not done. The value is the code on the wire; ``words`` says it
    to a person."""

    UNKNOWN_COMMAND = 1
    BAD_REQUEST = 2
    BAD_VALUE = 3
    UNKNOWN_NAME = 10
    NOT_RUNNING = 11
    REFUSED = 20
    READ_ONLY = 21
    GONE = 30
    NOT_ANSWERING = 31

    @property
    def words(self) -> str:
        return _WORDS[self]


_WORDS = {
    Fault.UNKNOWN_COMMAND: "no such command",
    Fault.BAD_REQUEST: "the request is malformed",
    Fault.BAD_VALUE: "a value is out of range",
    Fault.UNKNOWN_NAME: "no process by that name",
    Fault.NOT_RUNNING: "the process is not running",
    Fault.REFUSED: "the supervisor refused",
    Fault.READ_ONLY: "this connection is read-only (attach --read-only): it may look, not act",
    Fault.GONE: "the supervisor has gone away",
    Fault.NOT_ANSWERING: "the supervisor is not answering",
}


@dataclass(frozen=True)
class Done:
    """Every reply: was it done, the words for the operator, and the fault when not."""

    ok: bool = True
    text: str = ""
    fault: Fault | None = None

    def wire(self) -> dict[str, Any]:
        """What this reply adds to the wire message besides ok, text and fault."""
        return {}


def failed(fault: Fault, text: str = "") -> Done:
    return Done(False, text or fault.words, fault)


@dataclass(frozen=True)
class JournalPage(Done):
    """At most one page of the journal, from entry ``start``; ``next`` asks for the rest."""

    entries: list[dict[str, object]] = field(default_factory=list)
    next: int = 0
    more: bool = False

    def wire(self) -> dict[str, Any]:
        return {"entries": self.entries, "next": self.next, "more": self.more}


@dataclass(frozen=True)
class EventsPage(Done):
    """Events (transitions that matter) from sequence number ``start``: each a dict with
    its ``seq``; ``next`` is the number to ask from next. ``lost`` says how many events
    between ``start`` and the first one given are no longer kept."""

    events: list[dict[str, object]] = field(default_factory=list)
    next: int = 0
    lost: int = 0

    def wire(self) -> dict[str, Any]:
        return {"events": self.events, "next": self.next, "lost": self.lost}


@dataclass(frozen=True)
class AskReply(Done):
    """The reply to an agent's request for a decision (``request_decision``) and to an
    operator's answer to one: the request as it stands now (``asks.ask_dict``), or {}."""

    ask: dict[str, object] = field(default_factory=dict)

    def wire(self) -> dict[str, Any]:
        return {"ask": self.ask}


def fault_from_wire(d: Mapping[str, Any]) -> Fault | None:
    name = d.get("fault")
    if not isinstance(name, str):
        return None if d.get("ok") else Fault.REFUSED
    return Fault.__members__.get(name, Fault.REFUSED)


def done_from_wire(d: Mapping[str, Any]) -> Done:
    return Done(bool(d.get("ok")), str(d.get("text") or ""), fault_from_wire(d))
