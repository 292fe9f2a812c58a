"""What users install: the built wheel in a fresh virtual environment, and the console
started from it on a real pseudo-terminal. (An editable install and Pilot tests once
hid a missing package for a whole release.)"""

from __future__ import annotations

import contextlib
import fcntl
import os
import select
import struct
import subprocess
import sys
import termios
import time
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """A fresh venv with the wheel built from this tree installed (not editable)."""
    where = tmp_path_factory.mktemp("install")
    wheels = where / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w",
                    str(wheels), str(ROOT)], check=True, timeout=300, cwd=where)
    (wheel,) = wheels.glob("proctui-*.whl")
    subprocess.run([sys.executable, "-m", "venv", str(where / "venv")], check=True,
                   timeout=120)
    subprocess.run([str(where / "venv/bin/python"), "-m", "pip", "install", "--quiet",
                    str(wheel)], check=True, timeout=600, cwd=where)
    return where


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
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    proc = subprocess.Popen(
        [str(installed / "venv/bin/proctui"), "run", "--run-dir", str(tmp_path / "run"),
         "web=sleep 60"], stdin=slave, stdout=slave, stderr=slave, cwd=tmp_path,
        env={**os.environ, "TERM": "xterm"}, start_new_session=True)
    os.close(slave)
    screen = b""

    def read_until(marker: bytes, timeout: float = 30) -> None:
        nonlocal screen
        deadline = time.monotonic() + timeout
        while marker not in screen and time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.1)
            if ready:
                with contextlib.suppress(OSError):
                    screen += os.read(master, 65536)
        assert marker in screen, f"no {marker!r} on screen: {screen[-600:]!r}"

    try:
        read_until(b"running")
        assert b"ModuleNotFoundError" not in screen
        os.write(master, b"q")
        read_until(b"web  stopped after")  # the summary's line, after the console closed
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
