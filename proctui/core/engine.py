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
from dataclasses import replace
from functools import partial

from proctui.config import ProcessSpec
from proctui.core.life import machine as life
from proctui.core.life.inbox import Inbox
from proctui.core.life.outcome import Outcome, OutcomeKind, seconds
from proctui.core.os.housekeeping import Housekeeping
from proctui.core.os.lineage import Lineage
from proctui.core.os.oslayer import OSLayer
from proctui.core.os.procfs import ProcStat
from proctui.core.output.events import EventQueue, pace
from proctui.core.output.lines import Chunk, Stream
from proctui.core.output.text import visible
from proctui.core.process import Managed
from proctui.core.run import RUN_TOKEN_VAR, Run
from proctui.core.speak.deps import Deps
from proctui.core.speak.speech import Heard, Speech
from proctui.core.store import recovery
from proctui.core.store.journal import Journal
from proctui.core.store.kinds import Kind
from proctui.core.store.logfiles import LogFile, open_logs_dir
from proctui.core.store.pidfiles import PidFiles
from proctui.core.store.rundir import RunDir
from proctui.core.view import Usage


class Engine:
    def __init__(self, specs: Sequence[ProcessSpec], *, os_layer: OSLayer,
                 run_dir: RunDir | None, interactive: bool, events: EventQueue | None,
                 leftover_defaults: ProcessSpec | None,
                 publish: Callable[[Managed], None], added: Callable[[Managed], None],
                 poke: Callable[[], None] = lambda: None,
                 stop_asked: threading.Event | None = None,
                 forgotten: Callable[[Managed], None] = lambda m: None) -> None:
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
        self._forgotten = forgotten
        self.gone: list[Managed] = []  # removed by a reload: only their pipes are kept
        self.forget_hooks: list[Callable[[Managed], None]] = []  # reloads waiting
        self.processes: list[Managed] = []
        self.by_name: dict[str, Managed] = {}
        self.by_run: dict[int, Managed] = {}  # id(run) -> its process
        self.lineage = Lineage(os_layer, RUN_TOKEN_VAR)
        self.shutdown_why: life.Why | None = None
        self.boot_id = os_layer.boot_id()
        self._timers: set[asyncio.TimerHandle] = set()
        self._to_check: list[Run] = []
        self.output_count = 0  # reads that brought output: frontends look when it moves
        # What keeps proctui from keeping its promises, by area (a full disk under its
        # log, journal or PID files): shown by status, never a reason to stop anything.
        self.troubles: dict[str, str] = {}
        self.pid_files = PidFiles(run_dir, os_layer, self.lineage, self.notice, self._later,
                                  partial(self.trouble, "PID files"))
        self.loop = asyncio.get_running_loop()
        self.journal = Journal(run_dir)
        self.journal.on_trouble = self._journal_trouble
        self._logs_fd: int | None = None
        if run_dir is not None and run_dir.fd is not None:
            try:
                self._logs_fd = open_logs_dir(run_dir)
            except OSError as e:
                self.notice(None, f"output logs: {run_dir.path / 'logs'}: "
                                  f"{e.strerror or e}; output is not kept on disk")
        self.deps = Deps(self.specs, self.by_name, lambda: self.inbox.look_again())
        self.inbox = Inbox(self.loop, self.processes, self.deps, spawn=self._spawn,
                           take_over=self._take_over, notice=self.notice,
                           journal=self.journal.write, publish=self._publish,
                           all_ended=self._all_ended, forget=self.forget)
        self.post = self.inbox.post
        self.all_done = self.inbox.all_done
        self.speech = Speech(self.loop, os_layer, self.lineage, self._runs, self.journal,
                             self.notice, self._heard)
        self.lineage.ignore = self.speech.probes
        self.helpers = self.speech.probes  # stop commands join the probes there
        self.housekeeping = Housekeeping(self.loop, os_layer, self.lineage, self._runs,
                                         lambda: self.speech.probes, self._observed,
                                         self._stray)

    # -- start-up ---------------------------------------------------------------------

    def startup(self) -> None:
        self.journal.write(Kind.BEGIN, pid=os.getpid(), processes=[s.name for s in self.specs])
        leftovers = recovery.find(self.run_dir, self.os, self.boot_id, self.specs,
                                  self.leftover_defaults, self.interactive,
                                  lambda text: self.notice(None, text))
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
            after = self.inbox.dependents_of(lo)
            if after and lo.life.leftover is life.Leftover.PROVEN:
                lo.life = replace(lo.life, stops_after=after)
        for m in self.processes:
            if self.stop_asked.is_set():
                m.life = replace(m.life, shutdown=True)
            self.post(m, life.Launch())
        self.housekeeping.schedule()

    def _add(self, m: Managed) -> None:
        if self._logs_fd is not None and not m.leftover and m.spec.log_max_size > 0:
            m.log = LogFile(self._logs_fd, m.name, m.spec.log_max_size, m.spec.log_keep,
                            partial(self.notice, m))
        self.processes.append(m)
        self.by_name[m.name] = m
        self._added(m)

    def add(self, spec: ProcessSpec) -> Managed:
        """A process added by a reload: a new life (launched by the caller)."""
        m = Managed(spec)
        self._add(m)
        return m

    def forget(self, m: Managed) -> None:
        """A process removed by a reload has ended: no name, no view, no commands."""
        if m in self.processes:
            self.processes.remove(m)
        if self.by_name.get(m.name) is m:
            del self.by_name[m.name]
        self.gone.append(m)
        self._forgotten(m)
        self.journal.write(Kind.NOTICE, m.name, text="removed from the config (reload)")
        for hook in list(self.forget_hooks):
            hook(m)

    def _take_over(self, m: Managed, stop: bool) -> None:
        """Watch a leftover proven ours as a run (and stop it, unless adopted)."""
        record, verdict = m.record, m.verdict
        assert record is not None and verdict is not None
        m.held = ""
        run = Run(m.spec, m.name, self, m.buffer, self.interactive)
        self.by_run[id(run)] = m
        m.run = run
        run.adopt(record.pid, verdict.pgid, verdict.start_ticks or record.start_ticks,
                  list(verdict.escapees))
        if verdict.note:
            self.notice(m, verdict.note)
        words = recovery.take_over_words(m, stop)
        if words:
            self.notice(m, words)
        if stop:
            run.request_stop()

    def _heard(self, m: Managed, heard: Heard) -> None:
        """What a run said: its record is written here, then published."""
        if heard.status is not None:
            m.status = heard.status
        if heard.ready_at is not None:
            m.ready_at = heard.ready_at
        self._publish(m)
        if heard.ready_at is not None:
            self.inbox.look_again()  # a dependency may be met now

    def begin_shutdown(self, why: life.Why, ordered: bool = True, abandon: bool = False) -> None:
        """Everything is stopping from now on (each life hears it as a Shutdown event);
        the first reason is journaled."""
        if self.shutdown_why is None:
            self.shutdown_why = why
            self.journal.write(Kind.SHUTDOWN, why=why.value, ordered=ordered,
                               abandon=abandon or None)

    def clear_output(self, m: Managed) -> None:
        m.buffer.clear()
        self._publish(m)

    def _all_ended(self) -> None:
        if self.events is not None:
            self.events.wake()

    def changed(self, who: Run | Managed) -> None:
        """Publish a fresh snapshot of the process (a run reports every transition)."""
        m = self.by_run.get(id(who)) if isinstance(who, Run) else who
        if m is not None and (not isinstance(who, Run) or m.run is who):
            self._publish(m)
            if self.housekeeping.quiet and m.run is not None and m.run.state.phase.stopping:
                self.tree_changed()  # a stop: watch the tree closely again

    def trouble(self, area: str, text: str | None) -> None:
        """Something keeps proctui from keeping a promise about ``area`` (``text`` says
        what), or no longer does (None): said once as it begins and as it ends, and held
        for status until then."""
        before = self.troubles.get(area)
        if text == before:
            return
        if text is None:
            del self.troubles[area]
        else:
            self.troubles[area] = text
        if before is None or text is None:
            said = text if text is not None else f"{area}: written again"
            self.notice(None, said)
            self.journal.write(Kind.NOTICE, text=said)
        self.republish()

    def _journal_trouble(self, why: str | None) -> None:
        self.trouble("the journal", None if why is None else
                     f"journal {self.journal.path} not written: {why} (entries are lost "
                     "until there is room; a journal-gap entry will say how many)")

    # -- the Host that runs report to ---------------------------------------------------

    def notice(self, run: Run | Managed | None, text: str) -> None:
        m = self.by_run.get(id(run)) if isinstance(run, Run) else run
        text = visible(text)  # quotes commands and names: never a live escape
        if m is not None:
            m.buffer.append(Stream.PROCTUI, [text])
        if self.events is not None:
            self.events.put_notice(m.name if m else None, text)

    def output(self, run: Run, stream: int, lines: Chunk) -> None:
        self.output_count += 1
        self._poke()
        if lines:
            m = self.by_run.get(id(run))
            if m is not None and m.run is run and m.heard(time.monotonic()):
                self._publish(m)  # its silence is over
            if m is not None and self.speech.listens(m):
                self.speech.output(m, lines)
        if lines and self.events is not None:
            m = self.by_run.get(id(run))
            if m is not None and not self.events.put_output(m.name, stream, lines):
                pace(self.events, run.pipes, self.loop)

    def ended(self, run: Run, outcome: Outcome) -> None:
        m = self.by_run.get(id(run))
        if m is None:
            return
        m.outcomes.append(outcome)
        self.tree_changed()
        self.notice(m, outcome.text)
        self.journal.write(Kind.OUTCOME, m.name, outcome=outcome.kind.value, text=outcome.text,
                           pid=run.pid)
        self.speech.ended(m)
        self.pid_files.ended(m, run, outcome)
        m.paused = False
        self.housekeeping.cpu.pop(run.token, None)
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
        with self.os.one_walk():
            for run in runs:
                run.watch.check_gone()

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
        m.ready_at, m.status, m.notify_dropped, m.silent_since = None, "", 0, None
        if run.spawn(self.speech.child_env(m)):
            self.tree_changed()
            # Each of these is kept apart: whatever one of them raises, the run is
            # watched, stopped and reported like any other (never orphaned).
            steps: list[Callable[[], object]] = [
                lambda: self.notice(m, f"started (pid {run.pid}): {m.spec.cmd}"),
                lambda: self.pid_files.spawned(m, run),
                lambda: self.speech.spawned(m, run)]
            for step in steps:
                try:
                    step()
                except Exception as e:
                    self.loop.call_exception_handler({"message": f"{m.name}: after spawn",
                                                      "exception": e})
            self.inbox.look_again()
        self._publish(m)
        return run

    def journal_run(self, run: Run, kind: Kind, **data: object) -> None:
        m = self.by_run.get(id(run))
        self.journal.write(kind, m.name if m else run.name, **data)

    def _later(self, delay: float, fn: Callable[..., None], *args: object) -> None:
        def call() -> None:
            self._timers.discard(handle)
            fn(*args)

        handle = self.loop.call_later(delay, call)
        self._timers.add(handle)

    # -- what the walk of the tree found ------------------------------------------------

    def _observed(self, run: Run, paused: bool, usage: Usage | None) -> None:
        m = self.by_run.get(id(run))
        if m is None or m.run is not run:
            return
        # Read once a walk, never per datagram: a flood must not buy a snapshot each.
        dropped = self.speech.dropped_now(m.name)
        if m.look_silent(time.monotonic()):
            if m.silent_since is not None:
                self.notice(m, f"silent: no output for "
                               f"{seconds(m.spec.silence_warning or 0)} (silence_warning)")
            self._publish(m)
        if paused != m.paused or usage != m.usage or dropped != m.notify_dropped:
            m.paused, m.usage, m.notify_dropped = paused, usage, dropped
            self._publish(m)
        if run.exit is None and not run.leftover:
            self.pid_files.members_changed(m, run)

    def _stray(self, pid: int, cmdline: str) -> None:
        self.republish()
        self.notice(None, f"pid {pid} ({cmdline[:60]}) was left behind by one of these "
                          "processes (it left its group and cleared its environment, so "
                          "proctui cannot tell which); it is not signalled")

    def tree_changed(self) -> None:
        self.housekeeping.changed()

    @property
    def strays(self) -> list[int]:
        return self.housekeeping.strays

    def store_rebuilt(self) -> None:
        """The run directory was removed under us and made again (remote/heal.py): the
        journal and the output logs go on in the new one; they went on writing into the
        removed one's files, lost to everyone."""
        if self.run_dir is None:
            return
        self.journal.reopen(self.run_dir)
        old, self._logs_fd = self._logs_fd, None
        if old is None:
            return
        with contextlib.suppress(OSError):
            self._logs_fd = open_logs_dir(self.run_dir)
        for m in (*self.processes, *self.gone):
            if m.log is not None:
                m.log.close()  # opened again, in the new directory, at the next write
                if self._logs_fd is not None:
                    m.log.dir_fd = self._logs_fd
                else:
                    m.log.failed = True
        os.close(old)

    # -- the end ----------------------------------------------------------------------

    def close(self) -> None:
        self.speech.close()
        self.journal.write(Kind.END)
        self.journal.close()
        for m in (*self.processes, *self.gone):
            if m.log is not None:
                m.log.close()
        if self._logs_fd is not None:
            os.close(self._logs_fd)
            self._logs_fd = None
        for handle in self._timers:
            handle.cancel()
        self._timers.clear()
        self.housekeeping.close()
        for m in (*self.processes, *self.gone):
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
