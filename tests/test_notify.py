"""The notify socket with real sd_notify clients nobody here wrote (Debian's
systemd-notify, the sdnotify package, redis-server as its own user), and raw datagrams:
readiness, STATUS, STOPPING, EXTEND_TIMEOUT_USEC, the watchdog; strangers, garbage and
oversized datagrams dropped and counted."""

from __future__ import annotations

import array
import os
import re
import shutil
import socket

import pytest

from proctui.commands.stop import Stop
from proctui.config import ReadyCheck, RestartPolicy
from proctui.core.life.outcome import OutcomeKind
from proctui.core.life.stop import Phase
from tests.conftest import pyspec, spec, wait_until

NOTIFY = ("import os,socket\n"
          "def notify(text):\n"
          "    a = os.environ['NOTIFY_SOCKET']\n"
          "    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)\n"
          "    s.sendto(text.encode(), '\\0' + a[1:] if a[0] == '@' else a)\n")
NOTIFY_READY = ReadyCheck(notify=True)


def socket_of(h, name: str) -> socket.socket:
    return h.sup._engine.executor.speech.sockets[name].sock


def address_of(h, name: str) -> str:
    return "\0" + h.sup._engine.executor.speech.sockets[name].address[1:]


@pytest.mark.skipif(shutil.which("systemd-notify") is None, reason="needs systemd-notify")
def test_systemd_notify_from_a_shell_script(harness):
    h = harness([spec("svc", "sleep 0.3; systemd-notify --ready --status='serving requests'; "
                             "exec sleep 60", ready=NOTIFY_READY)])
    wait_until(lambda: h.view("svc").ready_at is not None, what="READY=1")
    assert h.view("svc").status == "serving requests"
    h.wait_notice("svc", "ready after")
    h.sup.send(Stop("svc"))
    assert h.outcome("svc").kind is OutcomeKind.STOPPED


def test_the_sdnotify_package(harness):
    code = ("import sdnotify, time\n"
            "n = sdnotify.SystemdNotifier()\n"
            "n.notify('STATUS=warming up')\n"
            "time.sleep(0.2)\n"
            "n.notify('READY=1\\nSTATUS=working')\n"
            "time.sleep(60)\n")
    h = harness([pyspec("py", code, ready=NOTIFY_READY)])
    wait_until(lambda: h.view("py").ready_at is not None, what="READY=1")
    assert h.view("py").status == "working"


@pytest.mark.skipif(shutil.which("redis-server") is None or shutil.which("setpriv") is None
                    or os.getuid() != 0, reason="needs redis-server, setpriv and root")
