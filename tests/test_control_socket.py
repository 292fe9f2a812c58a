"""The control socket against clients that stall, lie or vanish: a real supervisor with
real children, its real server, and raw sockets or real clients talking to it."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import socket
import stat
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from proctui.commands import journal_read
from proctui.commands.abandon_all import AbandonAll
from proctui.commands.clear import Clear
from proctui.commands.kill import Kill
from proctui.commands.stop import Stop
from proctui.config import OnTimeout
from proctui.core.life.outcome import OutcomeKind, Reason
from proctui.core.life.stop import Phase
from proctui.core.reply import Fault
from proctui.core.store.rundir import RunDir
from proctui.core.supervisor import Supervisor
from proctui.protocol import wire
from proctui.protocol.replies import encode_reply
from proctui.remote import pages, slots
from proctui.remote.client import Connection, NoSupervisor, RemoteCore
from proctui.remote.server import BATCH, HIGH_WATER, Server
from tests import table as commands
from tests.children import STUBBORN
from tests.conftest import PY, journal, pyspec, spec, wait_until

# Connects as nobody, sends a command, prints whatever the server answered before it
# closed the connection (it may close before the command is even sent).
AS_NOBODY = """
import os, socket
os.setgid(65534)
os.setuid(65534)
s = socket.socket(socket.AF_UNIX)
s.connect(SOCKET_PATH)
data = b""
try:
    s.sendall(b'{"op": "kill", "name": "a"}\\n')
    while chunk := s.recv(65536):
        data += chunk
except OSError:
    pass
