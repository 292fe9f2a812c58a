"""Things broken on purpose: proctui killed, terminals that stall, processes that
misbehave, a machine that pushes back. Each with real processes."""

from __future__ import annotations

import errno
import json
import os
import re
import resource
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from proctui.commands.stop import Stop
from proctui.commands.stop_all import StopAll
from proctui.config import RestartPolicy
from proctui.core.life.outcome import OutcomeKind, exit_status_for
from proctui.core.life.stop import Phase
from proctui.core.os.oslayer import OSLayer
from proctui.core.store.rundir import RunDir
from tests.children import POLITE, STUBBORN
from tests.conftest import PY, alive, outcomes, pyspec, spec, wait_until
from tests.test_hangup import OnPty, handles_term

# The real console on a pty, the wheel, ssh or hundreds of processes: the second
# CI stage (README: "Tests").
pytestmark = pytest.mark.slow


def py(code: str) -> str:
    return f"{PY} -c {shlex.quote(code)}"


def pid_of(run_dir: Path, name: str, timeout: float = 20.0) -> int:
    path = run_dir / f"{name}.pid"
    wait_until(path.exists, timeout=timeout, what=f"{name}'s PID file")
    return int(json.loads(path.read_text())["pid"])


# -- proctui itself killed ------------------------------------------------------------------

QUIET = ("import signal,sys,time\n"
         "signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))\n"
         "while True: time.sleep(0.05)\n")


def test_proctui_killed_then_the_next_run_recovers_its_leftovers(tmp_path):
    """proctui killed with SIGKILL leaves its children running (each is in its own
    session). The next run on the same run directory proves they are the same processes,
    stops them with the normal sequence, and only then starts new copies."""
    run_dir = tmp_path / "run"
    args = [sys.executable, "-m", "proctui", "run", "--headless", "--run-dir", str(run_dir),
            "--stop-timeout", "3", f"web={py(QUIET)}"]
    first = subprocess.Popen(args, stdout=subprocess.DEVNULL, start_new_session=True)
    old = pid_of(run_dir, "web")
    wait_until(lambda: handles_term(old), what="the handler")
    # The shell execs python: the PID file is rewritten with the settled command line.
    wait_until(lambda: json.loads((run_dir / "web.pid").read_text())["cmdline"][0] == PY,
               what="the PID file to settle")
    first.kill()
    first.wait()
    assert alive(old), "the child should outlive a SIGKILLed proctui"

    second = subprocess.Popen(args, stdout=subprocess.PIPE, text=True, start_new_session=True)
    lines: list[str] = []
    assert second.stdout is not None
    for line in second.stdout:
        lines.append(line)
        if "web: started (pid" in line:
            break
    new = pid_of(run_dir, "web")
    assert new != old
    assert not alive(old)
    second.send_signal(signal.SIGINT)
    out, _ = second.communicate(timeout=30)
    text = "".join(lines) + out
    assert second.returncode == 0, text
    assert f"web (leftover): leftover from an earlier run (pid {old}" in text
    assert re.search(r"web \(leftover\): stopped after \d+\.\ds: exit status unknown", text)
    leftover_done = text.index("web (leftover): stopped after")
    assert leftover_done < text.index("web: started (pid"), "a second copy ran alongside"


# -- the terminal stalls --------------------------------------------------------------------

def test_a_stalled_terminal_does_not_delay_the_kill(tmp_path):
    noted = tmp_path / "term"
    stub = (f"import signal,time\n"
            f"def note(*a): open({str(noted)!r}, 'w').write(repr(time.monotonic()))\n"
            "signal.signal(signal.SIGTERM, note)\n"
            "while True: print('x' * 70, flush=True); time.sleep(0.001)\n")
    console = OnPty(tmp_path, "--stop-timeout", "1", f"stub={py(stub)}")
    try:
        pid = pid_of(console.run_dir, "stub")
        wait_until(lambda: handles_term(pid), what="the handler")
        for _ in range(20):
            console.read(0.05)
        os.write(console.master, b"q")
        # Stop reading the terminal for longer than the stop timeout: the pty fills up
        # and the console's writes block.
        wait_until(noted.exists, what="SIGTERM to reach the stub")
        wait_until(lambda: not alive(pid), timeout=10, what="the kill")
        died = time.monotonic()
        late = died - (float(noted.read_text()) + 1.0)
        assert late < 0.5, f"SIGKILL {late:.3f}s after its deadline"
        # The console catches up once the terminal is read again, and exits.
        deadline = time.monotonic() + 30
        while console.proc.poll() is None and time.monotonic() < deadline:
            console.read(0.05)
        assert console.proc.returncode == 1
    finally:
        if console.proc.poll() is None:
            console.proc.kill()
            console.proc.wait()
        os.close(console.master)


# -- processes that misbehave ---------------------------------------------------------------

