"""Dependencies: a process starts only once what it depends on is started, ready or has
exited cleanly, and everything stops in reverse order, in stages: a process gets its stop
signal only once everything that depends on it has ended (or been abandoned)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from enum import Enum

from proctui.config import DependCondition, ProcessSpec
from proctui.config.graph import dependents, stages
from proctui.core.machine import Phase
from proctui.core.outcome import OutcomeKind
from proctui.core.process import Managed


class Met(Enum):
    YES = "yes"
    NOT_YET = "not yet"
    NEVER = "never"


class Deps:
    def __init__(self, specs: Sequence[ProcessSpec], by_name: dict[str, Managed],
                 publish: Callable[[Managed], None],
                 journal: Callable[..., None] = lambda *a, **k: None) -> None:
        self.journal = journal
        self.specs = {s.name: s for s in specs}
        self.by_name = by_name
        self.publish = publish
        self.dependents = {name: names for name, names in dependents(specs).items()
                           if name in self.specs}
        self.stage = stages(specs)
        self.stages = max(self.stage.values(), default=0) if any(
            s.depends_on for s in specs) else 0
        self.changed = asyncio.Event()  # something a waiting process may care about
        self.deferred: list[Managed] = []  # asked to stop, waiting for their dependents

    @property
    def any(self) -> bool:
        return self.stages > 0

    def poke(self) -> None:
        """A process started, became ready or ended: look again."""
        self.changed.set()
        self._release()

    # -- starting in order ------------------------------------------------------------

    def met(self, spec: ProcessSpec, dep: Managed) -> Met:
        condition = spec.condition_for(dep.spec)
        run = dep.run
        if condition is DependCondition.STARTED:
            if run is not None and run.pid is not None:
                return Met.YES
        elif condition is DependCondition.READY:
            if dep.ready_at is not None:
                return Met.YES
        else:
            last = dep.outcomes[-1] if dep.outcomes else None
            if last is not None and last.kind is OutcomeKind.EXITED and last.clean:
                return Met.YES
            if last is not None and dep.done.is_set():
                return Met.NEVER
        if dep.done.is_set():
            return Met.NEVER  # it ended without ever meeting the condition
        return Met.NOT_YET

    async def wait(self, m: Managed, stop_wanted: Callable[[], bool]) -> str | None:
        """Wait until every dependency meets its condition. Returns None to start, or
        why the process must not start."""
        spec = m.spec
        while True:
            waiting, failed = [], []
            for name, _ in spec.depends_on:
                dep = self.by_name[name]
                state = self.met(spec, dep)
                if state is Met.NEVER:
                    failed.append(f"{name} is not {spec.condition_for(dep.spec).value}")
                elif state is Met.NOT_YET:
                    waiting.append(name)
            if failed:
                return f"not started: {'; '.join(failed)} (it ended)"
            if stop_wanted():
                return "not started: stop requested"
            if not waiting:
                m.waiting_for = ()
                return None
            if m.phase is not Phase.WAITING or m.waiting_for != tuple(waiting):
                m.phase, m.waiting_for = Phase.WAITING, tuple(waiting)
                self.publish(m)
                self.journal("waiting", m.name, waits_for=waiting)
            self.changed.clear()
            await self.changed.wait()

    # -- stopping in stages -----------------------------------------------------------

    def live_dependents(self, m: Managed) -> list[str]:
        return [name for name in self.dependents.get(m.spec.name, [])
                if name in self.by_name and not self.by_name[name].done.is_set()]

    def defer(self, m: Managed, stop: Callable[[Managed], object]) -> bool:
        """Hold the stop of ``m`` while something that depends on it still runs; True
        when it was held (``stop`` is called once it is free)."""
        waiting = self.live_dependents(m)
        m.stage, m.stages = self.stage.get(m.spec.name, 0), self.stages
        if not waiting:
            m.stops_after = ()
            return False
        m.stops_after = tuple(waiting)
        m.stop_deferred = stop
        if m not in self.deferred:
            self.deferred.append(m)
        self.publish(m)
        return True

    def _release(self) -> None:
        for m in list(self.deferred):
            waiting = self.live_dependents(m)
            if waiting:
                if tuple(waiting) != m.stops_after:
                    m.stops_after = tuple(waiting)
                    self.publish(m)
                continue
            self.deferred.remove(m)
            m.stops_after = ()
            stop, m.stop_deferred = m.stop_deferred, None
            if stop is not None and m.active:
                stop(m)

    def forget(self) -> None:
        for m in self.deferred:
            m.stops_after, m.stop_deferred = (), None
        self.deferred = []

    def release_all(self) -> list[Managed]:
        """Stop now regardless of order: every held stop goes out."""
        held, self.deferred = self.deferred, []
        for m in held:
            m.stops_after = ()
            stop, m.stop_deferred = m.stop_deferred, None
            if stop is not None and m.active:
                stop(m)
        return held
