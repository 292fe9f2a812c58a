"""proctui export systemd: the units keep every policy systemd can hold, say the rest, and
pass systemd-analyze verify."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from proctui.config import ConfigError, load, parse_toml
from proctui.export import systemd, words

SYSTEMD_ANALYZE = shutil.which("systemd-analyze")
needs_verify = pytest.mark.skipif(
    SYSTEMD_ANALYZE is None,
    reason="systemd-analyze is not installed (Debian: apt-get install systemd)")

PY = sys.executable

# Three processes between them using every key the export maps or warns about.
CONFIG = f"""
[defaults]
stop_timeout = 10
kill_timeout = 5

[processes.db]
cmd = "/bin/sleep 1000"
ready = {{ notify = true }}
ready_timeout = 30
watchdog_sec = 20
restart = "always"
on_timeout = "abandon"
stop_signal = "INT"
max_stop_time = 60

[processes.migrate]
cmd = ["{PY}", "-c", "print('100% $done')"]
depends_on = {{ db = "started" }}
restart = "always"
kill_timeout = 10

[processes.web]
cmd = 'echo "$HOME" 100% > /dev/null; exec /bin/sleep 1000'
shell = true
cwd = "srv"
env = {{ GREETING = 'hello "world" $HOME 50%', SPACED = "a b", SHARED = "from-table" }}
env_file = "web.env"
depends_on = {{ db = "ready", migrate = "exited-ok" }}
restart_with = ["db"]
restart = "on-failure"
on_timeout = "ask"
stop_timeout = 7
scrollback = 500
max_line_length = 1000
log_keep = 5
"""

DB = "proctui-db.service"
MIGRATE = "proctui-migrate.service"
WEB = "proctui-web.service"


def proctui(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PY, "-m", "proctui", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=60)


def directives(text: str) -> dict[str, dict[str, list[str]]]:
    """Section -> key -> values, in order; comments and blank lines left out."""
    out: dict[str, dict[str, list[str]]] = {}
    section = ""
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        if line.startswith("["):
            section = line.strip("[]")
            out[section] = {}
            continue
        key, _, value = line.partition("=")
        out[section].setdefault(key, []).append(value)
    return out


def verify(directory: Path) -> subprocess.CompletedProcess[str]:
    assert SYSTEMD_ANALYZE is not None
    units = sorted(str(p) for p in directory.glob("*.service"))
    return subprocess.run([SYSTEMD_ANALYZE, "verify", "--man=no", *units],
                          capture_output=True, text=True, timeout=60)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "srv").mkdir()
    (tmp_path / "web.env").write_text("TOKEN=s3cret\nSHARED=from-file\n")
    (tmp_path / "proctui.toml").write_text(CONFIG)
    return tmp_path


def test_one_unit_per_process_directive_by_directive(project: Path) -> None:
    result = proctui("export", "systemd", "--systemd-version", "252", "-o", "units",
                     cwd=project)
    assert result.returncode == 0, result.stderr
    units = project / "units"
    assert sorted(p.name for p in units.iterdir()) == [DB, MIGRATE, WEB]
    assert result.stdout.splitlines() == [f"wrote units/{n}" for n in (DB, MIGRATE, WEB)]

    db = directives((units / DB).read_text())
    assert db["Unit"] == {"Description": ["proctui: db (from proctui.toml)"],
                          "StartLimitIntervalSec": ["0"]}
    assert db["Service"] == {
        "Type": ["notify"], "NotifyAccess": ["all"], "ExecStart": ["/bin/sleep 1000"],
        "WorkingDirectory": [str(project)],
        "Environment": ['"PYTHONUNBUFFERED=1"'],
        "TimeoutStartSec": ["30"],
        "KillSignal": ["SIGINT"], "KillMode": ["control-group"], "TimeoutStopSec": ["10"],
        "SendSIGKILL": ["no"],
        "Restart": ["always"], "RestartSec": ["1"], "RestartPreventExitStatus": ["200 203"],
        "WatchdogSec": ["20"], "WatchdogSignal": ["SIGINT"],
    }
    assert db["Install"] == {"WantedBy": ["default.target"]}

    migrate = directives((units / MIGRATE).read_text())
    assert migrate["Unit"] == {"Description": ["proctui: migrate (from proctui.toml)"],
                               "After": [DB], "Requires": [DB],
                               "StartLimitIntervalSec": ["0"]}
    assert migrate["Service"] == {
        "Type": ["oneshot"], "RemainAfterExit": ["yes"], "NotifyAccess": ["all"],
        "ExecStart": [f'{PY} -c "print(\'100%% $$done\')"'],
        "WorkingDirectory": [str(project)],
        "Environment": ['"PYTHONUNBUFFERED=1"'],
        "TimeoutStartSec": ["infinity"],
        "KillSignal": ["SIGTERM"], "KillMode": ["control-group"], "TimeoutStopSec": ["10"],
        "Restart": ["on-failure"], "RestartSec": ["1"],
        "RestartPreventExitStatus": ["200 203"],
    }

    web = directives((units / WEB).read_text())
    assert web["Unit"] == {"Description": ["proctui: web (from proctui.toml)"],
                           "After": [DB, MIGRATE], "Requires": [DB, MIGRATE],
                           "PartOf": [DB], "StartLimitIntervalSec": ["0"]}
    assert web["Service"] == {
        "Type": ["exec"], "NotifyAccess": ["all"],
        "ExecStart": ['/bin/sh -c "echo \\"$$HOME\\" 100%% > /dev/null; exec /bin/sleep 1000"'],
        "WorkingDirectory": [str(project / "srv")],
        "EnvironmentFile": [str(project / "web.env")],
        # The table's own variables only: the file's (TOKEN) stay in the file. $ is
        # literal in Environment=, % is a specifier.
        "Environment": ['"PYTHONUNBUFFERED=1"', '"SHARED=from-table"',
                        '"GREETING=hello \\"world\\" $HOME 50%%"', '"SPACED=a b"'],
        "KillSignal": ["SIGTERM"], "KillMode": ["control-group"], "TimeoutStopSec": ["7"],
        "Restart": ["on-failure"], "RestartSec": ["1"],
        "RestartForceExitStatus": ["SIGHUP SIGINT SIGTERM SIGPIPE"],
        "RestartPreventExitStatus": ["200 203"],
    }
    assert "s3cret" not in (units / WEB).read_text()

    backoff = ("restart backoff 1, 2, 4 .. 30s becomes a fixed 1s for systemd 252 "
               "(RestartSteps= needs systemd 254)")
    assert result.stderr.splitlines() == [
        "db: ready_timeout = 30s: systemd restarts a process that was not ready in time; "
        "proctui does not",
        f"db: {backoff}",
        "db: max_stop_time = 60s has no systemd equivalent: systemd honours "
        "EXTEND_TIMEOUT_USEC without a cap",
        "migrate: depends_on db = \"started\": db is Type=notify, so this starts only once "
        "db is ready",
        "migrate: restart = \"always\" becomes on-failure: systemd refuses Restart=always for "
        "Type=oneshot",
        "migrate: restart = \"on-failure\" does not follow a death by SIGHUP, SIGINT, SIGTERM "
        "or SIGPIPE: systemd refuses RestartForceExitStatus= for Type=oneshot",
        f"migrate: {backoff}",
        "web: restart_with db becomes PartOf=: systemd also stops this when db is stopped",
        "web: env.SHARED is also set in env_file; under systemd the file wins "
        "(EnvironmentFile= overrides Environment=)",
        "web: on_timeout = \"ask\" has no systemd equivalent; it becomes kill after 7s",
        "web: kill_timeout = 5s cannot be kept: after SIGKILL systemd waits TimeoutStopSec "
        "(7s) again",
        f"web: {backoff}",
        "web: scrollback = 500 has no systemd equivalent: output goes to the journal",
        "web: max_line_length = 1000 has no systemd equivalent: the journal splits lines at "
        "its own LineMax=",
        "web: log_max_size and log_keep have no systemd equivalent: the journal keeps the "
        "output, within journald's own limits",
    ]


@needs_verify
def test_every_unit_passes_systemd_analyze_verify(project: Path) -> None:
    assert proctui("export", "systemd", "-o", "units", cwd=project).returncode == 0
    assert proctui("export", "systemd", "--supervisor", "-o", "one", cwd=project
                   ).returncode == 0
    for directory in ("units", "one"):
        result = verify(project / directory)
        # verify exits 0 even for an unknown key; what it says is the finding.
        assert (result.returncode, result.stdout + result.stderr) == (0, ""), directory


def test_restart_steps_only_for_a_systemd_that_has_them(project: Path) -> None:
    config = load(project / "proctui.toml")
    new = systemd.export_units(config, version=254)
    db = directives(next(u.text for u in new.units if u.file_name == DB))
    assert db["Service"]["RestartSteps"] == ["5"]
    assert db["Service"]["RestartMaxDelaySec"] == ["30"]
    assert not any("backoff" in w for w in new.warnings)
    old = systemd.export_units(config, version=None)
    assert "RestartSteps" not in directives(old.units[0].text)["Service"]
    assert "db: restart backoff 1, 2, 4 .. 30s becomes a fixed 1s for an unknown systemd " \
           "(RestartSteps= needs systemd 254)" in old.warnings


def test_ready_checks_systemd_cannot_run_become_type_exec(tmp_path: Path) -> None:
    config = parse_toml("""
