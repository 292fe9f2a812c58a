"""stop_command: run instead of (or before) the stop signal, bounded by the same deadline,
its output marked in the pane and log, its exit status journalled and said."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from proctui.commands.kill import Kill
from proctui.commands.stop import Stop
from proctui.config import ConfigError, load_toml
from proctui.config.shell import shell_argv
from proctui.core.life import stop as m
from proctui.core.life.outcome import OutcomeKind
from proctui.core.life.stop import Phase, Policy
from proctui.frontends.words import countdown
from tests.children import POLITE, STUBBORN
from tests.conftest import alive, pyspec, wait_until


def journal(run_dir: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in
            (run_dir.path / "journal.jsonl").read_text().splitlines()]


def notices(h, name: str) -> list[str]:
    from proctui.core.output.events import Notice

    h.pump(0.05)
    return [e.text for e in h.log if isinstance(e, Notice) and e.name == name]


# -- the machine ----------------------------------------------------------------------------

def test_the_machine_runs_the_command_instead_of_the_signal():
    s = m.initial(Policy(stop_command=True, stop_timeout=5))
    s, effects = m.step(s, m.StopRequested(10.0))
    assert s.phase is Phase.STOPPING and s.command_running
    assert not any(isinstance(e, m.Send) for e in effects)
    assert isinstance(effects[0], m.StartStopCommand)
    assert m.Arm(15.0) in effects
    s, effects = m.step(s, m.StopCommandEnded(11.0))
    assert effects == () and not s.command_running  # no signal follows by default
    s, effects = m.step(s, m.DeadlineReached(15.0))
    assert s.phase is Phase.KILLING  # on_timeout applies as usual


def test_the_deadline_ends_the_command_and_then_signal_follows_it():
    p = Policy(stop_command=True, then_signal=True, stop_timeout=5)
    s, _ = m.step(m.initial(p), m.StopRequested(10.0))
    _, effects = m.step(s, m.DeadlineReached(15.0))
    assert isinstance(effects[0], m.EndStopCommand)
    assert m.Send(signal.SIGKILL, m.Reason.TIMEOUT) in effects
    s3, effects = m.step(s, m.StopCommandEnded(12.0))
    assert m.Send(signal.SIGTERM, m.Reason.STOP_REQUEST) in effects
    assert s3.deadline == 15.0  # the same deadline: nothing it does moves it
    _, effects = m.step(s, m.KillRequested(12.0))
    assert effects[0] == m.EndStopCommand("the process is being killed")


# -- config ---------------------------------------------------------------------------------

def test_config_string_list_and_then_signal(tmp_path):
    path = tmp_path / "proctui.toml"
    path.write_text('[processes.a]\ncmd = "x"\nstop_command = "curl -X POST localhost/quit"\n'
                    '[processes.b]\ncmd = "x"\nstop_command = ["nginx", "-s", "quit"]\n'
                    'stop_command_then_signal = true\n')
    a, b = load_toml(path).processes
    assert a.stop_command == shell_argv("curl -X POST localhost/quit")
    assert not a.stop_command_then_signal
    assert b.stop_command == ("nginx", "-s", "quit") and b.stop_command_then_signal
    result = subprocess.run([sys.executable, "-m", "proctui", "check", "-f", str(path)],
                            capture_output=True, text=True, timeout=60)
    assert "  stop_command   /bin/sh -c 'exec curl -X POST localhost/quit' instead of " \
           "SIGTERM" in result.stdout, result.stdout
    assert "  stop_command   nginx -s quit, then SIGTERM" in result.stdout


@pytest.mark.parametrize(("text", "said"), [
    ('stop_command = ""', "key 'stop_command': expected a command"),
    ("stop_command = []", "key 'stop_command': expected a command"),
    ("stop_command = 5", "key 'stop_command': expected a command"),
    ('stop_command = "x"\nstop_command_then_signal = "yes"',
     "key 'stop_command_then_signal': expected true or false"),
    ("stop_command_then_signal = true", "key 'stop_command_then_signal': needs a stop_command"),
])
def test_bad_stop_commands_are_one_line(tmp_path, text, said):
    path = tmp_path / "proctui.toml"
    path.write_text(f'[processes.web]\ncmd = "x"\n{text}\n')
    with pytest.raises(ConfigError) as info:
        load_toml(path)
    assert str(info.value).startswith(f"{path}: process 'web': {said}"), str(info.value)


# -- real processes ---------------------------------------------------------------------

def test_the_command_stops_it_and_its_output_is_marked(harness, run_dir):
    h = harness([pyspec("web", POLITE, stop_command=shell_argv(
        'echo "asking $MAINPID"; kill -TERM "$MAINPID"; echo asked'))], run_dir=run_dir)
    h.wait_output("web", "ready")
    pid = h.view("web").pid
    h.sup.send(Stop("web"))
    outcome = h.outcome("web")
    assert outcome.kind is OutcomeKind.STOPPED, outcome.text
    assert outcome.clean
    assert [s for s in outcome.sent if s.signal == signal.SIGTERM] == []  # not from proctui
    h.wait_notice("web", "stop command | asked")
    said = notices(h, "web")
    assert f"stop command | asking {pid}" in said
    assert any(t.startswith("stop command started; SIGKILL in 10s") for t in said), said
    assert not any("stop command exited" in t for t in said)
    wait_until(lambda: any(e.get("kind") == "stop-command" and e.get("code") == 0
                           for e in journal(run_dir)), 10, "the journal entry")
    log = (run_dir.path / "logs" / "web.log").read_text()
    assert "stop command | asked\n" in log


def test_no_signal_by_default_so_the_deadline_kills(harness):
    h = harness([pyspec("web", POLITE, stop_timeout=1.0, stop_command=("true",))])
    h.wait_output("web", "ready")
    h.sup.send(Stop("web"))
    outcome = h.outcome("web")
    assert outcome.kind is OutcomeKind.KILLED
    assert outcome.text == "killed with SIGKILL after 1s stop timeout"
    assert [s.signal for s in outcome.sent if s.signal != signal.SIGCONT] == [signal.SIGKILL]


@pytest.mark.slow
def test_a_hung_command_is_killed_with_its_group_at_the_deadline(harness, tmp_path):
    pids = tmp_path / "pids"
    hang = f'sleep 60 & echo $! > {pids}; echo $$ >> {pids}; wait'
    h = harness([pyspec("stub", STUBBORN, stop_timeout=2.0, kill_timeout=3.0,
                        stop_command=shell_argv(hang))])
    h.wait_output("stub", "ready")
    h.sup.send(Stop("stub"))
    wait_until(lambda: pids.exists() and len(pids.read_text().split()) == 2, 10, "pids")
    children = [int(p) for p in pids.read_text().split()]
    assert all(alive(p) for p in children)
    view = h.view("stub")
    if view.phase is Phase.STOPPING:  # (a starved machine may be past the deadline)
        words = countdown(view, time.monotonic())
        assert words is not None and words.text.startswith("stop command started "), words
    outcome = h.outcome("stub")
    view = h.view("stub")
    assert outcome.text == "killed with SIGKILL after 2s stop timeout", outcome.text
    assert 1.95 <= view.kill_sent_at - view.stop_requested_at < 3.5
    h.wait_notice("stub", "stop command killed (SIGKILL to its group): its deadline came")
    wait_until(lambda: not any(alive(p) for p in children), 10, "the command's group gone")


def test_then_signal_and_a_failing_command_is_said(harness, run_dir):
    h = harness([pyspec("web", POLITE, stop_command=shell_argv("echo bye; exit 1"),
                        stop_command_then_signal=True)], run_dir=run_dir)
    h.wait_output("web", "ready")
    h.sup.send(Stop("web"))
    outcome = h.outcome("web")
    assert outcome.kind is OutcomeKind.STOPPED
    assert outcome.clean
    assert signal.SIGTERM in [s.signal for s in outcome.sent]
    h.wait_notice("web", "stop command exited 1")
    h.wait_notice("web", "SIGTERM sent to process group")
    said = notices(h, "web")
    assert said.index("stop command | bye") < said.index("stop command exited 1")
    wait_until(lambda: any(e.get("kind") == "stop-command" and e.get("code") == 1
                           for e in journal(run_dir)), 10, "the journal entry")


def test_a_command_that_cannot_start_is_said_and_the_deadline_holds(harness):
    h = harness([pyspec("web", POLITE, stop_timeout=0.5, stop_command=("/nonexistent/x",),
                        stop_command_then_signal=True)])
    h.wait_output("web", "ready")
    h.sup.send(Stop("web"))
    h.wait_notice("web", "stop command failed to start")
    outcome = h.outcome("web")
    assert outcome.kind is OutcomeKind.STOPPED  # then_signal: the signal still goes


def test_a_kill_ends_the_command_too(harness):
    h = harness([pyspec("stub", STUBBORN, stop_timeout=30, stop_command=("sleep", "60"))])
    h.wait_output("stub", "ready")
    h.sup.send(Stop("stub"))
    h.wait_notice("stub", "stop command started")
    h.sup.send(Kill("stub"))
    outcome = h.outcome("stub")
    assert outcome.text.startswith("killed with SIGKILL by operator"), outcome.text
    h.wait_notice("stub", "stop command killed (SIGKILL to its group): the process is "
                          "being killed")


# -- what a stop command or a probe leaves behind (issue: "Nothing from outside stops it") --

def _escape(pidfile: Path, seconds: int) -> str:
    """Shell: a sleep in a session of its own, and wait until it is there (its pid
    written after setsid): killed before, it would have died in the group, not escaped."""
    return (f"setsid sh -c 'echo $$ > {pidfile}; exec sleep {seconds}' & "
            f"while [ ! -s {pidfile} ]; do sleep 0.01; done")


def _pids(path: Path) -> list[int]:
    return [int(x) for x in path.read_text().split()] if path.exists() else []


def test_a_stop_commands_escaped_child_is_killed_and_named(harness, tmp_path):
    """``setsid sleep 3705 & kill $MAINPID; exec sleep ...``: the sleep left the command's
    group (a session of its own) and was orphaned with ppid 1 (4 of 4). It carries the
    command's token: killed with it when the run ends first, and named. (The sleep is in
    its own session before the kill: killed sooner, it died in the group, unescaped.)"""
    escaped = tmp_path / "escaped"
    h = harness([pyspec("web", POLITE, stop_command=shell_argv(
        f'{_escape(escaped, 3705)}; kill "$MAINPID"; exec sleep 0.3'))])
    h.wait_output("web", "ready")
    h.sup.send(Stop("web"))
    outcome = h.outcome("web")
    assert outcome.kind is OutcomeKind.STOPPED, outcome.text
    wait_until(lambda: _pids(escaped), 10, "the escaped sleep's pid")
    (pid,) = _pids(escaped)
    wait_until(lambda: not alive(pid), 10, "the escaped sleep killed (read in /proc)")
    # The run ended first (its process was told to go): the command went with it.
    h.wait_notice("web", f"it left pid {pid} running outside its group: killed with it")


def test_a_stop_command_that_ends_first_has_its_escaped_child_killed_and_named(harness,
                                                                             tmp_path):
    escaped = tmp_path / "escaped"
    h = harness([pyspec("web", POLITE, stop_command=shell_argv(
        f'{_escape(escaped, 3707)}; exit 0'), stop_command_then_signal=True)])
    h.wait_output("web", "ready")
    h.sup.send(Stop("web"))
    outcome = h.outcome("web")
    assert outcome.kind is OutcomeKind.STOPPED, outcome.text
    (pid,) = _pids(escaped)
    wait_until(lambda: not alive(pid), 10, "the escaped sleep killed (read in /proc)")
    h.wait_notice("web", f"stop command left pid {pid} running outside its group: "
                         "killed with it")


def test_a_missing_stop_command_falls_back_to_the_stop_signal_and_says_so(harness):
    """As systemd does after a failed ExecStop: the stop signal goes at once (not the
    kill at the deadline, without a word), and the pane says why."""
    h = harness([pyspec("web", POLITE, stop_timeout=30, stop_command=("/nonexistent/stop",))])
    h.wait_output("web", "ready")
    started = time.monotonic()
    h.sup.send(Stop("web"))
    outcome = h.outcome("web")
    assert outcome.kind is OutcomeKind.STOPPED, outcome.text
    assert time.monotonic() - started < 10  # not the 30 s deadline's kill
    assert signal.SIGTERM in [s.signal for s in outcome.sent]
    h.wait_notice("web", "stop command failed to start (")
    said = notices(h, "web")
    assert any(t.startswith("stop command failed to start (") and
               "SIGTERM sent to process group" in t and "instead; SIGKILL in" in t
               for t in said), said


def test_a_probes_children_are_killed_after_each_attempt(harness, tmp_path):
    """``ready = { exec = "sleep 2005 & exit 1" }``: each attempt left a sleep with ppid
    1, and with setsid its group survived too. Every attempt's children, in its group or
    escaped from it, are gone once the attempt ends (read in /proc)."""
    from proctui.config.spec import ReadyCheck

    kept = tmp_path / "probe-children"
    probe = shell_argv(f'sleep 2005 & echo $! >> {kept}; '
                       f'setsid sleep 2006 & echo $! >> {kept}; exit 1')
    h = harness([pyspec("web", POLITE, ready=ReadyCheck(exec=probe, interval=0.2))])
    h.wait_output("web", "ready")
    wait_until(lambda: len(_pids(kept)) >= 6, 20, "three attempts")
    # Every attempt but the newest (perhaps still running) has ended, and its children
    # with it.
    done = _pids(kept)[:-2]
    wait_until(lambda: not any(alive(p) for p in done), 10,
               f"no child of an ended attempt alive: {[p for p in done if alive(p)]}")
    h.sup.send(Stop("web"))
    h.outcome("web")
    wait_until(lambda: not any(alive(p) for p in _pids(kept)), 10,
               "every probe's child gone after the stop")
