"""Nothing from outside stops it: config files, command-line arguments, the terminal's
size, a control client's JSON and a supervisor that dies under ``logs -f`` are parsed so
that they cannot raise, bounded, and refused in one line that names where."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from proctui.config import ConfigError, from_commands, load_procfile, parse_toml, shell_argv
from proctui.config.shell import shell_words, split
from proctui.frontends import printer
from proctui.frontends.printer import terminal_columns, wrap_words
from proctui.protocol import wire
from proctui.protocol.decode import decode
from proctui.protocol.replies import Done, Fault
from tests.conftest import PY, alive, wait_until
from tests.test_detach import Detached, toml_str

# A process that prints a line every 50 ms: for a real supervisor with output to follow.
PRINTER = "import time\nwhile True:\n    print(1, flush=True)\n    time.sleep(0.05)\n"

# -- shell splitting ----------------------------------------------------------------------

BIG = 2 << 20  # characters in one word: shlex took over a minute on it


@pytest.mark.parametrize("way", ["shell_argv", "unnamed", "procfile", "toml"])
def test_a_two_megabyte_word_splits_in_linear_time(way, tmp_path):
    word = "a" * BIG
    began = time.perf_counter()
    if way == "shell_argv":
        assert shell_argv(word) == ("/bin/sh", "-c", f"exec {word}")
    elif way == "unnamed":  # named after its program: split once more for the name
        (spec,) = from_commands([word]).processes
        assert spec.name == "a" * 40
    elif way == "procfile":
        path = tmp_path / "Procfile"
        path.write_text(f"web: {word}\n")
        (spec,) = load_procfile(path).processes
        assert spec.argv[-1] == f"exec {word}"
    else:  # a cmd string without shell = true is split into its argv
        (spec,) = parse_toml(f'[processes.a]\ncmd = "x {word} y"\n', "t.toml",
                             tmp_path).processes
        assert spec.argv == ("x", word, "y")
    took = time.perf_counter() - began
    assert took < 2.0, f"{way}: {took:.1f}s for a {BIG}-character word"


TRICKY = [
    "", " ", "a", "a b", "  a   b  ", "a\tb\nc\rd", "'a b'", '"a b"', "a'b'c", 'a"b"c',
    "''", '""', "a '' b", 'a "" b', "'' ''", "\\a", "a\\ b", "a\\\\b", "\\'", '\\"',
    '"a\\"b"', '"a\\\\b"', '"a\\b"', '"a\\$b"', "'a\\b'", "'a\"b'", "\"a'b\"",
    "a\\\nb", "a #b", "a#b", "#a b", "x; y", "a|b", "a && b", "a>b 2>&1", "(a)",
    "$HOME ${X:-y} `z`", "wörker=echo hi", "日本 語", "a\x00b", "\\", "'", '"', "a '",
    'a "b', '"a\\', "'a''b'", '"a"\'b\'c', "\\\\\\", "a\\\tb", "é'é'é",
]


def _both(fn, text):  # type: ignore[no-untyped-def]
    try:
        return fn(text)
    except ValueError as e:
        return f"ValueError: {e}"


@pytest.mark.parametrize("text", TRICKY)
def test_splitting_is_what_shlex_split_gives(text):
    assert _both(split, text) == _both(shlex.split, text)


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=" \t\n\r'\"\\ab#;|&()<>$é日", max_size=30))
def test_any_splitting_is_what_shlex_split_gives(text):
    assert _both(split, text) == _both(shlex.split, text)


def _shlex_operators(text: str) -> list[str]:
    lexer = shlex.shlex(text, posix=True, punctuation_chars="();<>|&\n")
    lexer.whitespace = " \t\r"
    lexer.whitespace_split = True
    lexer.commenters = ""
    return list(lexer)


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=" \t\n\r'\"\\ab;|&()<>$é", max_size=30))
def test_words_and_operators_are_what_shlex_gives(text):
    mine = _both(lambda t: shell_words(t, comments=False), text)
    assert mine == _both(_shlex_operators, text)


@pytest.mark.parametrize(("cmd", "simple"), [
    ("sleep 10", True),
    ("python -m http.server 8000 > log 2>&1", True),
    ("sleep 10 # a note", True),
    ("a | b", False),
    ("a && b", False),
    ("a; b", False),
    ("(a)", False),
    ("FOO=1 x", False),
    ("cd /tmp", False),
    ("echo 'a; b'", True),
    ("sleep 1 # don't", True),  # a quote in a comment is the comment's
    # A # inside a word starts no comment (sh); shlex cut the line there, and with
    # `exec` in front the command after ; never ran.
    ("echo a#b; rm x", False),
    # A comment ends at the newline, which still separates two commands.
    ("echo a # first\necho b", False),
])
def test_a_simple_command_is_told_from_a_compound_one(cmd, simple):
    assert (shell_argv(cmd)[2] == f"exec {cmd}") is simple


# -- names that are not UTF-8 -------------------------------------------------------------


def _run(*args: str | bytes, cwd: Path | None = None) -> subprocess.CompletedProcess[bytes]:
    got = subprocess.run([PY, "-m", "proctui", *args], capture_output=True, timeout=60,
                         cwd=cwd, stdin=subprocess.DEVNULL)
    assert b"Traceback" not in got.stderr, got.stderr.decode(errors="replace")
    return got


@pytest.mark.parametrize("command", [("check",), ("run", "--headless")])
def test_a_name_that_is_not_utf8_on_the_command_line_is_one_line_exit_2(command, tmp_path):
    got = _run(*command, b"w\xff=true", cwd=tmp_path)
    assert got.returncode == 2
    assert got.stderr == (b"proctui: error: command line: process 'w\\xff': process name "
                          b"contains a byte that is not UTF-8 (\\xff)\n")


def test_a_name_that_is_not_utf8_in_a_procfile_is_one_line_exit_2(tmp_path):
    (tmp_path / "Procfile").write_bytes(b"# a comment\nweb\xff: true\n")
    got = _run("check", cwd=tmp_path)
    assert got.returncode == 2
    assert got.stderr == (b"proctui: error: Procfile:2: process 'web\\xff': process name "
                          b"contains a byte that is not UTF-8 (\\xff)\n")
    (tmp_path / "Procfile").write_bytes(b"web: echo \xfe\n")
    got = _run("run", "--headless", cwd=tmp_path)
    assert got.returncode == 2
    assert got.stderr == (b"proctui: error: Procfile:1: process 'web': key 'cmd': contains "
                          b"a byte that is not UTF-8 (\\xfe)\n")


def test_a_toml_file_that_is_not_utf8_names_the_line(tmp_path):
    (tmp_path / "proctui.toml").write_bytes(b'[processes.a]\ncmd = "x"\n[processes."w\xff"]\n')
    got = _run("check", cwd=tmp_path)
    assert got.returncode == 2
    assert got.stderr == (b"proctui: error: proctui.toml: not UTF-8 text (a byte \\xff at "
                          b"line 3, column 14)\n")


def test_a_name_that_is_not_utf8_is_a_config_error():
    with pytest.raises(ConfigError, match=r"^command line: process 'a\\xff\\udc12':"):
        from_commands(["a\udcff\udc12=true"])


# -- numbers ------------------------------------------------------------------------------

DURATION_KEYS = ["stop_timeout", "kill_timeout", "extend_step", "max_stop_time",
                 "watchdog_sec", "ready_timeout", "silence_warning"]
HUGE = "1" * 400


@pytest.mark.parametrize("table", ["defaults", "processes.a"])
@pytest.mark.parametrize("key", DURATION_KEYS)
def test_a_400_digit_duration_is_one_line(key, table, tmp_path):
    text = f'[processes.a]\ncmd = "x"\n[{table}]\n{key} = {HUGE}\n' if table == "defaults" \
        else f'[processes.a]\ncmd = "x"\n{key} = {HUGE}\n'
    with pytest.raises(ConfigError) as caught:
        parse_toml(text, "t.toml", tmp_path)
    process = "" if table == "defaults" else "process 'a': "
    assert str(caught.value) == (f"t.toml: {process}key '{key}': expected a number of "
                                 "seconds, at most 8640000 (100 days), got a 400-digit number")


def test_a_400_digit_interval_is_one_line(tmp_path):
    text = f'[processes.a]\ncmd = "x"\nready = {{ exec = "true", interval = {HUGE} }}\n'
    with pytest.raises(ConfigError, match=r"key 'ready.interval': expected a number of "
                                          r"seconds, at most 8640000 \(100 days\), got a "
                                          r"400-digit number$"):
        parse_toml(text, "t.toml", tmp_path)


def test_a_400_digit_duration_through_the_cli_is_exit_2(tmp_path):
    (tmp_path / "proctui.toml").write_text(f'[processes.a]\ncmd = "x"\nkill_timeout = {HUGE}\n')
    got = _run("check", cwd=tmp_path)
    assert got.returncode == 2 and got.stderr.count(b"\n") == 1
    assert b"key 'kill_timeout': expected a number of seconds" in got.stderr


@pytest.mark.parametrize("text", ["١٢", "５m", "²", "1²", "1" * 40, "1h١m", "12\u0660",
                                  "1e3", "-5", "nan", "inf", "5 m", "1m1h", "1m1m", "h", ""])
def test_a_duration_is_ascii_digits_only(text, tmp_path):
    toml = f'[processes.a]\ncmd = "x"\nsilence_warning = {json.dumps(text)}\n'
    with pytest.raises(ConfigError, match="key 'silence_warning': expected a number of "
                                          "seconds or a duration"):
        parse_toml(toml, "t.toml", tmp_path)


@pytest.mark.parametrize(("text", "seconds"), [("12", 12.0), ("5m", 300.0), ("1h30m", 5400.0),
                                               ("1.5s", 1.5), (".5", 0.5), ("90s", 90.0)])
def test_a_duration_in_ascii_is_taken(text, seconds, tmp_path):
    toml = f'[processes.a]\ncmd = "x"\nsilence_warning = {json.dumps(text)}\n'
    (spec,) = parse_toml(toml, "t.toml", tmp_path).processes
    assert spec.silence_warning == seconds


@pytest.mark.parametrize("value", ['"²"', '"١٥"', json.dumps("9" * 5000), '"RTMIN+²"',
                                   json.dumps("RTMIN+" + "1" * 5000)],
                         ids=["superscript", "arabic-indic", "5000-digits", "rtmin-superscript",
                              "rtmin-5000-digits"])
def test_a_signal_number_is_ascii_digits_only(value, tmp_path):
    with pytest.raises(ConfigError, match="key 'stop_signal'"):
        parse_toml(f'[processes.a]\ncmd = "x"\nstop_signal = {value}\n', "t.toml", tmp_path)


def test_a_400_digit_signal_number_is_not_written_out(tmp_path):
    with pytest.raises(ConfigError) as caught:
        parse_toml(f'[processes.a]\ncmd = "x"\nstop_signal = {HUGE}\n', "t.toml", tmp_path)
    assert str(caught.value) == ("t.toml: process 'a': key 'stop_signal': not a signal on "
                                 "this system: a 400-digit number")


def test_a_number_of_more_digits_than_python_reads_is_one_line(tmp_path):
    """tomllib's int() refuses over 4300 digits with a ValueError, not its own error."""
    (tmp_path / "proctui.toml").write_text(f'[processes.a]\ncmd = "x"\n'
                                           f'stop_timeout = {"1" * 5000}\n')
    got = _run("check", cwd=tmp_path)
    assert (got.returncode, got.stderr) == (2, b"proctui: error: proctui.toml: TOML syntax "
                                               b"error: a number of too many digits (at most "
                                               b"4300)\n")