[defaults]
kill_timeout = 10
[processes.db]
cmd = "/bin/sleep 1000"
ready = { tcp = "127.0.0.1:5432" }
[processes.log]
cmd = "/bin/sleep 1000"
ready = { log = "listening" }
depends_on = { db = "ready" }
""", "t.toml", tmp_path)
    out = systemd.export_units(config, version=254)
    assert [directives(u.text)["Service"]["Type"] for u in out.units] == [["exec"], ["exec"]]
    assert out.warnings == (
        "db: ready (a connection to 127.0.0.1:5432) has no systemd equivalent; it becomes "
        "Type=exec: dependents wait only for it to start",
        "log: ready (a line matching 'listening') has no systemd equivalent; it becomes "
        "Type=exec: dependents wait only for it to start",
        "log: depends_on db = \"ready\": db's ready check has no systemd equivalent; this "
        "starts once db has started",
    )


def test_supervisor_unit_covers_the_longest_chain_of_stops(project: Path) -> None:
    result = proctui("export", "systemd", "--supervisor", cwd=project)
    assert result.returncode == 0, result.stderr
    name = f"proctui-{project.name}.service"
    assert result.stdout.startswith(f"# {name}\n")
    unit = directives(result.stdout)
    service = unit["Service"]
    assert service["Type"] == ["notify"]
    assert service["NotifyAccess"] == ["main"]
    assert service["KillMode"] == ["mixed"]
    assert service["ExecStart"][0].endswith(
        f" run --headless -f {project / 'proctui.toml'}")
    assert Path(service["ExecStart"][0].split()[0]).is_absolute()
    # web stops first (7 + 5), then migrate (10 + 10), then db (abandoned at 10): 42 s,
    # and 5 s for proctui itself.
    assert service["TimeoutStopSec"] == ["47"]
    assert "# The longest chain of stops: web 12s then migrate 20s then db 10s, plus 5s " \
           "for proctui itself = 47s." in result.stdout.splitlines()
    assert result.stderr.splitlines() == [
        "db: on_timeout = \"abandon\" does not outlive proctui: once it exits, systemd "
        "kills what is left in the unit",
        "web: on_timeout = \"ask\" acts as kill after 7s under run --headless",
    ]


def test_the_longest_chain_is_not_the_sum_of_the_stages(tmp_path: Path) -> None:
    # proctui stops slow (100 s) and front (1 s) at once, and back once front has ended:
    # back waits for front only, so the stop takes 100 s, not 100 + 1.
    config = parse_toml("""
