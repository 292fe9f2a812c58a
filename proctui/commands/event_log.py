"""``events``: what happened, from a sequence number: each transition that matters
(started, ready, an outcome, a decision asked for and answered, a shutdown begun, a
reload's additions and removals) as the journal recorded it, once, in order. A reader
that reconnects asks from the last number it saw and loses nothing (``lost`` says how
many numbers are older than what is kept).

Wire: {"op": "events", "since": N}. Faults: BAD_VALUE for a negative number."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from proctui.commands.base import Request
from proctui.core.reply import Done, EventsPage, Fault, done_from_wire, failed
from proctui.records import dataclass

if TYPE_CHECKING:
    from proctui.core.engine import Engine

PAGE = 500  # events a page


@dataclass(frozen=True)
class ReadEvents(Request[EventsPage]):
    """Events after number ``since`` (the client asks for the next page)."""

    op = "events"
    tool = "events"
    tool_args = {"since": "the sequence number of the last event you read (0: from the "
                          "oldest kept); the reply's next is the one to ask from next"}
    since: int = 0

    def check(self) -> Done | None:
        if self.since < 0:
            return failed(Fault.BAD_VALUE, f"events: since {self.since} is negative")
        return None

    def answer(self, d: Mapping[str, Any]) -> EventsPage:
        events = d.get("events")
        nxt, lost = d.get("next"), d.get("lost")
        return EventsPage(**done_from_wire(d).__dict__,
                          events=[e for e in events if isinstance(e, dict)]
                          if isinstance(events, list) else [],
                          next=nxt if isinstance(nxt, int) and not isinstance(nxt, bool)
                          else self.since,
                          lost=lost if isinstance(lost, int) and not isinstance(lost, bool)
                          else 0)

    def execute(self, engine: Engine) -> EventsPage:
        entries, lost = engine.journal.since(self.since, PAGE)
        last = entries[-1]["seq"] if entries else max(self.since, 0)
        return EventsPage(True, events=entries, next=last, lost=lost)  # type: ignore[arg-type]
