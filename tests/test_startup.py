"""The installed command holds the garbage collector back while it starts
(proctui/startup.py), and every path that lives on turns it back on: the console at its
first frame, a headless supervisor once its processes are launched, every other command
before it runs. A collector left off would let a long session's cyclic garbage grow
without bound; so each path is tried on the installed program, not on a helper."""

from __future__ import annotations

import os
import subprocess
import tomllib
from pathlib import Path

from tests.screen import Screen

# Every gc.disable and gc.enable the program makes, with the functions that made it.
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


def test_the_console_collects_again_from_its_first_frame(installed, tmp_path):
    env, record = watched(tmp_path)
    screen = Screen([str(installed / "venv/bin/proctui"), "run", "--run-dir",
                     str(tmp_path / "run"), "ticker=echo READY; sleep 100"], tmp_path, 24, 80,
                    env=env)
    try:
        screen.wait_text("READY")
        screen.wait(lambda _lines: any(c == "enable" for c, _ in calls(record)),
                    timeout=20, what="gc.enable while the console runs")
        assert screen.pty.proc.poll() is None
        made = calls(record)
        assert made[0][0] == "disable" and "main" in made[0][1], made
        enabled = next(where for c, where in made if c == "enable")
        # From the first frame, or from the control socket's timer should the frame be late.
        assert "first_frame" in enabled or "serve" in enabled, made
        screen.press(b"q")
        assert screen.finish() == 0
    finally:
        screen.close()


def test_headless_collects_again_once_its_processes_are_launched(installed, tmp_path):
    env, record = watched(tmp_path)
    result = subprocess.run([str(installed / "venv/bin/proctui"), "run", "--headless",
                             "--run-dir", str(tmp_path / "run"), "a=echo hello"],
                            capture_output=True, text=True, timeout=60,
                            env={**os.environ, **env})
    assert result.returncode == 0, result.stderr
    assert "hello" in result.stdout
    made = calls(record)
    assert [c for c, _ in made] == ["disable", "enable"], made
    assert "started" in made[1][1], made


def test_other_commands_collect_before_they_run(installed, tmp_path):
    import os
    env, record = watched(tmp_path)
    result = subprocess.run([str(installed / "venv/bin/proctui"), "status", "--run-dir",
                             str(tmp_path / "none")], capture_output=True, text=True,
                            timeout=60, env={**os.environ, **env})
    assert result.returncode != 0  # nothing runs there; it says so
    made = calls(record)
    assert [c for c, _ in made] == ["disable", "enable"], made
    assert "cli" in made[1][1], made


def test_the_entry_points_go_through_startup():
    root = Path(__file__).resolve().parents[1]
    project = tomllib.loads((root / "pyproject.toml").read_text())
    assert project["project"]["scripts"]["proctui"] == "proctui.startup:main"
    assert "proctui.startup import main" in (root / "proctui/__main__.py").read_text()


def test_resume_is_idempotent_and_leaves_a_collector_it_did_not_stop_alone():
    import gc

    from proctui import startup

    assert gc.isenabled() and not startup.paused()
    startup.resume()  # not paused: nothing to do
    assert gc.isenabled()
    try:
        startup.pause()
        assert not gc.isenabled() and startup.paused()
        startup.resume()
        startup.resume()
        assert gc.isenabled() and not startup.paused()
        gc.disable()
        startup.pause()  # already off, by someone else: not ours to turn back on
        startup.resume()
        assert not gc.isenabled()
    finally:
        gc.enable()
        gc.unfreeze()


def test_asyncio_loads_without_ssl_and_ssl_still_loads_after_it():
    # A fresh interpreter: this one has asyncio loaded already.
    import sys

    code = (
        "import sys\n"
        "from proctui import startup\n"
        "startup.load_asyncio_without_tls()\n"
        "import asyncio, asyncio.sslproto, asyncio.selector_events\n"
        "assert 'ssl' not in sys.modules\n"
        "assert asyncio.base_events.ssl is None and asyncio.sslproto.ssl is None\n"
        "assert asyncio.selector_events.ssl is None\n"
        # The finder stays, inert: each finder after it is still asked (one that removed
        # itself while asked made that import skip the next finder, the builtins' one).
        "before = list(sys.meta_path)\n"
        "assert startup._NoTlsForAsyncio.find_spec('no_such_module') is None\n"
        "assert sys.meta_path == before\n"
        "import importlib\n"
        "name = next(n for n in sorted(sys.builtin_module_names) if n not in sys.modules)\n"
        "importlib.import_module(name)\n"
        "import ssl\n"  # after asyncio: the real module
        "assert ssl.OPENSSL_VERSION\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr


def test_a_headless_run_loads_no_ssl(tmp_path):
    import sys

    result = subprocess.run([sys.executable, "-X", "importtime", "-m", "proctui", "run",
                             "--headless", "--run-dir", str(tmp_path / "run"), "echo hello"],
                            capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "hello" in result.stdout
    # A refused import is listed too (a few microseconds): OpenSSL's module is not.
    loaded = {line.rsplit("|", 1)[-1].strip() for line in result.stderr.splitlines()
              if line.startswith("import time:")}
    assert "asyncio" in loaded and "_ssl" not in loaded
