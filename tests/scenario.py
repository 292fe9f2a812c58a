"""Lifecycle scenarios as event histories: the real engine (inbox, step function,
world, publication, the command table) over a fake executor and a fake clock, so that a
shutdown of 2,000 processes, a reload or an interrupt ladder runs in milliseconds and
the same way every time (honcho's FakeClock histories are the model).

The fake executor spawns nothing: a spawn gives the next pid; a signal reaches the
process, which ends (or not) as the scenario says it behaves; timers (deadlines,
backoffs, looks) fire when the fake clock is moved past them. Everything the engine
asks for is kept in ``history`` as (time, name, effect)."""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import signal
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from proctui.config import ProcessSpec
from proctui.core.engine import Engine
from proctui.core.life import effects as fx
from proctui.core.life import inputs as i
from proctui.core.life import machine as life
from proctui.core.life.outcome import EndKind, ExitStatus
from proctui.core.life.state import Proc
from proctui.core.os.oslayer import OSLayer
from proctui.core.output.lines import OutputBuffer, Stream
from proctui.core.reply import Done
from proctui.core.snapshot import CoreSnapshot
from proctui.core.view import ProcessView


def spec(name: str, **kw: Any) -> ProcessSpec:
    return ProcessSpec(name=name, argv=("true",), cmd=name, cwd=Path("/"), **kw)


@dataclass
class Behaviour:
    """How a fake process takes a signal: seconds until it ends after the stop signal
    (None: it ignores it), and its exit status then."""

    ends_after: float | None = 0.0
    status: ExitStatus = field(default_factory=lambda: ExitStatus(signal=signal.SIGTERM))
    unkillable: bool = False


class FakeOS(OSLayer):
    def boot_id(self) -> str:
        return "boot"

    def group_alive(self, pgid: int, ours: bool = True) -> bool:
        return False


class _Stub:
    """The executor's tree walk, for what the engine asks of it: nothing."""

    strays: list[int] = []
    want_usage = False

    def schedule(self, delay: float | None = None) -> None:
        pass

    def changed(self) -> None:
        pass

    def close(self) -> None:
        pass


class FakeExecutor:
    def __init__(self, scenario: Scenario, engine: Engine) -> None:
        self.s = scenario
        self.engine = engine
        self.buffers: dict[str, OutputBuffer] = {}
        self.housekeeping = _Stub()
        self.events = None

    def added(self, p: Proc) -> None:
        self.buffers.setdefault(p.name, OutputBuffer(100))

    def walk(self) -> None:
        pass

    said_pending = False
    said_soon: Callable[[], None] = staticmethod(lambda: None)  # type: ignore[assignment]

    def say(self, name: str | None, text: str) -> None:
        self.s.notices.append((self.s.now, name, text))
        if name is not None and name in self.buffers:
            self.buffers[name].append(Stream.PROCTUI, [text])

    def due_deadlines(self, now: float) -> list[tuple[str, object]]:
        return []  # the fake clock fires every timer itself, in order

    said_count = 0

    def flush_said(self, count: int | None = None) -> None:
        pass

    def store_rebuilt(self) -> None:
        pass

    def later(self, delay: float, fn: Callable[..., None], *args: object) -> None:
        self.s._count += 1
        self.s._arm(("later", self.s._count), self.s.now + delay, lambda: fn(*args))

    def close(self, output_path: Callable[[str], str | None]) -> None:
        pass

    def do(self, p: Proc, e: fx.Effect) -> list[object]:
        s = self.s
        s.history.append((s.now, p.name, e))
        name = p.name
        if isinstance(e, fx.Spawn):
            if name in s.fail_to_start:
                return [i.SpawnFailed(e.number, s.fail_to_start[name])]
            s.pids += 1
            s.alive[name] = s.pids
            return [i.Spawned(e.number, s.pids, 1, f"token-{s.pids}", 0.0)]
        if isinstance(e, fx.Signal):
            pid = s.alive.get(name)
            reached = pid is not None
            if reached:
                s.signals.append((s.now, name, e.sig))
                s._react(name, e.number, e.sig)
            return [i.SignalDone(e.number, e.sig, e.reason, reached, s.now,
                                 (pid,) if e.sig == signal.SIGKILL and reached else None)]
        if isinstance(e, fx.ArmDeadline):
            s._arm(("deadline", name), e.at,
                   lambda: s.engine.urgent(name, i.DeadlineReached(e.number)))
        elif isinstance(e, fx.ArmBackoff):
            s._arm(("backoff", name), e.at, lambda: s.post(name, life.BackoffOver()))
        elif isinstance(e, fx.LookGone):
            s._arm(("look", name), s.now + e.delay, lambda: s.post(
                name, i.GroupLooked(e.number, name in s.alive)))
        elif isinstance(e, fx.Conclude):
            pid = s.alive.get(name)
            left = (pid,) if pid is not None and e.end in (
                EndKind.ABANDONED, EndKind.UNKILLABLE) else ()
            end = e.end if left or e.end not in (EndKind.ABANDONED,
                                                 EndKind.UNKILLABLE) else EndKind.GONE
            return [i.Concluded(e.number, end, left, "disk-sleep" if left else "")]
        elif isinstance(e, fx.StopWatching):
            s._cancel(("deadline", name))
            s._cancel(("look", name))
        return []


