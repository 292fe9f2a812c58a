"""The journal keeps the shutdown whatever a process says: chatter (notify messages) is
coalesced per process and has its own share of the file, the entries that matter (stop,
signals, deadlines, decisions, outcomes, the end) have a reserve, memory is bounded, and
any bytes of a command line or a message can be written (issue 17)."""

from __future__ import annotations

import json

import pytest

from proctui.commands.stop import Stop
from proctui.core.life.outcome import OutcomeKind
from proctui.core.store import journal as journal_mod
from proctui.core.store.journal import Journal
from tests.conftest import journal, pyspec


def read(run_dir) -> list[dict[str, object]]:
    text = (run_dir.path / journal_mod.NAME).read_bytes().decode("ascii")  # ASCII only
    return [json.loads(line) for line in text.splitlines()]


def test_any_bytes_in_a_command_line_or_message_are_written(run_dir):
    j = Journal(run_dir)
    j.write("start", "svc", cmd="printf '\udcff\udc80'", pid=5)
    j.write("notice", text="lone \ud800 surrogate, NUL \x00, bidi \u202e")
    j.write("deadline", "svc", deadline=float("inf"), late=float("nan"))
    j.write("end")
    j.close()
    entries = read(run_dir)
    assert [e["kind"] for e in entries] == ["start", "notice", "deadline", "end"]
    assert entries[0]["cmd"] == "printf '\udcff\udc80'"
    assert entries[2]["deadline"] == "inf", "JSON has no infinity: written as text"


def test_chatter_is_coalesced_per_process_and_the_last_word_is_kept(run_dir):
    now = [100.0]
    j = Journal(run_dir, clock=lambda: now[0])
    for i in range(1000):  # 1,000 messages in one second from each of two processes
        now[0] += 0.001
        j.chatter("notify", "a", fields={"STATUS": f"a{i}"})
        j.chatter("notify", "b", fields={"STATUS": f"b{i}"})
    j.write("stop", "a")  # a's last word comes before its stop
    now[0] += 1.5
    j.chatter("notify", "b", fields={"STATUS": "b-late"})  # a new second: b's pending first
    j.write("end")
    j.close()
    entries = read(run_dir)
    a = [e for e in entries if e.get("name") == "a"]
    b = [e for e in entries if e.get("name") == "b"]
    assert len(a) <= journal_mod.CHATTER_PER_SECOND + 2
    assert a[-1]["kind"] == "stop" and a[-2]["fields"] == {"STATUS": "a999"}
    assert sum(e.get("coalesced", 0) for e in a) + len(a) - 1 == 1000, "says how many"
    assert [e["fields"]["STATUS"] for e in b][-2:] == ["b999", "b-late"]
    assert sum(e.get("coalesced", 0) for e in b) + len(b) == 1001


def test_the_shutdown_is_written_after_chatter_used_its_share(run_dir):
    j = Journal(run_dir, max_bytes=200_000, reserve=50_000, clock=lambda: 5.0)
    big = "x" * 3900
    for i in range(10_000):
        j.chatter("notify", f"p{i}", fields={"STATUS": big})  # a new process each time
    assert j.size <= 150_000 + 5_000
    for kind in ("stop", "signal", "deadline", "decision", "signal", "outcome"):
        j.write(kind, "victim", text="what happened")
    j.write("end")
    j.close()
    kinds = [e["kind"] for e in read(run_dir)]
    assert kinds[-7:] == ["stop", "signal", "deadline", "decision", "signal", "outcome", "end"]
    assert "journal-chatter-full" in kinds and "journal-full" not in kinds


def test_memory_is_bounded_in_bytes_not_only_in_entries(run_dir):
    j = Journal(run_dir, memory=1_000_000, clock=lambda: 5.0)
    for i in range(20_000):
        j.write("notice", text="y" * 3900 + str(i))
    assert j.memory_used <= 1_000_000
    assert sum(len(json.dumps(e)) for e in j.entries) <= 1_100_000
    assert j.entries[-1]["text"].endswith("19999")
    j.close()


@pytest.mark.slow
def test_a_status_loop_does_not_lose_the_shutdown(harness, run_dir):
    """A 3.9 KB STATUS in a tight loop filled journal.jsonl to its cap in seconds; the
    stop, the signals and the outcome were then never written."""
    code = ("import os, signal, socket, time\n"
            "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
            "a = os.environ['NOTIFY_SOCKET']; a = '\\0' + a[1:]\n"
            "s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)\n"
            "print('ready', flush=True)\n"
            "i = 0\n"
            "while True:\n"
            "    i += 1\n"
            "    try:\n"
            "        s.sendto(f'STATUS={i:08d}'.encode() + b'x' * 3900, a)\n"
            "    except OSError:\n"
            "        time.sleep(0.001)\n")
    h = harness([pyspec("chatty", code, stop_timeout=1.5, kill_timeout=3)], run_dir=run_dir)
    h.wait_output("chatty", "ready")
    sock = h.sup._engine.executor.speech.sockets["chatty"]
    h.pump(1.0)
    h.sup.send(Stop("chatty"))
    outcome = h.outcome("chatty")
    assert outcome.kind is OutcomeKind.KILLED, outcome.text
    received = sock.received
    assert received > 500, "the loop really was chatty"
    entries = read(run_dir)
    kinds = [e["kind"] for e in entries if e.get("name") == "chatty"]
    for kind in ("start", "stop", "signal", "deadline", "outcome"):
        assert kind in kinds, (kind, kinds[-20:])
    notify = [e for e in entries if e["kind"] == "notify"]
    seconds = int(notify[-1]["t"] - notify[0]["t"]) + 1
    # Each second: its few entries, and the latest of the rest when the next one begins
    # or an entry that matters is written (stop, two signals, two deadlines, outcome).
    assert len(notify) <= (journal_mod.CHATTER_PER_SECOND + 1) * seconds + 6, \
        (len(notify), seconds)
    assert sum(e.get("coalesced", 0) for e in notify) + len(notify) >= received - 1
    assert all(len(json.dumps(e)) < 2000 for e in notify), "values are capped"
    assert (run_dir.path / journal_mod.NAME).stat().st_size < 200_000
    assert len(journal(h.sup)) < 200


