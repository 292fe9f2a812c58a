"""One owner of a process's state, held over the source:

- a process's state (``Proc``, its run's ``RunState``) is made and changed only by the
  step function's module (``proctui/core/life/step.py``): nothing else constructs one
  or ``replace``s one, and nothing anywhere assigns into one;
- nothing outside the core (the frontends, the control socket's server, the detached
  supervisor, the command line) does anything with a core but read its snapshot, send
  it a request of the command table, and read the processes' output; nor imports the
  core's inside (its engine, executor, step function, state or world).

Read from the modules' syntax (ast), so that a new module is held to it without a line
here."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "proctui"
STATE_TYPES = {"Proc", "RunState"}
# Facts (a process left outside its group, a leftover's PID file and verdict) are made
# by whoever finds them and handed to the step function in an event: its to keep.
FACT_TYPES = {"LeftoverFacts", "Escapee"}
THE_STEP = ROOT / "core" / "life" / "step.py"
# The decorator every record is made with: its shared __init__ sets a new record's fields
# (as the standard decorator's compiled one does), which is making it, not changing it.
RECORDS = ROOT / "records.py"
WHERE_DEFINED = ROOT / "core" / "life" / "state.py"
# What a frontend may do with a core: its three doors, and a local core's own life.
DOORS = {"snapshot", "send", "output", "start", "started", "close"}
CORE_NAMES = {"core", "sup", "supervisor"}
INSIDE = ("proctui.core.engine", "proctui.core.executor", "proctui.core.life.step",
          "proctui.core.life.state", "proctui.core.life.world")


def _modules(*under: str) -> list[Path]:
    return sorted(p for part in under for p in (ROOT / part).rglob("*.py"))


def _annotated(tree: ast.AST) -> set[str]:
    """Names annotated (or assigned from a call) as one of the state types."""
    names: set[str] = set()
    for node in ast.walk(tree):
        ann = getattr(node, "annotation", None)
        target = getattr(node, "arg", None) or (
            node.target.id if isinstance(node, ast.AnnAssign) and
            isinstance(node.target, ast.Name) else None)
        if ann is not None and target and any(
                isinstance(n, ast.Name) and n.id in STATE_TYPES | FACT_TYPES
                for n in ast.walk(ann)):
            names.add(target)
    return names


@pytest.mark.slow
def test_only_the_step_function_makes_or_changes_a_process_s_state() -> None:
    found = []
    for path in _modules("."):
        tree = ast.parse(path.read_text(), str(path))
        state_names = _annotated(tree) | {"p", "run"}
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                func = node.func
                called = func.id if isinstance(func, ast.Name) else \
                    func.attr if isinstance(func, ast.Attribute) else ""
                if path not in (THE_STEP, WHERE_DEFINED) and called in STATE_TYPES:
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {called}(...)")
                if called == "replace" and node.args and path != THE_STEP and \
                        isinstance(node.args[0], ast.Name) and \
                        node.args[0].id in state_names and _replaces_state(path, node):
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}: replace("
                                 f"{node.args[0].id}, ...)")
                if called == "__setattr__" and isinstance(func, ast.Attribute) and \
                        isinstance(func.value, ast.Name) and func.value.id == "object" and \
                        path != RECORDS:
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}: "
                                 "object.__setattr__")
            if isinstance(node, ast.Assign | ast.AugAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    if isinstance(target, ast.Attribute) and \
                            isinstance(target.value, ast.Name) and \
                            target.value.id in _annotated(tree):
                        found.append(f"{path.relative_to(ROOT)}:{node.lineno}: "
                                     f"{target.value.id}.{target.attr} = ...")
    assert not found, "a process's state changed outside the step function:\n" + \
        "\n".join(found)


def _replaces_state(path: Path, node: ast.Call) -> bool:
    """A ``replace`` in a module that imports a state type: of one of them, as far as
    the syntax tells (other dataclasses are replaced everywhere, rightly)."""
    text = path.read_text()
    return any(f"import {t}" in text or f" {t}," in text or f" {t}\n" in text
               for t in ("Proc", "RunState"))


def test_outside_the_core_a_core_is_read_and_told_only_through_its_three_doors() -> None:
    found = []
    for path in _modules("frontends", "remote", "daemon", "cli", "protocol"):
        if not path.exists():
            continue
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and \
                    node.module.startswith(INSIDE):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: imports "
                             f"{node.module}")
            if isinstance(node, ast.Attribute) and _is_core(node.value) and \
                    node.attr not in DOORS:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: "
                             f"{ast.unparse(node)}")
    assert not found, "a core used other than through snapshot(), send() and output:\n" + \
        "\n".join(found)


def _is_core(node: ast.expr) -> bool:
    """``core``, ``sup``, ``self.core``, ``self.sup``, ``app.core``..."""
    if isinstance(node, ast.Name):
        return node.id in CORE_NAMES
    return isinstance(node, ast.Attribute) and node.attr in CORE_NAMES


def test_the_checks_above_can_fail() -> None:
    """Each check finds what it is meant to find (a check that cannot fail proves
    nothing)."""
    bad = ast.parse("def f(core):\n    core.views()\n")
    assert any(isinstance(n, ast.Attribute) and _is_core(n.value) and n.attr not in DOORS
               for n in ast.walk(bad))
    made = ast.parse("def f(p: Proc) -> None:\n    p.run = None\n")
    assert "p" in _annotated(made)
