"""Hostile datagrams on the notify socket, sent by a supervised process (whose messages
are acted on) and by an outsider: each one is dropped and counted, nothing raises, no
service stops, and nothing a sender does delays anybody's deadline (issue 17)."""

from __future__ import annotations

import shlex
import shutil
import socket
import subprocess
import sys

import pytest

from proctui.commands.kill import Kill
from proctui.commands.stop import Stop
from proctui.commands.wait import Wait
from proctui.config import ReadyCheck
from proctui.core.life.outcome import OutcomeKind
from proctui.core.life.stop import Phase
from tests.conftest import journal, pyspec, spec, wait_until

SENDER = ("import os, socket, time\n"
          "a = os.environ['NOTIFY_SOCKET']; a = '\\0' + a[1:]\n"
          "s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)\n"
          "def send(data):\n"
          "    try:\n"
          "        s.sendto(data, a)\n"
          "    except OSError as e:\n"
          "        print('send failed', e, flush=True)\n")

HOSTILE = [
    "EXTEND_TIMEOUT_USEC=²".encode(),
    "WATCHDOG_USEC=²".encode(),
    "MAINPID=²".encode(),
    "ERRNO=²".encode(),
    "EXTEND_TIMEOUT_USEC=٣".encode(),  # an Arabic-Indic digit: isdigit() says yes
    b"EXTEND_TIMEOUT_USEC=" + b"9" * 400,
    b"WATCHDOG_USEC=" + b"9" * 400,
    b"MAINPID=" + b"9" * 400,
    b"ERRNO=" + b"9" * 400,
    b"EXTEND_TIMEOUT_USEC=99999999999999999999",  # past what a uint64 holds
    b"EXTEND_TIMEOUT_USEC=-5",
    b"EXTEND_TIMEOUT_USEC=1e300",  # once shown as an extension of 290 digits
    b"EXTEND_TIMEOUT_USEC= 5",
    b"WATCHDOG_USEC=1\x002",
    b"STATUS=a\x00b",
    b"READY=1\x00",
    b"STATUS=" + b"x" * 4096,
]
COUNTED = ("malformed", "oversized", "bad number")


def dropped(sock) -> int:
    return sum(sock.dropped[reason] for reason in COUNTED)


@pytest.mark.parametrize("bad", HOSTILE, ids=lambda b: repr(b[:24]))
def test_a_supervised_process_sending_a_hostile_datagram_stops_nothing(harness, bad):
    code = SENDER + (f"send({bad!r})\n"
                     "send(b'STATUS=alive')\n"
                     "print('sent', flush=True)\n"
                     "time.sleep(60)\n")
    h = harness([pyspec("svc", code, stop_timeout=2),
                 pyspec("bystander", "import time; time.sleep(60)")])
    h.wait_output("svc", "sent")
    wait_until(lambda: h.view("svc").status == "alive" or h.sup.snapshot().crash,
               what="STATUS=alive")
    assert h.sup.snapshot().crash is None, h.sup.snapshot().crash
    sock = h.sup._engine.executor.speech.sockets["svc"]
    assert dropped(sock) == 1, sock.dropped
    assert h.view("svc").phase is Phase.RUNNING
    assert h.view("bystander").phase is Phase.RUNNING
    assert "²" not in h.view("svc").status
    assert not any("pid ²" in line or "errno ²" in line for line in h.sup.output.buffer("svc")
                   .read(0).lines)


def test_a_hostile_extension_during_the_stop_is_dropped_and_the_stop_ends_cleanly(harness):
    code = SENDER + ("import signal, sys\n"
                     "def bye(*a):\n"
                     "    send('STOPPING=1\\nEXTEND_TIMEOUT_USEC=²'.encode())\n"
                     "    send(b'EXTEND_TIMEOUT_USEC=' + b'9' * 400)\n"
                     "    time.sleep(0.3); sys.exit(0)\n"
                     "signal.signal(signal.SIGTERM, bye)\n"
                     "print('ready', flush=True)\n"
                     "while True: time.sleep(0.05)\n")
    h = harness([pyspec("svc", code, stop_timeout=3),
                 pyspec("bystander", "import time; time.sleep(60)")])
    h.wait_output("svc", "ready")
    h.sup.send(Stop("svc"))
    outcome = h.outcome("svc")
    assert outcome.kind is OutcomeKind.STOPPED, outcome.text
    assert h.sup.snapshot().crash is None, h.sup.snapshot().crash
    assert h.view("bystander").phase is Phase.RUNNING


