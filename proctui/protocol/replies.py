"""Replies of the control protocol on the wire: every reply is the core's ``Done`` (was
it done, the words, the fault when not), with what some replies add (a page of a
process's scrollback, of the journal, of the events)."""

from __future__ import annotations

from dataclasses import field
from typing import Any

from proctui.core.reply import (
    Done,
    EventsPage,
    Fault,
    JournalPage,
    done_from_wire,
    failed,
)
from proctui.records import dataclass

__all__ = ["Done", "EventsPage", "Fault", "JournalPage", "TailPage", "done_from_wire",
           "encode_reply", "failed", "int_from_wire"]


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


def int_from_wire(value: object, default: int = 0) -> int:
    """A whole number from the wire (not a bool, which JSON would let through), or
    ``default``."""
    return value if isinstance(value, int) and not isinstance(value, bool) else default
