"""Everything the core does on its own loop: each process's life (start, restart, wait
for its leftover), the host that runs report to (PID files, notices, snapshots), and
the operator's commands. The thread and the thread-safe API are in supervisor.py."""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import replace

from proctui.config import ProcessSpec
from proctui.core.deps import Deps
from proctui.core.events import EventQueue
from proctui.core.journal import Journal
from proctui.core.life import machine as life
from proctui.core.life.machine import Stage
from proctui.core.lineage import Lineage
from proctui.core.lines import Stream
from proctui.core.logfiles import LogFile, open_logs_dir
from proctui.core.oslayer import OSLayer
from proctui.core.outcome import Outcome, OutcomeKind, pids_phrase, setting
from proctui.core.pidfiles import PidFiles
from proctui.core.process import Managed
from proctui.core.procfs import ProcStat, ProcTable
from proctui.core.recovery import Recovery
from proctui.core.run import RUN_TOKEN_VAR, Run
from proctui.core.rundir import RunDir
from proctui.core.speech import Speech
from proctui.core.text import visible
from proctui.core.usage import Samples, usage_of
from proctui.core.view import Reply

HOUSEKEEPING_EVERY = 1.0
HOUSEKEEPING_QUIET = 4.0  # seconds between walks once the tree has long stayed the same
QUIET_WALKS = 5  # walks that find nothing new before the pace halves


