"""What users install: the built wheel in a fresh virtual environment, and the console
started from it on a real pseudo-terminal. (An editable install and Pilot tests once
hid a missing package for a whole release.)"""

from __future__ import annotations

import subprocess
import zipfile
from pathlib import Path

import pytest

from tests.terminal import Pty

# The real console on a pty, the wheel, ssh or hundreds of processes: the second
# CI stage (README: "Tests").
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]


def test_the_wheel_holds_every_module_and_stylesheet(installed):
    (wheel,) = (installed / "wheels").glob("proctui-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    sources = {str(p.relative_to(ROOT)) for p in (ROOT / "proctui").rglob("*.py")
               if "__pycache__" not in p.parts}
    sources |= {f"proctui/styles/{p.name}" for p in (ROOT / "styles").glob("*.tcss")}
    assert sources - names == set(), f"missing from the wheel: {sorted(sources - names)}"


def test_nothing_compiled_on_linux(installed):
    listed = subprocess.run([str(installed / "venv/bin/python"), "-m", "pip", "list"],
                            capture_output=True, text=True, check=True).stdout
    assert "psutil" not in listed.lower(), listed


def test_the_installed_commands_run_outside_the_source_tree(installed, tmp_path):
    proctui = str(installed / "venv/bin/proctui")
    version = subprocess.run([proctui, "--version"], capture_output=True, text=True,
                             cwd=tmp_path, timeout=60)
    assert version.returncode == 0 and "proctui, version" in version.stdout
    run = subprocess.run([proctui, "run", "--headless", "--run-dir", str(tmp_path / "run"),
                          "hello=echo from the wheel"], capture_output=True, text=True,
                         cwd=tmp_path, timeout=60)
    assert run.returncode == 0, run.stderr
    assert "hello   | from the wheel" in run.stdout


def test_the_installed_console_runs_on_a_pseudo_terminal(installed, tmp_path):
    pty = Pty([str(installed / "venv/bin/proctui"), "run", "--run-dir", str(tmp_path / "run"),
               "web=sleep 60"], tmp_path, size=(24, 80), controlling=False)
    try:
        pty.wait_for(b"running")
        assert b"ModuleNotFoundError" not in pty.screen
        pty.press(b"q")
        pty.wait_for(b"web  stopped after")  # the summary's line, after the console closed
        assert pty.proc.wait(timeout=30) == 0
    finally:
        pty.close()