[defaults]
kill_timeout = 0
[processes.slow]
cmd = "x"
stop_timeout = 100
[processes.back]
cmd = "x"
stop_timeout = 1
[processes.front]
cmd = "x"
stop_timeout = 1
depends_on = ["back"]
""", "t.toml", tmp_path)
    longest = systemd.longest_stop(config.processes)
    assert (longest.seconds, longest.names) == (100.0, ("slow",))


def test_bad_input_is_one_line_and_status_2(tmp_path: Path) -> None:
    (tmp_path / "proctui.toml").write_text('[processes.web]\ncmd = "x"\nstop_signal = "NOPE"\n')
    result = proctui("export", "systemd", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr == ("proctui: error: proctui.toml: process 'web': key 'stop_signal': "
                             "unknown signal 'NOPE'\n")
    assert result.stdout == ""


def test_output_directory_refuses_to_overwrite_a_different_unit(project: Path) -> None:
    assert proctui("export", "systemd", "-o", "units", cwd=project).returncode == 0
    units = project / "units"
    (units / DB).write_text("# mine\n")
    (units / WEB).unlink()
    result = proctui("export", "systemd", "-o", "units", cwd=project)
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1] == (
        f"proctui: error: units/{DB}: exists and differs; pass --force to overwrite it")
    # All or nothing: the refused export wrote no other file either.
    assert (units / DB).read_text() == "# mine\n"
    assert not (units / WEB).exists()
    forced = proctui("export", "systemd", "-o", "units", "--force", cwd=project)
    assert forced.returncode == 0
    assert forced.stdout.splitlines() == [f"wrote units/{DB}", f"wrote units/{WEB}",
                                          f"unchanged units/{MIGRATE}"]


def test_stdout_has_every_unit_under_its_name(project: Path) -> None:
    result = proctui("export", "systemd", cwd=project)
    assert result.returncode == 0
    headers = [line for line in result.stdout.splitlines() if line.startswith("# proctui-")]
    assert headers == [f"# {DB}", f"# {MIGRATE}", f"# {WEB}"]


@needs_verify
def test_exec_start_quoting_reads_back_as_the_path(tmp_path: Path) -> None:
    # verify looks for the program at the path it parsed: a path with a space, a % and a $
    # is found only if systemd unquotes exactly what was quoted.
    odd = tmp_path / "we ird 100% $dir"
    odd.mkdir()
    program = odd / "prog"
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    unit = tmp_path / "units" / "odd.service"
    unit.parent.mkdir()
    line = words.exec_line([str(program), "a b", "$X"])
    assert line == f'@"{tmp_path}/we ird 100%% $dir/prog" "{tmp_path}/we ird 100%% $$dir/prog" ' \
                   '"a b" $$X'
    unit.write_text(f"[Service]\nExecStart={line}\n")
    result = verify(unit.parent)
    assert (result.returncode, result.stdout + result.stderr) == (0, "")


def test_a_program_systemd_refuses_to_run_is_bad_input(tmp_path: Path) -> None:
    # systemd says "Executable name contains special characters" for these, quoted or not.
    config = parse_toml('[processes.odd]\ncmd = ["/opt/it\'s/prog"]\n', "t.toml", tmp_path)
    with pytest.raises(ConfigError) as e:
        systemd.export_units(config)
    assert str(e.value) == ("t.toml: process 'odd': key 'cmd': systemd runs no program whose "
                            "path holds a quote, a backslash or a control character: "
                            "\"/opt/it's/prog\"")


def test_what_systemd_would_not_read_is_said(tmp_path: Path) -> None:
    config = parse_toml("""
