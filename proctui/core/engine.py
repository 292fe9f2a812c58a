"""Everything the core does on its own loop: each process's life (start, restart, wait
for its leftover), the host that runs report to (PID files, notices, snapshots), and
the operator's commands. The thread and the thread-safe API are in supervisor.py."""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import replace

from proctui.config import ProcessSpec, RestartPolicy
from proctui.core.events import EventQueue
from proctui.core.leftovers import Proof, judge
from proctui.core.lineage import Lineage
from proctui.core.lines import Stream
from proctui.core.machine import Phase
from proctui.core.oslayer import OSLayer
from proctui.core.outcome import EndKind, Outcome, OutcomeKind, RunRecord, describe, setting
from proctui.core.pidfile import Member, PidRecord
from proctui.core.process import Managed
from proctui.core.procfs import ProcStat, ProcTable, boot_id
from proctui.core.run import RUN_TOKEN_VAR, Run
from proctui.core.rundir import RunDir, RunDirError
from proctui.core.text import visible
from proctui.core.usage import Samples, usage_of

BACKOFF_START = 1.0
BACKOFF_MAX = 30.0
BACKOFF_RESET = 10.0  # a run that lived this long starts the backoff over
PID_FILE_SETTLE = (0.3, 3.0)  # re-read the command line this long after a spawn
HOUSEKEEPING_EVERY = 1.0


