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
