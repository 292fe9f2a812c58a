"""The supervisor: every process, on the core's own asyncio loop in its own thread.

Frontends never touch a process. They call the thread-safe command methods here (each
returns at once), read ``views()`` and the output buffers at their own pace, and may
take an ``EventQueue`` of output and notices. A frontend that stalls cannot delay a
deadline: the deadlines are timers on this loop.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TypeVar

from proctui.config import ProcessSpec, RestartPolicy
from proctui.core.events import EventQueue
from proctui.core.lines import OutputBuffer, Stream
from proctui.core.oslayer import Identity, OSLayer, boot_id
from proctui.core.outcome import Outcome, OutcomeKind, setting
from proctui.core.run import Run
from proctui.core.rundir import PidRecord, RunDir, RunDirError
from proctui.core.state import Action, Phase, ProcessView

BACKOFF_START = 1.0
BACKOFF_MAX = 30.0
BACKOFF_RESET = 10.0  # a run that lived this long starts the backoff over
PID_FILE_SETTLE = (0.3, 2.7)  # re-read the command line this long after a spawn (cumulative)

T = TypeVar("T")


class Managed:
    """One configured process (or one leftover) across all its runs."""

    def __init__(self, spec: ProcessSpec, name: str | None = None) -> None:
        self.spec = spec
        self.name = name or spec.name
        self.pid_name = spec.name  # its PID file's name (a leftover keeps the original's)
        self.buffer = OutputBuffer(spec.scrollback)
        self.run: Run | None = None
        self.outcomes: list[Outcome] = []
        self.restarts = 0
        self.phase = Phase.STARTING  # when no run is active
        self.restart_at: float | None = None
        self.stop_wanted = False
        self.restart_wanted = False
        self.leftover: PidRecord | None = None
        self.blocked_by: Managed | None = None
        self.task: asyncio.Task[None] | None = None
        self.wake = asyncio.Event()
        self.done = asyncio.Event()
        self.run_ended = asyncio.Event()

    @property
    def active(self) -> bool:
        return self.run is not None and self.run.outcome is None

    def view(self) -> ProcessView:
        run = self.run
        live = run is not None and run.outcome is None
        phase = run.phase if live else self.phase  # type: ignore[union-attr]
        return ProcessView(
            name=self.name,
            phase=phase,
            pid=run.pid if run else None,
            pgid=run.pgid if run else None,
            cmd=self.spec.cmd,
            started_at=run.started_at if run else None,
            ended_at=run.ended_at if run else None,
            restarts=self.restarts,
            stop_requested_at=run.stop_requested_at if run else None,
            stop_signal_name=self.spec.stop_signal.name,
            kill_sent_at=run.kill_sent_at if run else None,
            deadline=run.deadline if live else None,  # type: ignore[union-attr]
            deadline_action=run.deadline_action() if live else "",  # type: ignore[union-attr]
            extend_step=self.spec.extend_step,
            outcome=run.outcome if run else None,
            restart_at=self.restart_at,
            leftover=self.leftover is not None,
            buffer=self.buffer,
        )


class Supervisor:
    def __init__(
        self,
        specs: Sequence[ProcessSpec],
        *,
        run_dir: RunDir | None = None,
        os_layer: OSLayer | None = None,
        interactive: bool = True,
        events: EventQueue | None = None,
        leftover_defaults: ProcessSpec | None = None,
    ) -> None:
        self.specs = tuple(specs)
        self.run_dir = run_dir
        self.os = os_layer or OSLayer()
        self.interactive = interactive
        self.events = events
        self.leftover_defaults = leftover_defaults
        self.processes: list[Managed] = []
        self._by_name: dict[str, Managed] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._started = threading.Event()  # start-up (leftovers, first spawns) done
        self._closing: asyncio.Event | None = None
        self._boot_id = boot_id()

    # -- life of the core thread --------------------------------------------------------

    def start(self) -> None:
        """Start the core thread and every process; returns once all were spawned."""
        self._thread = threading.Thread(target=self._thread_main, name="proctui-core",
                                        daemon=True)
        self._thread.start()
        self._ready.wait()
        self._started.wait()

    def _thread_main(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self._main())
        finally:
            loop.close()

    async def _main(self) -> None:
        self._closing = asyncio.Event()
        self._ready.set()
        try:
            await self._startup()
        finally:
            self._started.set()
        await self._closing.wait()
        for m in self.processes:
            run = m.run
            if run is not None and run.outcome is not None and run.outcome.left_running:
                log = self.run_dir.output_path(m.pid_name) if self.run_dir else None
                run.hand_over_output(log)
            if m.task is not None:
                m.task.cancel()
            if run is not None:
                run.cancel()
        await asyncio.sleep(0)

    def close(self, timeout: float = 5.0) -> None:
        """End the core thread. Processes still running are left as they are: call this
        once ``all_ended()``, or after abandoning what is left."""
        loop, closing = self._loop, self._closing
        if loop is not None and closing is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(closing.set)
        if self._thread is not None:
            self._thread.join(timeout)

    # -- the thread-safe command API ----------------------------------------------------

    def _submit(self, fn: Callable[..., T], *args: object) -> concurrent.futures.Future[T]:
        future: concurrent.futures.Future[T] = concurrent.futures.Future()

        def call() -> None:
            try:
                future.set_result(fn(*args))
            except Exception as e:
                future.set_exception(e)

        if self._loop is None or self._loop.is_closed():
            future.set_exception(RuntimeError("the supervisor is not running"))
        else:
            self._loop.call_soon_threadsafe(call)
        return future

    def stop(self, name: str) -> concurrent.futures.Future[None]:
        return self._submit(lambda: self._stop(self._get(name)))

    def stop_all(self) -> concurrent.futures.Future[None]:
        """Start every stop sequence at once; they run in parallel."""
        return self._submit(self._each, self._stop)

    def kill(self, name: str) -> concurrent.futures.Future[None]:
        return self._submit(lambda: self._act(self._get(name), Action.KILL))

    def kill_all(self) -> concurrent.futures.Future[None]:
        """Kill now every process that is stopping (the second ctrl+c)."""
        return self._submit(self._each, lambda m: self._act(m, Action.KILL), True)

    def abandon(self, name: str) -> concurrent.futures.Future[None]:
        return self._submit(lambda: self._act(self._get(name), Action.ABANDON))

    def abandon_all(self) -> concurrent.futures.Future[None]:
        return self._submit(self._each, lambda m: self._act(m, Action.ABANDON))

    def wait_without_deadline(self, name: str) -> concurrent.futures.Future[None]:
        return self._submit(lambda: self._act(self._get(name), Action.WAIT))

    def extend(self, name: str, by: float | None = None) -> concurrent.futures.Future[bool]:
        """Move the current deadline later by ``by`` seconds (default: extend_step)."""
        def call() -> bool:
            m = self._get(name)
            if not m.active:
                return False
            return m.run.extend(m.spec.extend_step if by is None else by)  # type: ignore[union-attr]
        return self._submit(call)

    def restart(self, name: str) -> concurrent.futures.Future[None]:
        return self._submit(lambda: self._restart(self._get(name)))

    def start_process(self, name: str) -> concurrent.futures.Future[None]:
        return self._submit(lambda: self._start_again(self._get(name)))

    def set_interactive(self, interactive: bool) -> concurrent.futures.Future[None]:
        """Nobody can answer any more (the terminal hung up): "ask" acts as "kill", and a
        process already parked for a decision is killed now."""
        def call() -> None:
            self.interactive = interactive
            for m in self.processes:
                if m.active:
                    m.run.interactive = interactive  # type: ignore[union-attr]
                    if not interactive and m.run.phase is Phase.DECIDING:  # type: ignore[union-attr]
                        m.run.act(Action.KILL)  # type: ignore[union-attr]
        return self._submit(call)

    # -- reading state (any thread) -----------------------------------------------------

    def views(self) -> list[ProcessView]:
        return [m.view() for m in list(self.processes)]

    def all_ended(self) -> bool:
        """No process is running, stopping or waiting to restart."""
        return self._started.is_set() and all(
            m.done.is_set() and not m.active for m in list(self.processes)
        )

    def outcomes(self) -> list[tuple[str, Outcome]]:
        """Every run's outcome so far, in order, named."""
        return [(m.name, o) for m in list(self.processes) for o in list(m.outcomes)]

    def final(self) -> list[tuple[str, Outcome | None]]:
        """Each process's last outcome (None: it never started)."""
        return [(m.name, m.outcomes[-1] if m.outcomes else None) for m in list(self.processes)]

    # -- on the loop ----------------------------------------------------------------------

    def _each(self, fn: Callable[[Managed], None], active_only: bool = False) -> None:
        for m in self.processes:
            if m.active or not active_only:
                fn(m)

    def _get(self, name: str) -> Managed:
        try:
            return self._by_name[name]
        except KeyError:
            raise KeyError(f"no process named {name!r}") from None

    def _add(self, m: Managed) -> None:
        self.processes.append(m)
        self._by_name[m.name] = m

    def _notice(self, m: Managed | None, text: str) -> None:
        if m is not None:
            m.buffer.append(Stream.PROCTUI, [text])
        if self.events is not None:
            self.events.put_notice(m.name if m else None, text)

    async def _startup(self) -> None:
        leftovers = self._find_leftovers()
        for m in leftovers:
            self._add(m)
        for spec in self.specs:
            m = Managed(spec)
            m.blocked_by = next((lo for lo in leftovers if lo.pid_name == spec.name), None)
            self._add(m)
        for m in self.processes:
            self._launch(m)
        # Let every lifecycle reach its first spawn before start() returns.
        await asyncio.sleep(0)

    def _launch(self, m: Managed) -> None:
        m.done.clear()
        m.stop_wanted = False
        m.task = asyncio.get_running_loop().create_task(self._lifecycle(m))

    async def _lifecycle(self, m: Managed) -> None:
        try:
            if m.leftover is not None:
                await self._stop_leftover(m)
                return
            if m.blocked_by is not None and not await self._wait_for_leftover(m):
                return
            backoff = BACKOFF_START
            while not m.stop_wanted:
                run = self._spawn(m)
                await m.run_ended.wait()
                if m.restart_wanted and not run.outcome.left_running:  # type: ignore[union-attr]
                    m.restart_wanted = m.stop_wanted = False
                    m.restarts += 1
                    backoff = BACKOFF_START
                    continue
                if not self._should_restart(m, run):
                    break
                if (run.ended_at or 0) - (run.started_at or 0) >= BACKOFF_RESET:
                    backoff = BACKOFF_START
                m.phase = Phase.BACKOFF
                m.restart_at = time.monotonic() + backoff
                self._notice(m, f"restarting in {setting(backoff)} (restart = "
                                f"{m.spec.restart.value})")
                m.wake.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(m.wake.wait(), backoff)
                m.restart_at = None
                if m.stop_wanted:
                    self._notice(m, "restart cancelled: stop requested")
                    break
                backoff = min(backoff * 2, BACKOFF_MAX)
                m.restarts += 1
        finally:
            m.restart_wanted = False
            m.phase = Phase.ENDED
            m.done.set()

    def _should_restart(self, m: Managed, run: Run) -> bool:
        outcome = run.outcome
        if m.stop_wanted or outcome is None or outcome.kind is not OutcomeKind.EXITED:
            return False
        policy = m.spec.restart
        if policy is RestartPolicy.ALWAYS:
            return True
        return policy is RestartPolicy.ON_FAILURE and not outcome.clean

    def _new_run(self, m: Managed) -> Run:
        events = self.events

        def output(stream: int, lines: list[str]) -> None:
            if events is not None:
                events.put_output(m.name, stream, lines)

        m.run_ended.clear()
        run = Run(m.spec, m.name, self.os, m.buffer, lambda text: self._notice(m, text),
                  output if events is not None else None,
                  lambda r, o: self._run_ended(m, r, o), self.interactive)
        m.run = run
        return run

    def _spawn(self, m: Managed) -> Run:
        run = self._new_run(m)
        if run.spawn():
            cmd = m.spec.cmd.replace("\r", "\\r").replace("\n", "\\n")  # one line, always
            self._notice(m, f"started (pid {run.pid}): {cmd}")
            record = self._write_pid_file(m, run)
            if record is not None:
                asyncio.get_running_loop().create_task(self._settle_pid_file(m, run, record))
        return run

    async def _settle_pid_file(self, m: Managed, run: Run, record: PidRecord) -> None:
        """A shell that execs its command, or a wrapper script, changes the command line
        just after the spawn: record the one the process settles on."""
        for delay in PID_FILE_SETTLE:
            await asyncio.sleep(delay)
            if run.outcome is not None or m.run is not run:
                return
            identity = run.identity()
            if identity is not None and identity[1] != record.cmdline:
                record = replace(record, cmdline=identity[1])
                self._store_pid_file(m, record)

    def _run_ended(self, m: Managed, run: Run, outcome: Outcome) -> None:
        m.outcomes.append(outcome)
        self._notice(m, outcome.text)
        if self.run_dir is not None and run.pid is not None and not outcome.left_running:
            try:
                self.run_dir.remove_pid(m.pid_name)
            except OSError as e:
                self._notice(m, f"warning: cannot remove PID file: {e}")
        m.run_ended.set()

    def _write_pid_file(self, m: Managed, run: Run) -> PidRecord | None:
        if self.run_dir is None or run.pid is None:
            return None
        identity = run.identity()
        if identity is None:
            return None  # already gone
        start_ticks, cmdline = identity
        record = PidRecord(name=m.pid_name, pid=run.pid, pgid=run.pgid or run.pid,
                           boot_id=self._boot_id, start_ticks=start_ticks, cmdline=cmdline,
                           started_at=time.time(), proctui_pid=os.getpid())
        return record if self._store_pid_file(m, record) else None

    def _store_pid_file(self, m: Managed, record: PidRecord) -> bool:
        assert self.run_dir is not None
        try:
            self.run_dir.write_pid(record)
        except OSError as e:
            self._notice(m, f"warning: cannot write PID file in {self.run_dir.path}: {e}; "
                            "if proctui dies, this process will not be found next time")
            return False
        return True

    # -- operator commands, on the loop -----------------------------------------------------

    def _stop(self, m: Managed) -> None:
        m.stop_wanted = True
        m.wake.set()  # cancels a pending restart
        if m.active:
            m.run.request_stop()  # type: ignore[union-attr]

    def _act(self, m: Managed, action: Action) -> None:
        if action is not Action.WAIT:
            m.stop_wanted = True
            m.wake.set()
        if m.active:
            m.run.act(action)  # type: ignore[union-attr]

    def _restart(self, m: Managed) -> None:
        if m.active:
            m.restart_wanted = True
            m.stop_wanted = True
            m.run.request_stop()  # type: ignore[union-attr]
        elif m.phase is Phase.BACKOFF:
            m.wake.set()  # restart now instead of after the backoff
        else:
            self._start_again(m)

    def _start_again(self, m: Managed) -> None:
        if m.leftover is not None or not m.done.is_set() or m.active:
            return
        last = m.run
        if last is not None and last.outcome is not None and last.outcome.left_running \
                and last.pgid is not None and self.os.group_alive(last.pgid):
            self._notice(m, f"not started again: pid {last.pid} ({last.outcome.kind.value}) is "
                            "still running")
            return
        if m.run is not None:
            m.restarts += 1
        m.blocked_by = None
        self._launch(m)

    # -- leftovers from an earlier run ----------------------------------------------------

    def _find_leftovers(self) -> list[Managed]:
        if self.run_dir is None:
            return []
        try:
            entries = self.run_dir.scan()
        except RunDirError as e:
            self._notice(None, f"warning: {e}")
            return []
        found: list[Managed] = []
        for entry in entries:
            record = entry.record
            if record is None:
                self._notice(None, f"{entry.path}: {entry.error}; left in place, remove it "
                                   "once you have checked")
                continue
            who = f"PID file {entry.path.name} (process {record.name!r}, pid {record.pid})"
            identity = self.os.identify(record.pid, record.boot_id, record.start_ticks,
                                        record.cmdline)
            if identity is Identity.CHANGED:
                self._notice(None, f"{who}: started at the recorded instant but now runs "
                                   "another command line; not touching it (stop it yourself "
                                   "if it is yours, then remove the file)")
                continue
            if identity is not Identity.SAME:
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)
                if identity is Identity.GONE:
                    self._notice(None, f"{who}: that process is gone; removed the stale file")
                else:
                    self._notice(None, f"{who}: that pid now belongs to another process; "
                                       "left it alone and removed the stale file")
                continue
            spec = next((s for s in self.specs if s.name == record.name), None)
            spec = spec or self.leftover_defaults or ProcessSpec(
                name=record.name, argv=tuple(record.cmdline), cmd="", cwd=self.run_dir.path)
            name = f"{record.name} (leftover)"
            while name in self._by_name or any(lo.name == name for lo in found):
                name += "'"
            m = Managed(replace(spec, name=record.name, cmd=" ".join(record.cmdline)), name)
            m.pid_name = record.name
            m.leftover = record
            found.append(m)
        return found

    async def _stop_leftover(self, m: Managed) -> None:
        record = m.leftover
        assert record is not None
        run = self._new_run(m)
        run.adopt(record.pid, record.pgid)
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(record.started_at))
        self._notice(m, f"leftover from an earlier run (pid {record.pid}, started {when}): "
                        "stopping it")
        run.request_stop()
        await m.run_ended.wait()

    async def _wait_for_leftover(self, m: Managed) -> bool:
        """A process waits for its own leftover to be gone, so there is never a second
        copy. False when it must not start at all."""
        leftover = m.blocked_by
        assert leftover is not None
        m.phase = Phase.STARTING
        await leftover.done.wait()
        outcome = leftover.outcomes[-1] if leftover.outcomes else None
        if m.stop_wanted:
            return False
        if outcome is not None and outcome.left_running:
            self._notice(m, f"not started: its leftover (pid {outcome.pid}) is still running")
            return False
        return True
