"""The run directory: the lock, PID files, and leftovers from an earlier run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from proctui.commands.stop import Stop
from proctui.core.life.outcome import OutcomeKind
from proctui.core.os.procfs import boot_id, read_cmdline, read_stat
from proctui.core.output.events import Notice
from proctui.core.store.rundir import PidRecord, RunDir, RunDirError
from tests.children import POLITE, STUBBORN
from tests.conftest import alive, pyspec, wait_until


def foreign(code: str) -> subprocess.Popen[bytes]:
    """A process that is not proctui's child, as a leftover from a dead run would be."""
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                         start_new_session=True)
    assert p.stdout is not None and p.stdout.readline().strip() == b"ready"
    return p


def record_for(name: str, pid: int, **changes: object) -> PidRecord:
    st = read_stat(pid)
    assert st is not None
    fields = dict(name=name, pid=pid, pgid=st.pgid, boot_id=boot_id(),
                  start_ticks=st.start_ticks, cmdline=read_cmdline(pid), started_at=time.time(),
                  proctui_pid=12345)
    fields.update(changes)
    return PidRecord(**fields)  # type: ignore[arg-type]


def notices(h) -> list[str]:
    return [e.text for e in h.log if isinstance(e, Notice)]


def test_pid_file_written_with_identity_and_removed_when_gone(harness, run_dir):
    h = harness([pyspec("web", POLITE)], run_dir=run_dir)
    h.wait_output("web", "ready")
    path = run_dir.pid_path("web")
    record = PidRecord.from_json(path.read_text())
    view = h.view("web")
    assert record.pid == view.pid and record.pgid == view.pgid
    assert record.boot_id == boot_id()
    assert record.start_ticks == read_stat(view.pid).start_ticks
    assert record.cmdline[0] == sys.executable
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    h.sup.send(Stop("web"))
    h.outcome("web")
    assert not path.exists()


def test_lock_refuses_a_second_instance(tmp_path):
    first = RunDir(tmp_path / "run")
    first.open()
    try:
        second = RunDir(tmp_path / "run")
        with pytest.raises(RunDirError, match=rf"another proctui \(pid {os.getpid()}\) is running"):
            second.open()
    finally:
        first.close()
    again = RunDir(tmp_path / "run")
    again.open()
    again.close()


def test_run_dir_refused_when_others_can_write_it(tmp_path):
    d = tmp_path / "run"
    d.mkdir(mode=0o777)
    os.chmod(d, 0o777)
    with pytest.raises(RunDirError, match="writable by others"):
        RunDir(d).open()


def test_leftover_that_is_provably_ours_is_stopped_before_its_successor_starts(harness,
                                                                              run_dir):
    old = foreign(POLITE)
    try:
        run_dir.write_pid(record_for("web", old.pid))
        h = harness([pyspec("web", POLITE, stop_timeout=5)], run_dir=run_dir)
        leftover = h.outcome("web (leftover)")
        assert leftover.kind is OutcomeKind.STOPPED
        assert leftover.pid == old.pid
        assert "exit status unknown (not a child of this proctui)" in leftover.text
        h.wait_notice("web (leftover)", "leftover from an earlier run")
        h.wait_output("web", "ready")
        assert h.view("web").pid != old.pid
        assert PidRecord.from_json(run_dir.pid_path("web").read_text()).pid == h.view("web").pid
        texts = notices(h)
        started = next(i for i, t in enumerate(texts) if t.startswith("started (pid"))
        stopped = next(i for i, t in enumerate(texts) if t.startswith("stopped after"))
        assert stopped < started, "the successor started before its leftover was gone"
    finally:
        old.kill()
        old.wait()


def test_leftover_that_ignores_term_is_killed_with_the_countdown(harness, run_dir):
    old = foreign(STUBBORN)
    try:
        run_dir.write_pid(record_for("worker", old.pid))
        h = harness([pyspec("worker", POLITE, stop_timeout=0.5)], run_dir=run_dir)
        outcome = h.outcome("worker (leftover)")
        assert outcome.text == "killed with SIGKILL after 0.5s stop timeout"
        wait_until(lambda: old.poll() is not None)
        assert old.returncode == -signal.SIGKILL
        h.wait_output("worker", "ready")
    finally:
        old.kill()
        old.wait()


