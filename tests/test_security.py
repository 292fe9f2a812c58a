"""Attacks on what proctui trusts: the run directory and its parents, PID files that lie,
files that are symlinks or FIFOs, and commands that carry terminal escapes. proctui must
refuse, or hold, and never signal a process it cannot prove is its own."""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from proctui.commands.stop import Stop
from proctui.core.life.outcome import OutcomeKind
from proctui.core.life.stop import Phase
from proctui.core.os.procfs import read_stat
from proctui.core.store.rundir import RunDir, RunDirError
from tests.children import POLITE, STUBBORN
from tests.conftest import alive, pyspec, spec, wait_until
from tests.test_rundir import foreign, record_for

NOBODY = 65534
needs_root = pytest.mark.skipif(os.getuid() != 0, reason="needs root to give files away")


def cli(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None,
        timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "proctui", *args], capture_output=True,
                          text=True, timeout=timeout, env={**os.environ, **(env or {})},
                          cwd=cwd)


# -- the run directory and the path to it --------------------------------------------------

@needs_root
def test_a_parent_another_user_owns_is_refused(tmp_path):
    """Another user who owns $XDG_RUNTIME_DIR/proctui could swap one project's run
    directory for another's and make proctui stop that project's processes."""
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700)
    theirs = runtime / "proctui"
    theirs.mkdir(mode=0o755)
    os.chown(theirs, NOBODY, NOBODY)
    with pytest.raises(RunDirError, match=rf"{theirs} is owned by uid {NOBODY}"):
        RunDir(theirs / "project-1234").open()
    # The same through the default path, end to end: one line, exit 2.
    result = cli("run", "--headless", "a=true", env={"XDG_RUNTIME_DIR": str(runtime)})
    assert result.returncode == 2
    assert result.stderr.startswith("proctui: error: run directory ") and \
        f"owned by uid {NOBODY}" in result.stderr and result.stderr.count("\n") == 1


@pytest.mark.parametrize(("mode", "refused"), [(0o777, True), (0o775, True), (0o1777, False),
                                               (0o755, False)])
def test_a_parent_others_can_write_is_refused_unless_sticky(tmp_path, mode, refused):
    parent = tmp_path / "shared"
    parent.mkdir()
    os.chmod(parent, mode)
    os.chown(parent, os.getuid(), 12345)  # a group that is not ours alone
    d = RunDir(parent / "run")
    if refused:
        with pytest.raises(RunDirError, match="writable by"):
            d.open()
    else:
        d.open()
        d.close()


def test_a_run_dir_given_as_a_symlink_to_a_directory_is_used(tmp_path):
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    (tmp_path / "link").symlink_to(real)
    result = cli("run", "--headless", "--run-dir", str(tmp_path / "link"), "a=echo fine")
    assert result.returncode == 0, result.stderr
    assert (real / "lock").exists()


@pytest.mark.parametrize("kind", ["fifo", "directory", "symlink"])
def test_a_lock_file_that_is_not_a_file_is_one_line(tmp_path, kind):
    run = tmp_path / "run"
    run.mkdir(mode=0o700)
    if kind == "fifo":
        os.mkfifo(run / "lock")
    elif kind == "directory":
        (run / "lock").mkdir()
    else:
        (tmp_path / "target").write_text("")
        (run / "lock").symlink_to(tmp_path / "target")
    result = cli("run", "--headless", "--run-dir", str(run), "a=true", timeout=20)
    assert result.returncode == 2, result.stdout
    assert result.stderr.startswith("proctui: error: lock file ") and \
        result.stderr.count("\n") == 1, result.stderr


@pytest.mark.parametrize("kind", ["fifo", "directory"])
def test_a_pid_file_that_is_a_fifo_or_a_directory_does_not_hang_or_crash(tmp_path, kind):
    run = tmp_path / "run"
    run.mkdir(mode=0o700)
    if kind == "fifo":
        os.mkfifo(run / "web.pid")
    else:
        (run / "web.pid").mkdir()
    started = time.monotonic()
    result = cli("run", "--headless", "--run-dir", str(run), "web=echo hello", timeout=30)
    assert time.monotonic() - started < 20
    assert "Traceback" not in result.stderr, result.stderr
    assert "web.pid: unreadable PID file: not a regular file" in result.stdout
    assert re.search(r"^web +\| hello$", result.stdout, re.MULTILINE)


# -- PID files that lie -------------------------------------------------------------------

def test_a_pid_file_with_an_edited_group_is_held_and_nobody_is_signalled(harness, run_dir):
    """pid, start time and command line match a real leftover, but the group was edited
    to a stranger's: signalling that group would hit the stranger."""
    leftover = foreign(STUBBORN)
    stranger = foreign(STUBBORN)
    try:
        run_dir.write_pid(record_for("web", leftover.pid, pgid=stranger.pid))
        h = harness([pyspec("web", POLITE)], run_dir=run_dir, interactive=False)
        outcome = h.outcome("web (leftover)")
        assert outcome.kind is OutcomeKind.HELD, outcome.text
        assert "the file was edited" in outcome.text
        assert f"pid {leftover.pid} left running" in outcome.text
        h.wait_notice("web", "not started: its leftover")
        time.sleep(0.3)  # nothing to await: prove that nothing was sent
        assert leftover.poll() is None and stranger.poll() is None
        assert not any(s.signal for s in outcome.sent)
    finally:
        for p in (leftover, stranger):
            p.kill()
            p.wait()