print(data.decode())
"""
FLOOD = "import sys\nwhile True: sys.stdout.write('x' * 200 + '\\n')\n"


class Served:
    def __init__(self, sup: Supervisor, run_dir: RunDir, server: Server) -> None:
        self.sup, self.run_dir, self.server = sup, run_dir, server
        self.path = run_dir.path / wire.SOCKET

    def view(self, name: str):  # type: ignore[no-untyped-def]
        return next(v for v in self.sup.snapshot().views if v.name == name)

    def raw(self) -> socket.socket:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(str(self.path))
        return s

    def connection(self) -> Connection:
        return Connection.open(self.run_dir.path)


@pytest.fixture
def served(tmp_path: Path) -> Iterator:  # type: ignore[type-arg]
    made: list[Served] = []

    def make(specs, place: Path | None = None, **kw):  # type: ignore[no-untyped-def]
        run_dir = RunDir((place or tmp_path) / f"run{len(made)}")
        run_dir.open()
        sup = Supervisor(specs, run_dir=run_dir, **kw)
        sup.start()
        wait_until(lambda: all(v.phase is Phase.RUNNING for v in sup.snapshot().views),
                   what="every process running")
        server = Server(sup, run_dir, source="test")
        server.start()
        s = Served(sup, run_dir, server)
        made.append(s)
        return s

    yield make
    for s in made:
        with contextlib.suppress(Exception):
            s.sup.send(AbandonAll()).result(timeout=5)
        s.server.close()
        s.sup.close()
        s.run_dir.close()
        if s.run_dir.path.parent != tmp_path:
            shutil.rmtree(s.run_dir.path.parent, ignore_errors=True)


def _receive(sock: socket.socket, deadline: float) -> tuple[bytes, bool]:
    """What arrives before ``deadline`` (monotonic), and whether the server closed."""
    data = b""
    sock.settimeout(0.1)
    while time.monotonic() < deadline:
        try:
            chunk = sock.recv(1 << 16)
        except TimeoutError:
            continue
        except ConnectionResetError:
            chunk = b""
        if not chunk:
            return data, True
        data += chunk
    return data, False


def _messages(data: bytes) -> list[dict]:  # type: ignore[type-arg]
    return [json.loads(line) for line in data.splitlines() if line.strip()]


def read_messages(sock: socket.socket, until: float) -> list[dict]:  # type: ignore[type-arg]
    """Every message that arrives before ``until`` (monotonic) or the socket closes."""
    return _messages(_receive(sock, until)[0])


def closed_by_server(sock: socket.socket, timeout: float = 5.0) -> list[dict]:  # type: ignore[type-arg]
    """Read until the server closes the connection; fail if it never does."""
    data, closed = _receive(sock, time.monotonic() + timeout)
    assert closed, "the server kept the connection open"
    return _messages(data)


def test_the_socket_is_the_users_alone(served):
    s = served([spec("a", "sleep 60")])
    st = os.stat(s.path)
    assert stat.S_ISSOCK(st.st_mode)
    assert stat.S_IMODE(st.st_mode) == 0o600
    assert stat.S_IMODE(os.stat(s.run_dir.path).st_mode) == 0o700


def test_a_client_gets_hello_views_and_state_then_answers(served):
    s = served([spec("a", "sleep 60"), spec("b", "sleep 60")])
    conn = s.connection()
    try:
        assert conn.hello.v == wire.VERSION and conn.names == ["a", "b"]
        assert {v.name: v.phase for v in conn.ordered_views()} == \
            {"a": Phase.RUNNING, "b": Phase.RUNNING}
        assert conn.views["a"].pid == s.view("a").pid
        reply = conn.call(commands.Stop("a"))
        assert reply.ok and reply.text == "stopping a" and reply.fault is None
        assert conn.call(commands.Stop("nope")).fault is Fault.UNKNOWN_NAME
    finally:
        conn.close()


def _deadline(view, stop_timeout: float) -> float:  # type: ignore[no-untyped-def]
    """When the stop timeout ran out, in seconds after the run started (as a Sent's
    ``at``), counted from the stop request as the core counts it. The SIGTERM is stamped
    a moment later, when it is sent: measured from it, a SIGKILL on time once read as
    2 ms early on a busy machine."""
    assert view.stop_requested_at is not None and view.started_at is not None
    return float(view.stop_requested_at - view.started_at) + stop_timeout


def test_a_client_that_never_reads_delays_no_deadline(served, tmp_path):
    """Two clients stream a flood and never read a byte; a TERM-ignoring process is
    stopped meanwhile: its SIGKILL still comes within 100 ms of the deadline, and a
    client that does read still gets the news."""
    s = served([pyspec("flood", FLOOD, scrollback=2000),
                pyspec("hung", STUBBORN, stop_timeout=1.0, kill_timeout=5.0)],
               interactive=False)
    stalled = [s.raw() for _ in range(2)]
    for sock in stalled:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.sendall(wire.dumps({"op": "watch", "output": "all"}))
    reader = RemoteCore(s.connection(), output=False)
    try:
        wait_until(lambda: s.sup.output.buffer("flood").total > 200_000, timeout=30,
                   what="a flood of output")
        wait_until(lambda: s.sup.output.buffer("hung").output_total >= 1, what="hung ready")
        assert s.sup.send(Stop("hung")).result(5).ok
        wait_until(lambda: s.view("hung").outcome is not None, timeout=20,
                   what="hung's outcome")
        outcome = s.view("hung").outcome
        assert outcome.kind is OutcomeKind.KILLED
        kill = next(x for x in outcome.sent if x.reason is Reason.TIMEOUT)
        late = kill.at - _deadline(s.view("hung"), 1.0)
        assert 0 <= late < 0.1, f"SIGKILL {late * 1000:.0f} ms after its deadline"
        wait_until(lambda: next(v for v in reader.snapshot().views
                                if v.name == "hung").outcome is not None, timeout=10,
                   what="the reading client to see the outcome")
        # The stalled clients hold no more than their bound on the server.
        held = [c.writer.transport.get_write_buffer_size() for c in s.server.clients
                if c.kind == ""]
        assert len(held) == 2 and all(0 < size < HIGH_WATER + BATCH + (1 << 20)
                                      for size in held), held
    finally:
        reader.close()
        for sock in stalled:
            sock.close()


@pytest.mark.slow
def test_a_client_that_fell_behind_is_brought_up_to_date(served):
    """It stops reading while 50,000 lines go by (the scrollback keeps 1,000): once it
    reads again, it is told what it missed and gets the newest lines, numbered as the
    supervisor numbers them."""
    code = ("import sys,time\nfor i in range(50000): print(f'line {i}')\n"
            "sys.stdout.flush()\ntime.sleep(60)\n")
    s = served([pyspec("burst", code, scrollback=1000)])
    sock = s.raw()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.sendall(wire.dumps({"op": "watch", "output": "all", "replay": 0}))
    try:
        wait_until(lambda: s.sup.output.buffer("burst").output_total == 50000, timeout=30,
                   what="the burst")
        messages = read_messages(sock, time.monotonic() + 3.0)
        outs = [m for m in messages if m.get("t") == "out" and m["n"] == "burst"]
        dropped = sum(m["d"] for m in outs)
        # A burst's end may come in a push of its own, with no lines, that says the
        # output went quiet ("q"): the newest lines are in the last push that has any.
        last = [m for m in outs if m["l"]][-1]
        assert last["l"][-1] == "line 49999"
        assert last["f"] + len(last["l"]) == s.sup.output.buffer("burst").total
        assert dropped > 0, "the lines that left the scrollback are counted"
        assert sum(len(m["l"]) for m in outs) + dropped <= 50001 + 5
    finally:
        sock.close()


@pytest.mark.parametrize("payload", [
    b"this is not json\n",
    b"[1, 2, 3]\n",
    b"\xff\xfe\x00garbage\n",
    b'{"op": ' + b"[" * 100_000 + b"\n",
])
def test_garbage_drops_the_client_and_nothing_else(served, payload):
    s = served([spec("a", "sleep 60")])
    sock = s.raw()
    try:
        sock.sendall(payload)
        messages = closed_by_server(sock)
        assert any(m.get("t") == "error" for m in messages)
    finally:
        sock.close()
    assert s.view("a").phase is Phase.RUNNING
    conn = s.connection()  # the server still serves
    assert conn.call(commands.Tail("a")).ok
    conn.close()


def test_an_oversized_line_drops_the_client(served):
    s = served([spec("a", "sleep 60")])
    sock = s.raw()
    try:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            sock.sendall(b'{"op": "stop", "name": "' + b"a" * (2 * wire.MAX_LINE))
        closed_by_server(sock)
    finally:
        sock.close()
    assert s.view("a").phase is Phase.RUNNING
    conn = s.connection()
    conn.close()


def test_a_socket_closed_in_the_middle_of_a_message_does_nothing(served):
    s = served([spec("a", "sleep 60")])
    for _ in range(20):
        sock = s.raw()
        sock.sendall(b'{"op": "stop", "name": "a"')  # no newline: never a whole message
        sock.close()
    conn = s.connection()
    try:
        conn.call(commands.Tail("a"))
        assert s.view("a").phase is Phase.RUNNING
        wait_until(lambda: len(s.server.clients) == 1, what="the dead clients gone")
    finally:
        conn.close()


def test_two_clients_see_the_same_state_and_each_others_decisions(served):
    s = served([pyspec("hung", STUBBORN, stop_timeout=0.5, on_timeout=OnTimeout.ASK)],
               interactive=True)
    wait_until(lambda: s.sup.output.buffer("hung").output_total >= 1, what="hung ready")
    one, two = RemoteCore(s.connection()), RemoteCore(s.connection())

    def hung(core: RemoteCore):  # type: ignore[no-untyped-def]
        return next(v for v in core.snapshot().views if v.name == "hung")

    try:
        assert one.send(Stop("hung")).result(5).ok
        for core in (one, two):
            wait_until(lambda c=core: hung(c).phase is Phase.DECIDING, timeout=10,
                       what="both clients to see the decision")
        assert two.send(Kill("hung")).result(5).ok
        wait_until(lambda: hung(one).outcome is not None, timeout=10,
                   what="the other client to see the outcome")
        assert "by operator" in hung(one).outcome.text
        wait_until(lambda: one.snapshot().consoles == 2, what="two consoles counted")
    finally:
        one.close()
        two.close()


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to connect as another user")
def test_another_user_is_refused_and_the_refusal_logged(served):
    """The directory (0700) and the socket (0600) keep other users out; should they be
    opened up (by mistake, or by someone else as root), the peer check still refuses."""
    s = served([spec("a", "sleep 60")], place=Path(tempfile.mkdtemp()))
    os.chmod(s.run_dir.path.parent, 0o711)
    os.chmod(s.run_dir.path, 0o711)
    os.chmod(s.path, 0o666)
    code = AS_NOBODY.replace("SOCKET_PATH", repr(str(s.path)))
    got = subprocess.run([PY, "-c", code], capture_output=True, text=True, timeout=20)
    assert got.returncode == 0, got.stderr
    assert "refused" in got.stdout and '"views"' not in got.stdout
    assert s.view("a").phase is Phase.RUNNING
    wait_until(lambda: any(e.get("kind") == "notice" and "uid 65534" in str(e.get("text"))
                           for e in journal(s.sup)), what="the refusal in the journal")


def test_no_supervisor_is_one_clear_error(tmp_path):
    with pytest.raises(NoSupervisor, match="no run directory"):
        Connection.open(tmp_path / "nothing")
    d = RunDir(tmp_path / "run")
    d.open()
    d.close()
    with pytest.raises(NoSupervisor, match="no supervisor is running"):
        Connection.open(tmp_path / "run")
    # A dead supervisor's socket (it was SIGKILLed) is not a supervisor either.
    dead = socket.socket(socket.AF_UNIX)
    dead.bind(str(tmp_path / "run" / wire.SOCKET))
    dead.close()
    with pytest.raises(NoSupervisor, match="no supervisor is running"):
        Connection.open(tmp_path / "run")


def test_a_new_supervisor_replaces_a_dead_ones_socket(tmp_path, served):
    stale = tmp_path / "run0"
    stale.mkdir(mode=0o700)
    dead = socket.socket(socket.AF_UNIX)
    dead.bind(str(stale / wire.SOCKET))
    dead.close()
    s = served([spec("a", "sleep 60")])
    conn = s.connection()
    assert conn.names == ["a"]
    conn.close()


@pytest.mark.slow
def test_every_refusal_has_a_fault_code_and_words(served):
    """Faults, like supervisord's: a script tests the code, a person reads the words."""
    s = served([spec("a", "sleep 60"), spec("done", "sleep 60")])
    assert s.sup.send(Stop("done")).result(5).ok
    wait_until(lambda: s.view("done").outcome is not None, what="done to end")
    sock = s.raw()
    try:
        for number, message in enumerate([
                {"op": "frobnicate"}, {"op": "extend", "name": "a", "by": -1},
                {"op": "extend", "name": "a", "by": "soon"}, {"op": "stop"},
                {"op": "kill", "name": "nope"}, {"op": "kill", "name": "done"},
                {"op": "tail", "name": "a", "lines": 10**30}]):
            sock.sendall(wire.dumps({**message, "id": number}))
        replies = {m["id"]: m for m in read_messages(sock, time.monotonic() + 3.0)
                   if m.get("t") == "reply"}
    finally:
        sock.close()
    assert [replies[i]["fault"] for i in range(7)] == [
        "UNKNOWN_COMMAND", "BAD_VALUE", "BAD_REQUEST", "BAD_REQUEST", "UNKNOWN_NAME",
        "NOT_RUNNING", "BAD_VALUE"]
    assert all(not r["ok"] and r["text"] and "\n" not in r["text"] for r in replies.values())
    assert s.view("a").phase is Phase.RUNNING


