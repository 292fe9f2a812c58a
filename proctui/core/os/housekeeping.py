"""The walk of our process tree, about once a second while anything changes and seldom
while nothing does: it attributes descendants (while they are still visible under their
run), reaps orphans, notices strays, pauses, silence and resource use. A sensor: what it
finds goes to the step function as facts (Observed, SilenceLooked) and strays to the
engine; it decides nothing about a process.

Idle, a tree of sleeping processes cannot change by itself: a process that does not run
forks nothing. So the pace halves with every walk that finds the tree as it was, down to
one walk a QUIET_USAGE while a frontend shows resource use (its figures move by the
walk), one an IDLE otherwise; a spawn, an ending or a stop brings it back to a second at
once (changed), and so does any process that used CPU (its ticks are in the shape). A
silence warning is a deadline, not something a walk may come across: the walk is due
when the first one is. What the slow pace delays, and why that is safe: an orphan that
died is reaped (and a group member that ended seen) at the next walk, a SIGSTOP from
outside shows as paused then; a stop walks afresh before it signals (engine), so no
descendant escapes a stop for it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from proctui.core.life import inputs as i
from proctui.core.life.state import Proc
from proctui.core.life.stop import Phase
from proctui.core.os.lineage import Lineage
from proctui.core.os.oslayer import OSLayer
from proctui.core.os.procfs import ProcTable
from proctui.core.os.usage import Samples, usage_of

EVERY = 1.0
CLOSE_WALKS = 1  # walks a second after a change (CPU used is one), then it halves per quiet one
QUIET_USAGE = 4.0  # seconds between walks of an unchanged tree while usage is shown
IDLE = 16.0  # seconds between walks of an unchanged tree otherwise


class Housekeeping:
    def __init__(self, loop: asyncio.AbstractEventLoop, os_layer: OSLayer, lineage: Lineage,
                 procs: Callable[[], list[Proc]], keep: Callable[[], set[int]],
                 post: Callable[[str, object], None],
                 stray: Callable[[int, str], None],
                 quiet_for: Callable[[str], float | None],
                 dropped: Callable[[str], int]) -> None:
        self.loop = loop
        self.os = os_layer
        self.lineage = lineage
        self.procs = procs  # every process as the table holds it now
        self.keep = keep  # pids never reaped here (our own children, probes)
        self.post = post  # (name, fact) to the step function
        self.stray = stray  # (pid, cmdline) of a newly found stray, once
        self.quiet_for = quiet_for  # when a process last printed (None: never)
        self.dropped = dropped  # notify datagrams its current run's socket dropped
        self.want_usage = False
        self.cpu: Samples = {}
        self.said: set[tuple[int, int]] = set()
        self._due = 0.0  # loop time of the next walk
        self._quiet = 0  # walks in a row that found the tree as it was
        self._shape: frozenset[tuple[int, ...]] = frozenset()
        self._handle: asyncio.TimerHandle | None = None

    def schedule(self, delay: float | None = None, silence: float | None = None) -> None:
        """Walk every second while anything changes; when a tree of idle processes has
        stayed the same, every 2 s, 4 s, ... up to QUIET_USAGE or IDLE (an idle box's
        CPU), but no later than ``silence`` (loop time: the first silence warning due).
        A spawn, an ending or a stop brings the pace back at once."""
        if delay is None:
            most = QUIET_USAGE if self.want_usage else IDLE
            delay = min(most, EVERY * 2 ** max(0, self._quiet - CLOSE_WALKS + 1))
            if silence is not None:
                delay = max(0.0, min(delay, silence - self.loop.time()))
        if self._handle is not None:
            self._handle.cancel()
        self._due = self.loop.time() + delay
        self._handle = self.loop.call_later(delay, self.walk)

    def changed(self) -> None:
        """The tree changed (a spawn, an ending, a stop): watch closely again."""
        self._quiet = 0
        if self._due - self.loop.time() > EVERY:
            self.schedule(EVERY)

    def walk(self) -> None:
        self._handle = None
        procs = self.procs()
        runs = [p.run for p in procs if p.run is not None]
        stopping = any(r.live and r.stop.phase.stopping for r in runs)
        live = [p for p in procs if p.run is not None and p.run.live]
        if live or self.lineage.strays:
            table = self.lineage.update(lambda: runs, max_age=0.2)
            shape = frozenset((st.pid, st.start_ticks, ord(st.state), st.cpu_ticks,
                               st.rss_pages) for st in table.stats.values())
            busy = shape != self._shape or stopping
            self._shape = shape
            self._quiet = 0 if busy else self._quiet + 1
            keep = {r.pid for r in runs if r.pid is not None and r.exit is None
                    and not r.leftover} | self.keep()
            self.os.reap_orphans(table, keep)
            self._strays()
            now = self.loop.time()
            dues: list[float] = []
            with self.os.one_walk():
                for p in live:
                    self._observe(p, table, now, dues)
            self.schedule(silence=min(dues, default=None))
            return
        self.schedule()

    def _observe(self, p: Proc, table: ProcTable, now: float, dues: list[float]) -> None:
        run = p.run
        assert run is not None and run.pid is not None
        leader = table.stats.get(run.pid)
        paused = leader is not None and leader.paused
        usage = usage_of(run, self.lineage, table, self.cpu) if self.want_usage else None
        self.post(p.name, i.Observed(run.number, paused, usage, self.dropped(p.name)))
        limit = p.spec.silence_warning
        since = None
        if limit is not None and run.started_at is not None and \
                run.stop.phase is Phase.RUNNING and not run.leftover:
            last = max(self.quiet_for(p.name) or run.started_at, run.started_at)
            if now - last >= limit:
                since = last
            else:
                dues.append(last + limit)  # (output since moves it on: looked at again)
        if since != p.silent_since:
            self.post(p.name, i.SilenceLooked(run.number, since))

    def _strays(self) -> None:
        for key, stray in self.lineage.strays.items():
            if key not in self.said:
                self.said.add(key)
                self.stray(stray.pid, stray.cmdline)

    @property
    def strays(self) -> list[int]:
        return [s.pid for s in self.lineage.strays.values()]

    def close(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