[processes.app]
cmd = "no-such-program-here --flag"
kill_timeout = 10
env = { "my-var" = "1", OK = "2" }
""", "t.toml", tmp_path)
    out = systemd.export_units(config, version=254)
    service = directives(out.units[0].text)["Service"]
    assert service["ExecStart"] == ["no-such-program-here --flag"]
    assert service["Environment"] == ['"PYTHONUNBUFFERED=1"', '"OK=2"']
    assert out.warnings == (
        "app: 'no-such-program-here' is not on PATH here; ExecStart= needs its absolute path",
        "app: env.my-var is left out: systemd takes only names of letters, digits and _, not "
        "starting with a digit",
    )


def test_a_prefix_that_cannot_start_a_unit_name_is_bad_input(project: Path) -> None:
    result = proctui("export", "systemd", "--prefix", "my app/", cwd=project)
    assert (result.returncode, result.stderr) == (
        2, "proctui: error: command line: key '--prefix': 'my app/' cannot start a unit name "
           "(letters, digits and :_.- only)\n")


def test_quoting_rules() -> None:
    assert words.exec_word("/bin/sleep") == "/bin/sleep"
    assert words.exec_word("a b") == '"a b"'
    assert words.exec_word("$HOME") == "$$HOME"
    assert words.exec_word("50%") == "50%%"
    assert words.exec_word("") == '""'
    assert words.exec_word(";") == '";"'  # a lone ; would end the command
    assert words.exec_word("a\nb") == '"a\\nb"'
    assert words.exec_line(["-x", "y"]) == '"-x" y'  # not the ignore-failure prefix
    assert words.environment_word("K", 'v "$x" 5%\\') == '"K=v \\"$x\\" 5%%\\\\"'
    assert words.unit_name("web 1/ä") == "proctui-web\\x201\\x2f\\xc3\\xa4.service"
    assert words.seconds_value(0) == "1us"  # 0 is "no timeout" to systemd
    assert words.seconds_value(2.5) == "2.5"
    assert words.signal_value(int(signal.SIGRTMIN) + 3) == "SIGRTMIN+3"  # systemd reads it
    assert words.signal_value(signal.SIGINT) == "SIGINT"


def test_the_backoff_is_the_cores() -> None:
    from proctui.core.life import stages

    assert (systemd.BACKOFF_START, systemd.BACKOFF_MAX) == (stages.BACKOFF_START,
                                                            stages.BACKOFF_MAX)


def test_the_module_imports_no_frontend() -> None:
    code = ("import sys, proctui.export.systemd; "
            "print(sorted(m for m in sys.modules if m.startswith(('textual', 'proctui.core'))))")
    out = subprocess.run([PY, "-c", code], capture_output=True, text=True, timeout=60,
                         env={**os.environ}).stdout
    assert out.strip() == "[]"


def test_the_peer_keys_are_carried_or_said(tmp_path: Path) -> None:
    config = parse_toml("""