def test_another_protocol_version_is_one_clear_line(tmp_path):
    """A supervisor of another proctui version: the client says so and which, once."""
    run = tmp_path / "run"
    run.mkdir(mode=0o700)
    old = socket.socket(socket.AF_UNIX)
    old.bind(str(run / wire.SOCKET))
    old.listen(1)

    def serve_old() -> None:
        peer, _ = old.accept()
        peer.sendall(b'{"t":"hello","v":1,"version":"0.0.9","pid":4120}\n')
        peer.recv(100)
        peer.close()

    import threading
    thread = threading.Thread(target=serve_old, daemon=True)
    thread.start()
    try:
        with pytest.raises(NoSupervisor) as raised:
            Connection.open(run, timeout=5)
        text = str(raised.value)
        assert "protocol 1" in text and f"speaks {wire.VERSION}" in text
        assert "pid 4120" in text and "\n" not in text
    finally:
        old.close()
        thread.join(5)


@pytest.mark.slow
def test_tricklers_cannot_hold_the_slots(served, monkeypatch):
    """More clients than there are slots, each trickling a byte a second (and some saying
    nothing at all): the owner's commands still get through at once, and every trickler is
    closed once its request has not arrived whole within the window."""
    monkeypatch.setattr(slots, "REQUEST_WINDOW", 2.0)
    monkeypatch.setattr(slots, "IDLE_LIMIT", 3.0)
    s = served([spec("a", "sleep 60")])
    tricklers = [s.raw() for _ in range(slots.MAX_CLIENTS + 16)]
    silent = [s.raw() for _ in range(4)]
    stop = threading.Event()

    def trickle() -> None:
        while not stop.is_set():
            for sock in tricklers:
                with contextlib.suppress(OSError):
                    sock.send(b"{")
            stop.wait(1.0)

    thread = threading.Thread(target=trickle, daemon=True)
    thread.start()
    try:
        wait_until(lambda: len(s.server.clients) >= slots.MAX_CLIENTS,
                   what="every slot taken")
        start = time.monotonic()
        conn = s.connection()  # the owner's status
        try:
            assert conn.call(commands.Stop("a")).ok
        finally:
            conn.close()
        assert time.monotonic() - start < 3.0
        # Each trickler is told why and closed within the window (and a margin).
        for sock in tricklers[-8:] + silent:
            messages = closed_by_server(sock, timeout=15.0)
            assert any(m.get("t") == "error" for m in messages), messages
    finally:
        stop.set()
        thread.join(5)
        for sock in tricklers + silent:
            sock.close()
    wait_until(lambda: len(s.server.clients) == 0, timeout=15, what="every trickler gone")


