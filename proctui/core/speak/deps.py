"""Dependencies: a process starts only once what it depends on is started, ready or has
exited cleanly, and everything stops in reverse order, in stages: a process gets its stop
signal only once everything that depends on it has ended (or been abandoned).

This only looks, at the processes as the table holds them; the life machine decides
(``DepsLooked``, ``Shutdown(after=...)``, ``DependentsLeft``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from enum import Enum

from proctui.config import DependCondition, ProcessSpec
from proctui.config.graph import dependents, stages
from proctui.core.life.outcome import OutcomeKind
from proctui.core.life.state import Proc

Get = Callable[[str], Proc | None]


class Met(Enum):
    YES = "yes"
    NOT_YET = "not yet"
    NEVER = "never"


class Deps:
    def __init__(self, specs: Sequence[ProcessSpec]) -> None:
        self.specs = {s.name: s for s in specs}
        self.dependents = {name: names for name, names in dependents(specs).items()
                           if name in self.specs}
        self.stage = stages(specs)
        self.stages = max(self.stage.values(), default=0) if any(
            s.depends_on for s in specs) else 0

    @property
    def any(self) -> bool:
        return self.stages > 0

    # -- starting in order ------------------------------------------------------------

    @staticmethod
    def met(spec: ProcessSpec, dep: Proc) -> Met:
        condition = spec.condition_for(dep.spec)
        run = dep.run
        if condition is DependCondition.STARTED:
            if run is not None and run.pid is not None:
                return Met.YES
        elif condition is DependCondition.READY:
            if run is not None and run.ready_at is not None:
                return Met.YES
        else:
            last = dep.last
            if last is not None and last.kind is OutcomeKind.EXITED and last.clean:
                return Met.YES
        if dep.over:
            return Met.NEVER  # it ended without ever meeting the condition
        return Met.NOT_YET

    def look(self, p: Proc, get: Get) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """What ``p`` still waits for, and what it never will get."""
        spec = p.spec
        waiting, failed = [], []
        for name, _ in spec.depends_on:
            dep = get(name)
            if dep is None:
                failed.append(f"{name} is not in the config any more")
                continue
            state = self.met(spec, dep)
            if state is Met.NEVER:
                # How it ended: "db is not started" left the operator to find out why.
                failed.append(_never_met(name, dep, spec.condition_for(dep.spec).value))
            elif state is Met.NOT_YET:
                waiting.append(name)
        return tuple(waiting), tuple(failed)

    # -- stopping in stages -----------------------------------------------------------

    def live_dependents(self, p: Proc, get: Get) -> tuple[str, ...]:
        out = []
        for name in self.dependents.get(p.spec.name, []):
            dep = get(name)
            if dep is not None and not dep.over:
                out.append(name)
        return tuple(out)


def _never_met(name: str, dep: Proc, condition: str) -> str:
    """Why ``dep`` will never be ``condition``, in the words of its own end: "db failed
    to start: ...", "db ended before it was ready: exited: exit code 3"."""
    last = dep.last
    if last is not None and last.kind is OutcomeKind.FAILED_TO_START:
        return f"{name} {last.text}"
    if last is not None:
        return f"{name} ended before it was {condition}: {last.text}"
    why = dep.life.not_started
    return f"{name} never started" + (f": {why}" if why else "")