[processes.app]
cmd = "/bin/true"
success_exit_codes = [0, 143, 3]
stop_command = "/bin/true"
silence_warning = "5m"
[processes.odd]
cmd = "/bin/true"
success_exit_codes = [1]
""", "t.toml", tmp_path)
    out = systemd.export_units(config, version=254)
    app, odd = (directives(u.text)["Service"] for u in out.units)
    assert app["SuccessExitStatus"] == ["143 3"]
    assert odd["SuccessExitStatus"] == ["1"]
    said = [w for w in out.warnings if "kill_timeout" not in w]
    assert said == [
        "app: stop_command is left out: give the unit an ExecStop= by hand (systemd then "
        "sends KillSignal= to what is left, as stop_command_then_signal)",
        "app: silence_warning = 300s has no systemd equivalent",
        "odd: success_exit_codes without 0: under systemd exit code 0 stays a success",
    ]


# -- what reaches a unit from outside ------------------------------------------------------

CONTROLS = [chr(code) for code in range(0x20)] + ["\x7f"]
INJECTED = "ExecStartPre=/injected-cmd"


def toml_string(text: str) -> str:
    """``text`` as a TOML basic string, every control character as a \\u escape."""
    out = []
    for ch in text:
        if ch in '"\\' or ch in CONTROLS:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def shown(ch: str) -> str:
    return f"({repr(ch)[1:-1]}, U+{ord(ch):04X})"


def test_the_reported_directory_name_is_refused_in_both_shapes(tmp_path: Path) -> None:
    # The repro: a directory named "y\nExecStartPre=/injected-cmd" (a cloned
    # repository is enough) put ExecStartPre=/injected-cmd into a unit run as root.
    project = tmp_path / f"y\n{INJECTED}"
    project.mkdir(parents=True)
    (project / "proctui.toml").write_text('[processes.web]\ncmd = "/bin/sleep 1000"\n')
    refusals = {
        ("--supervisor",): "proctui: error: export: the config file's directory contains a "
                           "control character (\\n, U+000A); systemd cannot hold it\n",
        (): "proctui: error: export: process 'web': key 'cwd': the config file's directory "
            "contains a control character (\\n, U+000A); systemd cannot hold it\n",
    }
    for shape, refusal in refusals.items():
        for output in ((), ("-o", str(tmp_path / "units"))):
            result = proctui("export", "systemd", *shape, *output, cwd=project)
            assert (result.returncode, result.stderr, result.stdout) == (2, refusal, ""), \
                (shape, output)
    assert not (tmp_path / "units").exists()


def test_a_carriage_return_in_cwd_is_refused_in_one_line(tmp_path: Path) -> None:
    # systemd ends a line at \r as at \n: before, only \n was looked for.
    cwd = f"srv\r{INJECTED}"
    (tmp_path / cwd).mkdir(parents=True)
    (tmp_path / "proctui.toml").write_text(
        f'[processes.web]\ncmd = "/bin/sleep 1000"\ncwd = {toml_string(cwd)}\n')
    result = proctui("export", "systemd", "-o", "units", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == ("proctui: error: export: process 'web': key 'cwd': contains a "
                             "control character (\\r, U+000D); systemd cannot hold it\n")
    assert not (tmp_path / "units").exists()


def _project(field: str, ch: str, root: Path) -> Path | None:
    """A config under ``root`` carrying ``ch``, and a directive after it, in ``field``;
    the -f path to load it by, or None for the proctui.toml in the directory returned by
    ``_home``."""
    text = f"y{ch}{INJECTED}"
    table = {"cmd": '["/bin/echo", "hi"]'}
    name = "web"
    config = None
    if field == "config file name":
        config = Path(f"{text}.toml")
    elif field == "cwd":
        if ch != "\0":  # no file name holds a NUL; the config refuses it first
            (root / text).mkdir(parents=True)
        table["cwd"] = toml_string(text)
    elif field == "env_file":
        if ch != "\0":  # no file name holds a NUL; the config refuses it first
            (root / text).parent.mkdir()
            (root / text).write_text("TOKEN=1\n")
        table["env_file"] = toml_string(text)
    elif field == "process name":
        name = toml_string(f"w{ch}{INJECTED}")
    elif field == "cmd word":
        table["cmd"] = f'["/bin/echo", {toml_string(text)}]'
    elif field == "program":
        table["cmd"] = f"[{toml_string('./' + text)}]"
    elif field == "shell command":
        table["cmd"], table["shell"] = toml_string(f"echo '{text}'"), "true"
    elif field == "env value":
        table["env"] = f"{{ GREETING = {toml_string(text)} }}"
    elif field == "env name":
        # No "=" after it: the config refuses that, and this name is to reach the export,
        # which leaves it out and says so on stderr.
        table["env"] = "{ " + toml_string(f"K{ch}X") + ' = "1" }'
    elif field != "config directory":
        raise AssertionError(field)
    home = _home(field, ch, root)
    home.mkdir(parents=True, exist_ok=True)
    body = f"[processes.{name}]\n" + "".join(f"{k} = {v}\n" for k, v in table.items())
    if config is not None:
        (home / config).parent.mkdir(exist_ok=True)
        (home / config).write_text(body)
    else:
        (home / "proctui.toml").write_text(body)
    return config


def _home(field: str, ch: str, root: Path) -> Path:
    """Where the export runs: the config directory itself carries ``ch`` for that field."""
    return root / f"y{ch}{INJECTED}" if field == "config directory" else root


# What a refusal names, by field: the config's own key, or what the export read.
REFUSED_AS = {
    "config directory": ("key 'cwd': the config file's directory contains",
                         "export: the config file's directory contains"),
    "config file name": ("export: the config file's path contains",),
    "cwd": ("key 'cwd': contains",),
    "env_file": ("key 'env_file': contains",),
    "process name": ("process name",),
    "cmd word": ("key 'cmd': contains",),
    "program": ("key 'cmd': contains",),
    "shell command": ("key 'cmd': contains",),
    "env value": ("key 'env.GREETING': contains",),
    "env name": ("not a valid environment variable name",),
}


@pytest.mark.parametrize("field", list(REFUSED_AS))
def test_no_control_character_reaches_a_unit(field: str, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Every C0 control character and DEL, followed by a directive, through every field
    that takes outside text, in both shapes: either the export is refused in one line
    naming the key and the character, or the unit holds no control character and systemd
    reads no directive of the text's making."""
    written = {"units": tmp_path / "written-units", "supervisor": tmp_path / "written-one"}
    for directory in written.values():
        directory.mkdir()
    for ch in CONTROLS:
        if ch == "\0" and field in ("config directory", "config file name"):
            continue  # no file name holds a NUL (an env_file's is refused by the config)
        root = tmp_path / f"c{ord(ch):02x}"
        root.mkdir()
        config_file = _project(field, ch, root)
        monkeypatch.chdir(_home(field, ch, root))
        for shape in written:
            try:
                config = load(config_file)
                if shape == "units":
                    out = systemd.export_units(config, files=systemd.env_files(config),
                                               version=254)
                else:
                    out = systemd.export_supervisor(config, (PY, "-m", "proctui"))
            except ConfigError as e:
                message = str(e)
                assert not set(message) & set(CONTROLS), (shape, message)
                assert any(part in message for part in REFUSED_AS[field]), (shape, message)
                assert repr(ch)[1:-1] in message or (ch == "\0" and "NUL" in message), \
                    (shape, message)
                if message.startswith("export: "):  # the export's own refusal
                    assert message.endswith(f" a control character {shown(ch)}; systemd "
                                            "cannot hold it"), (shape, message)
                continue
            for warning in out.warnings:  # said on stderr
                assert not set(warning) & set(CONTROLS), (shape, warning)
            for unit in out.units:
                assert not set(unit.text) & set(CONTROLS) - {"\n"}, (shape, unit.text)
                lines = unit.text.split("\n")
                assert not [line for line in lines if line.startswith("ExecStartPre")], \
                    (shape, unit.text)
                (written[shape] / f"c{ord(ch):02x}-{unit.file_name}").write_text(unit.text)
    if SYSTEMD_ANALYZE is None:
        return
    for shape, directory in written.items():
        if any(directory.iterdir()):
            result = verify(directory)
            # Nothing at all: no injected command, no unknown key, no line ignored.
            assert (result.returncode, result.stdout + result.stderr) == (0, ""), shape