def test_a_real_daemon_speaks_as_its_own_user(harness, tmp_path):
    """redis-server (Debian's) with its own sd_notify support, its privileges dropped to
    nobody: the 0700 run directory would keep it out, the abstract socket does not, and
    its credentials still tie it to its run."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    import tempfile

    work = tempfile.mkdtemp(prefix="proctui-redis-", dir="/tmp")  # nobody can reach it
    os.chown(work, 65534, 65534)
    cmd = (f"exec setpriv --reuid=65534 --regid=65534 --clear-groups redis-server --port {port}"
           f" --bind 127.0.0.1 --supervised systemd --save '' --appendonly no --dir {work}")
    h = harness([spec("redis", cmd, ready=NOTIFY_READY, stop_timeout=10)])
    wait_until(lambda: h.view("redis").ready_at is not None, timeout=20, what="READY=1")
    assert os.stat(f"/proc/{h.view('redis').pid}").st_uid == 65534
    assert "accept" in h.view("redis").status.lower(), h.view("redis").status
    h.sup.send(Stop("redis"))
    assert h.outcome("redis").kind is OutcomeKind.STOPPED
    shutil.rmtree(work, ignore_errors=True)


def test_extend_timeout_usec_moves_the_deadline_visibly(harness):
    code = NOTIFY + ("import signal,sys,time\n"
                     "def bye(*a):\n"
                     "    notify('STOPPING=1\\nSTATUS=flushing\\nEXTEND_TIMEOUT_USEC=3000000')\n"
                     "    time.sleep(1.5); sys.exit(0)\n"
                     "signal.signal(signal.SIGTERM, bye)\n"
                     "print('ready', flush=True)\n"
                     "while True: time.sleep(0.05)\n")
    h = harness([pyspec("slow", code, stop_timeout=0.5)])
    h.wait_output("slow", "ready")
    h.sup.send(Stop("slow"))
    h.wait_notice("slow", "extended by the process: SIGKILL in 3.0s")
    view = h.view("slow")
    assert view.extended_by_process and view.status == "flushing"
    assert view.deadline - view.stop_requested_at > 2.5
    h.wait_notice("slow", "says it is stopping")
    outcome = h.outcome("slow")
    assert outcome.kind is OutcomeKind.STOPPED, outcome.text
    assert 1.4 < outcome.duration < 2.5


def test_max_stop_time_caps_what_a_process_may_ask_for(harness):
    code = NOTIFY + ("import signal,time\n"
                     "signal.signal(signal.SIGTERM, "
                     "lambda *a: notify('EXTEND_TIMEOUT_USEC=60000000'))\n"
                     "print('ready', flush=True)\n"
                     "while True: time.sleep(0.05)\n")
    h = harness([pyspec("greedy", code, stop_timeout=0.3, max_stop_time=1.5)])
    h.wait_output("greedy", "ready")
    h.sup.send(Stop("greedy"))
    outcome = h.outcome("greedy")
    assert outcome.kind is OutcomeKind.KILLED
    assert re.fullmatch(r"killed with SIGKILL at its deadline, 1\.[45]s after the stop request, "
                        r"after the process asked for more time", outcome.text), outcome.text


@pytest.mark.slow
def test_a_missed_watchdog_is_an_outcome_of_its_own_and_restarts(harness):
    code = NOTIFY + ("import time\n"
                     "assert os.environ['WATCHDOG_USEC'] == '1000000'\n"
                     "for _ in range(6):\n"
                     "    notify('WATCHDOG=1'); time.sleep(0.3)\n"
                     "print('hung', flush=True)\n"
                     "time.sleep(60)\n")
    h = harness([pyspec("dog", code, watchdog_sec=1.0, restart=RestartPolicy.ON_FAILURE,
                        stop_timeout=1)])
    h.wait_notice("dog", "watchdog timeout after 1s (no WATCHDOG=1): stopping it", timeout=15)
    outcome = h.outcome("dog", timeout=15)
    assert outcome.kind is OutcomeKind.WATCHDOG
    assert outcome.text.startswith("watchdog timeout after 1s: stopped after")
    h.wait_notice("dog", "restarting in 1s")


def test_errno_and_mainpid_are_shown(harness):
    code = NOTIFY + ("import time\nnotify(f'STATUS=degraded\\nERRNO=5\\nMAINPID={os.getpid()}')\n"
                     "time.sleep(60)\n")
    h = harness([pyspec("e", code)])
    wait_until(lambda: h.view("e").status == "degraded · errno 5", what="the status")
    h.wait_notice("e", "says its main process is pid")


def test_strangers_garbage_oversized_and_passed_descriptors_are_dropped(harness):
    h = harness([pyspec("svc", "import time; print('ready', flush=True); time.sleep(60)",
                        ready=NOTIFY_READY)])
    h.wait_output("svc", "ready")
    target = address_of(h, "svc")
    sock = h.sup._engine.executor.speech.sockets["svc"]
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
        s.sendto(b"READY=1", target)  # from this test process: not the run's
        s.sendto(b"\xff\xfe garbage", target)
        s.sendto(b"no equals sign", target)
        s.sendto(b"READY=1\n" + b"x" * 10_000, target)
        r, w = os.pipe()
        s.sendmsg([b"FDSTORE=1"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS,
                                    array.array("i", [r]))], 0, target)
        os.close(r)
    wait_until(lambda: sum(sock.dropped.values()) >= 5,
               what="the datagrams to be read")
    assert sock.dropped["malformed"] == 2 and sock.dropped["oversized"] == 1
    assert sock.dropped["not from a supervised process"] >= 2
    assert h.view("svc").ready_at is None, "a stranger cannot make it ready"
    # The passed descriptor was closed: the pipe's read end is gone, writing fails.
    with pytest.raises(BrokenPipeError):
        os.write(w, b"x")
    os.close(w)
    assert h.view("svc").phase is Phase.RUNNING


def test_a_process_that_stays_silent_is_not_ready_in_time(harness):
    h = harness([spec("mute", "exec sleep 60", ready=NOTIFY_READY, ready_timeout=0.5)])
    outcome = h.outcome("mute")
    assert outcome.kind is OutcomeKind.FAILED_TO_START
    assert re.fullmatch(r"not ready within 0\.5s: stopped after \d\.\ds: terminated by SIGTERM",
                        outcome.text), outcome.text


def test_senders_of_another_run_cannot_speak_for_this_one(harness):
    """Process b learns a's socket and sends READY=1 to it: a is not ready."""
    h = harness([pyspec("a", "import time; time.sleep(60)", ready=NOTIFY_READY),
                 pyspec("b", NOTIFY + "import sys,time\n"
                        "a = sys.stdin.readline()\n" + "time.sleep(60)\n")])
    wait_until(lambda: h.view("b").pid is not None)
    target = h.sup._engine.executor.speech.sockets["a"].address
    # c stays alive after sending: a sender already reaped when its datagram is read can
    # only be judged by its user (see speech.py), and here every test runs as one user.
    code = NOTIFY.replace("os.environ['NOTIFY_SOCKET']", repr(target)) + \
        "notify('READY=1')\nimport time\ntime.sleep(60)\n"
    sock = h.sup._engine.executor.speech.sockets["a"]
    harness([pyspec("c", code)])
    wait_until(lambda: sock.dropped["not from a supervised process"] >= 1,
               what="c's datagram to be read and refused")
    assert h.view("a").ready_at is None