def _rss(field: str = "VmRSS") -> int:
    """This process's resident bytes (the served supervisor runs in it), or its peak."""
    text = Path("/proc/self/status").read_text()
    return int(re.search(rf"^{field}:\s+(\d+) kB", text, re.M).group(1)) << 10  # type: ignore[union-attr]


def _until_reply(sock: socket.socket, timeout: float = 30.0) -> None:
    """Read (a little) until the start of a reply arrives."""
    seen = b""
    sock.settimeout(timeout)
    while b'"t":"reply"' not in seen:
        chunk = sock.recv(4096)
        assert chunk, "closed before any reply"
        seen = seen[-64:] + chunk


def _reset_peak() -> None:
    """From now on VmHWM is the peak of what follows (Linux 4.0 and later)."""
    Path("/proc/self/clear_refs").write_text("5")


def test_clients_that_ask_for_everything_and_never_read_cost_a_bounded_amount(served):
    """Ten clients each ask for a 12 MB scrollback, many times over, and never read: each
    reply is one page, a client's unread bytes are bounded, so the supervisor's memory
    grows by a few MB (it grew by the scrollback per client before), and a stop deadline
    meanwhile is kept."""
    code = ("import sys, time\nline = 'x' * 120\n"
            "for i in range(100000): sys.stdout.write(f'{i:08d} {line}\\n')\n"
            "sys.stdout.flush()\nprint('done', flush=True)\ntime.sleep(600)\n")
    s = served([pyspec("big", code, scrollback=100_000),
                pyspec("hung", STUBBORN, stop_timeout=1.0, kill_timeout=5.0)],
               interactive=False)
    wait_until(lambda: s.sup.output.buffer("big").output_total >= 100_001, timeout=60,
               what="the scrollback full")
    wait_until(lambda: s.sup.output.buffer("hung").output_total >= 1, what="hung ready")
    before = _rss()
    _reset_peak()
    greedy = [s.raw() for _ in range(10)]
    try:
        for sock in greedy:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.sendall(b"".join(wire.dumps({"op": "tail", "name": "big", "id": i})
                                  for i in range(20)))
        assert s.sup.send(Stop("hung")).result(5).ok
        wait_until(lambda: s.view("hung").outcome is not None, timeout=20,
                   what="hung's outcome")
        for sock in greedy:  # each has its first reply built (a few KB of it read)
            _until_reply(sock)
        grown = _rss("VmHWM") - before  # the peak: a reply built whole and then dropped
        assert grown < 60 << 20, f"the supervisor grew by {grown >> 20} MB"
        held = [c.writer.transport.get_write_buffer_size() for c in s.server.clients]
        assert all(size <= pages.MAX_QUEUED for size in held), held
        outcome = s.view("hung").outcome
        kill = next(x for x in outcome.sent if x.reason is Reason.TIMEOUT)
        late = kill.at - _deadline(s.view("hung"), 1.0)
        assert 0 <= late < 0.5, f"SIGKILL {late * 1000:.0f} ms after its deadline"
    finally:
        for sock in greedy:
            sock.close()
    # Whoever reads gets all of it, a page at a time, numbered as the supervisor numbers it.
    conn = s.connection()
    try:
        page = conn.call(commands.Tail("big"))
        assert len(wire.dumps(encode_reply(page))) < 2 * pages.PAGE_BYTES
        got = list(page.lines)
        while page.more:
            page = conn.call(commands.Tail("big", start=page.next))
            got += page.lines
        numbers = [int(line[:8]) for line in got if line[:8].isascii() and line[:8].isdigit()]
        assert numbers == list(range(numbers[0], 100_000)) and numbers[0] <= 10
    finally:
        conn.close()


