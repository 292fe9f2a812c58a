"""The supervisor: every process, on the core's own asyncio loop in its own thread.

Frontends never touch a process. They call the thread-safe command methods here (each
returns a future at once), and read snapshots: after every change the core thread
builds a new immutable ProcessView and publishes it by replacing one reference. A
frontend that stalls cannot delay a deadline: the deadlines are timers on this loop."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import os
import sys
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable, Sequence
from typing import TypeVar

from proctui.config import ProcessSpec
from proctui.core.commands import Commands
from proctui.core.doorbell import Doorbell
from proctui.core.engine import Engine
from proctui.core.life.machine import Why
from proctui.core.life.outcome import Outcome, Who
from proctui.core.life.stop import Phase
from proctui.core.os.oslayer import raise_fd_limit
from proctui.core.output.events import EventQueue
from proctui.core.output.lines import OutputBuffer
from proctui.core.process import Managed
from proctui.core.publish import Facts, Publisher
from proctui.core.snapshot import CoreSnapshot
from proctui.core.store.kinds import Kind
from proctui.core.store.rundir import RunDir
from proctui.core.view import Action, ProcessView, Reply

T = TypeVar("T")
SWITCH_INTERVAL = 0.001  # seconds


class Supervisor:
    def __init__(self, specs: Sequence[ProcessSpec], *, run_dir: RunDir | None = None,
                 os_layer: object | None = None, interactive: bool = True,
                 events: EventQueue | None = None,
                 leftover_defaults: ProcessSpec | None = None) -> None:
        from proctui.core.os.oslayer import OSLayer

        self.specs = tuple(specs)
        self.run_dir = run_dir
        self.os: OSLayer = os_layer or OSLayer()  # type: ignore[assignment]
        self.interactive = interactive
        self.events = events
        self.leftover_defaults = leftover_defaults
        self.crash: str | None = None  # an internal error ended normal supervision
        self._managed: tuple[Managed, ...] = ()
        self._buffers: dict[str, OutputBuffer] = {}
        self._bell = Doorbell()
        # Written on the core thread only; readers take its snapshot, swapped whole.
        self._pub = Publisher(self._facts, self._bell.ring)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._engine: Engine | None = None
        self._commands: Commands | None = None
        self._thread: threading.Thread | None = None
        self._early: deque[Callable[[], None]] = deque()
        self._started = threading.Event()  # start-up (leftovers, first spawns) done
        self._ended = False  # the core's thread has run its course (not: not started yet)
        self._closing: asyncio.Event | None = None
        self._shutdown_requested = False
        # Set from any thread (a signal handler too) before the core may have started:
        # the engine reads it before each launch at start-up, so nothing starts.
        self._stop_asked = threading.Event()
        self._usage_wanted = 0

    # -- life of the core thread --------------------------------------------------------

    def start(self, wait: bool = True) -> None:
        """Start the core thread and every process; returns once all were launched."""
        # Every syscall of the core thread gives up the GIL, and a busy frontend thread
        # would then keep it for up to the switch interval (5 ms by default): with many
        # processes that adds up to seconds. A shorter interval hands it back sooner.
        sys.setswitchinterval(SWITCH_INTERVAL)
        self.os.become_subreaper()
        raise_fd_limit(len(self.specs))
        self._thread = threading.Thread(target=self._thread_main, name="proctui-core",
                                        daemon=True)
        self._thread.start()
        if wait:
            self._started.wait()

    def started(self) -> None:
        """Wait until every process was launched (after ``start(wait=False)``)."""
        self._started.wait()

    def _thread_main(self) -> None:
        loop = asyncio.new_event_loop()
        loop.set_exception_handler(self._on_loop_error)
        try:
            loop.run_until_complete(self._main(loop))
        except BaseException as e:
            self.crash = self.crash or f"{type(e).__name__}: {e}"
            self._emergency_stop()
        finally:
            self._ended = True
            self._started.set()
            with contextlib.suppress(Exception):
                loop.close()

    async def _main(self, loop: asyncio.AbstractEventLoop) -> None:
        self._closing = asyncio.Event()
        engine = Engine(self.specs, os_layer=self.os, run_dir=self.run_dir,
                        interactive=self.interactive, events=self.events,
                        leftover_defaults=self.leftover_defaults,
                        publish=self._pub.publish, added=self._added, poke=self._bell.ring,
                        stop_asked=self._stop_asked, forgotten=self._pub.removed)
        engine.republish = self._pub.swap
        self._engine = engine
        self._commands = Commands(engine)
        try:
            engine.startup()
        finally:
            self._loop = loop
            self._run_early()
            self._started.set()
        await self._closing.wait()
        engine.close()
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

    def _on_loop_error(self, loop: asyncio.AbstractEventLoop, context: dict[str, object]) -> None:
        """A bug in the core: say so, and stop everything per policy with nobody asked."""
        error = context.get("exception")
        text = f"{type(error).__name__}: {error}" if isinstance(error, BaseException) else \
            str(context.get("message"))
        if self.crash is None:
            self.crash = text
            if isinstance(error, BaseException):
                self._crash_log(error)
            engine, commands = self._engine, self._commands
            if engine is not None and commands is not None:
                engine.notice(None, f"internal error: {text}; stopping everything")
                with contextlib.suppress(Exception):
                    commands.set_interactive(False)
                    commands.stop_all(why=Why.INTERNAL_ERROR)

    def _crash_log(self, error: BaseException) -> None:
        from proctui.core.emergency import crash_log

        text = "".join(traceback.format_exception(error))
        crash_log(self.run_dir, f"--- {time.ctime()} pid {os.getpid()}\n{text}")

    def _emergency_stop(self) -> None:
        """The loop is gone: stop what is still running without it, per policy, bounded
        (the stop machine decides; see emergency.py)."""
        from proctui.core.emergency import crash_log, emergency_stop

        live = [(m.run.pgid, m.spec) for m in self._managed if m.run is not None
                and m.run.outcome is None and m.run.pgid is not None and not m.run.leftover]
        said = emergency_stop(live, self.os)
        if said:
            crash_log(self.run_dir, "".join(f"emergency stop: {line}\n" for line in said))

    # -- publication (on the core thread) -------------------------------------------------

    def _facts(self) -> Facts:
        engine = self._engine
        if engine is None:
            return Facts(False, (), self._shutdown_requested, self.crash, ())
        return Facts(engine.all_done.is_set(), tuple(engine.strays), self._shutdown_requested,
                     self.crash, engine.journal.entries, tuple(engine.troubles.values()))

    def _added(self, m: Managed) -> None:
        self._buffers[m.name] = m.buffer
        self._managed = (*self._managed, m)
        self._pub.added(m)

    # -- the thread-safe command API ----------------------------------------------------

    def store_rebuilt(self) -> concurrent.futures.Future[None]:
        """The run directory was made again: the journal and output logs move there."""
        return self._submit(lambda: self._engine.store_rebuilt() if self._engine else None)

    def _submit(self, fn: Callable[[], T]) -> concurrent.futures.Future[T]:
        """Queue ``fn`` on the core's loop. Takes no lock, so a signal handler may call
        it (a handler that waited for a lock its own thread held would never return);
        before start-up the call is kept and run once the loop is there."""
        future: concurrent.futures.Future[T] = concurrent.futures.Future()

        def call() -> None:
            try:
                future.set_result(fn())
            except Exception as e:
                future.set_exception(e)

        loop = self._loop
        if loop is None:
            if self._ended:  # not is_alive(), False too while Thread.start() still runs
                future.set_exception(RuntimeError("the supervisor is not running"))
                return future
            self._early.append(call)  # a deque: appending is atomic
            if self._loop is not None:  # the loop arrived meanwhile: make sure it runs
                self._kick_early()
            return future
        try:
            loop.call_soon_threadsafe(call)
        except RuntimeError:
            future.set_exception(RuntimeError("the supervisor is not running"))
        return future

    def _kick_early(self) -> None:
        loop = self._loop
        if loop is not None:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self._run_early)

    def _run_early(self) -> None:
        """Run every call kept from before start-up, each exactly once."""
        while self._early:
            try:
                call = self._early.popleft()
            except IndexError:
                return
            call()

    def _on(self, name: str, fn: Callable[[Commands, Managed], Reply]) -> \
            concurrent.futures.Future[Reply]:
        return self._submit(lambda: fn(self._cmds, self._cmds.get(name)))

    @property
    def _cmds(self) -> Commands:
        assert self._commands is not None
        return self._commands

    def stop(self, name: str) -> concurrent.futures.Future[Reply]:
        return self._on(name, Commands.stop)

    def stop_all(self, ordered: bool = True,
                 why: Why = Why.OPERATOR) -> concurrent.futures.Future[Reply]:
        """Start every stop sequence, in parallel, in stages where processes depend on
        others (``ordered=False``: all now); ``why`` is journaled. Safe from a signal
        handler and before start-up has finished: nothing not yet started starts."""
        self._shutdown_requested = True
        self._stop_asked.set()
        return self._submit(lambda: self._cmds.stop_all(ordered, why=why))

    def kill(self, name: str) -> concurrent.futures.Future[Reply]:
        return self._on(name, lambda c, m: c.act(m, Action.KILL))

    def kill_all(self) -> concurrent.futures.Future[Reply]:
        """Kill now every process that is stopping (the second ctrl+c)."""
        return self._submit(lambda: self._cmds.each_active(Action.KILL))

    def abandon(self, name: str) -> concurrent.futures.Future[Reply]:
        return self._on(name, lambda c, m: c.act(m, Action.ABANDON))

    def abandon_all(self) -> concurrent.futures.Future[Reply]:
        self._shutdown_requested = True
        self._stop_asked.set()
        return self._submit(lambda: self._cmds.each_active(Action.ABANDON))

    def wait_without_deadline(self, name: str) -> concurrent.futures.Future[Reply]:
        return self._on(name, lambda c, m: c.act(m, Action.WAIT))

    def extend(self, name: str, by: float | None = None,
               who: Who = Who.OPERATOR) -> concurrent.futures.Future[Reply]:
        """Move the current deadline later by ``by`` seconds (default: extend_step)."""
        return self._on(name, lambda c, m: c.extend(m, by, who))

    def restart(self, name: str) -> concurrent.futures.Future[Reply]:
        return self._on(name, Commands.restart)

    def start_process(self, name: str) -> concurrent.futures.Future[Reply]:
        return self._on(name, Commands.start)

    def adopt(self, name: str) -> concurrent.futures.Future[Reply]:
        return self._on(name, Commands.adopt)

    def clear_output(self, name: str) -> concurrent.futures.Future[Reply]:
        return self._on(name, Commands.clear)

    def reload(self, specs: Sequence[ProcessSpec]) -> \
            concurrent.futures.Future[concurrent.futures.Future[Reply]]:
        """Carry out a config read again (see core/reload.py); the inner future answers
        once the removed processes have ended, or after a few seconds."""
        from proctui.core.reload import reload

        return self._submit(lambda: reload(self._engine, specs))  # type: ignore[arg-type]

    def set_interactive(self, interactive: bool) -> concurrent.futures.Future[Reply]:
        self.interactive = interactive
        return self._submit(lambda: self._cmds.set_interactive(interactive))

    def want_usage(self, wanted: bool) -> concurrent.futures.Future[None]:
        """Sample CPU and memory while at least one frontend wants them (each call with
        True counts once, until the same frontend calls with False)."""
        def call() -> None:
            assert self._engine is not None
            self._usage_wanted = max(0, self._usage_wanted + (1 if wanted else -1))
            self._engine.housekeeping.want_usage = self._usage_wanted > 0

        return self._submit(call)

    def notice(self, text: str) -> concurrent.futures.Future[None]:
        """A line of proctui's own, about itself (the journal and headless output)."""
        def call() -> None:
            assert self._engine is not None
            self._engine.notice(None, text)
            self._engine.journal.write(Kind.NOTICE, text=text)

        return self._submit(call)

    def trouble(self, area: str, text: str | None) -> concurrent.futures.Future[None]:
        """Something outside the core keeps proctui from keeping a promise (its own
        output cannot be written), or no longer does (None): said once, held for status.
        Safe from any thread; before start-up it is kept until the core is there."""
        return self._submit(lambda: self._engine.trouble(area, text)
                            if self._engine is not None else None)

    def journal_command(self, name: str | None, **who: object) -> None:
        """A command from the control socket and who sent it, journaled before its effects."""
        self._submit(lambda: self._engine.journal.write(Kind.COMMAND, name, **who)
                     if self._engine is not None else None)

    @property
    def shutting_down(self) -> bool:
        """Someone asked to stop (or abandon) everything."""
        return self._shutdown_requested

    @property
    def shutdown_why(self) -> str | None:
        """Why the shutdown began (the journal's words), once it has."""
        why = self._engine.shutdown_why if self._engine is not None else None
        return None if why is None else why.value

    # -- reading state (any thread) -----------------------------------------------------

    def snapshot(self) -> CoreSnapshot:
        """Everything a frontend may read, frozen (swapped whole after each change)."""
        return self._pub.snapshot

    def views(self) -> list[ProcessView]:
        return list(self._pub.snapshot.views)

    def buffer(self, name: str) -> OutputBuffer:
        return self._buffers[name]

    def changes(self) -> int:
        """A number that moves whenever a snapshot is published or output arrives: a
        frontend with nothing new to draw can tell at the cost of one call. Asking also
        re-arms the listeners (see listen)."""
        self._bell.rearm()
        engine = self._engine
        return self._pub.snapshot.seq + (engine.output_count if engine is not None else 0)

    def listen(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` (on the core's thread; it must only schedule work) when
        something changes, at most once until the next call to changes(): an idle
        frontend needs no timer to notice news."""
        self._bell.listen(callback)

    def all_ended(self) -> bool:
        """No process is running, stopping or waiting to (re)start."""
        if not self._started.is_set():
            return False
        if self._ended:
            return True  # the core is gone (after an emergency stop): nothing to wait for
        if (snap := self._pub.snapshot).all_ended:
            return True
        # An internal error may leave bookkeeping unfinished: over when nothing is live.
        return self.crash is not None and all(
            v.phase in (Phase.ENDED, Phase.HELD) for v in snap.views)

    def outcomes(self) -> list[tuple[str, Outcome]]:
        """Every run's outcome so far, in order, named."""
        return list(self._pub.snapshot.outcomes)

    def final(self) -> list[tuple[str, Outcome | None]]:
        """Each process's last outcome (None: it never started)."""
        return self._pub.snapshot.final()

    def journal(self) -> list[dict[str, object]]:
        """This run's journal so far (for the timeline): copied on the core's thread,
        never read while it grows (the snapshot carries only its tail)."""
        if (engine := self._engine) is None:
            return []
        try:
            return self._submit(lambda: list(engine.journal.entries)).result(timeout=5)
        except Exception:
            return list(self._pub.snapshot.journal_tail)

    def strays(self) -> list[int]:
        """Processes left behind that no run could be proven to own."""
        return list(self._pub.snapshot.strays)

    def exit_status(self) -> int:
        status = self._pub.snapshot.exit_status
        return max(status, 1) if self.crash else status
