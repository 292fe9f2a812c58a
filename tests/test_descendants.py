"""Descendants that leave their process group: a daemon's double fork, setsid, a cleared
environment. proctui is their subreaper, so they stay in its tree: a run is not over
while they live, they are stopped with it, and one that cannot be proven to belong to a
run is reported and never signalled."""

from __future__ import annotations

import os
import re
import signal
import sys
import time
from pathlib import Path

import pytest

from proctui.commands.stop import Stop
from proctui.commands.stop_all import StopAll
from proctui.config import RestartPolicy
from proctui.core.life.outcome import OutcomeKind
from tests.conftest import alive, pyspec, spec, wait_until

# Prints its pid, then lives on; started with an empty environment, so it carries no
# trace of the run that started it.
DAEMON = ("import os,sys,time\n"
          "print('daemon', os.getpid(), flush=True)\n"
          "n = 0\n"
          "while True:\n"
          "    time.sleep(0.05)\n")


def double_fork(daemon: str = DAEMON, then: str = "import time\ntime.sleep(60)\n") -> str:
    """A leader that daemonizes a grandchild the classic way (fork, setsid, fork, exit)
    with a cleared environment, then runs ``then``."""
    return ("import os,sys\n"
            "r = os.fork()\n"
            "if r == 0:\n"
            "    os.setsid()\n"
            "    if os.fork() == 0:\n"
            f"        os.execve(sys.executable, [sys.executable, '-c', {daemon!r}], {{}})\n"
            "    os._exit(0)\n"
            "os.waitpid(r, 0)\n"
            "print('forked', flush=True)\n" + then)


def daemon_pid(h, name: str) -> int:
    h.wait_output(name, "daemon")
    line = next(x for x in h.output(name) if x.startswith("daemon"))
    return int(line.split()[1])


def test_a_double_forked_daemon_with_a_cleared_environment_is_found_and_stopped(harness):
    h = harness([pyspec("svc", double_fork(then="print('leader done', flush=True)\n"))])
    daemon = daemon_pid(h, "svc")
    try:
        h.wait_notice("svc", "still run; watching them")
        view = h.view("svc")
        assert view.outcome is None and view.escapees == (daemon,), view
        h.sup.send(Stop("svc"))
        outcome = h.outcome("svc")
        assert outcome.kind is OutcomeKind.STOPPED, outcome.text
        assert not alive(daemon)
    finally:
        if alive(daemon):
            os.kill(daemon, signal.SIGKILL)


def test_a_daemon_no_run_can_be_proven_to_own_is_reported_and_never_signalled(harness):
    """Two runs could have started it, it left every group and cleared its environment
    before proctui's tree walk saw it: it is a stray, and the exit status says so."""
    h = harness([pyspec("a", double_fork(then="")), spec("b", "sleep 60")])
    daemon = daemon_pid(h, "a")
    try:
        outcome = h.outcome("a")
        assert outcome.kind is OutcomeKind.EXITED, outcome.text
        h.wait_notice(None, f"pid {daemon} (")
        h.wait_notice(None, "proctui cannot tell which")
        assert list(h.sup.snapshot().strays) == [daemon]
        h.sup.send(StopAll())
        h.wait_all_ended()
        assert alive(daemon), "a stray is never signalled"
        assert h.sup.snapshot().exit_status == 3
    finally:
        os.kill(daemon, signal.SIGKILL)


@pytest.mark.slow
def test_restart_on_failure_does_not_start_another_copy_while_its_daemon_lives(harness):
    """The leader exits 0 and leaves a daemon: the run is not over, so nothing restarts
    and no second daemon is ever started."""
    leader = double_fork(then="import sys\nsys.exit(1)\n")
    h = harness([pyspec("svc", leader, restart=RestartPolicy.ON_FAILURE)])
    daemon = daemon_pid(h, "svc")
    try:
        h.wait_notice("svc", "still run; watching them")
        time.sleep(2.5)  # a restart would come after 1 s of backoff
        assert h.view("svc").restarts == 0 and h.view("svc").outcome is None
        assert sum(line.startswith("daemon") for line in h.output("svc")) == 1
        os.kill(daemon, signal.SIGTERM)
        outcome = h.outcome("svc")
        assert outcome.kind is OutcomeKind.EXITED and outcome.text == "exited: exit code 1"
        h.wait_notice("svc", "restarting in 1s")
    finally:
        if alive(daemon):
            os.kill(daemon, signal.SIGKILL)
        h.sup.send(Stop("svc"))


def test_an_escaped_writer_keeps_its_pipe_read_after_the_run_ends(harness, tmp_path: Path):
    """A stray still writing to the pipe must not get EPIPE while proctui runs."""
    result = tmp_path / "writer-exit"
    writer = ("import os,sys,time\n"
              "print('daemon', os.getpid(), flush=True)\n"
              "try:\n"
              "    for i in range(30):\n"
              "        print('still writing', i, flush=True); time.sleep(0.05)\n"
              "    code = 'ok'\n"
              "except BrokenPipeError:\n"
              "    code = 'EPIPE'\n"
              f"open({str(result)!r}, 'w').write(code)\n")
    h = harness([pyspec("a", double_fork(writer, then="")), spec("b", "sleep 60")])
    daemon = daemon_pid(h, "a")
    try:
        assert h.outcome("a").kind is OutcomeKind.EXITED
        wait_until(result.exists, timeout=15, what="the writer to finish")
        assert result.read_text() == "ok"
        lines = h.sup.output.buffer("a").read(0).lines
        assert "still writing 29" in lines
        # It went on writing after the group ended: whether the run waited for it (a walk
        # saw it under its leader) or ended without it (a stray among two runs).
        group_ended = next(i for i, line in enumerate(lines)
                           if line.startswith("its group has ended") or
                           line == "exited: exit code 0")
        assert lines.index("still writing 29") > group_ended
    finally:
        if alive(daemon):
            os.kill(daemon, signal.SIGKILL)