def test_logs_shows_the_kept_lines_once_thousands_have_left_the_scrollback(served, capsys):
    """``proctui logs NAME`` asked from line 0, and the scrollback (100 lines) had moved
    thousands of lines past it: every read from 0 came back empty, and logs printed
    nothing at all."""
    import io

    from proctui.frontends.logs import logs

    code = "for i in range(5000): print(f'{i:08d} line')\nimport time\ntime.sleep(100)"
    s = served([pyspec("many", code, scrollback=100)])
    wait_until(lambda: s.sup.output.buffer("many").mark().output_total >= 5000,
               what="5,000 lines printed")
    conn = s.connection()
    try:
        for asked in (None, 300, 40):
            out = io.StringIO()
            assert logs(conn, "many", follow=False, lines=asked, out=out) == 0
            shown = [line.split()[-2] for line in out.getvalue().splitlines()]
            kept = min(asked or 100, 100)
            assert shown == [f"{i:08d}" for i in range(5000 - kept, 5000)], (asked, shown[:3])
            said = capsys.readouterr().err
            assert said == ("proctui: 200 of the last 300 lines of many are no longer kept "
                            "(its scrollback is smaller)\n" if asked == 300 else ""), said
        # More than were ever printed: their count, not "the last 9000" of 5,000 or so.
        assert logs(conn, "many", follow=False, lines=9000, out=io.StringIO()) == 0
        said = capsys.readouterr().err
        gone, of = map(int, re.fullmatch(r"proctui: (\d+) of the (\d+) lines of many are no "
                                         r"longer kept \(its scrollback is smaller\)\n",
                                         said).groups())
        assert of - gone == 100 and 5000 <= of < 9000, said
        page = conn.call(commands.Tail("many", start=7))  # from a line long gone
        assert page.first == page.total - 100 and len(page.lines) == 100 and not page.more
    finally:
        conn.close()


def test_logs_reads_past_the_operators_clear(served, capsys):
    """``c`` in a console clears the panes, every console's, not what is kept: logs
    printed nothing after it and said 'no longer kept (its scrollback is smaller)'."""
    import io

    from proctui.frontends.logs import logs

    code = "for i in range(30): print(f'tick {i}')\nimport time\ntime.sleep(100)"
    s = served([pyspec("t", code)])
    buf = s.sup.output.buffer("t")
    wait_until(lambda: buf.mark().output_total >= 30, what="30 lines printed")
    s.sup.send(Clear("t")).result(10)
    assert buf.read(0).lines == []  # the panes show nothing before the clear
    conn = s.connection()
    try:
        for asked in (None, 3):
            out = io.StringIO()
            assert logs(conn, "t", follow=False, lines=asked, out=out) == 0
            want = [f"tick {i}" for i in range(30)][-(asked or 30):]
            assert out.getvalue().splitlines() == want
            assert capsys.readouterr().err == ""
    finally:
        conn.close()


def test_logs_says_on_stderr_what_a_flood_took_between_two_pages(capsys):
    """Between two pages the scrollback moved past the next line to read (a race a real
    flood wins only sometimes, so the pages are made here): the output holds only the
    process's lines, and stderr says how many were lost."""
    import io

    from proctui.frontends.logs import logs
    from proctui.protocol.replies import TailPage

    pages_sent = [TailPage(first=0, lines=["a0", "a1", "a2"], runs=[[1, 3]], next=3,
                           more=True, total=10),
                  TailPage(first=7, lines=["a7", "a8", "a9"], runs=[[1, 3]], next=10,
                           more=False, total=10)]
    asked: list[object] = []

    class Pages:
        names = ["a"]

        def call(self, request: object) -> TailPage:
            asked.append(request)
            return pages_sent[len(asked) - 1]

    out = io.StringIO()
    assert logs(Pages(), "a", follow=False, lines=None, out=out) == 0  # type: ignore[arg-type]
    assert out.getvalue() == "a0\na1\na2\na7\na8\na9\n"
    assert asked[1] == commands.Tail("a", start=3)
    assert capsys.readouterr().err == \
        "proctui: 4 lines of a left the scrollback before they could be read\n"


def test_the_journal_comes_a_page_at_a_time_and_whole(served, monkeypatch):
    monkeypatch.setattr(journal_read, "PAGE_BYTES", 100)  # one entry a page
    s = served([spec("a", "sleep 60"), spec("b", "sleep 60")])
    core = RemoteCore(s.connection(), output=False)
    try:
        first = core.send(journal_read.ReadJournal(0)).result(10)
        assert first.ok and len(first.entries) == 1 and first.more and first.next == 1
        expected = journal(s.sup)
        got = journal(core)
        assert len(expected) >= 3 and got[:len(expected)] == json.loads(json.dumps(expected))
    finally:
        core.close()


def test_a_console_that_reads_keeps_its_slot_when_strangers_subscribe(served):
    """Every other slot taken by clients that subscribe to all output and never read: a
    newcomer still gets in, and the console that reads is not the one sent away."""
    s = served([pyspec("chatty", FLOOD, scrollback=2000)])
    console = RemoteCore(s.connection())
    hogs = []
    try:
        for _ in range(slots.MAX_CLIENTS + 8):
            sock = s.raw()
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.sendall(wire.dumps({"op": "hello", "kind": "hog"}) +
                         wire.dumps({"op": "watch", "output": "all"}))
            hogs.append(sock)
        wait_until(lambda: len(s.server.clients) == slots.MAX_CLIENTS,
                   what="every slot taken")
        conn = s.connection()
        try:
            assert conn.call(commands.Ping()).ok
        finally:
            conn.close()
        assert console.snapshot().link.gone is None
        assert journal(console)  # still answered
    finally:
        console.close()
        for sock in hogs:
            sock.close()