@pytest.mark.parametrize(("ending", "why"), [
    ("\\", "ends with a backslash (systemd would join the next line to it)"),
    (" ", "ends with a space (systemd would strip it)"),
])
def test_a_path_systemd_would_read_otherwise_is_refused(ending: str, why: str,
                                                        tmp_path: Path) -> None:
    # WorkingDirectory= and EnvironmentFile= read no escapes: a trailing backslash joins
    # the next line on (its directive is lost, without a warning), a trailing space is
    # stripped (another directory).
    (tmp_path / f"srv{ending}").mkdir()
    (tmp_path / f"web.env{ending}").write_text("TOKEN=1\n")
    cases = {"cwd": f'cwd = "srv{ending}"', "env_file": f'env_file = "web.env{ending}"'}
    for key, line in cases.items():
        toml = tmp_path / "proctui.toml"
        toml.write_text(f'[processes.web]\ncmd = "/bin/sleep 1000"\n{line}\n'.replace(
            "\\", "\\\\"))
        result = proctui("export", "systemd", cwd=tmp_path)
        assert (result.returncode, result.stdout) == (2, ""), key
        assert result.stderr == (f"proctui: error: export: process 'web': key '{key}': "
                                 f"{why}; systemd cannot hold it\n")


def test_force_never_writes_through_a_symbolic_link(project: Path) -> None:
    # A link at a unit's path, left in the output directory, pointing at a file the
    # exporting root can write: --force wrote the unit into that file.
    victim = project / "victim"
    victim.write_text("precious\n")
    units = project / "units"
    units.mkdir()
    (units / DB).symlink_to(victim)
    for force in ((), ("--force",)):
        result = proctui("export", "systemd", "-o", "units", *force, cwd=project)
        assert (result.returncode, result.stdout) == (2, ""), force
        assert result.stderr.splitlines()[-1] == (
            f"proctui: error: units/{DB}: is a symbolic link (to {str(victim)!r}); the export "
            "writes no unit through a link and replaces none, even with --force: remove the "
            "link first")
        assert victim.read_text() == "precious\n"
        assert (units / DB).is_symlink() and os.readlink(units / DB) == str(victim)
        # All or nothing, as for a file that differs.
        assert sorted(p.name for p in units.iterdir()) == [DB]