@pytest.mark.slow
def test_a_stream_of_extensions_during_the_stop_is_not_a_stream_of_entries(harness, run_dir):
    """EXTEND_TIMEOUT_USEC in a tight loop during the stop: each one moved the deadline a
    little, and each move was a notice, a snapshot and a journal entry (a "deadline",
    which the journal must keep). Small moves are coalesced; the process still gets the
    time it asks for, within max_stop_time."""
    code = ("import os, signal, socket, time\n"
            "a = os.environ['NOTIFY_SOCKET']; a = '\\0' + a[1:]\n"
            "s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)\n"
            "def bye(*_):\n"
            "    while True:\n"
            "        try:\n"
            "            s.sendto(b'EXTEND_TIMEOUT_USEC=1000000', a)\n"
            "        except OSError:\n"
            "            time.sleep(0.001)\n"
            "signal.signal(signal.SIGTERM, bye)\n"
            "print('ready', flush=True)\n"
            "while True: time.sleep(1)\n")
    h = harness([pyspec("greedy", code, stop_timeout=1, kill_timeout=3, max_stop_time=3)],
                run_dir=run_dir)
    h.wait_output("greedy", "ready")
    h.sup.send(Stop("greedy"))
    outcome = h.outcome("greedy")
    view = h.view("greedy")
    took = view.kill_sent_at - view.stop_requested_at
    assert outcome.kind is OutcomeKind.KILLED and 2.9 < took < 3.3, (took, outcome.text)
    sock_received = sum(1 for e in journal(h.sup) if e["kind"] == "extend")
    entries = read(run_dir)
    deadlines = [e for e in entries if e["kind"] == "deadline"]
    assert len(deadlines) <= 40, len(deadlines)
    notices = [line for line in h.sup.output.buffer("greedy").read(0).lines
               if "extended by the process" in line]
    assert len(notices) <= 40, len(notices)
    # The requests themselves are chatter: a few a second, and the latest before each
    # entry that matters (here the deadlines).
    assert sock_received <= 2 * len(deadlines) + 20, (sock_received, len(deadlines))


def test_coalesced_extensions_are_passed_on_before_the_deadline():
    """Requests between two passes are not lost: the latest is passed on in time, once
    (a request just after the grain, with the timer due at the same moment, passed the
    waiting one on a second time)."""
    import asyncio
    import time

    from proctui.core.life import inputs as i
    from proctui.core.speak.notify import Message
    from proctui.core.speak.readiness import EXTEND_GRAIN, Checks
    from tests.conftest import spec

    def ask(checks: Checks, usec: int) -> None:
        checks.message(Message(1, 0, (("EXTEND_TIMEOUT_USEC", str(usec)),)))

    async def scenario() -> None:
        passed: list[float] = []  # the instants asked for, as the step function got them

        def post(fact: object) -> None:
            assert isinstance(fact, i.ProcessExtends)
            passed.append(time.monotonic() + fact.by)

        checks = Checks(asyncio.get_running_loop(), None, spec("p", "true"), 1,  # type: ignore[arg-type]
                        post, set(), lambda pid: False)
        ask(checks, 500_000)  # passed on at once
        first = passed[0]
        for _ in range(50):  # a tight loop: coalesced
            ask(checks, 500_000)
        ask(checks, 520_000)  # the latest asks a little more
        asked = time.monotonic() + 0.52
        assert len(passed) == 1
        await asyncio.sleep(EXTEND_GRAIN * 2)
        assert len(passed) == 2 and passed[-1] >= asked - 0.01 and passed[-1] > first
        # One waits for its timer; the grain ends and a new request comes before the
        # timer runs: both go as one. (The grain is ended by hand: on a busy machine the
        # timer above may have run late, and the sleep not covered a grain since.)
        checks._extended_at = time.monotonic() - EXTEND_GRAIN
        ask(checks, 500_000)
        ask(checks, 600_000)
        assert len(passed) == 3
        checks._extended_at -= EXTEND_GRAIN  # the grain is over, the timer not yet run
        ask(checks, 400_000)
        await asyncio.sleep(EXTEND_GRAIN * 2)
        assert len(passed) == 4, passed
        assert passed[-1] >= time.monotonic() - EXTEND_GRAIN * 2 + 0.55
        checks.close()

    asyncio.run(scenario())


@pytest.mark.slow
def test_every_kind_the_core_writes_is_one_of_the_fixed_set(tmp_path):
    """A whole demo-like run with dependencies, a stop, a kill: every entry's kind is a
    Kind value (scripts and the timeline rely on the set)."""
    import json
    import subprocess
    import sys

    from proctui.core.store.kinds import Kind

    got = subprocess.run([sys.executable, "-m", "proctui", "demo", "--headless", "--stop-after",
                          "2", "--run-dir", str(tmp_path / "run")], capture_output=True,
                         text=True, timeout=60)
    assert "Traceback" not in got.stderr
    kinds = {json.loads(line)["kind"] for line in
             (tmp_path / "run" / "journal.jsonl").read_text().splitlines()}
    assert kinds <= {k.value for k in Kind}, kinds - {k.value for k in Kind}
    assert {"begin", "shutdown", "start", "stop", "signal", "outcome", "end"} <= kinds