@pytest.mark.slow
def test_an_id_that_is_a_lone_surrogate_comes_back_as_it_went(served):
    s = served([spec("a", "sleep 60")])
    sock = s.raw()
    try:
        sock.sendall(b'{"op": "ping", "id": "\\ud800"}\n')
        replies = [m for m in read_messages(sock, time.monotonic() + 2.0)
                   if m.get("t") == "reply"]
    finally:
        sock.close()
    assert [r["id"] for r in replies] == ["\ud800"] and replies[0]["ok"]


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to connect as another user")
def test_a_flood_of_refused_connections_is_one_notice(served):
    s = served([spec("a", "sleep 60")], place=Path(tempfile.mkdtemp()))
    os.chmod(s.run_dir.path.parent, 0o711)
    os.chmod(s.run_dir.path, 0o711)
    os.chmod(s.path, 0o666)
    code = ("import os, socket\nos.setgid(65534)\nos.setuid(65534)\n"
            "for _ in range(200):\n"
            "    s = socket.socket(socket.AF_UNIX)\n"
            f"    s.connect({str(s.path)!r})\n"
            "    s.close()\n")
    got = subprocess.run([PY, "-c", code], capture_output=True, text=True, timeout=60)
    assert got.returncode == 0, got.stderr

    def refusals() -> list[str]:
        return [str(e.get("text")) for e in journal(s.sup)
                if e.get("kind") == "notice" and "uid 65534" in str(e.get("text"))]

    wait_until(refusals, what="the refusal in the journal")
    wait_until(lambda: s.server._refusals[65534][1] == 199, what="all 200 refused")
    assert len(refusals()) == 1, refusals()
    assert s.view("a").phase is Phase.RUNNING


class _Collected:
    """A client's writer that keeps what a push wrote."""

    def __init__(self) -> None:
        self.data = b""

    def write(self, data: bytes) -> None:
        self.data += data


def test_a_client_behind_the_scrollback_gets_the_newest_lines_at_once(served):
    """30,000 lines landed while it was 20,000 behind what the scrollback holds: its next
    push ends at the newest line (the end of a flood shows at once), counting the rest as
    missed. One that missed nothing still gets the oldest held first, losing nothing."""
    code = ("import sys,time\nsys.stdout.write(''.join(f'line {i}\\n' for i in range(30000)))"
            "\nsys.stdout.flush()\ntime.sleep(60)\n")
    s = served([pyspec("burst", code, scrollback=20000)])
    buf = s.sup.output.buffer("burst")
    wait_until(lambda: buf.output_total == 30000, timeout=30, what="the burst")

    def push(start: int) -> dict:  # type: ignore[type-arg]
        writer = _Collected()
        c = slots.Client(writer=writer, pid=0, sent={"burst": start},  # type: ignore[arg-type]
                         partial={"burst": "\0"}, cleared={"burst": -1})
        asyncio.run(s.server._push(c))
        return next(m for m in _messages(writer.data) if m.get("t") == "out")

    behind = push(0)
    assert behind["l"][-1] == "line 29999"
    assert behind["d"] == behind["f"] > 0, "what it missed is counted"
    oldest = buf.mark().first
    caught_up = push(oldest)
    assert caught_up["f"] == oldest and caught_up["d"] == 0
    assert caught_up["l"][0] == buf.read(oldest, 1).lines[0]


def test_a_push_says_when_output_has_stopped_so_a_console_draws_it_at_once(served,
                                                                            monkeypatch):
    """'q' on a push that brings a client everything of a process gone quiet: an attached
    console drew a flood's end at its next tick, up to 100 ms late. Output still coming
    is not 'q', and the next push says it once it has stopped, with or without lines."""
    from proctui.remote import push as push_module

    # Quiet for half a second: a flood on a loaded machine (another test's children
    # beside it) may not be scheduled for 10 ms, and then it looked quiet.
    monkeypatch.setattr(push_module, "QUIET_AFTER", 0.5)
    code = "import sys,time\nfor i in range(10): print(i)\nsys.stdout.flush()\ntime.sleep(60)\n"
    s = served([pyspec("burst", code), pyspec("flood", FLOOD)])
    burst = s.sup.output.buffer("burst")
    wait_until(lambda: burst.output_total == 10, what="the burst")
    # (what is measured is the quiet after it)
    wait_until(lambda: time.monotonic() - burst.appended_at >= 0.5, what="the burst quiet")

    def push(c: slots.Client) -> dict[str, dict]:  # type: ignore[type-arg]
        c.writer = _Collected()  # type: ignore[assignment]
        asyncio.run(s.server._push(c))
        return {m["n"]: m for m in _messages(c.writer.data) if m.get("t") == "out"}  # type: ignore[attr-defined]

    c = slots.Client(writer=None, pid=0, sent={"burst": 0, "flood": 0},  # type: ignore[arg-type]
                     partial={"burst": "\0", "flood": "\0"}, cleared={"burst": -1, "flood": -1})
    got = push(c)
    assert got["burst"]["q"] is True and got["flood"]["q"] is False
    assert c.busy == {"flood"} and c.news.is_set(), "a push to come for the flood"
    # A process that stopped right after a push not marked quiet: the next push says so.
    c.busy.add("burst")
    again = push(c)
    assert again["burst"]["q"] is True and again["burst"]["l"] == [] and "burst" not in c.busy