class Engine:
    def __init__(self, specs: Sequence[ProcessSpec], *, os_layer: OSLayer,
                 run_dir: RunDir | None, interactive: bool, events: EventQueue | None,
                 leftover_defaults: ProcessSpec | None,
                 publish: Callable[[Managed], None], added: Callable[[Managed], None],
                 poke: Callable[[], None] = lambda: None,
                 stop_asked: threading.Event | None = None) -> None:
        self.specs = tuple(specs)
        self.os = os_layer
        self.run_dir = run_dir
        self.interactive = interactive
        self.events = events
        self.leftover_defaults = leftover_defaults
        self._publish = publish
        self.republish: Callable[[], None] = lambda: None  # what is not one process's
        self._poke = poke
        self.stop_asked = stop_asked or threading.Event()
        self._added = added
        self.processes: list[Managed] = []
        self.by_name: dict[str, Managed] = {}
        self.by_run: dict[int, Managed] = {}  # id(run) -> its process
        self.lineage = Lineage(os_layer, RUN_TOKEN_VAR)
        self.shutting_down = False
        self.shutdown_why: life.Why | None = None
        # One inbox: every event for a process's life is taken here, in order, one at
        # a time; an effect that leads to another event queues it behind.
        self._inbox: deque[tuple[Managed, life.Event]] = deque()
        self._taking = False
        # Who looks again when something changes: kept as sets, so that a thousand
        # endings cost a thousand looks, not a million.
        self._watching: dict[Managed, None] = {}  # waiting for deps, or for dependents
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
        self.deps = Deps(self.specs, self.by_name, self.look_again)
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
            if m.blocked_by is not None:
                m.life = replace(m.life, blocked=True)
            self._add(m)
        # Leftovers stop in reverse dependency order, as a shutdown does: one whose
        # dependents were left running too waits for them.
        for lo in leftovers:
            after = self._dependents_of(lo)
            if after and lo.life.leftover is life.Leftover.PROVEN:
                lo.life = replace(lo.life, stops_after=after)
        for m in self.processes:
            if self.stop_asked.is_set():
                self.shutting_down = True
                m.life = replace(m.life, shutdown=True)
            self.post(m, life.Launch())
        self._schedule_housekeeping()

    def _add(self, m: Managed) -> None:
        if self._logs_fd is not None and not m.leftover and m.spec.log_max_size > 0:
            m.log = LogFile(self._logs_fd, m.name, m.spec.log_max_size, m.spec.log_keep,
                            lambda text, m=m: self.notice(m, text))
        self.processes.append(m)
        self.by_name[m.name] = m
        self._added(m)

    # -- the inbox, and the carrying-out of the life machine's effects ---------------------

    def post(self, m: Managed, event: life.Event) -> Reply | None:
        """Take ``event`` for ``m``; the reply when it was a command (None when it came
        while another event was being taken: it is taken right after)."""
        self._inbox.append((m, event))
        if self._taking:
            return None
        self._taking = True
        reply: Reply | None = None
        first = True
        try:
            while self._inbox:
                target, ev = self._inbox.popleft()
                answer = self._take(target, ev)
                if first:
                    reply, first = answer, False
        finally:
            self._taking = False
        return reply

    def _take(self, m: Managed, event: life.Event) -> Reply | None:
        before = m.life
        m.life, effects = life.step(before, event)
        if not m.life.over and m.name not in self.unfinished:
            self.unfinished.add(m.name)
            self.all_done.clear()
        reply = None
        for effect in effects:
            try:
                answer = self._apply(m, effect)
            except Exception as e:  # one failing effect must not lose the rest
                self.loop.call_exception_handler({"message": f"{m.name}: {effect}",
                                                  "exception": e})
                answer = None
            if answer is not None:
                reply = answer
        if m.life.stage is Stage.WAITING or m.life.stops_after:
            self._watching[m] = None
        else:
            self._watching.pop(m, None)
        if m.life.stage is Stage.HELD and before.stage is not Stage.HELD:
            self.recovery.held_notice(m)
        if m.life.over and not before.over:
            self._finished(m)
        self._publish(m)
        return reply

    def _apply(self, m: Managed, effect: life.Effect) -> Reply | None:
        if isinstance(effect, life.Spawn):
            self._spawn(m)
        elif isinstance(effect, life.TakeOver):
            self.recovery.take_over(m, effect.stop)
        elif isinstance(effect, life.RequestStop):
            if m.active and m.run is not None:
                m.run.request_stop()
        elif isinstance(effect, life.LookAtDeps):
            waiting, failed = self.deps.look(m)
            self._inbox.append((m, life.DepsLooked(waiting, failed)))
        elif isinstance(effect, life.ArmBackoff):
            self._arm_backoff(m, effect.delay)
        elif isinstance(effect, life.CancelBackoff):
            if m.backoff_timer is not None:
                m.backoff_timer.cancel()
            m.backoff_timer = m.restart_at = None
        elif isinstance(effect, life.Say):
            self.notice(m, effect.text)
        elif isinstance(effect, life.Record):
            self.journal.write(effect.kind, m.name, **dict(effect.data))
        elif isinstance(effect, life.HoldForever):
            self.recovery.hold_forever(m)
        elif isinstance(effect, life.Answer):
            return Reply(effect.ok, effect.text)
        elif isinstance(effect, life.AnswerEnded):
            return self.not_running(m, effect.verb)
        return None

    def _arm_backoff(self, m: Managed, delay: float) -> None:
        m.restart_at = time.monotonic() + delay
        self.notice(m, f"restarting in {setting(delay)} (restart = {m.spec.restart.value})")

        def over() -> None:
            m.backoff_timer = None
            m.restart_at = None
            self.post(m, life.BackoffOver())

        m.backoff_timer = self.loop.call_later(delay, over)

    def _finished(self, m: Managed) -> None:
        m.restart_at = None
        self.unfinished.discard(m.name)
        if not self.unfinished:
            self.all_done.set()
            if self.events is not None:
                self.events.wake()
        if m.leftover:
            for other in self.processes:
                if other.blocked_by is m:
                    other.blocked_by = None
                    last = m.outcomes[-1] if m.outcomes else None
                    pid = last.pid if last is not None and last.left_running else None
                    self._inbox.append((other, life.BlockerEnded(pid)))
        self.look_again()

    def look_again(self) -> None:
        """Something others may wait for changed (a start, a readiness, an ending): every
        process waiting for its dependencies, or for its dependents to stop, looks again."""
        for m in list(self._watching):
            if m.life.stage is Stage.WAITING:
                waiting, failed = self.deps.look(m)
                self.post(m, life.DepsLooked(waiting, failed))
            elif m.life.stops_after:
                self.post(m, life.DependentsLeft(self._dependents_of(m)))

    def _dependents_of(self, m: Managed) -> tuple[str, ...]:
        """Who must end before ``m`` stops: its live dependents (for a leftover, the
        leftovers of its dependents)."""
        if not m.leftover:
            return self.deps.live_dependents(m)
        names = self.deps.dependents.get(m.pid_name, [])
        return tuple(lo.name for lo in self.processes
                     if lo.leftover and lo.pid_name in names and not lo.over)

    def not_running(self, m: Managed, verb: str) -> Reply:
        """Why ``verb`` cannot act on a process that is not running."""
        last = m.outcomes[-1] if m.outcomes else None
        if last is not None and last.left_running and last.left_pids:
            return Reply(False, f"{m.name} is not watched any more ({last.kind.value}): "
                                f"{pids_phrase(last.left_pids)} left running; proctui "
                                f"never signals it again, so it cannot {verb} it")
        if m.life.stage is Stage.BACKOFF:
            return Reply(False, f"{m.name} is waiting to restart; nothing to {verb}")
        if m.life.stage is Stage.WAITING:
            return Reply(False, f"{m.name} has not started yet; nothing to {verb}")
        if last is not None:
            return Reply(False, f"{m.name} has already ended ({last.text}); nothing to "
                                f"{verb}")
        return Reply(False, f"{m.name} is not running; nothing to {verb}")

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
        m.paused = False
        self._cpu.pop(run.token, None)
        # What comes next is decided now, so that no snapshot shows "ended" for a
        # process about to restart.
        self.post(m, life.RunEnded(
            restartable=outcome.kind in (OutcomeKind.EXITED, OutcomeKind.WATCHDOG),
            clean=outcome.clean, left_running=outcome.left_running,
            lived=(run.ended_at or 0) - (run.started_at or 0)))

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

    def _runs(self) -> list[Run]:
        return [m.run for m in self.processes if m.run is not None]

    def _spawn(self, m: Managed) -> Run:
        run = Run(m.spec, m.name, self, m.buffer, self.interactive, m.log)
        self.by_run[id(run)] = m
        old, m.run = m.run, run
        if old is not None:
            self.by_run.pop(id(old), None)
        if run.spawn(self.speech.child_env(m)):
            self.tree_changed()
            # Each of these is kept apart: whatever one of them raises, the run is
            # watched, stopped and reported like any other (never orphaned).
            for step in (lambda: self.notice(m, f"started (pid {run.pid}): {m.spec.cmd}"),
                         lambda: self.pid_files.spawned(m, run),
                         lambda: self.speech.spawned(m, run)):
                try:
                    step()
                except Exception as e:
                    self.loop.call_exception_handler({"message": f"{m.name}: after spawn",
                                                      "exception": e})
            self.look_again()
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
            self.republish()
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
            if m.backoff_timer is not None:
                m.backoff_timer.cancel()
            if run is not None:
                run.cancel()