def test_child_that_closes_stdout_keeps_running_and_stops(harness):
    code = ("import os,signal,sys,time\n"
            "signal.signal(signal.SIGTERM, lambda *a: os._exit(0))\n"
            "print('closing', flush=True)\nos.close(1); os.close(2)\n"
            "while True: time.sleep(0.05)\n")
    h = harness([pyspec("mute", code)])
    h.wait_output("mute", "closing")
    # Its pipes reach EOF: wait until the core has seen that, then it must still run.
    pipes = h.sup._engine.executor.handles["mute"].pipes
    wait_until(lambda: not pipes.open, what="the pipes to close")
    assert h.view("mute").phase is Phase.RUNNING
    h.sup.send(Stop("mute"))
    assert h.outcome("mute").text.endswith(": exit code 0")


def test_child_that_daemonizes_inside_its_group_is_still_supervised(harness):
    code = ("import os,sys,time\n"
            "if os.fork():\n    os._exit(0)\n"
            "print('daemon', os.getpid(), flush=True)\n"
            "while True: time.sleep(0.05)\n")
    h = harness([pyspec("daemon", code, stop_timeout=5)])
    h.wait_output("daemon", "daemon")
    daemon = int(next(line for line in h.output("daemon") if line.startswith("daemon")).split()[1])
    # The parent left (seen by the core), the group did not: the run goes on.
    wait_until(lambda: h.sup._engine.table.get("daemon").run.exit is not None)
    h.pump(0.2)
    assert h.view("daemon").phase is Phase.RUNNING
    h.sup.send(Stop("daemon"))
    outcome = h.outcome("daemon")
    assert outcome.kind is OutcomeKind.STOPPED
    assert not alive(daemon)


def test_child_that_leaves_its_group_is_stopped_with_its_run(harness):
    """A child that left the group (setsid) is still the run's: found in proctui's tree,
    it gets the stop signal with the group, and the stop is clean only once it is gone."""
    code = ("import os,sys,time\n"
            "if os.fork() == 0:\n"
            "    os.setsid(); print('escaped', os.getpid(), flush=True); time.sleep(60)\n"
            "    os._exit(0)\n"
            "import signal\nsignal.signal(signal.SIGTERM, lambda *a: sys.exit(0))\n"
            "while True: time.sleep(0.05)\n")
    h = harness([pyspec("sly", code)])
    h.wait_output("sly", "escaped")
    escaped = int(next(x for x in h.output("sly") if x.startswith("escaped")).split()[1])
    h.sup.send(Stop("sly"))
    outcome = h.outcome("sly")
    assert outcome.kind is OutcomeKind.STOPPED, outcome.text
    assert outcome.left_behind == ()
    assert outcome.clean and exit_status_for([outcome]) == 0
    assert not alive(escaped)
    assert signal.SIGTERM in [s.signal for s in outcome.sent]


class ExitsBeforeTheKill(OSLayer):
    """The child ends on its own between the deadline and the SIGKILL: the OS cannot be
    made to hit that instant, so this fake ends it and answers ESRCH, as the kernel
    would."""

    def signal_group(self, pgid: int, sig: int) -> None:
        if sig == signal.SIGKILL:
            os.killpg(pgid, signal.SIGUSR1)
            wait_until(lambda: not self.group_alive(pgid), what="the child to go")
            raise ProcessLookupError(3, "No such process")
        super().signal_group(pgid, sig)


def test_child_that_exits_between_the_timeout_and_the_kill(harness):
    h = harness([pyspec("racer", STUBBORN, stop_timeout=0.5)], os_layer=ExitsBeforeTheKill())
    h.wait_output("racer", "ready")
    h.sup.send(Stop("racer"))
    outcome = h.outcome("racer")
    assert outcome.kind is OutcomeKind.STOPPED, outcome.text
    assert outcome.text.endswith(": killed by SIGUSR1")
    assert signal.SIGKILL not in [s.signal for s in outcome.sent]


# -- the machine pushes back ----------------------------------------------------------------

def test_file_descriptor_limit_while_spawning(tmp_path):
    def low_limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (48, 48))

    commands = [f"p{i}=sleep 60" for i in range(20)]
    result = subprocess.run(
        [sys.executable, "-m", "proctui", "run", "--headless", "--stop-after", "2",
         "--run-dir", str(tmp_path / "run"), *commands],
        capture_output=True, text=True, timeout=60, preexec_fn=low_limit)
    assert "Traceback" not in result.stderr, result.stderr
    summary = result.stdout[result.stdout.index("summary:"):]
    failed = re.findall(r"\| +p\d+ +failed to start: \[Errno 24\] Too many open files",
                        summary)
    stopped = re.findall(r"\| +p\d+ +stopped after", summary)
    assert failed, result.stdout[-2000:]
    assert stopped, "the processes that did start must still be supervised"
    assert len(failed) + len(stopped) == 20
    assert result.returncode == 1


