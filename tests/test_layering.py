"""The core and the headless runner never import Textual (checked in a fresh interpreter)."""

from __future__ import annotations

import subprocess
import sys


def test_core_cli_and_headless_do_not_import_textual():
    code = (
        "import sys\n"
        "import proctui.config, proctui.cli, proctui.frontends.headless\n"
        "import proctui.core.supervisor, proctui.core.run, proctui.core.store.rundir\n"
        "bad = sorted(m for m in sys.modules if m == 'textual' or m.startswith('textual.'))\n"
        "print(bad)\n"
        "sys.exit(1 if bad else 0)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


def test_version_does_not_import_textual():
    code = (
        "import sys, runpy\n"
        "sys.argv = ['proctui', '--version']\n"
        "try:\n"
        "    runpy.run_module('proctui', run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        "assert 'textual' not in sys.modules, 'textual imported'\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    assert "proctui, version" in result.stdout


def _imports() -> dict[str, set[str]]:
    """Every proctui module and the proctui modules it imports at its top level (imports
    inside functions are the deliberate lazy ones: Textual only when the console opens)."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    graph: dict[str, set[str]] = {}
    for path in (root / "proctui").rglob("*.py"):
        parts = path.relative_to(root).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found: set[str] = set()
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.Import):
                found |= {a.name for a in node.names if a.name.startswith("proctui")}
            elif isinstance(node, ast.ImportFrom) and node.module and \
                    node.module.startswith("proctui"):
                found.add(node.module)
                found |= {f"{node.module}.{a.name}" for a in node.names}
        graph[name] = found
    return {name: {d for d in deps if d in graph and d != name} for name, deps in graph.items()}


def test_the_core_never_imports_what_stands_above_it():
    above = ("proctui.frontends", "proctui.remote", "proctui.protocol", "proctui.cli",
             "proctui.export", "proctui.demo")
    for name, deps in _imports().items():
        if name.startswith("proctui.core") or name.startswith("proctui.config"):
            bad = sorted(d for d in deps if d.startswith(above))
            assert not bad, f"{name} imports {bad}"


def test_no_import_circle():
    graph = _imports()
    state: dict[str, int] = {}

    def visit(name: str, path: list[str]) -> None:
        state[name] = 1
        for dep in sorted(graph[name]):
            if state.get(dep) == 1:
                cycle = [*path[path.index(dep):], dep] if dep in path else [name, dep]
                raise AssertionError("import circle: " + " -> ".join(cycle))
            if dep not in state:
                visit(dep, [*path, dep])
        state[name] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])


def test_the_readme_layout_names_every_module():
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    layout = (root / "README.md").read_text().split("## Layout", 1)[1]
    missing = [str(p.relative_to(root)) for p in (root / "proctui").rglob("*.py")
               if p.name not in ("__init__.py", "__main__.py")
               and f"`{p.name}`" not in layout]
    assert not missing, f"the README's layout does not name {missing}"
