"""silence_warning: a running process that printed nothing for that long is marked silent
(view, console row, status text and JSON), and the mark goes at its next line."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from proctui.commands.stop import Stop
from proctui.config import ConfigError, load_toml
from proctui.frontends.status import detail, process_json
from proctui.protocol.wire import view_from_dict, view_to_dict
from tests.conftest import pyspec, wait_until

# Prints once, then nothing until the file named in argv appears.
ONCE = (
    "import os,sys,time\n"
    "print('hello', flush=True)\n"
    "while not os.path.exists(sys.argv[1]): time.sleep(0.05)\n"
    "print('again', flush=True)\n"
    "while True: time.sleep(0.05)\n"
)


def once(name: str, trigger: Path, **kw: object):
    s = pyspec(name, ONCE, **kw)
    from dataclasses import replace

    return replace(s, argv=(*s.argv, str(trigger)))


@pytest.mark.slow
def test_a_quiet_process_is_marked_and_the_next_line_clears_it(harness, tmp_path):
    trigger = tmp_path / "speak"
    h = harness([once("quiet", trigger, silence_warning=1.0),
                 once("loud", tmp_path / "never", silence_warning=60.0)])
    h.wait_output("quiet", "hello")
    printed_at = time.monotonic()
    view = wait_until(lambda: (v := h.view("quiet")).silent_since is not None and v, 15,
                      "the silent mark")
    assert view.silent_since == pytest.approx(printed_at, abs=1.0)
    assert time.monotonic() - view.silent_since >= 1.0
    now = time.monotonic()
    assert " · silent " in detail(view, now), detail(view, now)
    js = process_json(view, now)
    assert js["silent_for_s"] >= 1.0
    assert view_from_dict(view_to_dict(view)).silent_since == view.silent_since
    h.wait_notice("quiet", "silent: no output for 1.0s (silence_warning)")
    assert h.view("loud").silent_since is None
    assert process_json(h.view("loud"), now)["silent_for_s"] is None
    trigger.write_text("")
    h.wait_output("quiet", "again")
    # At once, with the line: not at the next walk of the tree (a second or more away).
    wait_until(lambda: h.view("quiet").silent_since is None, 0.5, "the mark cleared")
    assert "silent" not in detail(h.view("quiet"), time.monotonic())


def test_stopping_clears_the_mark(harness, tmp_path):
    h = harness([once("quiet", tmp_path / "never", silence_warning=0.5, stop_timeout=0.5)])
    wait_until(lambda: h.view("quiet").silent_since is not None, 15, "the silent mark")
    h.sup.send(Stop("quiet"))
    h.outcome("quiet")
    assert h.view("quiet").silent_since is None


@pytest.mark.parametrize(("value", "seconds"), [('"5m"', 300.0), ('"1h30m"', 5400.0),
                                                ("90", 90.0), ('"2.5s"', 2.5)])
def test_durations(tmp_path, value, seconds):
    path = tmp_path / "proctui.toml"
    path.write_text(f'[defaults]\nsilence_warning = {value}\n[processes.a]\ncmd = "x"\n')
    assert load_toml(path).processes[0].silence_warning == seconds


@pytest.mark.parametrize("value", ['"5 minutes"', '"0s"', "0", "-1", "true", '"nan"'])
def test_bad_durations_are_one_line(tmp_path, value):
    path = tmp_path / "proctui.toml"
    path.write_text(f'[processes.a]\ncmd = "x"\nsilence_warning = {value}\n')
    with pytest.raises(ConfigError) as info:
        load_toml(path)
    assert str(info.value).startswith(f"{path}: process 'a': key 'silence_warning': expected"
                                      ), str(info.value)


@pytest.mark.slow
async def test_the_console_row_says_silent(tmp_path):
    from tests.test_console import console, until

    spec = once("quiet", tmp_path / "never", silence_warning=1.0)
    async with console([spec]) as (app, pilot, _sup):
        await until(pilot, lambda: "silent" in _row(app), timeout=15, what="silent in the row")
        assert re.search(r"up \d+s · silent \d+s", _row(app)), _row(app)


def _row(app) -> str:
    from tests.test_console import screen

    return next((line for line in screen(app).splitlines() if "quiet" in line), "")


def test_check_prints_it(tmp_path):
    import subprocess
    import sys

    path = tmp_path / "proctui.toml"
    path.write_text('[processes.a]\ncmd = "x"\nsilence_warning = "5m"\n')
    result = subprocess.run([sys.executable, "-m", "proctui", "check", "-f", str(path)],
                            capture_output=True, text=True, timeout=60)
    assert "  silence        marked silent after 300s without output\n" in result.stdout