def test_run_dir_deleted_during_the_run(harness, run_dir):
    h = harness([pyspec("web", POLITE)], run_dir=run_dir)
    h.wait_output("web", "ready")
    shutil.rmtree(run_dir.path)
    h.sup.send(Stop("web"))
    assert h.outcome("web").kind is OutcomeKind.STOPPED


class FullRunDir(RunDir):
    """A full disk cannot be had on demand (and root writes anywhere): this run
    directory answers ENOSPC to every PID file, as a full one would."""

    def write_pid(self, record):  # type: ignore[no-untyped-def]
        raise OSError(errno.ENOSPC, "No space left on device")


def test_run_dir_full_is_a_warning_and_processes_stay_supervised(harness, tmp_path):
    full = FullRunDir(tmp_path / "full")
    full.open()
    try:
        h = harness([pyspec("web", POLITE)], run_dir=full)
        h.wait_notice("web", "warning: cannot write PID file")
        h.wait_notice("web", "No space left on device")
        h.wait_output("web", "ready")
        h.sup.send(Stop("web"))
        assert h.outcome("web").kind is OutcomeKind.STOPPED
    finally:
        full.close()


def test_pid_file_edited_or_deleted_during_the_run(harness, run_dir):
    h = harness([pyspec("a", POLITE), pyspec("b", POLITE)], run_dir=run_dir)
    h.wait_output("a", "ready")
    h.wait_output("b", "ready")
    run_dir.pid_path("a").unlink()
    run_dir.pid_path("b").write_text("garbage")
    h.sup.send(StopAll())
    h.wait_all_ended()
    assert all(o.kind is OutcomeKind.STOPPED for _, o in h.sup.snapshot().final())
    assert not run_dir.pid_path("b").exists()


def test_run_dir_owned_by_another_user_is_refused(tmp_path):
    from proctui.core.store.rundir import RunDir, RunDirError

    if os.getuid() != 0:
        pytest.skip("needs root to give a directory away")
    d = tmp_path / "theirs"
    d.mkdir(mode=0o700)
    os.chown(d, 65534, 65534)
    with pytest.raises(RunDirError, match="owned by uid 65534"):
        RunDir(d).open()


def test_hostile_names_and_commands(tmp_path):
    (tmp_path / "a-file").write_text("")
    (tmp_path / "proctui.toml").write_text(
        '[processes."web server"]\ncmd = "echo spaces"\n'
        '[processes."日本語"]\ncmd = "echo unicode"\n'
        '[processes."a;b|c$(x)"]\ncmd = ["echo", "$(not run)", ";", "|"]\n'
        '[processes."[/bold]"]\ncmd = "echo markup"\n'
        '[processes.nope]\ncmd = "no-such-program-here"\n')
    result = subprocess.run(
        [sys.executable, "-m", "proctui", "run", "--headless", "--run-dir",
         str(tmp_path / "run")], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert result.returncode == 1, result.stdout
    out = result.stdout
    assert "web server | spaces" in out
    assert "日本語" in out and "unicode" in out
    assert re.search(r"^a;b\|c\$\(x\) +\| \$\(not run\) ; \|$", out, re.MULTILINE)
    assert "[/bold]" in out and "markup" in out
    assert "nope: failed to start: [Errno 2] No such file or directory: 'no-such-program-here'" \
        in out
    assert "Traceback" not in result.stderr


# -- long life ------------------------------------------------------------------------------

def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_soak_restarting_processes_leak_nothing(harness):
    import threading

    fds0, threads0 = _fds(), threading.active_count()
    specs = [spec(f"r{i}", "sleep 0.05; exit 1", restart=RestartPolicy.ON_FAILURE)
             for i in range(50)]
    h = harness(specs)
    wait_until(lambda: sum(v.restarts for v in h.sup.snapshot().views) >= 100, timeout=60,
               what="100 restarts")
    rss = _rss()
    # 200: four restarts each, 15 s of backoff (1, 2, 4, 8 s); a fifth would double it.
    wait_until(lambda: sum(v.restarts for v in h.sup.snapshot().views) >= 200, timeout=120,
               what="200 restarts")
    # While running: at most a pidfd and two pipes per live run, plus the core's own.
    # Two pipes, a pidfd and a notify socket per live run, plus the core's own.
    assert _fds() <= fds0 + 4 * 50 + 10, "file descriptors pile up"
    assert threading.active_count() <= threads0 + 1  # the core thread
    assert _rss() < rss + 20 * 1024
    h.sup.send(StopAll())
    h.wait_all_ended(timeout=60)
    wait_until(lambda: _fds() <= fds0 + 5, timeout=10, what="pipes to close at EOF")
    views = h.sup.snapshot().views
    runs = sum(v.restarts + 1 for v in views)
    assert len(outcomes(h.sup)) == runs, "every run has exactly one outcome"
    # Once all have ended, only the core loop's own descriptors remain.
    assert _fds() <= fds0 + 5, "file descriptors leak"


def _rss() -> int:
    text = Path("/proc/self/status").read_text()
    return int(re.search(r"VmRSS:\s+(\d+)", text).group(1))
