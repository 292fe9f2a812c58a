"""The dependency graph of a config: unknown names and cycles are config errors, and the
order to start in (dependencies first) and to stop in (dependents first)."""

from __future__ import annotations

from collections.abc import Sequence

from proctui.config.spec import ConfigError, DependCondition, ProcessSpec


def check_dependencies(specs: Sequence[ProcessSpec], source: str) -> None:
    names = {s.name for s in specs}
    by_name = {s.name: s for s in specs}
    for spec in specs:
        for dep, condition in spec.depends_on:
            if dep == spec.name:
                raise ConfigError(source, "a process cannot depend on itself", spec.name,
                                  "depends_on")
            if dep not in names:
                raise ConfigError(source, f"unknown process {dep!r}", spec.name,
                                  "depends_on")
            if condition is DependCondition.READY and by_name[dep].ready is None:
                raise ConfigError(source, f"{dep!r} has no ready check, so it can never be "
                                          "ready; give it one or depend on \"started\"",
                                  spec.name, "depends_on")
        for dep in spec.restart_with:
            if dep == spec.name:  # (it said "unknown process 'a'" of the process itself)
                raise ConfigError(source, "a process cannot restart with itself", spec.name,
                                  "restart_with")
            if dep not in names:
                raise ConfigError(source, f"unknown process {dep!r}", spec.name,
                                  "restart_with")
    cycle = find_cycle(specs)
    if cycle:
        raise ConfigError(source, "dependency cycle: " + " -> ".join(cycle), cycle[0],
                          "depends_on")


def find_cycle(specs: Sequence[ProcessSpec]) -> list[str]:
    """A cycle as a closed path of names (a -> b -> a), or []. Iterative: a long chain
    of dependencies must not exhaust the recursion limit."""
    edges = {s.name: [d for d, _ in s.depends_on] for s in specs}
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    for root in edges:
        if root in state:
            continue
        path: list[str] = [root]
        todo: list[list[str]] = [list(edges.get(root, []))]
        state[root] = 1
        while todo:
            if not todo[-1]:
                state[path.pop()] = 2
                todo.pop()
                continue
            dep = todo[-1].pop()
            if state.get(dep) == 1:
                return [*path[path.index(dep):], dep]
            if dep not in state:
                state[dep] = 1
                path.append(dep)
                todo.append(list(edges.get(dep, [])))
    return []


def dependents(specs: Sequence[ProcessSpec]) -> dict[str, list[str]]:
    """For each process, the processes that depend on it."""
    out: dict[str, list[str]] = {s.name: [] for s in specs}
    for spec in specs:
        for dep, _ in spec.depends_on:
            out.setdefault(dep, []).append(spec.name)
    return out


def stages(specs: Sequence[ProcessSpec]) -> dict[str, int]:
    """The shutdown stage of each process, from 1: a process stops in the stage after the
    last of its dependents. (The graph has no cycles: check_dependencies ran.)"""
    deps_of = dependents(specs)
    memo: dict[str, int] = {}
    for spec in specs:
        stack = [spec.name]
        while stack:
            name = stack[-1]
            pending = [d for d in deps_of.get(name, []) if d not in memo]
            if pending:
                stack.extend(pending)
                continue
            stack.pop()
            memo[name] = 1 + max((memo[d] for d in deps_of.get(name, [])), default=0)
    return {s.name: memo[s.name] for s in specs}
