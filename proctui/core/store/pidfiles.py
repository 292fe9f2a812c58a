"""Keeping each run's PID file true: written at the spawn, rewritten when the program
settles on its command line (a shell's exec) and whenever the set of its processes
besides the leader changes, removed once everything of it is gone."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import replace

from proctui.core.life.outcome import Outcome
from proctui.core.os.lineage import Lineage
from proctui.core.os.oslayer import OSLayer
from proctui.core.os.procfs import ProcStat
from proctui.core.process import Managed
from proctui.core.run import Run
from proctui.core.store.pidfile import Member, PidRecord
from proctui.core.store.rundir import RunDir

SETTLE = (0.3, 3.0)  # re-read the command line this long after a spawn
RETRY = 5.0  # seconds between tries of PID files that could not be written (a full disk)


class PidFiles:
    def __init__(self, run_dir: RunDir | None, os_layer: OSLayer, lineage: Lineage,
                 notice: Callable[[Managed, str], None],
                 later: Callable[..., None],
                 trouble: Callable[[str | None], None] = lambda _text: None) -> None:
        self.run_dir = run_dir
        self.os = os_layer
        self.lineage = lineage
        self.notice = notice
        self.later = later
        self.trouble = trouble  # what stands in the way of PID files now (None: nothing)
        self.boot_id = os_layer.boot_id()
        # Processes whose PID file could not be written, and why: tried again every
        # RETRY seconds, so that a disk that had room again holds them once more.
        self.failing: dict[str, tuple[Managed, str]] = {}
        self._retrying = False

    def spawned(self, m: Managed, run: Run) -> None:
        m.pid_members, m.pid_cmdline = (), []
        record = self._record(m, run)
        if record is not None and self._store(m, record):
            for delay in SETTLE:
                self.later(delay, self._settle, m, run)

    def ended(self, m: Managed, run: Run, outcome: Outcome) -> None:
        if self.run_dir is None or run.pid is None:
            return
        if not outcome.left_running:
            self._settled(m.pid_name)
            try:
                self.run_dir.remove_pid(m.pid_name)
            except OSError as e:
                self.notice(m, f"warning: cannot remove PID file: {e}")
        else:
            self.members_changed(m, run)

    def members_changed(self, m: Managed, run: Run) -> None:
        """Record every process of the run besides its leader, so that a later proctui
        can prove the survivors ours even after the leader is gone."""
        if self.run_dir is None or m.record is not None or run.pgid is None:
            return
        found: dict[int, ProcStat] = {}
        for st in self.os.group_members(run.pgid):
            if st.pid != run.pid:
                found[st.pid] = st
        for st in self.lineage.members(run) if run.live else []:
            found.setdefault(st.pid, st)
        for esc in run.escapees.values():
            if esc.alive:
                found.setdefault(esc.pid, ProcStat(esc.pid, "S", 0, esc.pgid, 0,
                                                   esc.start_ticks))
        members = tuple(sorted((st.pid, st.start_ticks, st.pgid) for st in found.values()))
        if members == m.pid_members:
            return
        m.pid_members = members
        record = self._record(m, run)
        if record is not None:
            self._store(m, replace(record, members=tuple(Member(*x) for x in members)))

    def _record(self, m: Managed, run: Run) -> PidRecord | None:
        if self.run_dir is None or run.pid is None or run.start_ticks is None:
            return None
        live = run.exit is None
        cmdline = self.os.read_cmdline(run.pid) if live else None
        if cmdline is None:
            # Unknown now (the leader is gone, or caught mid-exec): keep what it was; a
            # live one caught before its first reading gets the command we ran.
            cmdline = m.pid_cmdline or (list(m.spec.argv) if live else None)
            if not cmdline:
                return None
        return PidRecord(name=m.pid_name, pid=run.pid, pgid=run.pgid or run.pid,
                         boot_id=self.boot_id, start_ticks=run.start_ticks, cmdline=cmdline,
                         started_at=run.started_wall, proctui_pid=os.getpid(), sid=run.pid,
                         token=run.token, members=tuple(Member(*x) for x in m.pid_members))

    def _settle(self, m: Managed, run: Run) -> None:
        """A shell that execs its command, or a wrapper script, changes the command line
        just after the spawn: record the one the process settles on."""
        if run.outcome is None and m.run is run:
            record = self._record(m, run)
            if record is not None and record.cmdline != m.pid_cmdline:
                self._store(m, record)

    def _store(self, m: Managed, record: PidRecord) -> bool:
        assert self.run_dir is not None
        m.pid_cmdline = record.cmdline
        try:
            self.run_dir.write_pid(record)
        except OSError as e:
            if m.pid_name not in self.failing:  # said once, not at every rewrite
                self.notice(m, f"warning: cannot write PID file in {self.run_dir.path}: "
                               f"{e}; if proctui dies, this process will not be found next "
                               "time (tried again every few seconds)")
            self.failing[m.pid_name] = (m, str(e))
            self._said()
            if not self._retrying:
                self._retrying = True
                self.later(RETRY, self._retry)
            return False
        if m.pid_name in self.failing:
            self.notice(m, "PID file written")
            self._settled(m.pid_name)
        return True

    def _retry(self) -> None:
        self._retrying = False
        for name, (m, _why) in list(self.failing.items()):
            run = m.run
            if run is None or run.outcome is not None or m.pid_name != name:
                self._settled(name)
                continue
            record = self._record(m, run)
            if record is None:
                self._settled(name)
            elif self._store(m, record):
                for delay in SETTLE:  # the spawn's own rereads were never scheduled
                    self.later(delay, self._settle, m, run)

    def _settled(self, name: str) -> None:
        if self.failing.pop(name, None) is not None:
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
