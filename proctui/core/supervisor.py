"""The supervisor: the core on its own asyncio loop, in its own thread, and the three
things a frontend may do with it: read the latest ``snapshot()``, ``send()`` a command
(any request of the command table; its reply comes as a future), and read the processes'
output (``output``). A frontend that stalls cannot delay a deadline: the deadlines are
timers on this loop, and nothing here waits for a reader."""

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
from dataclasses import replace
from typing import Any, Protocol

from proctui.config import ProcessSpec
from proctui.core.engine import Engine
from proctui.core.life import world
from proctui.core.life.stages import Why
from proctui.core.os.oslayer import OSLayer, raise_fd_limit
from proctui.core.output.events import EventQueue
from proctui.core.output.lines import OutputBuffer
from proctui.core.output.reader import OutputReader
from proctui.core.reply import Done, Fault, failed
from proctui.core.snapshot import CoreSnapshot
from proctui.core.store.rundir import RunDir

SWITCH_INTERVAL = 0.001  # seconds


class Executable(Protocol):
    """A request of the command table, as the core sees it."""

    journaled: bool

    def execute(self, engine: Engine) -> object: ...


class Supervisor:
    def __init__(self, specs: Sequence[ProcessSpec], *, run_dir: RunDir | None = None,
                 os_layer: OSLayer | None = None, interactive: bool = True,
                 events: EventQueue | None = None,
                 leftover_defaults: ProcessSpec | None = None,
                 reload_from: Callable[[], Sequence[ProcessSpec]] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.specs = tuple(specs)
        self.run_dir = run_dir
        self.os = os_layer or OSLayer()
        self.interactive = interactive
        self.events = events
        self.leftover_defaults = leftover_defaults
        self.reload_from = reload_from
        self.clock = clock
        self._snapshot = CoreSnapshot()
        self._buffers: dict[str, OutputBuffer] = {}
        self._output_count = 0
        self.output = OutputReader(self._buffers, self._news)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._engine: Engine | None = None
        self._thread: threading.Thread | None = None
        self._early: deque[Callable[[], None]] = deque()
        self._started = threading.Event()  # start-up done: every process was launched
        self._ended = False  # the core's thread has run its course (not: not started yet)
        self._closing: asyncio.Event | None = None

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
            self._crash(f"{type(e).__name__}: {e}", e)
            self._emergency_stop()
            # The loop is gone: the last snapshot says so, and that nothing is left to
            # wait for (what the emergency stop could not end is in the crash log).
            self._snapshot = replace(self._snapshot, all_ended=True,
                                     crash=self._snapshot.crash or f"{type(e).__name__}: {e}")
            self.output.bell.ring()
        finally:
            self._ended = True
            self._started.set()
            with contextlib.suppress(Exception):
                loop.close()

    async def _main(self, loop: asyncio.AbstractEventLoop) -> None:
        self._closing = asyncio.Event()
        engine = Engine(self.specs, os_layer=self.os, run_dir=self.run_dir,
                        interactive=self.interactive, events=self.events,
                        leftover_defaults=self.leftover_defaults, publish=self._published,
                        clock=self.clock, reload_from=self.reload_from)
        self._engine = engine
        engine.poked = self._poked
        engine.on_launched = self._started.set
        self._buffers.update(engine.executor.buffers)
        engine.executor.buffers = self._buffers  # one dict: readers see every process
        self._loop = loop
        # What came before the loop (a ctrl+c while starting) is taken first: a stop
        # asked for before anything launched lets nothing launch.
        self._run_early()
        try:
            engine.startup()
        except BaseException:
            self._started.set()
            raise
        await self._closing.wait()
        engine.close()
        await asyncio.sleep(0)

    def close(self, timeout: float = 5.0) -> None:
        """End the core thread. Processes still running are left as they are: call this
        once everything has ended, or after abandoning what is left."""
        loop, closing = self._loop, self._closing
        if loop is not None and closing is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(closing.set)
        if self._thread is not None:
            self._thread.join(timeout)

    # -- the three doors --------------------------------------------------------------

    def snapshot(self) -> CoreSnapshot:
        """Everything a frontend may read, frozen (swapped whole after each drain)."""
        return self._snapshot

    def send(self, request: Any, who: dict[str, object] | None = None) -> \
            concurrent.futures.Future[Any]:
        """Carry out a request of the command table on the core's loop; its reply comes
        as the future's result once the snapshot that shows its effect is out. Takes no
        lock, so a signal handler may call it; before start-up it is kept and taken
        first. ``who``: who sent it (the control socket's client), journaled first."""
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        journal = (request, who) if who is not None and request.journaled else None

        def call() -> None:
            engine = self._engine
            if engine is None:
                future.set_result(failed(Fault.GONE, "the supervisor is not running"))
                return
            # Every door checks its values, not only the control socket's decoder.
            engine.command(lambda e: request.check() or request.execute(e), future, journal,
                           who)

        self._call(call, future)
        return future

    def _call(self, fn: Callable[[], None], future: concurrent.futures.Future[Any]) -> None:
        loop = self._loop
        if loop is None:
            if self._ended:  # not is_alive(), False too while Thread.start() still runs
                future.set_result(failed(Fault.GONE, "the supervisor is not running"))
                return
            self._early.append(fn)  # a deque: appending is atomic
            if self._loop is not None:  # the loop arrived meanwhile: make sure it runs
                self._kick_early()
            return
        try:
            loop.call_soon_threadsafe(fn)
        except RuntimeError:
            future.set_result(failed(Fault.GONE, "the supervisor is not running"))

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

    # -- on the core's thread ---------------------------------------------------------

    def _published(self, snapshot: CoreSnapshot) -> None:
        self._snapshot = snapshot
        self.output.bell.ring()

    def _poked(self) -> None:
        self._output_count += 1
        self.output.bell.ring()

    def _news(self) -> int:
        return self._snapshot.seq + self._output_count

    def _on_loop_error(self, loop: asyncio.AbstractEventLoop,
                       context: dict[str, object]) -> None:
        """A bug in the core: say so, and stop everything per policy with nobody asked."""
        error = context.get("exception")
        text = f"{type(error).__name__}: {error}" if isinstance(error, BaseException) else \
            str(context.get("message"))
        engine = self._engine
        first = engine is None or engine.world.crash is None
        self._crash(text, error if isinstance(error, BaseException) else None)
        if first and engine is not None:
            with contextlib.suppress(Exception):
                engine.notice(f"internal error: {text}; stopping everything")
                engine.post(None, world.SetInteractive(False))
                engine.post(None, world.StopAll(Why.INTERNAL_ERROR))

    def _crash(self, text: str, error: BaseException | None) -> None:
        engine = self._engine
        if engine is not None:
            with contextlib.suppress(Exception):
                engine.post(None, world.Crashed(text))
        if error is not None:
            from proctui.core.emergency import crash_log

            trace = "".join(traceback.format_exception(error))
            crash_log(self.run_dir, f"--- {time.ctime()} pid {os.getpid()}\n{trace}")

    def _emergency_stop(self) -> None:
        """The loop is gone: stop what is still running without it, per policy, bounded
        (the stop machine decides; see emergency.py)."""
        from proctui.core.emergency import crash_log, emergency_stop

        engine = self._engine
        if engine is None:
            return
        live = [(p.run.pgid, p.spec) for p in engine.table.all() if p.run is not None
                and p.run.outcome is None and p.run.pgid is not None and not p.run.leftover]
        said = emergency_stop(live, self.os)
        if said:
            crash_log(self.run_dir, "".join(f"emergency stop: {line}\n" for line in said))


def answered(reply: Done) -> concurrent.futures.Future[Done]:
    future: concurrent.futures.Future[Done] = concurrent.futures.Future()
    future.set_result(reply)
    return future
