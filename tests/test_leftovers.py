"""proctui itself killed at awkward moments: the next run must find everything it left,
prove it, stop it, and never start a second copy alongside."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from proctui.core.life.outcome import OutcomeKind
from proctui.core.os.procfs import boot_id, read_cmdline, read_stat, scan_all
from proctui.core.store.pidfile import PidRecord
from tests.conftest import PY, alive, processes_with_token, pyspec, wait_until


def start(run_dir: Path, *commands: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "proctui", "run", "--headless",
                             "--run-dir", str(run_dir), "--stop-timeout", "3", *commands],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


def record(run_dir: Path, name: str,
           proc: subprocess.Popen[str] | None = None) -> dict[str, object]:
    stem = name if not name.startswith(".") else "%2E" + name[1:]
    path = run_dir / f"{stem}.pid"
    try:
        wait_until(path.exists, timeout=30, what=f"{name}'s PID file")
    except AssertionError:
        if proc is not None and proc.poll() is not None:
            out, err = proc.communicate(timeout=5)
            raise AssertionError(f"proctui exited {proc.returncode}: {out[-1500:]!r} "
                                 f"{err[-1500:]!r}") from None
        raise
    return json.loads(path.read_text())


def second_run(run_dir: Path, *commands: str) -> str:
    proc = start(run_dir, *commands)
    time.sleep(0.5)
    lines = []
    assert proc.stdout is not None
    for line in proc.stdout:
        lines.append(line)
        if re.search(r"\| \S+: started \(pid", line) and "leftover" not in line:
            break
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=30)
    return "".join(lines) + out


def test_the_rest_of_a_group_whose_leader_died_is_recovered_not_doubled(tmp_path,
                                                                       child_reaper):
    """The leader died, a member of its group lives on, proctui is SIGKILLed: the PID
    file covers the whole group, so the next run stops the survivor before it starts
    the process again."""
    run_dir = tmp_path / "run"
    first = start(run_dir, "svc=sleep 306 & echo member $!; exec sleep 300")
    leader = int(record(run_dir, "svc", first)["pid"])
    member = None

    def member_recorded() -> bool:
        nonlocal member
        members = record(run_dir, "svc")["members"]
        if members:
            member = members[0][0]
        return bool(members)

    # Not before the shell has started the member: killed sooner, it has no group left
    # (CI once killed it first and waited 30 s for a PID file rightly removed).
    wait_until(lambda: any(st.pgid == leader and st.pid != leader and st.live
                           for st in scan_all().stats.values()), what="the member")
    os.kill(leader, signal.SIGKILL)  # the leader dies; its group does not
    wait_until(member_recorded, what="the survivor to be recorded in the PID file")
    assert alive(member) and read_stat(member).pgid == leader
    first.kill()
    first.wait()
    out = second_run(run_dir, "svc=sleep 306 & echo member $!; exec sleep 300")
    assert "svc (leftover): leftover from an earlier run" in out, out
    assert re.search(r"svc \(leftover\): stopped after \d\.\ds", out), out
    assert out.index("svc (leftover): stopped after") < out.index("| svc: started (pid"), \
        "a second copy started while the first lived"
    assert not alive(member)
    for pid in processes_with_token(child_reaper):
        os.kill(pid, signal.SIGKILL)


def test_a_name_starting_with_a_dot_is_found_as_a_leftover(tmp_path, child_reaper):
    run_dir = tmp_path / "run"
    first = start(run_dir, ".hidden=exec sleep 300")
    old = int(record(run_dir, ".hidden")["pid"])
    first.kill()
    first.wait()
    out = second_run(run_dir, ".hidden=exec sleep 300")
    assert ".hidden (leftover): leftover from an earlier run" in out, out
    assert not alive(old)


def test_a_program_that_execs_after_proctui_died_is_still_its_leftover(tmp_path,
                                                                      child_reaper):
    """proctui is killed within 0.3 s of the spawn, before the PID file can follow the
    program's exec: the command line no longer matches, the start time and group do."""
    run_dir = tmp_path / "run"
    later = ("import os,sys,time\ntime.sleep(1.0)\n"
             "os.execv(sys.executable, [sys.executable, '-c', 'import time; time.sleep(300)'])\n")
    cmd = f"{PY} -c {shlex.quote(later)}"
    first = start(run_dir, f"slow={cmd}")
    rec = record(run_dir, "slow")
    old = int(rec["pid"])
    first.kill()
    first.wait()
    wait_until(lambda: read_cmdline(old) != rec["cmdline"], what="the exec")
    out = second_run(run_dir, f"slow={cmd}")
    assert "its command line changed since" in out, out
    assert re.search(r"slow \(leftover\): stopped after", out), out
    assert not alive(old)
    assert out.index("slow (leftover): stopped after") < out.index("| slow: started (pid")