def test_a_port_is_ascii_digits_only(tmp_path):
    with pytest.raises(ConfigError, match=r"key 'ready\.tcp'"):
        parse_toml('[processes.a]\ncmd = "x"\nready = { tcp = "localhost:٨٠" }\n', "t.toml",
                   tmp_path)


@pytest.mark.parametrize("table", ["defaults", "processes.a"])
def test_an_empty_list_of_success_exit_codes_is_refused(table, tmp_path):
    text = f'[processes.a]\ncmd = "x"\n[{table}]\nsuccess_exit_codes = []\n' \
        if table == "defaults" else '[processes.a]\ncmd = "x"\nsuccess_exit_codes = []\n'
    with pytest.raises(ConfigError, match=r"key 'success_exit_codes': must name at least "
                                          r"one exit code, such as \[0\]"):
        parse_toml(text, "t.toml", tmp_path)


def test_an_empty_list_of_success_exit_codes_is_exit_2(tmp_path):
    (tmp_path / "proctui.toml").write_text('[processes.a]\ncmd = "x"\nsuccess_exit_codes = []\n')
    got = _run("check", cwd=tmp_path)
    assert got.returncode == 2 and got.stderr.count(b"\n") == 1, got.stderr


# -- a terminal of no width ---------------------------------------------------------------


