"""Everything the core does on its own loop: each process's life (start, restart, wait
for its leftover), the host that runs report to (PID files, notices, snapshots), and
the operator's commands. The thread and the thread-safe API are in supervisor.py."""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import time
from collections.abc import Callable, Sequence

from proctui.config import ProcessSpec, RestartPolicy
from proctui.core.deps import Deps
from proctui.core.events import EventQueue
from proctui.core.journal import Journal
from proctui.core.lineage import Lineage
from proctui.core.lines import Stream
from proctui.core.logfiles import LogFile, open_logs_dir
from proctui.core.machine import Phase
from proctui.core.oslayer import OSLayer
from proctui.core.outcome import Outcome, OutcomeKind, setting
from proctui.core.pidfiles import PidFiles
from proctui.core.process import Managed
from proctui.core.procfs import ProcStat, ProcTable
from proctui.core.recovery import Recovery
from proctui.core.run import RUN_TOKEN_VAR, Run
from proctui.core.rundir import RunDir
from proctui.core.speech import Speech
from proctui.core.text import visible
from proctui.core.usage import Samples, usage_of

BACKOFF_START = 1.0
BACKOFF_MAX = 30.0
BACKOFF_RESET = 10.0  # a run that lived this long starts the backoff over
HOUSEKEEPING_EVERY = 1.0
HOUSEKEEPING_QUIET = 4.0  # seconds between walks once the tree has long stayed the same
QUIET_WALKS = 5  # walks that find nothing new before the pace halves


