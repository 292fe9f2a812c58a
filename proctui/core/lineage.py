"""Which run each of proctui's descendants belongs to, including the ones that left
their process group (setsid, a daemon's double fork) and cleared their environment.

proctui is a child subreaper, so every orphan of a process it started is re-parented to
proctui itself, never to init: nothing leaves its tree. Within the tree, a process
belongs to the run whose leader it descends from. An orphan (its parent died) is
attributed by evidence, strongest first: it was seen under that run's leader before
(the tree is walked about once a second while runs live), it carries the run's token in
its environment, it is still in the run's group or session, or it can only be that run's
(the one live run that started before it). What cannot be proven is a stray: reported,
never signalled.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from proctui.core.oslayer import OSLayer
from proctui.core.procfs import ProcStat, ProcTable

Key = tuple[int, int]  # (pid, start ticks): a process, not a reusable number


class Traceable(Protocol):
    token: str
    pid: int | None
    pgid: int | None
    start_ticks: int | None
    leftover: bool

    @property
    def live(self) -> bool: ...


@dataclass(frozen=True, slots=True)
class Stray:
    pid: int
    start_ticks: int
    cmdline: str


class Lineage:
    def __init__(self, os_layer: OSLayer, token_var: str) -> None:
        self.os = os_layer
        self.token_var = token_var
        self.owner: dict[Key, str] = {}  # process -> run token
        self.strays: dict[Key, Stray] = {}
        self.ignore: set[int] = set()  # our own helpers (drainers)
        self.table = ProcTable()

    def update(self, runs: Iterable[Traceable], max_age: float = 0.05) -> ProcTable:
        """Walk proctui's tree and attribute every process in it."""
        table = self.os.descendants(max_age)
        if table is self.table:
            return table
        self.table = table
        runs = [r for r in runs if r.pid is not None and not r.leftover]
        leaders = {r.pid: r for r in runs}
        for run in runs:
            st = table.stats.get(run.pid)  # type: ignore[arg-type]
            if st is None or st.start_ticks != run.start_ticks:
                continue
            self.owner[(st.pid, st.start_ticks)] = run.token
            for d in table.descendants(st.pid):
                self.owner[(d.pid, d.start_ticks)] = run.token
        me = os.getpid()
        live_runs = [r for r in runs if r.live]
        for pid in table.kids.get(me, ()):
            st = table.stats[pid]
            if pid in leaders or pid in self.ignore or not st.live:
                continue
            key = (pid, st.start_ticks)
            token = self.owner.get(key) or self._attribute(st, runs, live_runs)
            if token is None:
                if key not in self.strays:
                    cmd = " ".join(self.os.read_cmdline(pid) or []) or "?"
                    self.strays[key] = Stray(pid, st.start_ticks, cmd)
                continue
            self.strays.pop(key, None)
            self.owner[key] = token
            for d in table.descendants(pid):
                self.owner.setdefault((d.pid, d.start_ticks), token)
        present = {(st.pid, st.start_ticks) for st in table.stats.values() if st.live}
        for key in [k for k in self.owner if k not in present]:
            del self.owner[key]
        for key in [k for k in self.strays if k not in present]:
            del self.strays[key]
        return table

    def _attribute(self, st: ProcStat, runs: list[Traceable],
                   live_runs: list[Traceable]) -> str | None:
        for run in runs:
            if self.os.has_env(st.pid, self.token_var, run.token):
                return run.token
        for run in runs:
            if run.pgid in (st.pgid, st.sid):
                return run.token
        older = [r for r in live_runs if r.start_ticks is not None
                 and r.start_ticks <= st.start_ticks]
        return older[0].token if len(older) == 1 else None

    def escapees(self, run: Traceable) -> list[ProcStat]:
        """The run's live processes outside its process group."""
        out = []
        for st in self.table.stats.values():
            if st.live and st.pgid != run.pgid and \
                    self.owner.get((st.pid, st.start_ticks)) == run.token:
                out.append(st)
        return out

    def members(self, run: Traceable) -> list[ProcStat]:
        """Every live process of the run that the last walk saw, leader excluded."""
        return [st for st in self.table.stats.values()
                if st.live and st.pid != run.pid
                and self.owner.get((st.pid, st.start_ticks)) == run.token]