@pytest.mark.parametrize("room", [0, -1, -80])
def test_a_width_of_nothing_is_no_width(room):
    line = "a: stopped after 1.2s: exit code 0"
    assert wrap_words(line, room, 4) == [line]


@pytest.mark.parametrize("hang", [0, 2, 14])
def test_a_width_of_one_column_folds_without_losing_a_character(hang):
    line = "a: stopped after 1.2s: exit code 0 日本"
    rows = wrap_words(line, 1, hang)
    assert "".join(r.strip() for r in rows) == line.replace(" ", "")


def test_a_terminal_of_no_columns_is_no_terminal_width(monkeypatch, tmp_path):
    with open(tmp_path / "out", "w") as stream:
        monkeypatch.setattr(printer.os, "isatty", lambda fd: True)
        for columns in (0, -3):
            monkeypatch.setattr(printer.os, "get_terminal_size",
                                lambda fd, c=columns: os.terminal_size((c, 24)))
            assert terminal_columns(stream) is None
        monkeypatch.setattr(printer.os, "get_terminal_size",
                            lambda fd: os.terminal_size((80, 24)))
        assert terminal_columns(stream) == 80


def test_a_notice_on_a_terminal_of_no_columns_is_not_folded(monkeypatch):
    import io

    from proctui.frontends.printer import Printer

    out = io.StringIO()
    monkeypatch.setattr(printer, "terminal_columns", lambda stream: 0)
    Printer(["web"], out, colour=False).say("stopped after 1.2s: exit code 0", "web")
    assert out.getvalue() == "proctui | web: stopped after 1.2s: exit code 0\n"


