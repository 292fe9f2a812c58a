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
from collections.abc import Callable, Iterable
from typing import Protocol

from proctui.core.os.oslayer import OSLayer
from proctui.core.os.procfs import BETWEEN_EVERY, ProcStat, ProcTable
from proctui.records import dataclass

Key = tuple[int, int]  # (pid, start ticks): a process, not a reusable number


class Traceable(Protocol):
    @property
    def token(self) -> str: ...

    @property
    def pid(self) -> int | None: ...

    @property
    def pgid(self) -> int | None: ...

    @property
    def start_ticks(self) -> int | None: ...

    @property
    def leftover(self) -> bool: ...

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
        self.groups: dict[int, str] = {}  # session or group id -> run token
        self.by_token: dict[str, list[ProcStat]] = {}  # live processes of each run
        self.ignore: set[int] = set()  # our own helpers (drainers)
        self.table = ProcTable()

    def update(self, runs: Callable[[], Iterable[Traceable]], max_age: float = 0.05,
               newer_than: float | None = None) -> ProcTable:
        """Walk proctui's tree and attribute every process in it. ``newer_than``: the
        walk must have started after this instant (a leader's death, so that its
        orphans are already re-parented to us). ``runs`` is called only for a new walk."""
        table = self.os.descendants(max_age, newer_than)
        if table is self.table:
            return table
        self.table = table
        ours = [r for r in runs() if r.pid is not None and not r.leftover]
        leaders = {r.pid: r for r in ours}
        for n, run in enumerate(ours, 1):
            if n % BETWEEN_EVERY == 0:
                self.os.take_between()  # (2,000 runs: the deadlines come meanwhile)
            st = table.stats.get(run.pid) if run.pid is not None else None
            if st is None or st.start_ticks != run.start_ticks:
                continue
            self._own(st, run.token)
            for d in table.descendants(st.pid):
                self._own(d, run.token)
        me = os.getpid()
        live_runs = [r for r in ours if r.live]
        for n, pid in enumerate(table.kids.get(me, ()), 1):
            if n % BETWEEN_EVERY == 0:
                self.os.take_between()
            st = table.stats[pid]
            if pid in leaders or pid in self.ignore or not st.live:
                continue
            key = (pid, st.start_ticks)
            token = self.owner.get(key) or self._evidence(st, ours)
            if token is None and key not in self.strays:
                # First sight of an orphan with no evidence: only if one live run could
                # have started it is it that run's.
                token = self._only_candidate(st, live_runs)
            if token is None:
                if key not in self.strays:
                    cmd = " ".join(self.os.read_cmdline(pid) or []) or "?"
                    self.strays[key] = Stray(pid, st.start_ticks, cmd)
                continue
            self.strays.pop(key, None)
            self._own(st, token)
            for d in table.descendants(pid):
                if (d.pid, d.start_ticks) not in self.owner:
                    self._own(d, token)
        present = {(st.pid, st.start_ticks) for st in table.stats.values() if st.live}
        for key in [k for k in self.owner if k not in present]:
            del self.owner[key]
        for key in [k for k in self.strays if k not in present]:
            del self.strays[key]
        used = {st.sid for st in table.stats.values()} | {st.pgid for st in table.stats.values()}
        for gid in [g for g in self.groups if g not in used]:
            del self.groups[gid]
        self.by_token = {}
        for st in table.stats.values():
            token = self.owner.get((st.pid, st.start_ticks)) if st.live else None
            if token is not None:
                self.by_token.setdefault(token, []).append(st)
        return table

    def _own(self, st: ProcStat, token: str) -> None:
        self.owner[(st.pid, st.start_ticks)] = token
        # A session or group id stays taken while any process uses it: what shares one
        # with an owned process later (its parent gone) shares its owner.
        self.groups[st.sid] = token
        self.groups[st.pgid] = token

    def _evidence(self, st: ProcStat, runs: list[Traceable]) -> str | None:
        for run in runs:
            if self.os.has_env(st.pid, self.token_var, run.token):
                return run.token
        for run in runs:
            if run.live and run.pgid in (st.pgid, st.sid):
                return run.token
        return self.groups.get(st.sid) or self.groups.get(st.pgid)

    @staticmethod
    def _only_candidate(st: ProcStat, live_runs: list[Traceable]) -> str | None:
        older = [r for r in live_runs if r.start_ticks is not None
                 and r.start_ticks <= st.start_ticks]
        return older[0].token if len(older) == 1 else None

    def escapees(self, run: Traceable) -> list[ProcStat]:
        """The run's live processes outside its process group."""
        return [st for st in self.by_token.get(run.token, ()) if st.pgid != run.pgid]

    def members(self, run: Traceable) -> list[ProcStat]:
        """Every live process of the run that the last walk saw, leader excluded."""
        return [st for st in self.by_token.get(run.token, ()) if st.pid != run.pid]
