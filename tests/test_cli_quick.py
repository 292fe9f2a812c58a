"""run, up and demo are read without click when their words are plain (cli_quick): the
quick reader must give exactly what click gives, or leave the words to click."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import click
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from proctui import cli_quick
from proctui.cli import cli
from tests.conftest import PY

HERE = Path(__file__).resolve().parent


def _odd_paths() -> list[str]:
    """Paths click looks at in its own way: a FIFO, links to a file, a directory and
    nothing, a device."""
    import atexit
    import shutil
    import tempfile

    where = Path(tempfile.mkdtemp(prefix="proctui-quick-"))
    atexit.register(shutil.rmtree, where, ignore_errors=True)
    os.mkfifo(where / "fifo")
    (where / "to-file").symlink_to(__file__)
    (where / "to-dir").symlink_to(HERE)
    (where / "broken").symlink_to(where / "nothing")
    return [str(where / n) for n in ("fifo", "to-file", "to-dir", "broken")] + ["/dev/null"]


def by_click(argv: list[str]) -> dict[str, object] | None:
    """The parameters click hands the command, or None when click refuses the words or
    answers them itself (help)."""
    try:
        group = cli.make_context("proctui", list(argv))
        command = cli.get_command(group, argv[0])
        assert command is not None
        with command.make_context(argv[0], list(argv[1:]), parent=group) as ctx:
            return dict(ctx.params)
    except (click.ClickException, click.exceptions.Exit):
        return None


def agree(argv: list[str]) -> dict[str, object] | None:
    reading = cli_quick.read(argv)
    if reading is None:
        return None
    assert reading.command == argv[0]
    assert reading.params == by_click(argv), argv
    return reading.params


def test_plain_words_are_read_as_click_reads_them(tmp_path):
    procfile = tmp_path / "Procfile"
    procfile.write_text("a: true\n")
    run_dir = tmp_path / "rd"
    for argv in (
        ["run", "true"],
        ["run", "--headless", "a=echo hi", "b=seq 1 3"],
        ["run", "-f", str(procfile), "--run-dir", str(run_dir)],
        ["run", f"--file={procfile}", f"--run-dir={tmp_path}", "--headless"],
        ["run", "x=sleep 1", "--stop-timeout", "1h30m", "--kill-timeout=0",
         "--on-timeout", "abandon", "--stop-signal", "INT", "--stop-after", "2.5",
         "--refresh", "0.5", "--on-hangup", "detach", "--detach"],
        ["run", "--", "--not-an-option", "-f"],
        ["up", "-f", str(procfile)],
        ["demo"],
        ["demo", "--refresh", "60", "--headless", "--print-config"],
    ):
        assert agree(argv) is not None, argv


@pytest.mark.parametrize("argv", [
    ["run", "--help"], ["run", "-h"], ["run", "--bogus"], ["run", "-x"], ["run", "-"],
    ["run", "--headless=yes"], ["run", "--stop-timeout"], ["run", "--stop-timeout", "-1"],
    ["run", "--stop-timeout", "x"], ["run", "--stop-timeout", "101d"],
    ["run", "--refresh", "0.4"], ["run", "--refresh", "nan"], ["run", "--refresh", "1e1"],
    ["run", "--on-timeout", "KILL"], ["run", "--headless", "--headless"],
    ["run", "-fProcfile"], ["run", "-f=Procfile"], ["run", "--file", ""],
    ["up", "--detach"], ["demo", "true"], ["demo", "-f", "x"], ["status"], ["--version"],
    ["run", "--run-dir", __file__],
])
def test_what_it_is_not_sure_of_goes_to_click(argv):
    assert cli_quick.read(argv) is None


WORDS = st.sampled_from([
    "run", "up", "demo", "--", "-", "-f", "-h", "--help", "-x", "--bogus", "--file",
    "--headless", "--detach", "--print-config", "--stop-timeout", "--kill-timeout",
    "--on-timeout", "--stop-signal", "--stop-after", "--refresh", "--run-dir", "--on-hangup",
    "--stop-timeout=5", "--headless=1", "--refresh=10", "--on-timeout=kill", "--file=",
    "5", "1.5", "10s", "1h30m", " 2m", "-1", "", "nan", "inf", "0.25", "0.5", "60", "61",
    "1e1", "1_0", "kill", "abandon", "ask", "Kill", "stop", "detach", "TERM", "SIGINT",
    "a=echo hi", "seq 1 3", "=x", str(HERE), __file__, "/nonexistent/x", "x\udcff",
    *_odd_paths(),
])


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(["run", "up", "demo"]), st.lists(WORDS, max_size=7))
def test_any_words_read_quickly_are_read_as_click_reads_them(command, words):
    agree([command, *words])


def _modules_after(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """The installed entry point run with ``argv``; stderr's last line says whether
    click was loaded by the end."""
    probe = ("import atexit, sys\n"
             "atexit.register(lambda: print('click' in sys.modules, file=sys.stderr))\n"
             f"sys.argv = ['proctui', *{argv!r}]\n"
             "from proctui.startup import main\n"
             "main()\n")
    return subprocess.run([PY, "-c", probe], capture_output=True, text=True, timeout=60,
                          cwd=cwd, env={**os.environ, "NO_COLOR": "1"})


def test_run_starts_without_click_and_click_answers_the_rest(tmp_path):
    got = _modules_after(["run", "--headless", "--run-dir", str(tmp_path / "rd"),
                          "hello=echo hi there"], tmp_path)
    assert got.returncode == 0, got.stderr
    assert "hello   | hi there" in got.stdout
    assert got.stderr.splitlines()[-1] == "False", got.stderr
    # Words it is not sure of: click answers, as it always did.
    got = _modules_after(["run", "--stop-timeout", "x", "true"], tmp_path)
    assert got.returncode == 2
    assert got.stderr.splitlines() == [
        "proctui run: error: Invalid value for '--stop-timeout': 'x' is not a duration >= 0 "
        "and at most 100 days (10, 1.5, 10s, 2m, 1h30m)", "True"]
    got = _modules_after(["run", "--help"], tmp_path)
    assert got.returncode == 0 and "Usage: proctui run [OPTIONS] [COMMANDS]..." in got.stdout
    assert got.stderr.splitlines()[-1] == "True"


def test_a_config_error_read_quickly_is_the_same_one_line(tmp_path):
    (tmp_path / "Procfile").write_text("web: \n")
    quick = _modules_after(["run", "--headless", "--run-dir", str(tmp_path / "rd")],
                           tmp_path)
    # The same words, with one click must read (a duplicated flag): the same answer.
    slow = _modules_after(["run", "--headless", "--headless", "--run-dir",
                           str(tmp_path / "rd")], tmp_path)
    assert quick.returncode == slow.returncode == 2
    assert quick.stderr.splitlines()[:-1] == slow.stderr.splitlines()[:-1]
    assert quick.stderr.splitlines()[0].startswith("proctui: error: ")
    assert (quick.stderr.splitlines()[-1], slow.stderr.splitlines()[-1]) == ("False", "True")
    assert "Traceback" not in quick.stderr


def test_the_demo_config_prints_without_click(tmp_path):
    got = _modules_after(["demo", "--print-config"], tmp_path)
    assert got.returncode == 0 and "[process" in got.stdout
    assert got.stderr.splitlines() == ["False"]
    assert got.stdout == subprocess.run(
        [sys.executable, "-m", "proctui", "demo", "--print-config", "--headless",
         "--headless"], capture_output=True, text=True, timeout=60).stdout


def _sh(command: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["sh", "-c", command], capture_output=True, timeout=60, cwd=cwd,
                          env={**os.environ, **env})


def test_its_one_line_errors_are_written_as_click_wrote_them(tmp_path):
    """Read quickly or by click, a failure is the same line: nothing on stdout when stderr
    is closed, colour codes stripped off a pipe, no traceback on an ASCII stream."""
    proctui = f"{PY} -m proctui"
    for extra in ("", "--headless "):  # the second: a repeated flag, so click reads it
        closed = _sh(f"{proctui} run --headless {extra}-f /nonexistent 2>&-", tmp_path)
        assert (closed.returncode, closed.stdout) == (2, b"")
        coloured = _sh(f"{proctui} run --headless {extra}-f '/nonexistent/a\033[31mb'",
                       tmp_path)
        assert coloured.returncode == 2
        assert coloured.stderr == b"proctui: error: /nonexistent/ab: file not found\n"
        # A stream that says it is ASCII (a C locale) gets UTF-8, as click gave it.
        ascii_ = _sh(f"{proctui} run --headless {extra}-f /nonexistent/\u00e9", tmp_path,
                     PYTHONIOENCODING="ascii")
        assert (ascii_.returncode, ascii_.stderr) == (
            2, b"proctui: error: /nonexistent/\xc3\xa9: file not found\n")
        c_locale = _sh(f"{proctui} run --headless {extra}-f /nonexistent/\u00e9", tmp_path,
                       LC_ALL="C", PYTHONUTF8="0", PYTHONCOERCECLOCALE="0")
        assert (c_locale.returncode, c_locale.stderr) == (
            2, b"proctui: error: /nonexistent/??: file not found\n")


def test_an_unreadable_path_is_left_to_click(monkeypatch, tmp_path):
    """(Root reads everything: the OS is told to say no for these two paths.)"""
    procfile, run_dir = tmp_path / "Procfile", tmp_path / "rd"
    procfile.write_text("a: true\n")
    run_dir.mkdir()
    real = os.access
    monkeypatch.setattr(os, "access", lambda path, mode, *a, **k: False if str(path) in (
        str(procfile), str(run_dir)) else real(path, mode, *a, **k))
    for argv in (["run", "-f", str(procfile)], ["run", "--run-dir", str(run_dir), "true"]):
        assert cli_quick.read(argv) is None
        assert by_click(argv) is None


def test_a_line_that_its_stream_cannot_encode_is_written_with_replacements(monkeypatch):
    import io

    from proctui.launch import say

    raw = io.BytesIO()
    strict = io.TextIOWrapper(raw, encoding="ascii", errors="strict")
    monkeypatch.setattr(sys, "stdout", strict)
    say("run dir /tmp/caf\u00e9-\udcff")
    assert raw.getvalue() == "run dir /tmp/caf\u00e9-?\n".encode()


def test_a_strict_utf8_stream_gets_a_replacement_for_what_is_not_utf8(monkeypatch):
    import io

    from proctui.launch import say

    raw = io.BytesIO()
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(raw, encoding="utf-8", errors="strict"))
    say("--run-dir '/tmp/up\udcff\u00e9'")
    assert raw.getvalue() == "--run-dir '/tmp/up?\u00e9'\n".encode()