def test_an_outsider_sending_hostile_datagrams_is_dropped_and_counted(harness):
    h = harness([pyspec("svc", "import time; print('ready', flush=True); time.sleep(60)")])
    h.wait_output("svc", "ready")
    sock = h.sup._engine.executor.speech.sockets["svc"]
    target = "\0" + sock.address[1:]
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
        for bad in HOSTILE:
            s.sendto(bad, target)
    wait_until(lambda: sum(sock.dropped.values()) >= len(HOSTILE), what="every datagram read")
    assert h.sup.snapshot().crash is None
    # Judged by its bytes before its sender: garbage costs no lineage lookup at all.
    assert dropped(sock) == len(HOSTILE), sock.dropped
    assert h.view("svc").phase is Phase.RUNNING
    counts = dict(sock.dropped)
    assert h.sup._engine.executor.speech.dropped_counts() == {"svc": counts}
    h.sup.send(Stop("svc"))
    h.outcome("svc")
    wait_until(lambda: any(e["kind"] == "notify-dropped" for e in journal(h.sup)),
               what="the dropped counts in the journal")
    (entry,) = [e for e in journal(h.sup) if e["kind"] == "notify-dropped"]
    assert entry["name"] == "svc" and entry["dropped"] == counts


FLOODER = ("import socket, sys, time\n"
           "print('waiting', flush=True)\n"
           "target = '\\0' + sys.stdin.readline().strip()[1:]\n"
           "s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)\n"
           "s.settimeout(0.5)\n"
           "end = time.monotonic() + float(sys.argv[1])\n"
           "sent = 0\n"
           "while time.monotonic() < end and sent < 2_000_000:\n"
           "    try:\n"
           "        s.sendto(b'READY=1\\nSTATUS=flood', target)\n"
           "        sent += 1\n"
           "    except OSError:\n"
           "        time.sleep(0.001)\n"
           "print(sent, flush=True)\n")
CROWD = 300  # processes in proctui's tree: what each lineage walk has to read


@pytest.mark.slow
def test_a_flood_from_an_outsider_does_not_delay_a_victims_sigkill(harness):
    """An outsider (a stray in proctui's tree, older than every run, so no run can claim
    it) floods the victim's notify socket with valid messages while the victim, which
    ignores SIGTERM, is stopped: its SIGKILL comes at its deadline, not seconds late."""
    flooder = subprocess.Popen([sys.executable, "-c", FLOODER, "8"], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True)
    try:
        # Started well before any run (not in the same clock tick), so that the lineage
        # cannot take it for the only run's orphan.
        assert flooder.stdout.readline() == "waiting\n"
        victim = ("import signal, time\n"
                  "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
                  "print('ready', flush=True)\n"
                  "while True: time.sleep(1)\n")
        crowd = (f"import subprocess, time\n"
                 f"kids = [subprocess.Popen(['sleep', '1000']) for _ in range({CROWD})]\n"
                 f"print('up', flush=True)\n"
                 f"time.sleep(1000)\n")
        h = harness([pyspec("victim", victim, stop_timeout=2, kill_timeout=3),
                     pyspec("crowd", crowd)])
        h.wait_output("crowd", "up", timeout=60)
        h.wait_output("victim", "ready")
        sock = h.sup._engine.executor.speech.sockets["victim"]
        flooder.stdin.write(sock.address + "\n")
        flooder.stdin.flush()
        try:
            wait_until(lambda: sum(sock.dropped.values()) > 50, what="the flood to arrive")
        except AssertionError:
            raise AssertionError(f"{sock.dropped} {sock.received} {flooder.poll()}") from None
        h.sup.send(Stop("victim"))
        outcome = h.outcome("victim", timeout=30)
        view = h.view("victim")
        late = view.kill_sent_at - (view.stop_requested_at + 2)
        assert outcome.kind is OutcomeKind.KILLED, outcome.text
        print(f"SIGKILL {late * 1000:.0f} ms late under the flood; dropped {dict(sock.dropped)}")
        assert late < 0.3, f"SIGKILL {late:.3f}s late under the flood ({sock.dropped})"
        assert outcome.text == "killed with SIGKILL after 2s stop timeout", outcome.text
        assert h.view("victim").ready_at is None, "the outsider cannot make it ready"
        assert flooder.poll() is None, "the flood lasted through the whole stop"
    finally:
        flooder.kill()
        flooder.wait()