def test_survivors_no_record_proves_are_held_and_their_successor_waits(harness, run_dir):
    """The leader is gone and unknown processes live in its group: maybe its own, maybe
    not. proctui signals nothing and starts no second copy."""
    holder = subprocess.Popen(["/bin/sh", "-c", "sleep 300 & echo $!; read x"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                              start_new_session=True)
    assert holder.stdout is not None
    member = int(holder.stdout.readline())
    st = read_stat(holder.pid)
    cmdline = read_cmdline(holder.pid)
    holder.stdin.close()  # the leader (sh) ends; its member sleeps on
    holder.wait(timeout=10)
    try:
        run_dir.write_pid(PidRecord("db", holder.pid, holder.pid, boot_id(), st.start_ticks,
                                    cmdline, time.time(), 1, sid=holder.pid))
        h = harness([pyspec("db", "print('ready')")], run_dir=run_dir, interactive=False)
        outcome = h.outcome("db (leftover)")
        assert outcome.kind is OutcomeKind.HELD, outcome.text
        assert f"{member} live on in its group" in outcome.text
        h.wait_notice("db", "not started: its leftover")
        assert alive(member)
    finally:
        os.kill(member, signal.SIGKILL)


@pytest.mark.slow
def test_a_copy_waiting_for_its_leftover_says_so(tmp_path):
    """While its leftover from a killed proctui was being stopped, the new copy said only
    "starting" (status, why, the console's row), for as long as that took."""
    from tests.children import STUBBORN
    from tests.test_hangup import handles_term

    run_dir = tmp_path / "run"
    args = [sys.executable, "-m", "proctui", "run", "--headless", "--run-dir", str(run_dir),
            "--stop-timeout", "60", f"web={shlex.join([PY, '-c', STUBBORN])}"]
    first = subprocess.Popen(args, stdout=subprocess.DEVNULL, start_new_session=True)
    old = int(record(run_dir, "web", None)["pid"])  # type: ignore[call-overload]
    second = None
    try:
        wait_until(lambda: json.loads((run_dir / "web.pid").read_text())["cmdline"][0] == PY,
                   what="the PID file to settle")
        # Its SIGTERM ignored before proctui goes: else the next run's stop ends it at
        # once, and the copy waits for it too briefly to be seen waiting (a loaded CI).
        wait_until(lambda: handles_term(old), what="the handler")
        first.kill()
        first.wait()
        second = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                  start_new_session=True)

        def said(*command: str) -> str:
            return subprocess.run([sys.executable, "-m", "proctui", *command, "--run-dir",
                                   str(run_dir)], capture_output=True, text=True,
                                  timeout=30).stdout

        last: list[str] = []

        def waiting() -> bool:
            last[:] = [said("why", "web")]
            return "waiting for web (leftover) to end before it starts" in last[0]

        try:
            wait_until(waiting, timeout=30, what="why to say so")
        except AssertionError:
            raise AssertionError(f"why said {last!r}; status: {said('status')!r}") from None
        assert re.search(r"^web +starting +- +waiting for web \(leftover\) to end$",
                         said("status"), re.M), said("status")
    finally:
        for proc in (first, second):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()
        with contextlib.suppress(ProcessLookupError):
            os.kill(old, signal.SIGKILL)