def test_force_replaces_a_unit_whole_and_leaves_its_other_names_alone(project: Path) -> None:
    # The old file is renamed over, not written into: another hard link to it (or a reader
    # holding it open) keeps the old text, and no temporary file is left behind.
    units = project / "units"
    units.mkdir()
    other = project / "other-name"
    other.write_text("# mine\n")
    os.link(other, units / DB)
    umask = os.umask(0)  # the export inherits it
    try:
        result = proctui("export", "systemd", "-o", "units", "--force", cwd=project)
    finally:
        os.umask(umask)
    assert result.returncode == 0, result.stderr
    assert other.read_text() == "# mine\n"
    assert (units / DB).read_text().startswith("# Generated by proctui export systemd")
    assert not (units / DB).samefile(other)
    assert sorted(p.name for p in units.iterdir()) == [DB, MIGRATE, WEB]
    # Not writable by the group or others, even under a umask that takes nothing away.
    assert (units / DB).stat().st_mode & 0o777 == 0o644


def test_a_pipe_at_a_units_path_is_refused_not_waited_on(project: Path) -> None:
    units = project / "units"
    units.mkdir()
    os.mkfifo(units / DB)
    result = subprocess.run([PY, "-m", "proctui", "export", "systemd", "-o", "units",
                             "--force"], cwd=project, capture_output=True, text=True,
                            timeout=20)
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1] == (
        f"proctui: error: units/{DB}: is not a regular file; the export replaces only a "
        "unit file, even with --force")


