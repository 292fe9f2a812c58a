"""Config: three ways in, one immutable spec out; every bad input is one line, exit 2."""

from __future__ import annotations

import dataclasses
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from proctui.config import (
    ConfigError,
    OnTimeout,
    Overrides,
    RestartPolicy,
    from_commands,
    load,
    load_procfile,
    load_toml,
    parse_toml,
)

FULL = """
[defaults]
stop_timeout = 7
kill_timeout = 2.5
on_timeout = "ask"
stop_signal = "INT"
extend_step = 15

[processes.web]
cmd = "python -m http.server 8000"
cwd = "srv"
env = { PORT = "8000" }
env_file = ".env"
restart = "on-failure"
stop_timeout = 3

[processes.worker]
cmd = ["sh", "-c", "echo hi"]
shell = true
stop_signal = "SIGQUIT"
"""


def write(tmp_path: Path, text: str, name: str = "proctui.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_full_toml(tmp_path):
    (tmp_path / "srv").mkdir()
    (tmp_path / ".env").write_text("# comment\nexport A=1\nB='two words'\nC=\"x\\ny\" \nPORT=1\n")
    config = load_toml(write(tmp_path, FULL))
    web, worker = config.processes
    assert web.argv == ("python", "-m", "http.server", "8000")
    assert web.cwd == tmp_path.resolve() / "srv"
    assert dict(web.env) == {"A": "1", "B": "two words", "C": "x\ny", "PORT": "8000"}
    assert web.stop_timeout == 3 and web.kill_timeout == 2.5
    assert web.on_timeout is OnTimeout.ASK and web.stop_signal == signal.SIGINT
    assert web.extend_step == 15 and web.restart is RestartPolicy.ON_FAILURE
    assert worker.argv == ("/bin/sh", "-c", "exec sh -c 'echo hi'")
    assert worker.stop_signal == signal.SIGQUIT and worker.stop_timeout == 7
    with pytest.raises(dataclasses.FrozenInstanceError):
        web.name = "other"  # type: ignore[misc]


def test_env_file_values_are_data(tmp_path):
    (tmp_path / ".env").write_text("X=$(touch pwned)\nY=`id`\n")
    config = load_toml(write(tmp_path, '[processes.a]\ncmd = "true"\nenv_file = ".env"\n'))
    assert dict(config.processes[0].env) == {"X": "$(touch pwned)", "Y": "`id`"}
    assert not (tmp_path / "pwned").exists()


def test_procfile(tmp_path):
    path = write(tmp_path, "# comment\nweb: python -m http.server\n\nworker:  ./w.sh --x\n",
                 "Procfile")
    config = load_procfile(path)
    assert [(p.name, p.argv) for p in config.processes] == [
        ("web", ("/bin/sh", "-c", "exec python -m http.server")),
        ("worker", ("/bin/sh", "-c", "exec ./w.sh --x")),
    ]


def test_commands_named_and_unnamed():
    config = from_commands(["web=python -m http.server", "python x.py", "python y.py",
                            "run=FOO=1 ./run.sh"])
    assert [p.name for p in config.processes] == ["web", "python", "python-2", "run"]
    assert config.processes[0].argv == ("/bin/sh", "-c", "exec python -m http.server")
    assert config.processes[3].argv == ("/bin/sh", "-c", "FOO=1 ./run.sh")


def test_found_in_current_directory_and_overrides(tmp_path):
    write(tmp_path, "a: sleep 1\n", "Procfile")
    assert load(cwd=tmp_path).processes[0].name == "a"
    write(tmp_path, '[processes.b]\ncmd = "true"\n')
    config = load(cwd=tmp_path, overrides=Overrides(stop_timeout=1.5,
                                                    on_timeout=OnTimeout.ABANDON))
    assert config.processes[0].name == "b"
    assert config.processes[0].stop_timeout == 1.5
    assert config.processes[0].on_timeout is OnTimeout.ABANDON


BAD_TOML = [
    ("[processes.a\ncmd='x'", "TOML syntax error"),
    ('[processes.a]\ncmd = "x"\ncolour = "red"\n', "process 'a': key 'colour': unknown key"),
    ('[defaults]\nstop_timout = 1\n[processes.a]\ncmd="x"\n', "key 'stop_timout': unknown key"),
    ('[processes.a]\ncmd = "x"\nstop_timeout = -1\n', "process 'a': key 'stop_timeout'"),
    ('[processes.a]\ncmd = "x"\nstop_timeout = "ten"\n', "got 'ten'"),
    ('[processes.a]\ncmd = "x"\nkill_timeout = nan\n', "key 'kill_timeout'"),
    ('[processes.a]\ncmd = "x"\nstop_timeout = true\n', "got true"),
    ('[processes.a]\ncmd = "x"\nstop_signal = "TERMINATE"\n', "unknown signal 'TERMINATE'"),
    ('[processes.a]\ncmd = "x"\non_timeout = "explode"\n', 'expected one of "kill"'),
    ('[processes.a]\ncmd = "x"\nrestart = "sometimes"\n', "key 'restart'"),
    ('[processes.a]\ncmd = "x"\nshell = "yes"\n', "key 'shell'"),
    ('[processes.a]\ncmd = ""\n', "process 'a': key 'cmd': empty command"),
    ('[processes.a]\ncmd = []\n', "key 'cmd'"),
    ('[processes.a]\ncmd = 5\n', "key 'cmd'"),
    ('[processes.a]\nshell = true\n', "key 'cmd': missing"),
    ('[processes.a]\ncmd = "x"\nenv_file = "nope.env"\n', "key 'env_file': file not found"),
    ('[processes.a]\ncmd = "x"\nenv = { A = [1] }\n', "key 'env.A'"),
    ('[processes.""]\ncmd = "x"\n', "process name is empty"),
    # Its lines would read as proctui's own; and a restart with itself named "unknown".
    ('[processes.proctui]\ncmd = "x"\n', "process name 'proctui' is proctui's own label"),
    ('[processes.a]\ncmd = "x"\nrestart_with = ["a"]\n',
     "process 'a': key 'restart_with': a process cannot restart with itself"),
    ('[processes.a]\ncmd = "x"\n[processes.a]\ncmd = "y"\n', "TOML syntax error"),
    ("[defaults]\nstop_timeout = 1\n", "no processes defined"),
    ("", "no processes defined"),
    ('[processes.a]\ncmd = "\'unclosed"\n', "cannot split command"),
    ('[processes.a]\ncmd = "x"\nextend_step = 0\n', "key 'extend_step'"),
    ('[processes.a]\ncmd = "x"\nscrollback = 0\n', "key 'scrollback'"),
    ('[prcesses.a]\ncmd = "x"\n', "key 'prcesses': unknown top-level key"),
    # Found under attack: each passed `check` or crashed later.
    ('[processes.a]\ncmd = "x"\ncwd = "no-such-dir"\n', "key 'cwd': no such directory"),
    ('[processes.a]\ncmd = "x"\ncwd = "a-file"\n', "key 'cwd': not a directory"),
    ('[processes.a]\ncmd = "x"\nenv = { A = "x\\u0000y" }\n', "key 'env.A': contains a NUL"),
    ('[processes.a]\ncmd = "x\\u0000y"\n', "key 'cmd': contains a NUL"),
    ('[processes.a]\ncmd = "x"\nscrollback = 9223372036854775808\n', "key 'scrollback'"),
    ('[processes.a]\ncmd = "x"\nstop_timeout = inf\n', "key 'stop_timeout'"),
    ('[processes.a]\ncmd = "x"\nstop_timeout = 1e300\n',
     "expected a number of seconds, at most 8640000 (100 days)"),
    ('[processes.a]\ncmd = "x"\nmax_line_length = 10000000000\n', "key 'max_line_length'"),
    (f'[processes.{"n" * 500}]\ncmd = "x"\n', "process name is too long (at most 64"),
    # 26 characters: not "at most 64 characters", but the limit it is over.
    ('[processes."日本語のプロセス名前がとても長いです日本語のプロセス"]\ncmd = "x"\n',
     "too long for a file name: 234 characters percent-encoded, at most 200"),
    ('[processes.a]\ncmd = "x"\nstop_signal = "SIGSTOP"\n', "cannot stop one"),
    ('[processes.a]\ncmd = "x"\nstop_signal = "RTMIN+99"\n', "not a signal on this system"),
    ("a = " + "[" * 100_000 + "]" * 100_000 + "\n", "nested too deeply"),
]


@pytest.mark.parametrize(("text", "expected"), BAD_TOML)
def test_bad_toml(tmp_path, text, expected):
    (tmp_path / "a-file").write_text("")
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_toml(path)
    message = str(info.value)
    assert message.startswith(str(path)), message
    assert expected in message, message
    assert "\n" not in message


@pytest.mark.parametrize(("text", "expected"), [
    ("web python\n", "Procfile:1: expected 'name: command'"),
    ("web:\n", "process 'web': key 'cmd': empty command"),
    ("a: x\na: y\n", "Procfile:2: process 'a': duplicate process name"),
    ("# nothing\n", "no processes defined"),
])
def test_bad_procfile(tmp_path, text, expected):
    with pytest.raises(ConfigError, match=expected.replace("(", r"\(")):
        load_procfile(write(tmp_path, text, "Procfile"))


def test_bad_commands():
    with pytest.raises(ConfigError, match="duplicate process name"):
        from_commands(["a=x", "a=y"])
    with pytest.raises(ConfigError, match="empty command"):
        from_commands([" "])
    # "NAME=" with nothing after it names a process with no command: it ran "a=" (a
    # shell assignment) and reported a clean exit.
    for arg in ("a=", "a=   "):
        with pytest.raises(ConfigError, match="process 'a': key 'cmd': empty command"):
            from_commands([arg])
    # An unnamed command named after its program is never named proctui.
    assert [s.name for s in from_commands(["proctui --version"]).processes] == ["proctui-2"]


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "proctui", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize(("text", "expected"), BAD_TOML[:6] + BAD_TOML[14:18])
def test_cli_bad_config_is_one_line_and_exit_2(tmp_path, text, expected):
    write(tmp_path, text)
    for command in ("run", "check"):
        result = cli(command, "--headless", cwd=tmp_path) if command == "run" else \
            cli(command, cwd=tmp_path)
        assert result.returncode == 2, result
        assert result.stdout == ""
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1, result.stderr
        assert lines[0].startswith("proctui: error: proctui.toml: "), lines[0]
        assert expected in lines[0]
        assert "Traceback" not in result.stderr


@pytest.mark.parametrize("args", [
    ["--stop-timeout", "-1", "x"],
    ["--stop-timeout", "ten", "x"],
    ["--stop-timeout", "nan", "x"],
    ["--kill-timeout", "inf", "x"],
    ["--stop-timeout", "1e400", "x"],
    ["--on-timeout", "explode", "x"],
    ["--stop-signal", "NOPE", "x"],
    ["-f", "missing.toml"],
    ["--no-such-option"],
])
def test_cli_bad_options(tmp_path, args):
    result = cli("run", "--headless", *args, cwd=tmp_path)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "error:" in lines[0], result.stderr
    assert "key ''" not in lines[0] and "Traceback" not in result.stderr


def test_cli_no_config_here(tmp_path):
    result = cli("run", "--headless", cwd=tmp_path)
    assert result.returncode == 2
    assert "no proctui.toml or Procfile" in result.stderr


def test_cli_check_prints_the_resolved_processes(tmp_path):
    (tmp_path / ".env").write_text("A=1\n")
    (tmp_path / "srv").mkdir()
    write(tmp_path, FULL)
    result = cli("check", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "proctui.toml: 2 processes, OK" in result.stdout
    assert "[web]" in result.stdout and "SIGINT, then ask after 3s" in result.stdout


def test_version_and_help(tmp_path):
    from proctui import __version__

    result = cli("--version", cwd=tmp_path)
    assert result.returncode == 0 and __version__ in result.stdout
    result = cli("--help", cwd=tmp_path)
    assert result.returncode == 0 and "run" in result.stdout and "check" in result.stdout


@pytest.mark.parametrize(("cmd", "simple"), [
    ("sleep 3", True), ("python -c 'a; b'", True), ("x 2>&1 > log", True),
    ("a | b", False), ("a; b", False), ("a && b", False), ("x &", False), ("(x)", False),
    ("FOO=1 x", False), ("cd /tmp", False), ("trap '' TERM; x", False), ("a\nb", False),
    ("'unclosed", False),
])
def test_simple_shell_commands_are_execed(cmd, simple):
    from proctui.config import shell_argv

    argv = shell_argv(cmd)
    assert argv[:2] == ("/bin/sh", "-c")
    assert argv[2] == (f"exec {cmd}" if simple else cmd)


def test_bom_realtime_signals_and_symlinked_names_are_accepted(tmp_path):
    text = '\ufeff[processes.a]\ncmd = "true"\nstop_signal = "SIGRTMIN+3"\n' \
           '[processes.b]\ncmd = "true"\nstop_signal = "rtmax-1"\n' \
           '[processes.".hidden"]\ncmd = "true"\nstop_signal = 10\n'
    a, b, hidden = load_toml(write(tmp_path, text)).processes
    assert a.stop_signal == signal.SIGRTMIN + 3
    assert b.stop_signal == signal.SIGRTMAX - 1
    assert hidden.name == ".hidden" and hidden.stop_signal == signal.SIGUSR1
    from proctui.core.life.outcome import signal_name

    assert signal_name(a.stop_signal) == "SIGRTMIN+3"


@pytest.mark.parametrize("kind", ["dev-zero", "fifo", "directory"])
def test_config_that_is_not_a_regular_file_is_one_line(tmp_path, kind):
    import os

    if kind == "dev-zero":
        path = Path("/dev/zero")
    elif kind == "fifo":
        path = tmp_path / "fifo.toml"
        os.mkfifo(path)
    else:
        path = tmp_path / "dir.toml"
        path.mkdir()
    result = subprocess.run([sys.executable, "-m", "proctui", "check", "-f", str(path)],
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert str(path) in result.stderr
    assert ("not a regular file" in result.stderr or "is a directory" in result.stderr), \
        result.stderr


def test_a_procfile_reads_the_env_file_beside_it_as_honcho_does(tmp_path):
    import subprocess
    import sys

    (tmp_path / "Procfile").write_text("web: echo port=$PORT greeting=$GREETING\n")
    (tmp_path / ".env").write_text("PORT=5000\nGREETING='$(touch pwned) hi'\n")
    got = subprocess.run([sys.executable, "-m", "proctui", "run", "--headless",
                          "-f", str(tmp_path / "Procfile"), "--run-dir",
                          str(tmp_path / "run")], capture_output=True, text=True,
                         timeout=60, cwd=tmp_path, stdin=subprocess.DEVNULL)
    assert "| port=5000 greeting=$(touch pwned) hi" in got.stdout, got.stdout
    assert not (tmp_path / "pwned").exists()  # a value is data, never evaluated


@pytest.mark.parametrize(("text", "said"), [
    ('[defaults]\nstop_timout = 1\n[processes.a]\ncmd="x"\n', "did you mean stop_timeout?"),
    ('[processes.a]\ncmd = "x"\nstop_timeot = 1\n', "did you mean stop_timeout?"),
    ('[processes.a]\ncmd = "x"\ncolour = "red"\n', "unknown key (known: cmd, shell,")])
def test_a_key_typo_names_the_nearest_key(tmp_path, text, said):
    path = tmp_path / "proctui.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as e:
        load(path)
    assert said in str(e.value)
    assert str(e.value).count("\n") == 0


def test_a_command_line_name_may_be_in_any_script_as_in_a_config():
    """'wörker=echo hi' ran the command "wörker=echo hi" (exit 127), named "wrkerecho":
    the name was read as ASCII only. A command with an assignment in it stays a command."""
    config = from_commands(["wörker=echo hi", "日本語=echo ok", "ünï-名前-🚀=echo go",
                            "make CC=gcc", "./run.sh=x", "a;b=c"])
    assert [(s.name, s.cmd) for s in config.processes][:4] == [
        ("wörker", "echo hi"), ("日本語", "echo ok"), ("ünï-名前-🚀", "echo go"),
        ("make", "make CC=gcc")]
    # A path, or a shell character before the "=": a command, named after its program.
    assert [s.cmd for s in config.processes][4:] == ["./run.sh=x", "a;b=c"]


@pytest.mark.parametrize(("text", "seconds"), [("10s", 10.0), ("2m", 120.0), ("1h30m", 5400.0),
                                               ("1.5", 1.5), ("90", 90.0)])
def test_durations_in_toml_take_the_units_the_command_line_takes(tmp_path, text, seconds):
    """``stop_timeout = "10s"`` was refused while ``--stop-timeout 10s`` and
    ``silence_warning = "5m"`` were taken."""
    config = parse_toml(f'[defaults]\nkill_timeout = "{text}"\n[processes.a]\ncmd = "x"\n'
                        f'stop_timeout = "{text}"\nsilence_warning = "{text}"\n',
                        "t.toml", tmp_path)
    (a,) = config.processes
    assert a.stop_timeout == a.kill_timeout == a.silence_warning == seconds


@pytest.mark.parametrize("text", ["10x", "-5s", "ten", "", "1e3"])
def test_a_duration_in_words_that_is_not_one_is_one_line(tmp_path, text):
    with pytest.raises(ConfigError) as e:
        parse_toml(f'[processes.a]\ncmd = "x"\nstop_timeout = "{text}"\n', "t.toml", tmp_path)
    assert str(e.value) == (f"t.toml: process 'a': key 'stop_timeout': expected a number of "
                            f'seconds or a duration (10, 1.5, "10s", "2m", "1h30m"), got '
                            f"{text!r}")
