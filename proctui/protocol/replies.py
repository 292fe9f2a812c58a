"""Replies of the control protocol, and the faults that say why a command was not done
(supervisord's Faults: a code for scripts, words beside it for people)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from proctui.core.view import Reply


class Fault(Enum):
    """Why a command was not done, as a code a script can test (supervisord's Faults).
    The value is the code on the wire; ``words`` says it to a person."""

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


# -- replies ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Done:
    """Every reply: was it done, the words for the operator, and the fault when not."""

    ok: bool = True
    text: str = ""
    fault: Fault | None = None

    def wire(self) -> dict[str, Any]:
        return {}

    @property
    def reply(self) -> Reply:
        return Reply(self.ok, self.text)


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
class TailPage(Done):
    """At most one page of a process's scrollback: lines numbered from ``first``, their
    streams as runs ([stream, count], ...); ``next`` is where the following page begins
    (and, once ``more`` is false, where new output will begin)."""

    first: int = 0
    lines: list[str] = field(default_factory=list)
    runs: list[list[int]] = field(default_factory=list)
    next: int = 0
    more: bool = False
    total: int = 0  # lines the process had written when this page was read

    def wire(self) -> dict[str, Any]:
        return {"first": self.first, "lines": self.lines, "runs": self.runs,
                "next": self.next, "more": self.more, "total": self.total}

    @property
    def streams(self) -> list[int]:
        return [s for s, count in self.runs for _ in range(count)]


def encode_reply(answer: Done, number: object = None) -> dict[str, Any]:
    out: dict[str, Any] = {"t": "reply", "ok": answer.ok, "text": answer.text,
                           "fault": None if answer.fault is None else answer.fault.name,
                           **answer.wire()}
    if number is not None:
        out["id"] = number
    return out


def _fault(d: Mapping[str, Any]) -> Fault | None:
    name = d.get("fault")
    if not isinstance(name, str):
        return None if d.get("ok") else Fault.REFUSED
    return Fault.__members__.get(name, Fault.REFUSED)


def done_from_wire(d: Mapping[str, Any]) -> Done:
    return Done(bool(d.get("ok")), str(d.get("text") or ""), _fault(d))


def int_from_wire(value: object, default: int = 0) -> int:
    """A whole number from the wire (not a bool, which JSON would let through), or
    ``default``."""
    return value if isinstance(value, int) and not isinstance(value, bool) else default