class Engine:
    def __init__(self, specs: Sequence[ProcessSpec], *, os_layer: OSLayer,
                 run_dir: RunDir | None, interactive: bool, events: EventQueue | None,
                 leftover_defaults: ProcessSpec | None,
                 publish: Callable[[Managed], None], added: Callable[[Managed], None],
                 poke: Callable[[], None] = lambda: None) -> None:
        self.specs = tuple(specs)
        self.os = os_layer
        self.run_dir = run_dir
        self.interactive = interactive
        self.events = events
        self.leftover_defaults = leftover_defaults
        self._publish = publish
        self._poke = poke
        self._added = added
        self.processes: list[Managed] = []
        self.by_name: dict[str, Managed] = {}
        self.by_run: dict[int, Managed] = {}  # id(run) -> its process
        self.lineage = Lineage(os_layer, RUN_TOKEN_VAR)
        self.shutting_down = False
        self.want_usage = False
        self.strays_said: set[tuple[int, int]] = set()
        self.boot_id = os_layer.boot_id()
        self._timers: set[asyncio.TimerHandle] = set()
        self._walk_due = 0.0  # loop time of the next housekeeping
        self._quiet_walks = 0  # walks in a row that found the tree as it was
        self._shape: frozenset[tuple[int, ...]] = frozenset()
        self._cpu: Samples = {}
        self._to_check: list[Run] = []
        self.output_count = 0  # reads that brought output: frontends look when it moves
        # Lifecycles still going; read from other threads through all_done, so that
        # "has everything ended?" costs nothing however many processes there are.
        self.unfinished: set[str] = set()
        self.all_done = threading.Event()
        self.pid_files = PidFiles(run_dir, os_layer, self.lineage, self.notice, self._later)
        self.recovery = Recovery(self)
        self.loop = asyncio.get_running_loop()
        self.journal = Journal(run_dir)
        self._logs_fd: int | None = None
        if run_dir is not None and run_dir.fd is not None:
            try:
                self._logs_fd = open_logs_dir(run_dir)
            except OSError as e:
                self.notice(None, f"output logs: {run_dir.path / 'logs'}: "
                                  f"{e.strerror or e}; output is not kept on disk")
        self.deps = Deps(self.specs, self.by_name, self._publish, self.journal.write)
        self.speech = Speech(self)
        self.lineage.ignore = self.speech.probes

    # -- start-up ---------------------------------------------------------------------

    def startup(self) -> None:
        self.journal.write("begin", pid=os.getpid(), processes=[s.name for s in self.specs])
        leftovers = self.recovery.find()
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
        if self._logs_fd is not None and not m.leftover and m.spec.log_max_size > 0:
            m.log = LogFile(self._logs_fd, m.name, m.spec.log_max_size, m.spec.log_keep,
                            lambda text, m=m: self.notice(m, text))
        self.processes.append(m)
        self.by_name[m.name] = m
        self._added(m)

    def _launch(self, m: Managed) -> None:
        m.done.clear()
        self.unfinished.add(m.name)
        self.all_done.clear()
        m.stop_wanted = False
        m.task = self.loop.create_task(self._lifecycle(m))

    def changed(self, who: Run | Managed) -> None:
        """Publish a fresh snapshot of the process (a run reports every transition)."""
        m = self.by_run.get(id(who)) if isinstance(who, Run) else who
        if m is not None and (not isinstance(who, Run) or m.run is who):
            self._publish(m)
            if self._quiet_walks and m.run is not None and m.run.state.phase.stopping:
                self.tree_changed()  # a stop: watch the tree closely again

    # -- the Host that runs report to ---------------------------------------------------

    def notice(self, run: Run | Managed | None, text: str) -> None:
        m = self.by_run.get(id(run)) if isinstance(run, Run) else run
        text = visible(text)  # quotes commands and names: never a live escape
        if m is not None:
            m.buffer.append(Stream.PROCTUI, [text])
        if self.events is not None:
            self.events.put_notice(m.name if m else None, text)

    def output(self, run: Run, stream: int, lines: list[str]) -> None:
        self.output_count += 1
        self._poke()
        if lines:
            m = self.by_run.get(id(run))
            if m is not None and m.checks is not None:
                self.speech.output(m, lines)
        if lines and self.events is not None:
            m = self.by_run.get(id(run))
            if m is not None:
                self.events.put_output(m.name, stream, lines)

    def ended(self, run: Run, outcome: Outcome) -> None:
        m = self.by_run.get(id(run))
        if m is None:
            return
        m.outcomes.append(outcome)
        self.tree_changed()
        self.notice(m, outcome.text)
        self.journal.write("outcome", m.name, outcome=outcome.kind.value, text=outcome.text,
                           pid=run.pid)
        self.speech.ended(m)
        self.pid_files.ended(m, run, outcome)
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

    def check_soon(self, run: Run) -> None:
        self._to_check.append(run)
        if len(self._to_check) == 1:
            self.loop.call_soon(self._check_pending)

    def _check_pending(self) -> None:
        runs, self._to_check = self._to_check, []
        newest = max((r.leader_exited_at or 0.0) for r in runs)
        self.lineage.update(self._runs, newer_than=newest)
        for run in runs:
            run.check_gone()

    def escapees_of(self, run: Run, newer_than: float | None = None) -> list[ProcStat]:
        self.lineage.update(self._runs, newer_than=newer_than)
        return self.lineage.escapees(run)

    def members_changed(self, run: Run) -> None:
        m = self.by_run.get(id(run))
        if m is not None:
            self.pid_files.members_changed(m, run)

    # -- a process's life ---------------------------------------------------------------

    async def _lifecycle(self, m: Managed) -> None:
        try:
            if m.record is not None:
                await self.recovery.life(m)
                return
            if m.blocked_by is not None and not await self.recovery.wait_for(m):
                return
            if m.spec.depends_on:
                why = await self.deps.wait(m, lambda: m.stop_wanted or self.shutting_down)
                if why is not None:
                    self.notice(m, why)
                    return
            backoff = BACKOFF_START
            first = True
            while True:
                if m.stop_wanted or self.shutting_down:
                    if first:
                        self.notice(m, "not started: everything is stopping"
                                    if self.shutting_down else "not started: stop requested")
                    break
                first = False
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
            # The bookkeeping that says "this one is over" comes first: nothing after it
            # may keep proctui from knowing that everything has ended.
            m.restart_wanted = False
            m.restart_at = None
            if m.phase is not Phase.HELD:
                m.phase = Phase.ENDED
            m.done.set()
            self.unfinished.discard(m.name)
            if not self.unfinished:
                self.all_done.set()
                if self.events is not None:
                    self.events.wake()
            self._publish(m)
            self.deps.poke()

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
        run = Run(m.spec, m.name, self, m.buffer, self.interactive, m.log)
        self.by_run[id(run)] = m
        old, m.run = m.run, run
        if old is not None:
            self.by_run.pop(id(old), None)
        m.run_ended.clear()
        m.phase = Phase.RUNNING
        if run.spawn(self.speech.child_env(m)):
            self.tree_changed()
            self.notice(m, f"started (pid {run.pid}): {m.spec.cmd}")
            self.pid_files.spawned(m, run)
            self.speech.spawned(m, run)
            self.deps.poke()
        self._publish(m)
        return run

    def journal_run(self, run: Run, kind: str, **data: object) -> None:
        m = self.by_run.get(id(run))
        self.journal.write(kind, m.name if m else run.name, **data)

    def _later(self, delay: float, fn: Callable[..., None], *args: object) -> None:
        def call() -> None:
            self._timers.discard(handle)
            fn(*args)

        handle = self.loop.call_later(delay, call)
        self._timers.add(handle)

    # -- housekeeping, about once a second -------------------------------------------

    def _schedule_housekeeping(self, delay: float | None = None) -> None:
        """Walk every second while anything changes; when a tree of idle processes has
        stayed the same for a while, every 2 s, then 4 s (an idle box's CPU). A spawn, an
        ending or a stop brings the pace back at once."""
        if delay is None:
            delay = min(HOUSEKEEPING_QUIET,
                        HOUSEKEEPING_EVERY * 2 ** (self._quiet_walks // QUIET_WALKS))
        self._walk_due = due = self.loop.time() + delay
        self._later(delay, lambda: self._walk_due == due and self.housekeeping())

    def tree_changed(self) -> None:
        self._quiet_walks = 0
        if self._walk_due - self.loop.time() > HOUSEKEEPING_EVERY:
            self._schedule_housekeeping(HOUSEKEEPING_EVERY)

    def housekeeping(self) -> None:
        """Walk our process tree: attribute descendants (while they are still visible
        under their run), reap orphans, notice strays, pauses and resource use."""
        runs = self._runs()
        live = [r for r in runs if r.live]
        if live or self.lineage.strays:
            table = self.lineage.update(lambda: runs, max_age=0.2)
            shape = frozenset((st.pid, st.start_ticks, ord(st.state), st.cpu_ticks,
                               st.rss_pages) for st in table.stats.values())
            busy = shape != self._shape or any(r.state.phase.stopping for r in live)
            self._shape = shape
            self._quiet_walks = 0 if busy else self._quiet_walks + 1
            keep = {r.pid for r in runs if r.pid is not None and r.exit is None
                    and not r.leftover} | self.speech.probes
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
            self.pid_files.members_changed(m, run)

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
        self.speech.close()
        self.journal.write("end")
        self.journal.close()
        for m in self.processes:
            if m.log is not None:
                m.log.close()
        if self._logs_fd is not None:
            os.close(self._logs_fd)
            self._logs_fd = None
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
