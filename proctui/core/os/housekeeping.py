"""The walk of our process tree, about once a second while anything changes and slower
while nothing does: it attributes descendants (while they are still visible under their
run), reaps orphans, notices strays, pauses and resource use. It only observes: what it
finds goes back through callbacks, and the engine writes the records."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from proctui import startup
from proctui.core.os.lineage import Lineage
from proctui.core.os.oslayer import OSLayer
from proctui.core.os.procfs import ProcTable
from proctui.core.os.usage import Samples, usage_of
from proctui.core.run import Run
from proctui.core.view import Usage

EVERY = 1.0
QUIET = 4.0  # seconds between walks once the tree has long stayed the same
QUIET_WALKS = 5  # walks that find nothing new before the pace halves
STARTING = 3.0  # at most this long after its start, the first walk waits for the process's
STARTING_LOOK = 0.25  # start-up to end (proctui.startup), looking again this often


class Housekeeping:
    def __init__(self, loop: asyncio.AbstractEventLoop, os_layer: OSLayer, lineage: Lineage,
                 runs: Callable[[], list[Run]], keep: Callable[[], set[int]],
                 observed: Callable[[Run, bool, Usage | None], None],
                 stray: Callable[[int, str], None]) -> None:
        self.loop = loop
        self.os = os_layer
        self.lineage = lineage
        self.runs = runs
        self.keep = keep  # pids never reaped here (our own children, probes)
        self.observed = observed  # (run, paused, usage) of each live run, each walk
        self.stray = stray  # (pid, cmdline) of a newly found stray, once
        self.want_usage = False
        self.cpu: Samples = {}
        self.said: set[tuple[int, int]] = set()
        self._due = 0.0  # loop time of the next walk
        self._quiet = 0  # walks in a row that found the tree as it was
        self._shape: frozenset[tuple[int, ...]] = frozenset()
        self._handle: asyncio.TimerHandle | None = None
        self._starting_until = loop.time() + STARTING

    def schedule(self, delay: float | None = None) -> None:
        """Walk every second while anything changes; when a tree of idle processes has
        stayed the same for a while, every 2 s, then 4 s (an idle box's CPU). A spawn, an
        ending or a stop brings the pace back at once."""
        if delay is None:
            delay = min(QUIET, EVERY * 2 ** (self._quiet // QUIET_WALKS))
        if self._handle is not None:
            self._handle.cancel()
        self._due = self.loop.time() + delay
        self._handle = self.loop.call_later(delay, self.walk)

    def changed(self) -> None:
        """The tree changed (a spawn, an ending, a stop): watch closely again."""
        self._quiet = 0
        if self._due - self.loop.time() > EVERY:
            self.schedule(EVERY)

    @property
    def quiet(self) -> bool:
        return self._quiet > 0

    def walk(self) -> None:
        self._handle = None
        runs = self.runs()
        if startup.paused() and self.loop.time() < self._starting_until and \
                not any(r.state.phase.stopping for r in runs):
            # The console is still loading Textual: nothing a walk finds is urgent yet,
            # and each of its hundreds of system calls would take the GIL from that load
            # (where prctl refuses a subreaper, as under qemu-user, the walk reads every
            # process on the machine).
            self.schedule(STARTING_LOOK)
            return
        live = [r for r in runs if r.live]
        if live or self.lineage.strays:
            table = self.lineage.update(lambda: runs, max_age=0.2)
            shape = frozenset((st.pid, st.start_ticks, ord(st.state), st.cpu_ticks,
                               st.rss_pages) for st in table.stats.values())
            busy = shape != self._shape or any(r.state.phase.stopping for r in live)
            self._shape = shape
            self._quiet = 0 if busy else self._quiet + 1
            keep = {r.pid for r in runs if r.pid is not None and r.exit is None
                    and not r.leftover} | self.keep()
            self.os.reap_orphans(table, keep)
            self._strays()
            with self.os.one_walk():
                for run in live:
                    self._observe(run, table)
        self.schedule()

    def _observe(self, run: Run, table: ProcTable) -> None:
        leader = table.stats.get(run.pid) if run.pid is not None else None
        paused = leader is not None and leader.paused
        usage = usage_of(run, self.lineage, table, self.cpu) if self.want_usage else None
        self.observed(run, paused, usage)

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
