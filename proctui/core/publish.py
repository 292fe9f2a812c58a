"""Publication, on the core's thread: each change builds the process's new view and the
next CoreSnapshot, swapped in whole for readers on any thread."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import islice

from proctui.core.life.outcome import Outcome
from proctui.core.process import Managed
from proctui.core.snapshot import JOURNAL_TAIL, CoreSnapshot
from proctui.core.view import ProcessView


@dataclass(frozen=True, slots=True)
class Facts:
    """What a snapshot holds besides the processes, as the core knows it now."""

    all_ended: bool
    strays: tuple[int, ...]
    shutting_down: bool
    crash: str | None
    journal: Sequence[dict[str, object]]
    troubles: tuple[str, ...] = ()


class Publisher:
    def __init__(self, facts: Callable[[], Facts], ring: Callable[[], None]) -> None:
        self.facts = facts
        self.ring = ring  # tells listeners that something changed
        self.seq = 0
        self.snapshot = CoreSnapshot()
        self._views: list[ProcessView] = []
        self._index: dict[int, int] = {}  # id(Managed) -> its place in _views
        self._outcomes: list[tuple[str, Outcome]] = []
        self._counted: dict[int, int] = {}  # id(Managed) -> its outcomes already taken

    def added(self, m: Managed) -> None:
        self._index[id(m)] = len(self._views)
        self._views.append(m.view)

    def removed(self, m: Managed) -> None:
        """A process forgotten (reload): its view goes; the outcomes stay in the record."""
        where = self._index.pop(id(m), None)
        if where is None:
            return
        del self._views[where]
        self._index = {key: i - (i > where) for key, i in self._index.items()}
        self.seq += 1
        self.swap()
        self.ring()

    def publish(self, m: Managed) -> None:
        self.seq += 1
        m.view = m.build_view(self.seq)
        where = self._index.get(id(m))
        if where is not None:
            self._views[where] = m.view
        seen = self._counted.get(id(m), 0)
        if len(m.outcomes) > seen:
            self._outcomes.extend((m.name, o) for o in m.outcomes[seen:])
            self._counted[id(m)] = len(m.outcomes)
        self.swap()
        self.ring()

    def swap(self) -> None:
        """Build the next snapshot from what the core holds and publish it."""
        f = self.facts()
        tail = tuple(islice(reversed(f.journal), JOURNAL_TAIL))[::-1]
        self.snapshot = CoreSnapshot(
            seq=self.seq, views=tuple(self._views), outcomes=tuple(self._outcomes),
            strays=f.strays, all_ended=f.all_ended, shutting_down=f.shutting_down,
            crash=f.crash, journal_tail=tail, troubles=f.troubles)