def test_senders_are_judged_from_the_cache_and_tree_walks_are_rationed():
    from proctui.core.speak.senders import STRANGER_FOR, WALK_EVERY, Judged, Senders

    now = [100.0]
    owners: dict[tuple[int, int], str] = {}
    found: dict[tuple[int, int], str] = {}  # what the next walk will find
    walks: list[float] = []

    def walk() -> None:
        walks.append(now[0])
        owners.update(found)

    senders = Senders(owners.get, walk, clock=lambda: now[0])
    assert senders.judge((7, 1)) is Judged.STRANGER and len(walks) == 1
    assert senders.judge((7, 1)) is Judged.STRANGER and len(walks) == 1, "remembered"
    for pid in range(8, 1000):  # a new sender for every datagram: one walk in all
        assert senders.judge((pid, 1)) is Judged.OVER_BUDGET
    assert len(walks) == 1
    now[0] += WALK_EVERY
    found[(8, 1)] = "run-a"  # a later walk attributes it
    assert senders.judge((8, 1)) == "run-a" and len(walks) == 2
    assert senders.judge((8, 1)) == "run-a" and len(walks) == 2, "known: no walk"
    assert senders.judge((8, 2)) is Judged.OVER_BUDGET, "a reused pid is a new process"
    now[0] += STRANGER_FOR
    assert senders.judge((7, 1)) is Judged.STRANGER and len(walks) == 3, "looked up anew"


def test_an_errno_stream_keeps_the_status_short_and_costs_no_deadline(harness):
    """3,000 ERRNO= (and MAINPID=, STOPPING=1) messages: the status stays within its cap
    (it grew by one "errno N" per message, 12 MB and quadratic work), the notices are not
    repeated, and an unrelated SIGKILL comes at its deadline."""
    code = SENDER + ("send(b'STATUS=' + b'x' * 1000)\n"
                     "for i in range(3000):\n"
                     "    send(f'ERRNO={i % 4096}\\nMAINPID={os.getpid()}\\nSTOPPING=1'.encode())\n"
                     "send(b'ERRNO=7')\n"
                     "print('sent', flush=True)\n"
                     "time.sleep(60)\n")
    victim = ("import signal, time\n"
              "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
              "print('ready', flush=True)\n"
              "while True: time.sleep(1)\n")
    h = harness([pyspec("victim", victim, stop_timeout=1.5, kill_timeout=3),
                 pyspec("chatty", code)])
    h.wait_output("victim", "ready")
    h.sup.send(Stop("victim"))
    h.wait_output("chatty", "sent")
    wait_until(lambda: h.view("chatty").status.endswith("errno 7"), what="the last errno")
    assert h.view("chatty").status == "x" * 200 + " · errno 7"
    outcome = h.outcome("victim")
    view = h.view("victim")
    late = view.kill_sent_at - (view.stop_requested_at + 1.5)
    assert outcome.kind is OutcomeKind.KILLED and late < 0.3, (late, outcome.text)
    notices = h.sup.output.buffer("chatty").read(0).lines
    assert sum("says its main process is pid" in line for line in notices) == 1
    assert sum("says it is stopping" in line for line in notices) == 1
    assert h.sup.snapshot().crash is None


def test_the_status_is_capped_and_errno_is_not_appended_for_ever():
    from proctui.core.speak.speech import MAX_STATUS, status_line

    assert len(status_line("x" * 4000, None)) == MAX_STATUS
    line = ""
    for i in range(3000):
        line = status_line("degraded", i)
    assert line == "degraded · errno 2999"
    assert status_line("", 5) == "errno 5" and status_line("a\x1bb", None) == "a\\x1bb"
    assert status_line("evil\u202etxt.exe", None) == "evil\\u202etxt.exe"