def test_the_end_of_a_burst_is_said_within_the_gap_between_pushes(served, monkeypatch):
    """A push that brought a client every line of a burst, before the burst had been quiet
    QUIET_AFTER, left the 'q' to the next push, a whole gap (50 ms) later: the end of a
    flood reached an attached console that much after the local one drew it. The pause
    between pushes now says it once the burst is quiet; it pushes nothing early to a
    client that is behind (a flood it has not caught up with)."""
    from proctui.remote import server as server_module

    monkeypatch.setattr(server_module, "QUIET_AFTER", 0.04)  # room for a busy machine
    monkeypatch.setattr(server_module, "PUSH_HZ", 4)  # a 250 ms gap, well past it
    # A burst every 0.6 s: the next one must not come within the pause's 250 ms (with
    # 0.3 s, a loaded CI machine's delays let it in, and the burst was never quiet).
    code = ("import sys,time\nwhile True:\n    print('a\\nb\\nc', flush=True)\n"
            "    time.sleep(0.6)\n")
    s = served([pyspec("burst", code)])
    buf = s.sup.output.buffer("burst")

    def client(name: str) -> slots.Client:
        c = slots.Client(writer=_Collected(), pid=0, sent={name: 0},  # type: ignore[arg-type]
                         partial={name: "\0"}, cleared={name: -1})
        asyncio.run(s.server._push(c))
        return c

    for _ in range(20):  # a burst caught before it has been quiet long: a try each 0.6 s
        seen = buf.output_total
        wait_until(lambda: buf.output_total > seen, timeout=10, what="a burst")  # noqa: B023
        c = client("burst")
        if "burst" in c.busy:
            break
    else:
        pytest.skip("never caught a burst within QUIET_AFTER of its arrival")
    c.writer = _Collected()  # type: ignore[assignment]
    began = time.monotonic()
    asyncio.run(s.server._pause(c))
    said = [m for m in _messages(c.writer.data) if m.get("t") == "out"]  # type: ignore[attr-defined]
    assert [m["q"] for m in said] == [True] and said[0]["l"] == [], said
    assert "burst" not in c.busy
    assert time.monotonic() - began >= 0.2, "the gap itself is kept"

    behind = slots.Client(writer=_Collected(), pid=0, sent={"burst": 0},  # type: ignore[arg-type]
                          partial={"burst": "\0"}, cleared={"burst": -1}, busy={"burst"})
    asyncio.run(s.server._pause(behind))
    assert behind.writer.data == b"", "nothing early for a client that is behind"  # type: ignore[attr-defined]


def test_a_trickle_of_output_is_pushed_no_oftener_for_the_early_end(served, monkeypatch):
    """The pause's early push is for a burst's end only: a process that writes a line
    every 2 ms is never quiet, and what it wrote meanwhile waits for the gap's end (an
    early push of lines doubled the pushes to 39 a second, found by a reviewing helper)."""
    from proctui.remote import server as server_module

    monkeypatch.setattr(server_module, "PUSH_HZ", 4)  # a 250 ms gap
    code = "import time\nwhile True:\n    print('t', flush=True)\n    time.sleep(0.002)\n"
    s = served([pyspec("trickle", code)])
    buf = s.sup.output.buffer("trickle")
    wait_until(lambda: buf.output_total > 50, what="the trickle")
    pushed_lines = 0
    for _ in range(5):
        c = slots.Client(writer=_Collected(), pid=0, sent={"trickle": 0},  # type: ignore[arg-type]
                         partial={"trickle": "\0"}, cleared={"trickle": -1})
        asyncio.run(s.server._push(c))  # caught up, the trickle still coming
        c.writer = _Collected()  # type: ignore[assignment]
        asyncio.run(s.server._pause(c))
        said = [m for m in _messages(c.writer.data) if m.get("t") == "out"]  # type: ignore[attr-defined]
        pushed_lines += sum(len(m["l"]) for m in said)
    assert pushed_lines == 0, "lines went early, between two pushes"


def test_the_end_of_a_burst_rings_an_attached_console_that_has_not_looked_yet(served):
    """The bell rings a console once until it looks (its tick), and a ring while output is
    still coming plans that tick for a whole refresh later (100 ms). The push that says
    the output stopped rang nothing more, and the end of a flood waited for that tick
    (53 ms after the 'q' in a traced run): it rings again now."""
    s = served([pyspec("quiet", "import time\nprint('ready', flush=True)\ntime.sleep(60)\n")])
    core = RemoteCore(Connection.open(s.run_dir.path))
    try:
        wait_until(lambda: core.output.buffer("quiet").output_total >= 1, what="the replay")
        rings: list[int] = []
        core.output.listen(lambda: rings.append(1))
        mark = s.sup.output.buffer("quiet").mark()
        out = {"t": "out", "n": "quiet", "f": mark.total, "l": [], "s": [], "d": 0,
               "o": mark.output_total, "p": mark.partial, "c": mark.cleared_before}
        end = {"t": "push", "k": 0}  # a push is applied whole, at its mark
        core._apply({**out, "q": False})  # still coming: rung (now or before), not looked at
        core._apply(end)
        assert not core.snapshot().link.settled
        before = len(rings)
        core._apply({**out, "q": True})
        core._apply(end)
        assert core.snapshot().link.settled
        assert len(rings) == before + 1, "the burst's end must ring though nobody looked"
    finally:
        core.close()