def test_up_and_status_on_a_terminal_of_no_columns(tmp_path):
    """The real commands on a pty that says 0 columns: textwrap raised in both, ``up``
    after it had started its supervisor."""
    from tests.terminal import Pty, printed

    config = tmp_path / "proctui.toml"
    config.write_text(f'[processes.tick]\ncmd = [{toml_str(PY)}, "-c", {toml_str(PRINTER)}]\n')
    run_dir = tmp_path / "run"
    where = ["-f", str(config), "--run-dir", str(run_dir)]
    try:
        for args, said in ((["up", *where], "started under a detached supervisor"),
                           (["status", "--run-dir", str(run_dir)], "tick")):
            pty = Pty([PY, "-m", "proctui", *args], tmp_path, size=(24, 0))
            try:
                status = pty.finish()
            finally:
                pty.close()
            screen = printed(pty.screen)
            assert "Traceback" not in screen, screen
            assert status == 0, screen
            assert said in screen
    finally:
        _run("down", "--run-dir", str(run_dir), cwd=tmp_path)


# -- duplicate keys in a request ----------------------------------------------------------


@pytest.mark.parametrize("line", [
    b'{"op": "stop", "name": "a", "name": "b"}',
    b'{"op": "stop", "op": "stop", "name": "a"}',
    b'{"op": "watch", "names": ["a"], "start": {"a": 1, "a": 2}}',
])
def test_a_request_with_a_key_twice_is_a_bad_request(line):
    got = decode(wire.loads(line))
    assert isinstance(got, Done) and not got.ok and got.fault is Fault.BAD_REQUEST
    assert "twice" in got.text


