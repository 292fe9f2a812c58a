"""Hostile datagrams on the notify socket, sent by a supervised process (whose messages
are acted on) and by an outsider: each one is dropped and counted, nothing raises, no
service stops, and nothing a sender does delays anybody's deadline (issue 17)."""

from __future__ import annotations

import socket

import pytest

from proctui.core.machine import Phase
from proctui.core.outcome import OutcomeKind
from tests.conftest import pyspec, wait_until

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
    wait_until(lambda: h.view("svc").status == "alive" or h.sup.crash, what="STATUS=alive")
    assert h.sup.crash is None, h.sup.crash
    sock = h.sup._engine.speech.sockets["svc"]
    assert dropped(sock) == 1, sock.dropped
    assert h.view("svc").phase is Phase.RUNNING
    assert h.view("bystander").phase is Phase.RUNNING
    assert "²" not in h.view("svc").status
    assert not any("pid ²" in line or "errno ²" in line for line in h.sup.buffer("svc")
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
    h.sup.stop("svc")
    outcome = h.outcome("svc")
    assert outcome.kind is OutcomeKind.STOPPED, outcome.text
    assert h.sup.crash is None, h.sup.crash
    assert h.view("bystander").phase is Phase.RUNNING


def test_an_outsider_sending_hostile_datagrams_is_dropped_and_counted(harness):
    h = harness([pyspec("svc", "import time; print('ready', flush=True); time.sleep(60)")])
    h.wait_output("svc", "ready")
    sock = h.sup._engine.speech.sockets["svc"]
    target = "\0" + sock.address[1:]
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
        for bad in HOSTILE:
            s.sendto(bad, target)
    wait_until(lambda: sum(sock.dropped.values()) >= len(HOSTILE), what="every datagram read")
    assert h.sup.crash is None
    # Judged by its bytes before its sender: garbage costs no lineage lookup at all.
    assert dropped(sock) == len(HOSTILE), sock.dropped
    assert h.view("svc").phase is Phase.RUNNING
