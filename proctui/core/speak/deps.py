"""Dependencies: a process starts only once what it depends on is started, ready or has
exited cleanly, and everything stops in reverse order, in stages: a process gets its stop
signal only once everything that depends on it has ended (or been abandoned).

This only looks; the life machine decides (``DepsLooked``, ``Shutdown(after=...)``,
``DependentsLeft``), and the engine asks again whenever something changed (``poke``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from enum import Enum

from proctui.config import DependCondition, ProcessSpec
from proctui.config.graph import dependents, stages
from proctui.core.life.outcome import OutcomeKind
from proctui.core.process import Managed


class Met(Enum):
    YES = "yes"
    NOT_YET = "not yet"
    NEVER = "never"


class Deps:
    def __init__(self, specs: Sequence[ProcessSpec], by_name: dict[str, Managed],
                 on_change: Callable[[], None] = lambda: None) -> None:
        self.specs = {s.name: s for s in specs}
        self.by_name = by_name
        self.on_change = on_change
        self.dependents = {name: names for name, names in dependents(specs).items()
                           if name in self.specs}
        self.stage = stages(specs)
        self.stages = max(self.stage.values(), default=0) if any(
            s.depends_on for s in specs) else 0

    @property
    def any(self) -> bool:
        return self.stages > 0

    def poke(self) -> None:
        """A process started, became ready or ended: look again."""
        self.on_change()

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
        if dep.over:
            return Met.NEVER  # it ended without ever meeting the condition
        return Met.NOT_YET

    def look(self, m: Managed) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """What ``m`` still waits for, and what it never will get."""
        spec = m.spec
        waiting, failed = [], []
        for name, _ in spec.depends_on:
            dep = self.by_name[name]
            state = self.met(spec, dep)
            if state is Met.NEVER:
                failed.append(f"{name} is not {spec.condition_for(dep.spec).value}")
            elif state is Met.NOT_YET:
                waiting.append(name)
        return tuple(waiting), tuple(failed)

    # -- stopping in stages -----------------------------------------------------------

    def live_dependents(self, m: Managed) -> tuple[str, ...]:
        return tuple(name for name in self.dependents.get(m.spec.name, [])
                     if name in self.by_name and not self.by_name[name].over)