def test_a_request_with_each_key_once_is_decoded():
    got = decode(wire.loads(b'{"op": "stop", "name": "a"}'))
    assert not isinstance(got, Done) and got.name == "a"  # type: ignore[attr-defined]


def test_a_huge_number_of_seconds_is_a_bad_value_not_an_overflow():
    got = decode(wire.loads(b'{"op": "extend", "name": "a", "by": 1' + b"0" * 400 + b"}"))
    assert isinstance(got, Done) and got.fault is Fault.BAD_VALUE


# -- logs -f when its supervisor goes ------------------------------------------------------


def _printing(tmp_path: Path) -> Detached:
    config = tmp_path / "proctui.toml"
    config.write_text(f'[processes.tick]\ncmd = [{toml_str(PY)}, "-c", {toml_str(PRINTER)}]\n')
    d = Detached(tmp_path, config)
    d.wait_for("tick", "running", lambda p: p["phase"] == "running")
    return d


def _follow(d: Detached, *extra: str, env: dict[str, str] | None = None) \
        -> subprocess.Popen[bytes]:
    follower = subprocess.Popen([PY, "-m", "proctui", "logs", "tick", "-f", *extra],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                stdin=subprocess.DEVNULL, cwd=d.tmp_path, env=env)
    assert follower.stdout is not None
    assert follower.stdout.readline().strip() == b"1"  # it follows
    return follower


def _end(follower: subprocess.Popen[bytes] | None) -> None:
    if follower is not None and follower.poll() is None:
        follower.kill()
        follower.wait()


def test_logs_follow_says_when_its_supervisor_dies_and_fails(tmp_path):
    d = _printing(tmp_path)
    follower = None
    try:
        follower = _follow(d, "--run-dir", str(d.run_dir))
        pid = json.loads(d.ctl("status", "--json").stdout)["supervisor"]["pid"]
        assert pid == d.pid
        os.kill(pid, signal.SIGKILL)
        _out, err = follower.communicate(timeout=30)
        assert (follower.returncode, err.decode()) == (
            1, f"proctui: error: the supervisor (pid {pid}) went away without ending: no "
               "more of tick's output will come\n")
    finally:
        _end(follower)
        d.kill()


def test_logs_follow_ends_well_and_says_so_when_its_supervisor_ends(tmp_path):
    d = _printing(tmp_path)
    follower = None
    try:
        follower = _follow(d, "--run-dir", str(d.run_dir))
        assert d.ctl("down").returncode == 0
        _out, err = follower.communicate(timeout=30)
        assert (follower.returncode, err.decode()) == (
            0, "proctui: the supervisor has ended: no more of tick's output will come\n")
    finally:
        _end(follower)
        d.kill()


# Stands in for ssh: runs the box's command here, as the box's shell would, in its place
# (killing it is the link breaking).
FAKE_SSH = "import os, sys\nos.execv('/bin/sh', ['/bin/sh', '-c', 'exec ' + sys.argv[-1]])\n"


def test_logs_follow_says_when_its_link_is_lost_and_fails(tmp_path):
    d = _printing(tmp_path)
    fake = tmp_path / "fake_ssh.py"
    fake.write_text(FAKE_SSH)
    env = {**os.environ, "PROCTUI_SSH": f"{shlex.quote(PY)} {shlex.quote(str(fake))}",
           "PROCTUI_REMOTE": f"{shlex.quote(PY)} -m proctui"}
    follower = None
    try:
        follower = _follow(d, "--host", "box", "--run-dir", str(d.run_dir), env=env)
        (link,) = wait_until(lambda: _children(follower.pid), what="the link")  # type: ignore[misc]
        os.kill(link, signal.SIGKILL)
        _out, err = follower.communicate(timeout=30)
        assert (follower.returncode, err.decode()) == (
            1, "proctui: error: box: the link to the supervisor was lost (or the supervisor "
               "went away): no more of tick's output will come\n")
        assert alive(d.pid)  # the supervisor itself is fine
    finally:
        _end(follower)
        d.kill()


def _children(pid: int) -> list[int]:
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                raw = f.read()
        except OSError:
            continue
        if int(raw[raw.rindex(b")") + 2:].split()[1]) == pid:
            found.append(int(name))
    return found
