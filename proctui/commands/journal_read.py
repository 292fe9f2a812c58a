"""``journal``: one page of the run's journal from entry ``start`` (the timeline asks for
the next until it has them all).

Wire: {"op": "journal", "start": N}. Faults: BAD_VALUE for a negative start."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from proctui.commands.base import Request
from proctui.core.reply import Done, Fault, JournalPage, done_from_wire, failed

if TYPE_CHECKING:
    from proctui.core.engine import Engine

PAGE = 2000  # entries a page
PAGE_BYTES = 1 << 20  # at most about this many bytes of JSON a page


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

        entries = list(engine.journal.entries)
        page: list[dict[str, object]] = []
        size = 0
        for entry in entries[self.start:self.start + PAGE]:
            size += len(encode(entry))
            if page and size > PAGE_BYTES:
                break
            page.append(entry)
        end = self.start + len(page)
        return JournalPage(True, entries=page, next=end, more=end < len(entries))


def _int(value: object, default: int = 0) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default