def test_a_held_leftover_waits_for_the_operator_who_can_stop_it(harness, run_dir):
    leftover = foreign(POLITE)
    stranger = foreign(POLITE)
    try:
        run_dir.write_pid(record_for("web", leftover.pid, pgid=stranger.pid))
        h = harness([pyspec("web", POLITE)], run_dir=run_dir, interactive=True)
        wait_until(lambda: h.view("web (leftover)").phase is Phase.HELD, what="held")
        assert "the file was edited" in h.view("web (leftover)").held
        assert h.view("web").pid is None, "no second copy while it is held"
        reply = h.sup.send(Stop("web (leftover)")).result(timeout=5)
        assert reply.ok
        # The operator vouched for it: its own group (pid = group) is stopped, and
        # still never the group the file named.
        outcome = h.outcome("web (leftover)")
        assert outcome.kind is OutcomeKind.STOPPED, outcome.text
        h.wait_output("web", "ready")
        assert stranger.poll() is None
    finally:
        for p in (leftover, stranger):
            if p.poll() is None:
                p.kill()
            p.wait()


def test_a_pid_file_with_a_nan_time_still_proves_its_process(harness, run_dir):
    old = foreign(POLITE)
    try:
        path = run_dir.write_pid(record_for("web", old.pid))
        path.write_text(path.read_text().replace('"started_at": ', '"started_at": NaN, "x": '))
        h = harness([pyspec("web", POLITE)], run_dir=run_dir)
        assert h.outcome("web (leftover)").kind is OutcomeKind.STOPPED
        h.wait_output("web", "ready")
        assert old.wait(timeout=10) == 0
    finally:
        if old.poll() is None:
            old.kill()
        old.wait()


def test_the_output_file_is_never_written_through_a_symlink(tmp_path):
    """An abandoned process's output goes to RUN_DIR/NAME.out after proctui exits; a
    symlink planted there must not redirect it into another file."""
    run = tmp_path / "run"
    run.mkdir(mode=0o700)
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    (run / "chatty.out").symlink_to(victim)
    code = ("import signal,time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
            "while True:\n    print('tick', flush=True); time.sleep(0.05)\n")
    result = cli("run", "--headless", "--run-dir", str(run), "--stop-after", "0.5",
                 "--stop-timeout", "0.2", "--on-timeout", "abandon",
                 f"chatty={sys.executable} -c {shlex.quote(code)}")
    assert result.returncode == 3, result.stdout
    pid = int(result.stdout.split("chatty: started (pid ")[1].split(")")[0])
    try:
        time.sleep(0.5)  # the process goes on printing; nothing may reach the victim
        assert victim.read_text() == "precious\n"
        assert alive(pid), "with nowhere to write, its output is still drained"
    finally:
        os.kill(pid, signal.SIGKILL)


# -- proctui's own lines ----------------------------------------------------------------

def test_a_command_with_escapes_is_shown_escaped_never_obeyed(tmp_path, harness):
    title = "\x1b]2;pwned\x07\x1b[2J\x9b31m"
    h = harness([spec("web", f"echo hi # {title}")])
    h.wait_output("web", "hi")
    started = next(line for line in h.sup.output.buffer("web").read(0).lines
                   if line.startswith("started"))
    assert "\x1b" not in started and "\x9b" not in started and "\x07" not in started
    assert "\\x1b]2;pwned\\x07\\x1b[2J\\x9b31m" in started
    result = cli("run", "--headless", "--run-dir", str(tmp_path / "run"),
                 f"web=echo hi # {title}")
    assert "\x1b" not in result.stdout and "\\x1b]2;pwned" in result.stdout


def test_process_output_escapes_never_reach_the_terminal_in_headless_mode(tmp_path):
    noisy = ("import sys\nsys.stdout.write('\\x1b[2J\\x1b[H\\x1b[?25l\\x1b]2;title\\x07"
             "\\x1b]52;c;cHduZWQ=\\x07\\x1b[?1049h\\x1b[?1000h\\x9b2J"
             "\\x1b[31mred\\x1b[0m ok\\n')\n")
    result = cli("run", "--headless", "--run-dir", str(tmp_path / "run"),
                 f"noisy={sys.executable} -c {shlex.quote(noisy)}")
    line = next(x for x in result.stdout.splitlines() if x.startswith("noisy "))
    assert line == "noisy   | red ok", repr(line)  # not a terminal: no colour either


def test_a_pid_file_for_a_stranger_whose_start_time_matches_only_by_pid_reuse(harness,
                                                                              run_dir):
    """A recorded pid now belongs to a process started later: never touched."""
    stranger = foreign(POLITE)
    try:
        st = read_stat(stranger.pid)
        run_dir.write_pid(record_for("web", stranger.pid, start_ticks=st.start_ticks - 1))
        h = harness([pyspec("web", POLITE)], run_dir=run_dir)
        h.wait_output("web", "ready")
        assert stranger.poll() is None
    finally:
        stranger.kill()
        stranger.wait()
