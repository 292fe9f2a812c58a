"""The shape of the package: layers that import only downwards, no import circles, no
import of something that is not there, the core and the headless runner without
Textual (checked in a fresh interpreter), and a README that names every module."""

from __future__ import annotations

import subprocess
import sys


def test_core_cli_and_headless_do_not_import_textual():
    code = (
        "import sys\n"
        "import proctui.config, proctui.cli, proctui.frontends.headless\n"
        "import proctui.core.supervisor, proctui.core.engine, proctui.core.store.rundir\n"
        "import proctui.commands, proctui.protocol.decode, proctui.daemon\n"
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


# From the bottom up: a module may import its own layer and those below, never above.
# (The console is a frontend: only the frontends, the daemon and the command line reach it.)
LAYERS = (("proctui.records",), ("proctui.config",),
          ("proctui.core", "proctui.export", "proctui.demo"), ("proctui.commands",),
          ("proctui.protocol",), ("proctui.remote",),
          ("proctui.frontends",), ("proctui.daemon",), ("proctui.cli",), ("proctui.__main__",))


def _layer(module: str) -> int:
    for rank, names in enumerate(LAYERS):
        if any(module == n or module.startswith(n + ".") for n in names):
            return rank
    return -1  # proctui itself (its version): below everything


def _imports() -> dict[str, dict[str, int]]:
    """Every proctui module and the proctui modules it imports, with the line: every
    import, at the top, inside a function (the lazy ones) or under TYPE_CHECKING.
    ``from package import module`` imports that module, not the package."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    paths = {}
    for path in (root / "proctui").rglob("*.py"):
        parts = path.relative_to(root).with_suffix("").parts
        paths[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph: dict[str, dict[str, int]] = {}
    for name, path in paths.items():
        found: dict[str, int] = {}
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found |= {a.name: node.lineno for a in node.names
                          if a.name.startswith("proctui")}
            elif isinstance(node, ast.ImportFrom) and node.module and \
                    node.module.startswith("proctui"):
                for a in node.names:
                    sub = f"{node.module}.{a.name}"
                    found[sub if sub in paths else node.module] = node.lineno
        graph[name] = {d: line for d, line in found.items() if d in paths and d != name}
    return graph


def test_no_module_imports_from_a_layer_above_its_own():
    bad = [f"{name} imports {dep} (line {line})"
           for name, deps in sorted(_imports().items()) for dep, line in sorted(deps.items())
           if _layer(dep) > _layer(name)]
    assert not bad, "\n".join(bad)


def test_every_module_is_in_a_layer():
    assert [m for m in _imports() if _layer(m) < 0] == ["proctui"]


def test_no_import_circle():
    """Not even through a function's import: a circle is two modules that are one."""
    graph = {name: sorted(deps) for name, deps in _imports().items()}
    state: dict[str, int] = {}
    circles: list[str] = []

    def visit(name: str, path: list[str]) -> None:
        state[name] = 1
        for dep in graph[name]:
            if state.get(dep) == 1:
                circles.append(" -> ".join([*path[path.index(dep):], dep]))
            elif dep not in state:
                visit(dep, [*path, dep])
        state[name] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    assert not circles, "import circles:\n" + "\n".join(circles)


def test_every_import_of_ours_names_something_that_exists():
    """A module moved and an import inside a function left behind is found only when
    that function runs (the summary of a hangup once raised ModuleNotFoundError)."""
    import ast
    import importlib
    import importlib.util
    from pathlib import Path

    def exists(module: str) -> bool:
        try:
            return importlib.util.find_spec(module) is not None
        except (ImportError, AttributeError, ValueError):
            return False

    root = Path(__file__).resolve().parents[1]
    bad = []
    for path in sorted((root / "proctui").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 and \
                    node.module.startswith("proctui"):
                if not exists(node.module):
                    bad.append(f"{path.relative_to(root)}:{node.lineno}: {node.module}")
                    continue
                module = importlib.import_module(node.module)
                bad += [f"{path.relative_to(root)}:{node.lineno}: {node.module}.{a.name}"
                        for a in node.names if a.name != "*" and not hasattr(module, a.name)
                        and not exists(f"{node.module}.{a.name}")]
            elif isinstance(node, ast.Import):
                bad += [f"{path.relative_to(root)}:{node.lineno}: {a.name}"
                        for a in node.names if a.name.startswith("proctui")
                        and not exists(a.name)]
    assert not bad, bad


def test_the_readme_layout_names_every_module():
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    layout = (root / "README.md").read_text().split("## Layout", 1)[1]
    missing = [str(p.relative_to(root)) for p in (root / "proctui").rglob("*.py")
               if p.name not in ("__init__.py", "__main__.py")
               and f"`{p.name}`" not in layout]
    assert not missing, f"the README's layout does not name {missing}"
