"""The installed command's entry point (``proctui.cli:main``, and ``python -m proctui``
through it): the garbage collector is never held back while proctui starts (it bought
less than 5 % of the console's first frame: tests/bench/RESULTS.md). What is done to it:
the freeze at exit that spares the interpreter's last walk, and the console's freeze of
what its imports made, before its first frame (proctui/frontends/console/__init__.py).
Tried on the installed program, not on a helper."""

from __future__ import annotations

import os
import subprocess
import tomllib
from pathlib import Path

# Every gc.disable, gc.enable and gc.freeze the program makes, with the functions that
# made it.
WATCH = """\
import gc, os, traceback

def _watch(name, real):
    def call():
        where = [f.name for f in traceback.extract_stack()[:-1]]
        with open(os.environ["PROCTUI_TEST_GC"], "a") as f:
            f.write(name + " " + " ".join(where) + "\\n")
        real()
    return call

gc.disable = _watch("disable", gc.disable)
gc.enable = _watch("enable", gc.enable)
gc.freeze = _watch("freeze", gc.freeze)
"""


def watched(tmp_path: Path) -> tuple[dict[str, str], Path]:
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(WATCH)
    record = tmp_path / "gc.txt"
    return {"PYTHONPATH": str(site), "PROCTUI_TEST_GC": str(record)}, record


def calls(record: Path) -> list[tuple[str, list[str]]]:
    if not record.exists():
        return []
    return [(line.split()[0], line.split()[1:]) for line in record.read_text().splitlines()]


def test_the_collector_runs_throughout_and_is_frozen_at_exit(installed, tmp_path):
    env, record = watched(tmp_path)
    result = subprocess.run([str(installed / "venv/bin/proctui"), "run", "--headless",
                             "--run-dir", str(tmp_path / "run"), "a=echo hello"],
                            capture_output=True, text=True, timeout=60,
                            env={**os.environ, **env})
    assert result.returncode == 0, result.stderr
    assert "hello" in result.stdout
    result = subprocess.run([str(installed / "venv/bin/proctui"), "status", "--run-dir",
                             str(tmp_path / "none")], capture_output=True, text=True,
                            timeout=60, env={**os.environ, **env})
    assert result.returncode != 0  # nothing runs there; it says so
    made = calls(record)
    assert [c for c, _ in made] == ["freeze", "freeze"], made
    assert all("main" in where for _, where in made), made


def test_the_entry_points_go_through_the_cli_package():
    root = Path(__file__).resolve().parents[1]
    project = tomllib.loads((root / "pyproject.toml").read_text())
    assert project["project"]["scripts"]["proctui"] == "proctui.cli:main"
    assert "from proctui.cli import main" in (root / "proctui/__main__.py").read_text()