class Engine:
    def __init__(self, specs: Sequence[ProcessSpec], *, os_layer: OSLayer,
                 run_dir: RunDir | None, interactive: bool, events: EventQueue | None,
                 leftover_defaults: ProcessSpec | None,
                 publish: Callable[[Managed], None], added: Callable[[Managed], None]) -> None:
        self.specs = tuple(specs)
        self.os = os_layer
        self.run_dir = run_dir
        self.interactive = interactive
        self.events = events
        self.leftover_defaults = leftover_defaults
        self._publish = publish
        self._added = added
        self.processes: list[Managed] = []
        self.by_name: dict[str, Managed] = {}
        self.by_run: dict[int, Managed] = {}  # id(run) -> its process
        self.lineage = Lineage(os_layer, RUN_TOKEN_VAR)
        self.shutting_down = False
        self.want_usage = False
        self.strays_said: set[tuple[int, int]] = set()
        self._boot_id = boot_id()
        self._timers: set[asyncio.TimerHandle] = set()
        self._cpu: Samples = {}
        self.loop = asyncio.get_running_loop()

    # -- start-up ---------------------------------------------------------------------

    def startup(self) -> None:
        leftovers = self._find_leftovers()
        for m in leftovers:
            self._add(m)
        for spec in self.specs:
            m = Managed(spec)
            m.blocked_by = next((lo for lo in leftovers if lo.pid_name == spec.name), None)
            self._add(m)
        for m in self.processes:
            self._launch(m)
        self._schedule_housekeeping()

    def _add(self, m: Managed) -> None:
        self.processes.append(m)
        self.by_name[m.name] = m
        self._added(m)

    def _launch(self, m: Managed) -> None:
        m.done.clear()
        m.stop_wanted = False
        m.task = self.loop.create_task(self._lifecycle(m))

    def changed(self, who: Run | Managed) -> None:
        """Publish a fresh snapshot of the process (a run reports every transition)."""
        m = self.by_run.get(id(who)) if isinstance(who, Run) else who
        if m is not None and (not isinstance(who, Run) or m.run is who):
            self._publish(m)

    # -- the Host that runs report to ---------------------------------------------------

    def notice(self, run: Run | Managed | None, text: str) -> None:
        m = self.by_run.get(id(run)) if isinstance(run, Run) else run
        text = visible(text)  # quotes commands and names: never a live escape
        if m is not None:
            m.buffer.append(Stream.PROCTUI, [text])
        if self.events is not None:
            self.events.put_notice(m.name if m else None, text)

    def output(self, run: Run, stream: int, lines: list[str]) -> None:
        if self.events is not None:
            m = self.by_run.get(id(run))
            if m is not None:
                self.events.put_output(m.name, stream, lines)

    def ended(self, run: Run, outcome: Outcome) -> None:
        m = self.by_run.get(id(run))
        if m is None:
            return
        m.outcomes.append(outcome)
        self.notice(m, outcome.text)
        if self.run_dir is not None and run.pid is not None:
            if not outcome.left_running:
                try:
                    self.run_dir.remove_pid(m.pid_name)
                except OSError as e:
                    self.notice(m, f"warning: cannot remove PID file: {e}")
            else:
                self.members_changed(run)
        # What comes next is decided now, so that no snapshot shows "ended" for a
        # process about to restart.
        if m.restart_wanted and not outcome.left_running:
            m.phase = Phase.STARTING
        elif m.record is None and self._should_restart(m, outcome):
            m.phase = Phase.BACKOFF
        else:
            m.phase = Phase.ENDED
        m.paused = False
        self._cpu.pop(run.token, None)
        m.run_ended.set()

    def escapees_of(self, run: Run) -> list[ProcStat]:
        self.lineage.update(self._runs())
        return self.lineage.escapees(run)

    def members_changed(self, run: Run) -> None:
        """Record in the PID file every process of the run besides its leader, so that a
        later proctui can prove the survivors ours even after the leader is gone."""
        m = self.by_run.get(id(run))
        if m is None or self.run_dir is None or m.record is not None or run.pgid is None:
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
            self._store_pid_file(m, replace(record, members=tuple(Member(*x)
                                                                   for x in members)))

    # -- a process's life ---------------------------------------------------------------

    async def _lifecycle(self, m: Managed) -> None:
        try:
            if m.record is not None:
                await self._leftover_life(m)
                return
            if m.blocked_by is not None and not await self._wait_for_leftover(m):
                return
            backoff = BACKOFF_START
            while not m.stop_wanted:
                if self.shutting_down:
                    self.notice(m, "not started: everything is stopping")
                    break
                run = self._spawn(m)
                await m.run_ended.wait()
                outcome = run.outcome
                assert outcome is not None
                if m.restart_wanted and not outcome.left_running:
                    m.restart_wanted = m.stop_wanted = False
                    m.restarts += 1
                    backoff = BACKOFF_START
                    continue
                if not self._should_restart(m, outcome):
                    break
                if (run.ended_at or 0) - (run.started_at or 0) >= BACKOFF_RESET:
                    backoff = BACKOFF_START
                m.phase = Phase.BACKOFF
                m.restart_at = time.monotonic() + backoff
                self.notice(m, f"restarting in {setting(backoff)} (restart = "
                               f"{m.spec.restart.value})")
                self._publish(m)
                m.wake.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(m.wake.wait(), backoff)
                m.restart_at = None
                if m.stop_wanted or self.shutting_down:
                    self.notice(m, "restart cancelled: stop requested")
                    break
                backoff = min(backoff * 2, BACKOFF_MAX)
                m.restarts += 1
        finally:
            m.restart_wanted = False
            m.restart_at = None
            if m.phase is not Phase.HELD:
                m.phase = Phase.ENDED
            m.done.set()
            self._publish(m)

    def _should_restart(self, m: Managed, outcome: Outcome) -> bool:
        if m.stop_wanted or outcome.kind not in (OutcomeKind.EXITED, OutcomeKind.WATCHDOG):
            return False
        policy = m.spec.restart
        if policy is RestartPolicy.ALWAYS:
            return True
        return policy is RestartPolicy.ON_FAILURE and not outcome.clean

    def _runs(self) -> list[Run]:
        return [m.run for m in self.processes if m.run is not None]

    def _spawn(self, m: Managed) -> Run:
        run = Run(m.spec, m.name, self, m.buffer, self.interactive)
        self.by_run[id(run)] = m
        old, m.run = m.run, run
        if old is not None:
            self.by_run.pop(id(old), None)
        m.run_ended.clear()
        m.phase = Phase.RUNNING
        m.pid_members = ()
        if run.spawn():
            self.notice(m, f"started (pid {run.pid}): {m.spec.cmd}")
            record = self._record(m, run)
            if record is not None and self._store_pid_file(m, record):
                for delay in PID_FILE_SETTLE:
                    self._later(delay, self._settle_pid_file, m, run)
        self._publish(m)
        return run

    def _record(self, m: Managed, run: Run) -> PidRecord | None:
        if self.run_dir is None or run.pid is None or run.start_ticks is None:
            return None
        cmdline = self.os.read_cmdline(run.pid)
        if cmdline is None:
            return None
        return PidRecord(name=m.pid_name, pid=run.pid, pgid=run.pgid or run.pid,
                         boot_id=self._boot_id, start_ticks=run.start_ticks,
                         cmdline=cmdline, started_at=time.time(), proctui_pid=os.getpid(),
                         sid=run.pid, token=run.token,
                         members=tuple(Member(*x) for x in m.pid_members))

    def _settle_pid_file(self, m: Managed, run: Run) -> None:
        """A shell that execs its command, or a wrapper script, changes the command line
        just after the spawn: record the one the process settles on."""
        if run.outcome is None and m.run is run:
            record = self._record(m, run)
            if record is not None:
                self._store_pid_file(m, record)

    def _store_pid_file(self, m: Managed, record: PidRecord) -> bool:
        assert self.run_dir is not None
        try:
            self.run_dir.write_pid(record)
        except OSError as e:
            self.notice(m, f"warning: cannot write PID file in {self.run_dir.path}: {e}; "
                           "if proctui dies, this process will not be found next time")
            return False
        return True

    def _later(self, delay: float, fn: Callable[..., None], *args: object) -> None:
        def call() -> None:
            self._timers.discard(handle)
            fn(*args)

        handle = self.loop.call_later(delay, call)
        self._timers.add(handle)

    # -- leftovers from an earlier run ----------------------------------------------------

    def _find_leftovers(self) -> list[Managed]:
        if self.run_dir is None:
            return []
        try:
            entries = self.run_dir.scan()
        except RunDirError as e:
            self.notice(None, f"warning: {e}")
            return []
        found: list[Managed] = []
        for entry in entries:
            record = entry.record
            if record is None:
                self.notice(None, f"{entry.path}: {entry.error}; left in place, remove it "
                                  "once you have checked")
                continue
            who = f"PID file {entry.path.name} (process {record.name!r}, pid {record.pid})"
            verdict = judge(record, self.os, self._boot_id)
            if verdict.proof in (Proof.GONE, Proof.STRANGER):
                with contextlib.suppress(OSError):
                    self.run_dir.remove(entry.path.name)
                if verdict.proof is Proof.GONE:
                    self.notice(None, f"{who}: {verdict.why}; removed the stale file")
                else:
                    self.notice(None, f"{who}: {verdict.why}; left it alone and removed "
                                      "the stale file")
                continue
            spec = next((s for s in self.specs if s.name == record.name), None)
            spec = spec or self.leftover_defaults or ProcessSpec(
                name=record.name, argv=tuple(record.cmdline), cmd="", cwd=self.run_dir.path)
            name = f"{record.name} (leftover)"
            while name in self.by_name or any(lo.name == name for lo in found):
                name += "'"
            m = Managed(replace(spec, name=record.name, cmd=" ".join(record.cmdline)), name)
            m.pid_name = record.name
            m.record, m.verdict = record, verdict
            if verdict.proof is Proof.DOUBT:
                m.held = verdict.why
                m.phase = Phase.HELD
            found.append(m)
        return found

    async def _leftover_life(self, m: Managed) -> None:
        record, verdict = m.record, m.verdict
        assert record is not None and verdict is not None
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(record.started_at))
        if verdict.proof is Proof.DOUBT:
            self._publish(m)
            self.notice(m, f"leftover from an earlier run (pid {record.pid}, started {when}) "
                           f"held: {verdict.why}. It is not signalled; stop, abandon or "
                           "adopt it yourself")
            if not self.interactive:
                self._hold_forever(m)
                return
            m.wake.clear()
            await m.wake.wait()
            if m.phase is not Phase.STARTING:  # left alone, or nobody can decide any more
                return
        run = Run(m.spec, m.name, self, m.buffer, self.interactive)
        self.by_run[id(run)] = m
        m.run = run
        m.run_ended.clear()
        run.adopt(record.pid, record.pgid, verdict.start_ticks or record.start_ticks,
                  list(verdict.escapees))
        if verdict.note:
            self.notice(m, verdict.note)
        m.phase = Phase.RUNNING
        self._publish(m)
        if not m.adopted:
            self.notice(m, f"leftover from an earlier run (pid {record.pid}, started "
                           f"{when}): stopping it")
            run.request_stop()
        await m.run_ended.wait()

    def _hold_forever(self, m: Managed) -> None:
        """Nobody can decide about a doubtful leftover: leave it, say so, keep its file."""
        assert m.record is not None
        record = RunRecord(end=EndKind.HELD, pid=m.record.pid, ended_at=time.monotonic(),
                           error=m.held, left_running=(m.record.pid,))
        outcome = describe(record)
        m.outcomes.append(outcome)
        self.notice(m, outcome.text)
        m.phase = Phase.ENDED
        m.held = ""

    async def _wait_for_leftover(self, m: Managed) -> bool:
        """A process waits for its own leftover to be gone, so there is never a second
        copy. False when it must not start at all."""
        leftover = m.blocked_by
        assert leftover is not None
        m.phase = Phase.STARTING
        self._publish(m)
        await leftover.done.wait()
        outcome = leftover.outcomes[-1] if leftover.outcomes else None
        if m.stop_wanted:
            return False
        if outcome is not None and outcome.left_running:
            pid = outcome.pid
            self.notice(m, f"not started: its leftover (pid {pid}) is still running")
            return False
        return True

    # -- housekeeping, about once a second -------------------------------------------

    def _schedule_housekeeping(self) -> None:
        self._later(HOUSEKEEPING_EVERY, self.housekeeping)

    def housekeeping(self) -> None:
        """Walk our process tree: attribute descendants (while they are still visible
        under their run), reap orphans, notice strays, pauses and resource use."""
        runs = self._runs()
        live = [r for r in runs if r.live]
        if live or self.lineage.strays:
            table = self.lineage.update(runs, max_age=0.2)
            keep = {r.pid for r in runs if r.pid is not None and r.exit is None
                    and not r.leftover}
            self.os.reap_orphans(table, keep)
            self._say_strays()
            for m in self.processes:
                run = m.run
                if run is None or not run.live:
                    continue
                self._observe(m, run, table)
        self._schedule_housekeeping()

    def _observe(self, m: Managed, run: Run, table: ProcTable) -> None:
        leader = table.stats.get(run.pid) if run.pid is not None else None
        paused = leader is not None and leader.paused
        usage = usage_of(run, self.lineage, table, self._cpu) if self.want_usage else None
        if paused != m.paused or usage != m.usage:
            m.paused, m.usage = paused, usage
            self._publish(m)
        if run.exit is None and not run.leftover:
            self.members_changed(run)

    def _say_strays(self) -> None:
        for key, stray in self.lineage.strays.items():
            if key in self.strays_said:
                continue
            self.strays_said.add(key)
            self.notice(None, f"pid {stray.pid} ({stray.cmdline[:60]}) was left behind by "
                              "one of these processes (it left its group and cleared its "
                              "environment, so proctui cannot tell which); it is not "
                              "signalled")

    @property
    def strays(self) -> list[int]:
        return [s.pid for s in self.lineage.strays.values()]

    # -- the end ----------------------------------------------------------------------

    def close(self) -> None:
        for handle in self._timers:
            handle.cancel()
        self._timers.clear()
        for m in self.processes:
            run = m.run
            if run is not None and run.pipes.open:
                out = None
                if self.run_dir is not None:
                    with contextlib.suppress(OSError):
                        out = self.run_dir.open_append(self.run_dir.output_path(
                            m.pid_name).name)
                drainer = run.pipes.hand_over(out)
                if out is not None:
                    os.close(out)
                if drainer is not None:
                    self.lineage.ignore.add(drainer)
            if m.task is not None:
                m.task.cancel()
            if run is not None:
                run.cancel()
