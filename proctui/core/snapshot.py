"""Everything a frontend may read about the core, frozen: one ``CoreSnapshot`` built on
the core's thread after every change and published by swapping one reference. Readers on
other threads (the console, the headless printer, the control server) never see a list
the core is still writing."""

from __future__ import annotations

from dataclasses import dataclass, field

from proctui.core.life.outcome import Outcome, exit_status_for
from proctui.core.view import ProcessView

JOURNAL_TAIL = 200  # entries of the journal carried in each snapshot


@dataclass(frozen=True, slots=True)
class CoreSnapshot:
    seq: int = 0
    views: tuple[ProcessView, ...] = ()
    outcomes: tuple[tuple[str, Outcome], ...] = ()  # every run's outcome, in order
    strays: tuple[int, ...] = ()  # pids left behind that no run could be proven to own
    all_ended: bool = False  # nothing runs, stops or waits to (re)start
    shutting_down: bool = False
    crash: str | None = None
    # What keeps proctui from keeping a promise now (a full disk under its log, journal
    # or PID files), in words: supervision goes on regardless.
    troubles: tuple[str, ...] = ()
    journal_tail: tuple[dict[str, object], ...] = field(default=(), compare=False)

    def final(self) -> list[tuple[str, Outcome | None]]:
        """Each process's last outcome (None: it never started)."""
        last: dict[str, Outcome] = {}
        for name, outcome in self.outcomes:
            last[name] = outcome
        return [(v.name, last.get(v.name)) for v in self.views]

    @property
    def exit_status(self) -> int:
        status = exit_status_for([o for _, o in self.outcomes], len(self.strays))
        return max(status, 1) if self.crash else status