def test_a_directory_name_that_is_not_utf8_is_refused_not_a_traceback(tmp_path: Path) -> None:
    # systemd drops a line that is not UTF-8 (the process would run in /); the unit's name
    # is taken from this directory for --supervisor, where it raised UnicodeEncodeError.
    project = tmp_path / os.fsdecode(b"caf\xe9")
    project.mkdir()
    (project / "proctui.toml").write_text('[processes.web]\ncmd = "/bin/sleep 1000"\n')
    refusals = {
        ("--supervisor",): "export: the config file's directory",
        (): "export: process 'web': key 'cwd': the config file's directory",
    }
    for shape, where in refusals.items():
        result = proctui("export", "systemd", *shape, cwd=project)
        assert (result.returncode, result.stdout) == (2, ""), shape
        assert result.stderr == (f"proctui: error: {where} contains a byte that is not UTF-8 "
                                 "(\\xe9); systemd cannot hold it\n")


@needs_verify
def test_a_cwd_named_through_dot_dot_is_a_directory_systemd_takes(tmp_path: Path) -> None:
    """cwd = "../x" was written as WorkingDirectory=/base/../x, which systemd refuses
    ("path is not normalized"): the unit did not load."""
    (tmp_path / "x").mkdir()
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "proctui.toml").write_text(
        '[processes.web]\ncmd = ["/bin/echo", "hi"]\ncwd = "../x"\n')
    result = proctui("export", "systemd", "-o", "units", cwd=tmp_path / "app")
    assert result.returncode == 0, result.stderr
    unit = (tmp_path / "app" / "units" / WEB).read_text()
    assert f"WorkingDirectory={os.path.realpath(tmp_path / 'x')}\n" in unit, unit
    checked = verify(tmp_path / "app" / "units")
    assert "not normalized" not in checked.stderr, checked.stderr


def test_a_supervisor_unit_name_systemd_would_not_load_is_refused(tmp_path: Path) -> None:
    long = "c" * 250  # a file name may be 255 bytes; its unit name is 8 + 250 + 8
    (tmp_path / f"{long}.toml").write_text('[processes.web]\ncmd = ["/bin/echo", "hi"]\n')
    result = proctui("export", "systemd", "--supervisor", "-f", f"{long}.toml", cwd=tmp_path)
    assert result.returncode == 2, result.stdout
    assert result.stderr.count("\n") == 1 and "longer than 255 characters" in result.stderr