@pytest.mark.slow
def test_a_daemon_seen_under_its_leader_is_attributed_even_among_many_runs(harness):
    """Two runs, but the daemon was walked over while still under its leader (the walk
    happens about once a second), so its owner is known when its parent dies."""
    then = "import time\ntime.sleep(3)\nprint('leader done', flush=True)\n"
    slow = ("import os,sys,time\n"
            "r = os.fork()\n"
            "if r == 0:\n"
            "    os.setsid()\n"
            "    print('daemon', os.getpid(), flush=True)\n"
            "    time.sleep(60)\n"
            "    os._exit(0)\n" + then)
    h = harness([pyspec("a", slow), spec("b", "sleep 60")])
    daemon = daemon_pid(h, "a")
    try:
        h.wait_output("a", "leader done", timeout=10)
        h.wait_notice("a", "still run; watching them")
        assert h.view("a").escapees == (daemon,)
        assert list(h.sup.snapshot().strays) == []
    finally:
        if alive(daemon):
            os.kill(daemon, signal.SIGKILL)


def test_every_pid_of_a_run_left_running_is_named(harness):
    from proctui.config import OnTimeout

    code = ("import os,signal,time\n"
            "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
            "for _ in range(3):\n"
            "    if os.fork() == 0:\n"
            "        break\n"
            # One write each: print() writes its pieces separately when unbuffered,
            # and four processes sharing a pipe would interleave them.
            "os.write(1, b'ready %d\\n' % os.getpid())\n"
            "while True: time.sleep(0.05)\n")
    h = harness([pyspec("many", code, stop_timeout=0.3, on_timeout=OnTimeout.ABANDON)])
    wait_until(lambda: sum(x.startswith("ready") for x in h.output("many")) == 4)
    pids = sorted(int(x.split()[1]) for x in h.output("many") if x.startswith("ready"))
    try:
        h.sup.send(Stop("many"))
        outcome = h.outcome("many")
        assert outcome.kind is OutcomeKind.ABANDONED
        named = sorted(int(p) for p in re.findall(r"\d+", outcome.text.split("pids ")[1]))
        assert named == pids, outcome.text
    finally:
        for pid in pids:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


def test_the_subreaper_reaps_orphans_nobody_waits_for(harness):
    code = ("import os,time\n"
            "for _ in range(5):\n"
            "    if os.fork() == 0:\n"
            "        os.setsid(); time.sleep(0.2); os._exit(0)\n"
            "print('ready', flush=True)\n"
            "time.sleep(0.1)\n")
    h = harness([pyspec("orphans", code), spec("b", "sleep 60")])
    h.outcome("orphans")

    def zombies() -> list[int]:
        me = os.getpid()
        found = []
        for name in os.listdir("/proc"):
            if name.isdigit():
                try:
                    raw = Path(f"/proc/{name}/stat").read_bytes()
                except OSError:
                    continue
                fields = raw[raw.rindex(b")") + 2:].split()
                if fields[0] == b"Z" and int(fields[1]) == me:
                    found.append(int(name))
        return found

    wait_until(lambda: not zombies(), timeout=10, what="orphans to be reaped")
    assert sys.platform.startswith("linux")


def test_a_walk_of_our_tree_stops_now_and_then_for_what_cannot_wait(monkeypatch):
    """A walk of 4,000 processes takes 160 ms; deadlines that come meanwhile are taken
    in between (the engine's hook): the walk calls it every BETWEEN_EVERY processes."""
    import subprocess

    from proctui.core.os import procfs

    monkeypatch.setattr(procfs, "BETWEEN_EVERY", 2)
    children = [subprocess.Popen(["sleep", "60"]) for _ in range(8)]
    try:
        calls: list[int] = []
        table = procfs.scan_tree([os.getpid()], lambda: calls.append(1))
        assert {c.pid for c in children} <= set(table.stats)
        assert len(calls) >= 4, calls
    finally:
        for c in children:
            c.kill()
            c.wait()


def test_attributing_a_walk_stops_now_and_then_for_what_cannot_wait(monkeypatch):
    """After the walk, attributing 2,000 runs' processes held the loop (the last SIGKILLs
    of 2,000 groups landed 130 ms late): it too calls the engine's hook now and then."""
    import subprocess
    from dataclasses import dataclass

    from proctui.core.os import lineage as lineage_module
    from proctui.core.os import procfs
    from proctui.core.os.oslayer import OSLayer

    @dataclass
    class Run:
        token: str
        pid: int | None
        pgid: int | None
        start_ticks: int | None
        leftover: bool = False
        live: bool = True

    monkeypatch.setattr(lineage_module, "BETWEEN_EVERY", 2)
    children = [subprocess.Popen(["sleep", "60"]) for _ in range(8)]
    try:
        os_layer = OSLayer()
        walked: list[int] = []
        os_layer.between = lambda: walked.append(1)
        runs = []
        for n, c in enumerate(children):
            st = procfs.read_stat(c.pid)
            assert st is not None
            runs.append(Run(f"t{n}", c.pid, c.pid, st.start_ticks))
        monkeypatch.setattr(procfs, "BETWEEN_EVERY", 10_000)  # (the walk's own: not here)
        lineage = lineage_module.Lineage(os_layer, "PROCTUI_TEST_TOKEN")
        lineage.update(lambda: runs, max_age=0)
        assert {st.pid for sts in lineage.by_token.values() for st in sts} >= \
            {c.pid for c in children}
        assert len(walked) >= 4, walked
    finally:
        for c in children:
            c.kill()
            c.wait()