def test_leftover_left_running_blocks_a_second_copy(harness, run_dir):
    from proctui.config import OnTimeout

    old = foreign(STUBBORN)
    try:
        run_dir.write_pid(record_for("db", old.pid))
        h = harness([pyspec("db", POLITE, stop_timeout=0.3, on_timeout=OnTimeout.ABANDON)],
                    run_dir=run_dir)
        assert h.outcome("db (leftover)").kind is OutcomeKind.ABANDONED
        h.wait_notice("db", "not started: its leftover")
        h.wait_all_ended()
        assert h.view("db").pid is None
        assert alive(old.pid)
        assert run_dir.pid_path("db").exists()
    finally:
        old.kill()
        old.wait()


def test_reused_pid_is_left_alone(harness, run_dir):
    stranger = foreign(POLITE)
    try:
        st = read_stat(stranger.pid)
        run_dir.write_pid(record_for("web", stranger.pid, start_ticks=st.start_ticks - 100))
        h = harness([pyspec("web", POLITE)], run_dir=run_dir)
        h.wait_notice(None, "that pid now belongs to another process; left it alone")
        h.wait_output("web", "ready")
        assert alive(stranger.pid)
        assert stranger.poll() is None
        assert [v.name for v in h.sup.snapshot().views] == ["web"]
    finally:
        stranger.kill()
        stranger.wait()


def test_pid_file_of_a_dead_process_is_removed(harness, run_dir):
    gone = subprocess.Popen(["true"])
    gone.wait()
    run_dir.write_pid(PidRecord("web", gone.pid, gone.pid, boot_id(), 1, ["true"],
                                time.time(), 1))
    h = harness([pyspec("web", POLITE)], run_dir=run_dir)
    h.wait_notice(None, "that process is gone; removed the stale file")
    h.wait_output("web", "ready")


@pytest.mark.parametrize("content", [b"not json at all", b'{"pid": "12"}', b"\xff\xfe",
                                     b'{"name": "web", "pid": 1}', b""])
def test_garbage_pid_file_is_reported_not_a_crash(harness, run_dir, content):
    path = run_dir.pid_path("web")
    path.write_bytes(content)
    h = harness([pyspec("web", POLITE)], run_dir=run_dir)
    h.wait_notice(None, "unreadable PID file")
    h.wait_output("web", "ready")
    assert h.view("web").phase.value == "running"


def test_symlinked_pid_file_is_not_followed(harness, run_dir, tmp_path):
    target = tmp_path / "elsewhere"
    target.write_text("{}")
    os.symlink(target, run_dir.pid_path("web"))
    h = harness([pyspec("other", POLITE)], run_dir=run_dir)
    h.wait_notice(None, "unreadable PID file: a symlink")


def test_a_changed_command_line_is_a_hint_not_a_reason_to_start_a_second_copy(harness,
                                                                              run_dir):
    """Identity is the boot id, the start time and the group, which a process cannot
    change; a program that re-execs or retitles itself is still the leftover."""
    leftover = foreign(POLITE)
    try:
        run_dir.write_pid(record_for("web", leftover.pid, cmdline=["something", "else"]))
        h = harness([pyspec("web", POLITE)], run_dir=run_dir)
        h.wait_notice("web (leftover)", "its command line changed since")
        outcome = h.outcome("web (leftover)")
        assert outcome.kind is OutcomeKind.STOPPED, outcome.text
        assert leftover.wait(timeout=10) == 0
        h.wait_output("web", "ready")
    finally:
        if leftover.poll() is None:
            leftover.kill()
        leftover.wait()


def test_pid_file_records_the_command_line_the_process_settles_on(harness, run_dir):
    from proctui.config import shell_argv
    from tests.conftest import spec

    cmd = f"{sys.executable} -c 'import time; print(\"ready\", flush=True); time.sleep(60)'"
    h = harness([spec("web", cmd, argv=shell_argv(cmd))], run_dir=run_dir)
    h.wait_output("web", "ready")
    wait_until(lambda: PidRecord.from_json(run_dir.pid_path("web").read_text()).cmdline[:1]
               == [sys.executable], what="the exec'd command line in the PID file")