def test_a_new_link_forgets_what_the_old_one_said_was_still_coming(served):
    """The old link's last word on a process was "more to come" (no "q"), and then it
    dropped. The new link's server starts with nothing still coming, and says "q" only
    after output it sends: the client kept the old word for ever, and the end of every
    later burst waited for the console's tick (found by a reviewing helper)."""
    s = served([pyspec("quiet", "import time\nprint('ready', flush=True)\ntime.sleep(60)\n")])
    path = s.run_dir.path
    core = RemoteCore(Connection.open(path), dial=lambda: Connection.open(path))
    try:
        wait_until(lambda: core.output.buffer("quiet").output_total >= 1, what="the replay")
        mark = s.sup.output.buffer("quiet").mark()
        core._apply({"t": "out", "n": "quiet", "f": mark.total, "l": [], "s": [], "d": 0,
                     "o": mark.output_total, "p": mark.partial, "c": mark.cleared_before,
                     "q": False})
        core._apply({"t": "push", "k": 0})  # a push is applied whole, at its mark
        assert not core.snapshot().link.settled
        core.conn.sock.shutdown(socket.SHUT_RDWR)  # the link drops
        wait_until(lambda: core.snapshot().link.links >= 2 and
                   core.snapshot().link.down_since is None, timeout=20, what="a new link")
        assert core.snapshot().link.settled, "the old link's 'still coming' outlived it"
    finally:
        core.close()


def _ping_padded(size: int) -> bytes:
    """A ping of ``size`` bytes, its newline included: the padding is a field no request
    has, which decoding ignores, so only the length can refuse it."""
    head = b'{"op": "ping", "id": 7, "pad": "'
    return head + b"x" * (size - len(head) - 3) + b'"}\n'


@pytest.mark.parametrize("size", [wire.MAX_LINE + 2, wire.MAX_LINE + 1000, 2 * wire.MAX_LINE])
def test_a_line_over_the_bound_is_refused_however_it_arrives(served, size):
    """The bound held while a line was still arriving, not for the read that ended it: a
    line of MAX_LINE and a little more, sent at once, was answered."""
    s = served([spec("a", "sleep 60")])
    sock = s.raw()
    try:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            sock.sendall(_ping_padded(size))
        messages = closed_by_server(sock)
    finally:
        sock.close()
    assert not [m for m in messages if m.get("t") == "reply"]
    assert [m["error"] for m in messages if m.get("t") == "error"] == ["message too long"]
    conn = s.connection()  # the supervisor still answers at once
    try:
        began = time.monotonic()
        assert conn.call(commands.Tail("a")).ok
        assert time.monotonic() - began < 2.0
    finally:
        conn.close()


@pytest.mark.slow
def test_a_line_of_the_bound_exactly_is_answered(served):
    s = served([spec("a", "sleep 60")])
    sock = s.raw()
    try:
        sock.sendall(_ping_padded(wire.MAX_LINE + 1))  # MAX_LINE bytes and its newline
        replies = [m for m in read_messages(sock, time.monotonic() + 3.0)
                   if m.get("t") == "reply"]
    finally:
        sock.close()
    assert [(r["id"], r["ok"]) for r in replies] == [(7, True)]


@pytest.mark.slow
def test_a_request_with_a_key_twice_is_refused_as_a_bad_request(served):
    """JSON keeps the last of two keys of one name: "stop a" that also says "b" is
    ambiguous, not a stop of b."""
    s = served([spec("a", "sleep 60"), spec("b", "sleep 60")])
    sock = s.raw()
    try:
        sock.sendall(b'{"op": "stop", "name": "a", "name": "b", "id": 1}\n'
                     b'{"op": "ping", "id": 2}\n')
        replies = {m["id"]: m for m in read_messages(sock, time.monotonic() + 3.0)
                   if m.get("t") == "reply"}
    finally:
        sock.close()
    assert (replies[1]["ok"], replies[1]["fault"]) == (False, "BAD_REQUEST")
    assert replies[1]["text"] == "stop: the key 'name' is given twice"
    assert replies[2]["ok"]  # the connection goes on
    assert s.view("a").phase is Phase.RUNNING and s.view("b").phase is Phase.RUNNING


def test_a_connection_that_said_it_is_an_agents_door_stays_one(served):
    """An answer is refused from a client that said it is "mcp", and a second hello on
    the same connection saying "console" does not make its answer an operator's."""
    s = served([spec("web", "sleep 60")])
    wait_until(lambda: s.sup.snapshot().views[0].pid is not None, what="web started")
    sock = s.raw()
    try:
        sock.sendall(wire.dumps({"op": "hello", "kind": "mcp"}) +
                     wire.dumps({"op": "request_decision", "choice": "kill", "name": "web",
                                 "why": "hangs", "id": 1}) +
                     wire.dumps({"op": "hello", "kind": "console"}) +
                     wire.dumps({"op": "answer", "ask": 1, "grant": True, "id": 2}))
        replies: dict[object, dict] = {}  # type: ignore[type-arg]
        deadline = time.monotonic() + 10
        while 2 not in replies and time.monotonic() < deadline:
            for m in read_messages(sock, time.monotonic() + 0.5):
                if m.get("t") == "reply":
                    replies[m.get("id")] = m
    finally:
        sock.close()
    assert replies[1]["ok"], replies
    assert not replies[2]["ok"] and "an agent may ask, never answer" in replies[2]["text"]
    assert s.sup.snapshot().views[0].phase is Phase.RUNNING
