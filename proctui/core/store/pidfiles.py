"""Keeping each run's PID file true: written at the spawn, rewritten when the program
settles on its command line (a shell's exec) and whenever the set of its processes
besides the leader changes, removed once everything of it is gone.

Executor-side: it is told what a run is (its state, read-only) and writes files; what it
remembers is what it last wrote, so that an unchanged record is not written again."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

from proctui.core.life.state import Proc, RunState
from proctui.core.os.lineage import Lineage
from proctui.core.os.oslayer import OSLayer
from proctui.core.os.procfs import ProcStat
from proctui.core.store.pidfile import Member, PidRecord
from proctui.core.store.rundir import RunDir

SETTLE = (0.3, 3.0)  # re-read the command line this long after a spawn
RETRY = 5.0  # seconds between tries of PID files that could not be written (a full disk)


@dataclass
class _Written:
    """What the last write of a run's file held."""

    number: int
    cmdline: list[str]
    members: tuple[tuple[int, int, int], ...]


class PidFiles:
    def __init__(self, run_dir: RunDir | None, os_layer: OSLayer, lineage: Lineage,
                 notice: Callable[[str, str], None],
                 later: Callable[..., None],
                 current: Callable[[str], Proc | None],
                 trouble: Callable[[str | None], None] = lambda _text: None) -> None:
        self.run_dir = run_dir
        self.os = os_layer
        self.lineage = lineage
        self.notice = notice  # (process name, text)
        self.later = later
        self.current = current  # a process as the table holds it now
        self.trouble = trouble  # what stands in the way of PID files now (None: nothing)
        self.boot_id = os_layer.boot_id()
        self._written: dict[str, _Written] = {}
        # Processes whose PID file could not be written, and why: tried again every
        # RETRY seconds, so that a disk that had room again holds them once more.
        self.failing: dict[str, tuple[str, str]] = {}  # pid name -> (process name, why)
        self._retrying = False

    def write(self, p: Proc) -> None:
        """The run's file as it is now (its first write schedules the rereads)."""
        run = p.run
        if self.run_dir is None or run is None or run.pid is None or p.is_leftover:
            return
        old = self._written.get(p.pid_name)
        first = old is None or old.number != run.number
        members = self._members(run)
        record = self._record(p, run, None if first else old, members)
        if record is None:
            return
        if not first and old is not None and old.members == members and \
                old.cmdline == record.cmdline and p.pid_name not in self.failing:
            return
        if self._store(p, record, members) and first and run.exit is None:
            for delay in SETTLE:
                self.later(delay, self._settle, p.name, run.number)

    def remove(self, pid_name: str) -> None:
        self._written.pop(pid_name, None)
        self._settled(pid_name)
        if self.run_dir is None:
            return
        try:
            self.run_dir.remove_pid(pid_name)
        except OSError as e:
            self.notice(pid_name, f"warning: cannot remove PID file: {e}")

    def _members(self, run: RunState) -> tuple[tuple[int, int, int], ...]:
        """Every process of the run besides its leader, so that a later proctui can prove
        the survivors ours even after the leader is gone."""
        found: dict[int, ProcStat] = {}
        if run.pgid is not None:
            for st in self.os.group_members(run.pgid):
                if st.pid != run.pid:
                    found[st.pid] = st
        for st in self.lineage.members(run) if run.live else []:
            found.setdefault(st.pid, st)
        for esc in run.escapees:
            if esc.alive:
                found.setdefault(esc.pid, ProcStat(esc.pid, "S", 0, esc.pgid, 0,
                                                   esc.start_ticks))
        return tuple(sorted((st.pid, st.start_ticks, st.pgid) for st in found.values()))

    def _record(self, p: Proc, run: RunState, old: _Written | None,
                members: tuple[tuple[int, int, int], ...]) -> PidRecord | None:
        if run.pid is None or run.start_ticks is None:
            return None
        live = run.exit is None
        cmdline = self.os.read_cmdline(run.pid) if live else None
        if cmdline is None:
            # Unknown now (the leader is gone, or caught mid-exec): keep what it was; a
            # live one caught before its first reading gets the command we ran.
            cmdline = (old.cmdline if old is not None else None) or \
                (list(p.spec.argv) if live else None)
            if not cmdline:
                return None
        return PidRecord(name=p.pid_name, pid=run.pid, pgid=run.pgid or run.pid,
                         boot_id=self.boot_id, start_ticks=run.start_ticks, cmdline=cmdline,
                         started_at=run.started_wall, proctui_pid=os.getpid(), sid=run.pid,
                         token=run.token, members=tuple(Member(*x) for x in members))

    def _settle(self, name: str, number: int) -> None:
        """A shell that execs its command, or a wrapper script, changes the command line
        just after the spawn: record the one the process settles on."""
        p = self.current(name)
        if p is not None and p.run is not None and p.run.number == number and p.run.live:
            self.write(p)

    def _store(self, p: Proc, record: PidRecord,
               members: tuple[tuple[int, int, int], ...]) -> bool:
        assert self.run_dir is not None and p.run is not None
        self._written[p.pid_name] = _Written(p.run.number, record.cmdline, members)
        try:
            self.run_dir.write_pid(record)
        except OSError as e:
            if p.pid_name not in self.failing:  # said once, not at every rewrite
                self.notice(p.name, f"warning: cannot write PID file in {self.run_dir.path}: "
                                    f"{e}; if proctui dies, this process will not be found "
                                    "next time (tried again every few seconds)")
            self.failing[p.pid_name] = (p.name, str(e))
            self._said()
            if not self._retrying:
                self._retrying = True
                self.later(RETRY, self._retry)
            return False
        if p.pid_name in self.failing:
            self.notice(p.name, "PID file written")
            self._settled(p.pid_name)
        return True

    def _retry(self) -> None:
        self._retrying = False
        for pid_name, (name, _why) in list(self.failing.items()):
            p = self.current(name)
            if p is None or p.run is None or not p.run.live or p.pid_name != pid_name:
                self._settled(pid_name)
                continue
            self._written.pop(pid_name, None)  # written anew, with its rereads
            self.write(p)

    def _settled(self, pid_name: str) -> None:
        if self.failing.pop(pid_name, None) is not None:
            self._said()

    def _said(self) -> None:
        if not self.failing:
            self.trouble(None)
            return
        names = sorted(self.failing)
        shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
        why = self.failing[names[-1]][1]
        assert self.run_dir is not None
        self.trouble(f"PID files of {shown} not written in {self.run_dir.path}: {why} "
                     "(if proctui dies, those processes will not be found next time)")