@pytest.mark.slow
def test_a_process_cannot_bring_back_a_deadline_the_operator_removed(harness):
    """The operator chose "wait with no deadline"; the process keeps sending
    EXTEND_TIMEOUT_USEC=1000000. It used to be killed 1 s later; it is waited for."""
    code = SENDER + ("import signal\n"
                     "asked = 0\n"
                     "def bye(*a):\n"
                     "    global asked\n"
                     "    while asked < 30:\n"
                     "        send(b'EXTEND_TIMEOUT_USEC=1000000')\n"
                     "        asked += 1\n"
                     "        print('asked', asked, flush=True)\n"
                     "        time.sleep(0.1)\n"
                     "    while True: time.sleep(1)\n"
                     "signal.signal(signal.SIGTERM, bye)\n"
                     "print('ready', flush=True)\n"
                     "while True: time.sleep(1)\n")
    h = harness([pyspec("svc", code, stop_timeout=30, kill_timeout=2)])
    h.wait_output("svc", "ready")
    h.sup.send(Stop("svc"))
    h.wait_output("svc", "asked 1")
    assert h.sup.send(Wait("svc")).result(timeout=5).ok
    h.wait_output("svc", "asked 30")
    assert h.view("svc").deadline is None
    # The last request asked for one second more: nothing may come of it.
    with pytest.raises(AssertionError):
        wait_until(lambda: h.view("svc").kill_sent_at is not None, timeout=2,
                   what="a SIGKILL (there must be none)")
    view = h.view("svc")
    assert view.phase is Phase.STOPPING and view.deadline is None, view
    assert view.kill_sent_at is None and view.outcome is None
    h.sup.send(Kill("svc"))
    assert h.outcome("svc").text.startswith("killed with SIGKILL by operator")


def test_a_sender_outside_proctuis_tree_costs_no_walk():
    from proctui.core.speak.senders import Judged, Senders, outside_tree

    parents = {50: 40, 40: 1, 60: 10, 70: 60, 80: 999}  # 10 is proctui
    assert outside_tree(50, 10, parents.get)
    assert not outside_tree(70, 10, parents.get) and not outside_tree(60, 10, parents.get)
    assert not outside_tree(80, 10, parents.get), "a parent gone: not proven"
    walks: list[int] = []
    senders = Senders({}.get, lambda: walks.append(1),
                      lambda pid: outside_tree(pid, 10, parents.get), clock=lambda: 5.0)
    assert senders.judge((50, 1)) is Judged.STRANGER and walks == []
    assert senders.judge((70, 1)) is Judged.STRANGER and walks == [1], "inside: a walk"
    assert senders.judge((60, 1)) is Judged.OVER_BUDGET, "the ration is for the tree"


def test_a_sender_of_the_run_outside_its_group_is_still_heard(harness):
    """The positive side of judging senders cheaply: a process of the run in a session
    of its own (setsid) is found by one walk of the tree and its READY=1 counts."""
    if shutil.which("setsid") is None:
        pytest.skip("needs setsid")
    helper = SENDER + "send(b'READY=1\\nSTATUS=from my own session')\ntime.sleep(60)\n"
    cmd = f"setsid {shlex.quote(sys.executable)} -c {shlex.quote(helper)} & exec sleep 60"
    h = harness([spec("svc", cmd, ready=ReadyCheck(notify=True))])
    wait_until(lambda: h.view("svc").ready_at is not None, what="READY=1 from the helper")
    assert h.view("svc").status == "from my own session"
    sock = h.sup._engine.executor.speech.sockets["svc"]
    assert not sock.dropped, sock.dropped


def test_the_dropped_count_reaches_the_view(harness):
    """What a run's socket refused is seen (the view, hence status --json), looked at once
    a walk of the tree, not per datagram."""
    import socket as socketlib

    from proctui.core.life.stop import Phase
    from tests.conftest import pyspec, wait_until

    h = harness([pyspec("svc", "import time\nprint('ready', flush=True)\ntime.sleep(60)")])
    h.wait_output("svc", "ready")
    target = "\0" + h.sup._engine.executor.speech.sockets["svc"].address[1:]
    with socketlib.socket(socketlib.AF_UNIX, socketlib.SOCK_DGRAM) as s:
        for _ in range(5):
            s.sendto(b"EXTEND_TIMEOUT_USEC=\xc2\xb2", target)
    wait_until(lambda: h.view("svc").notify_dropped == 5, timeout=15,
               what="five dropped datagrams in the view")
    assert h.view("svc").phase is Phase.RUNNING