class Scenario:
    """``Scenario(specs)``: the engine started on them (nothing launched yet: ``start``).
    ``now`` is the fake clock; ``advance(seconds)`` moves it, firing what comes due."""

    def __init__(self, specs: Sequence[ProcessSpec], *, interactive: bool = False,
                 behaviour: dict[str, Behaviour] | None = None,
                 reload_from: Callable[[], Sequence[ProcessSpec]] | None = None) -> None:
        self.now = 1000.0
        self.history: list[tuple[float, str, fx.Effect]] = []
        self.notices: list[tuple[float, str | None, str]] = []
        self.signals: list[tuple[float, str, int]] = []
        self.alive: dict[str, int] = {}
        self.pids = 4000
        self.behaviour = behaviour or {}
        self.fail_to_start: dict[str, str] = {}
        self._timers: list[tuple[float, int, object, Callable[[], None]]] = []
        self._live_timers: dict[object, int] = {}
        self._count = 0
        self.snapshots: list[CoreSnapshot] = []
        self.loop = asyncio.new_event_loop()

        async def make() -> Engine:
            return Engine(specs, os_layer=FakeOS(), run_dir=None, interactive=interactive,
                          events=None, leftover_defaults=None,
                          publish=self.snapshots.append, clock=lambda: self.now,
                          reload_from=reload_from,
                          executor=lambda engine: FakeExecutor(self, engine))

        self.engine = self.loop.run_until_complete(make())

    # -- driving ----------------------------------------------------------------------

    def start(self) -> Scenario:
        self.engine.startup()
        self.settle()
        return self

    def settle(self) -> None:
        """Run what the engine put on its loop (publication, the next slice) until
        nothing is left."""
        for _ in range(100_000):
            self.loop.run_until_complete(asyncio.sleep(0))
            if not self.loop._ready:  # type: ignore[attr-defined]
                return
        raise AssertionError("the engine's loop never settled")

    def post(self, name: str | None, event: object) -> None:
        self.engine.post(name, event)
        self.settle()

    def send(self, request: Any, who: dict[str, object] | None = None) -> Done:
        """``request`` as a door sends it (``who``: a control socket's client)."""
        import concurrent.futures

        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self.engine.command(lambda e: request.check() or request.execute(e), future,
                            who=who)
        self.settle()
        return future.result(timeout=0)

    def advance(self, seconds: float) -> None:
        """Move the clock, firing each timer that comes due, in order, at its time."""
        until = self.now + seconds
        while self._timers and self._timers[0][0] <= until:
            at, count, key, fire = heapq.heappop(self._timers)
            if self._live_timers.get(key) != count:
                continue  # cancelled, or armed again since
            del self._live_timers[key]
            self.now = max(self.now, at)
            fire()
            self.settle()
        self.now = until

    def exits(self, name: str, status: ExitStatus | None = None) -> None:
        """The process ends by itself now."""
        p = self.engine.table.get(name)
        assert p is not None and p.run is not None
        self.alive.pop(name, None)
        self.post(name, i.LeaderExited(p.run.number, status or ExitStatus(code=0), self.now))
        self.advance(0)  # its look at the group, due at once

    # -- what a fake process does -----------------------------------------------------

    def _react(self, name: str, number: int, sig: int) -> None:
        b = self.behaviour.get(name, Behaviour())
        if sig == signal.SIGKILL:
            if b.unkillable:
                return
            self._arm(("end", name), self.now, lambda: self._ended(
                name, number, ExitStatus(signal=signal.SIGKILL)))
        elif sig in (signal.SIGTERM, signal.SIGINT) and b.ends_after is not None:
            self._arm(("end", name), self.now + b.ends_after,
                      lambda: self._ended(name, number, b.status))

    def _ended(self, name: str, number: int, status: ExitStatus) -> None:
        if self.alive.pop(name, None) is not None:
            self.engine.post(name, i.LeaderExited(number, status, self.now))

    def _arm(self, key: object, at: float | None, fire: Callable[[], None]) -> None:
        if at is None:
            self._cancel(key)
            return
        self._count += 1
        self._live_timers[key] = self._count
        heapq.heappush(self._timers, (at, self._count, key, fire))

    def _cancel(self, key: object) -> None:
        self._live_timers.pop(key, None)

    # -- reading ----------------------------------------------------------------------

    @property
    def snapshot(self) -> CoreSnapshot:
        self.engine.publish()
        return self.engine.snapshot

    def view(self, name: str) -> ProcessView:
        v = self.snapshot.view(name)
        assert v is not None, name
        return v

    def effects(self, name: str, kind: type) -> list[tuple[float, Any]]:
        return [(t, e) for t, n, e in self.history if n == name and isinstance(e, kind)]

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.loop.close()


def elapsed(fn: Callable[[], object]) -> float:
    began = time.perf_counter()
    fn()
    return time.perf_counter() - began
