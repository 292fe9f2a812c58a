"""``journal``: one page of the run's journal from entry ``start`` (the timeline asks for
the next until it has them all).

Wire: {"op": "journal", "start": N}. Faults: BAD_VALUE for a negative start."""

from __future__ import annotations

from collections.abc import Mapping
from itertools import islice
from typing import TYPE_CHECKING, Any

from proctui.commands.base import Request
from proctui.core.reply import Done, Fault, JournalPage, done_from_wire, failed
from proctui.records import dataclass

if TYPE_CHECKING:
    from proctui.core.engine import Engine

# A page is made on the core's loop, between deadlines: small enough that encoding it
# (a few microseconds an entry) never makes a SIGKILL late, and within what the server
# lets a client leave unread (remote/pages.py: 256 KB a page).
PAGE = 500  # entries a page
PAGE_BYTES = 256 << 10  # at most about this many bytes of JSON a page


@dataclass(frozen=True)
class ReadJournal(Request[JournalPage]):
    """One page of the journal from entry ``start`` (the client asks for the next)."""

    op = "journal"
    start: int = 0

    def check(self) -> Done | None:
        if self.start < 0:
            return failed(Fault.BAD_VALUE, f"journal: start {self.start} is negative")
        return None

    def answer(self, d: Mapping[str, Any]) -> JournalPage:
        entries = d.get("entries")
        return JournalPage(**done_from_wire(d).__dict__,
                           entries=[e for e in entries if isinstance(e, dict)]
                           if isinstance(entries, list) else [],
                           next=_int(d.get("next")), more=d.get("more") is True)

    def execute(self, engine: Engine) -> JournalPage:
        from proctui.core.store.journal import encode

        entries = engine.journal.entries
        page: list[dict[str, object]] = []
        size = 0
        for entry in islice(entries, self.start, self.start + PAGE):
            size += len(encode(entry))
            if page and size > PAGE_BYTES:
                break
            page.append(entry)
        end = self.start + len(page)
        return JournalPage(True, entries=page, next=end, more=end < len(entries))


def _int(value: object, default: int = 0) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default
