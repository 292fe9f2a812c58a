"""An attached console on a slow link (SSH from far away) during a flood: what it is
pushed waits in the link's buffers (sshd holds up to 2 MB), and without a bound every
view, countdown and question waited behind them (a stop shown 27 s late at 100 KB/s).
A console acknowledges each push, and the supervisor keeps at most two on the way, each
sized to the link (remote/push.py). The link here is real sockets and a relay that holds
what the supervisor sends, as sshd does, and passes it on at a fixed rate."""

from __future__ import annotations

import contextlib
import io
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from proctui.commands.stop import Stop
from proctui.commands.stop_all import StopAll
from proctui.config import ProcessSpec
from proctui.core.life.stop import Phase
from proctui.core.store.rundir import RunDir
from proctui.core.supervisor import Supervisor
from proctui.protocol import wire
from proctui.remote.client import Connection, RemoteCore
from proctui.remote.connection import NotAnswering, connect_socket
from proctui.remote.push import fitting
from proctui.remote.server import Server
from proctui.remote.window import FIRST, LAG, LEAST, Window
from tests import table as commands
from tests.children import POLITE
from tests.conftest import all_ended, pyspec, wait_until

# The real console on a pty, the wheel, ssh or hundreds of processes: the second
# CI stage (README: "Tests").
pytestmark = pytest.mark.slow

FLOOD = "import sys\nwhile True:\n    sys.stdout.write('flood ' + 'x' * 94 + '\\n')\n"
HELD = 2 << 20  # what sshd's channel window holds on the way


class SlowLink:
    """The supervisor's bytes carried to the client at ``rate`` bytes a second, up to HELD
    of them held on the way; the client's bytes go at once."""

    def __init__(self, run_dir: Path, rate: int) -> None:
        self.upstream, _pid = connect_socket(run_dir, 10)
        self.client, self._ours = socket.socketpair()
        self.rate = rate
        self.held = bytearray()
        self.peak = 0  # the most held at once
        self.carried = 0
        self._cond = threading.Condition()
        self._closed = False
        self._ended = False  # the supervisor closed its end
        self._threads = [threading.Thread(target=t, daemon=True) for t in (
            self._from_supervisor, self._to_client, self._from_client)]
        for t in self._threads:
            t.start()

    def _from_supervisor(self) -> None:
        try:
            while True:
                with self._cond:
                    self._cond.wait_for(lambda: len(self.held) < HELD or self._closed)
                    if self._closed:
                        return
                data = self.upstream.recv(1 << 16)
                if not data:
                    return
                with self._cond:
                    self.held += data
                    self.peak = max(self.peak, len(self.held))
                    self._cond.notify_all()
        except OSError:
            pass
        finally:  # its goodbye (or a reset): passed on once what is held is
            with self._cond:
                self._ended = True
                self._cond.notify_all()

    def _to_client(self) -> None:
        tick = 0.01  # the link's pace: rate * tick bytes each tick
        with contextlib.suppress(OSError):
            while True:
                with self._cond:
                    self._cond.wait_for(lambda: self.held or self._closed or self._ended)
                    if self._closed:
                        return
                    if not self.held:
                        self._ours.shutdown(socket.SHUT_WR)
                        return
                    chunk = bytes(self.held[:int(self.rate * tick)])
                    del self.held[:len(chunk)]
                    self._cond.notify_all()
                self._ours.sendall(chunk)
                self.carried += len(chunk)
                time.sleep(tick)

    def _from_client(self) -> None:
        with contextlib.suppress(OSError):
            while data := self._ours.recv(1 << 16):
                self.upstream.sendall(data)

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        for s in (self.upstream, self._ours):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
        for t in self._threads:
            t.join(5)
        for s in (self.upstream, self._ours):
            s.close()


@contextlib.contextmanager
def served(tmp_path: Path, specs: list[ProcessSpec] | None = None) -> \
        Iterator[tuple[Supervisor, Path]]:
    """A supervisor serving its socket: of a flood and an idle process, by default."""
    run_dir = RunDir(tmp_path / "run")
    run_dir.open()
    sup = Supervisor(specs or [pyspec("flood", FLOOD), pyspec("idle", POLITE)],
                     run_dir=run_dir, interactive=True)
    sup.start()
    server = Server(sup, run_dir)
    server.start()
    try:
        yield sup, run_dir.path
    finally:
        if not sup.snapshot().all_ended:
            sup.send(StopAll()).result(timeout=10)
            wait_until(lambda: all_ended(sup), timeout=20, what="everything ended")
        server.close()
        sup.close()
        run_dir.close()


def heard(conn: Connection, seconds: float) -> list[dict]:  # type: ignore[type-arg]
    """Every message ``conn`` is sent within ``seconds`` (a test that waits for silence)."""
    got = []
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        with contextlib.suppress(NotAnswering):
            m = conn.receive(min(left, 0.2))
            if m is None:
                break
            got.append(m)
    return got


def phase(core: RemoteCore, name: str) -> Phase:
    return next(v.phase for v in core.snapshot().views if v.name == name)


@pytest.mark.parametrize("rate", [100_000, 20_000])
def test_a_stop_reaches_a_console_on_a_slow_link_at_once_during_a_flood(tmp_path, rate):
    with served(tmp_path) as (sup, run_dir):
        link = SlowLink(run_dir, rate)
        core = RemoteCore(Connection.over(Connection(link.client, where="slow link",
                                                     local=False)))
        try:
            # Three seconds of the link's bytes: without a bound, its buffer is full by now.
            wait_until(lambda: link.carried > 3 * rate, timeout=60, what="3 s of the flood")
            assert phase(core, "idle") is Phase.RUNNING
            began = time.monotonic()
            sup.send(Stop("idle"))
            wait_until(lambda: phase(core, "idle") is not Phase.RUNNING, timeout=60,
                       what="the stop, on the console")
            took = time.monotonic() - began
            assert took < 2.0, f"the stop reached the console {took:.1f}s late"
            assert link.peak < HELD // 4, f"{link.peak} bytes held on the way"
            # It was shown the flood meanwhile, the newest lines among them, and told
            # that it fell behind.
            flood = core.output.buffer("flood").read(0)
            assert sum(line.startswith("flood ") for line in flood.lines) > 100
            assert core.snapshot().link.dropped > 0
        finally:
            core.close()
            link.close()


def test_a_console_is_told_everything_once_the_flood_ends(tmp_path):
    """Bounded pushes lose nothing that is still held: the last line arrives."""
    code = ("import sys\nfor i in range(200000):\n    sys.stdout.write(f'line {i} ' + "
            "'x' * 90 + '\\n')\nprint('THE END', flush=True)\nimport time\ntime.sleep(100)")
    with served(tmp_path, [pyspec("burst", code)]) as (_sup, run_dir):
        link = SlowLink(run_dir, 200_000)
        core = RemoteCore(Connection.over(Connection(link.client, where="slow",
                                                     local=False)))
        try:
            wait_until(lambda: any(line == "THE END" for line in
                                   core.output.buffer("burst").read(0).lines[-3:]),
                       timeout=60, what="the last line")
            assert link.peak < HELD // 4
        finally:
            core.close()
            link.close()


def test_a_client_that_asks_for_acks_and_never_sends_one_stalls_only_itself(tmp_path):
    with served(tmp_path) as (sup, run_dir):
        mute = Connection.open(run_dir)
        mute.send(commands.Watch("all", acks=True))
        other = RemoteCore(Connection.open(run_dir))
        try:
            marks = [m["k"] for m in heard(mute, 3.0) if m.get("t") == "push"]
            assert marks == [1, 2], marks  # two on the way, then nothing more
            sup.send(Stop("idle"))
            wait_until(lambda: phase(other, "idle") is not Phase.RUNNING, timeout=10,
                       what="the stop, on the other console")
        finally:
            other.close()
            mute.close()


def test_the_window_paces_pushes_by_what_the_link_carried_and_ignores_lies():
    w = Window(most=1 << 20)
    assert w.budget == FIRST and w.room.is_set()

    def push_that_took(seconds: float, size: int) -> None:
        k = w.pushed(size)
        number, _sent, size = w._on_the_way[-1]
        w._on_the_way[-1] = (number, time.monotonic() - seconds, size)
        w._last_ack = 0.0
        w.acked(k)

    push_that_took(1.0, 100_000)  # 100 KB/s: a push carries LAG of it
    assert w.budget == pytest.approx(100_000 * LAG, rel=0.05)
    w.pushed(10)
    w.pushed(10)
    assert not w.room.is_set()  # two on the way
    w.acked(999)  # a push never sent: everything on the way counts as read, no pace
    assert w.room.is_set() and w.budget == pytest.approx(100_000 * LAG, rel=0.05)
    w.acked(-5)
    w.acked(1)  # acknowledged already
    assert w.budget == pytest.approx(100_000 * LAG, rel=0.05)
    push_that_took(1.0, 10_000_000)  # faster: at once, but never above the most
    assert w.budget == 1 << 20
    fast = w.pace
    assert fast is not None
    push_that_took(1.0, 10_000)  # slower: gently
    assert w.pace == pytest.approx(0.75 * fast + 0.25 * 10_000, rel=0.05)
    for _ in range(40):
        push_that_took(10.0, 5_000)
    assert w.budget == LEAST  # never below what a push may always carry
    small = w.budget
    push_that_took(0.0, 10)  # too small to say anything of the pace
    assert w.budget == small


def test_an_ack_is_never_answered_and_a_bad_one_is(tmp_path):
    with served(tmp_path) as (_sup, run_dir):
        conn = Connection.open(run_dir)
        try:
            conn.sock.sendall(wire.dumps({"op": "ack", "k": 1, "id": 1}))
            conn.sock.sendall(wire.dumps({"op": "ack", "k": "x", "id": 2}))
            replies = [m for m in heard(conn, 2.0) if m.get("t") == "reply"]
            assert len(replies) == 1, replies
            assert replies[0]["id"] == 2 and replies[0]["fault"] == "BAD_REQUEST", replies
        finally:
            conn.close()


def test_logs_follow_on_a_slow_link_prints_the_newest_lines_and_says_what_it_missed(tmp_path):
    """``logs -f --host`` over a slow link: the lines it prints are a moment old, not what
    sshd held for it (a 100 KB/s link held 20 s of them)."""
    from proctui.frontends.logs import logs

    stamped = ("import sys, time\nwhile True:\n    sys.stdout.write("
               "f'{time.monotonic():.3f} ' + 'x' * 90 + '\\n')\n")
    with served(tmp_path, [pyspec("stamped", stamped)]) as (_sup, run_dir):
        link = SlowLink(run_dir, 100_000)
        conn = Connection.over(Connection(link.client, where="slow", local=False))
        out = io.StringIO()

        def follow() -> None:
            with contextlib.suppress(Exception):  # (its link is closed under it at the end)
                logs(conn, "stamped", True, 0, out)

        follower = threading.Thread(target=follow, daemon=True)
        follower.start()
        try:
            wait_until(lambda: link.carried > 300_000, timeout=60, what="3 s of the flood")
            printed = [line for line in out.getvalue().splitlines()
                       if line.endswith("x" * 90)]
            lag = time.monotonic() - float(printed[-1].split()[0])
            assert lag < 2.0, f"the newest line printed is {lag:.1f}s old"
            assert "lines dropped: this reader fell behind" in out.getvalue()
            assert link.peak < HELD // 4
        finally:
            conn.close()
            link.close()
            follower.join(10)


@pytest.mark.parametrize("rate", [None, 20_000])
def test_the_end_of_a_burst_reaches_a_console_when_the_supervisor_ends_at_once(tmp_path, rate):
    """The process writes a burst and exits; the supervisor closes as soon as everything
    has ended. A console on this machine gets every line; one on a slow link the newest
    (the burst's end), told how many it was not shown; both a clean goodbye."""
    code = ("import sys, time\ntime.sleep(1.5)\nfor i in range(3000):\n"
            "    sys.stdout.write(f'line {i} ' + 'x' * 90 + '\\n')\nprint('THE END')\n")
    run_dir = RunDir(tmp_path / "run")
    run_dir.open()
    sup = Supervisor([pyspec("burst", code)], run_dir=run_dir, interactive=False)
    sup.start()
    server = Server(sup, run_dir)
    server.start()
    link = None if rate is None else SlowLink(run_dir.path, rate)
    conn = Connection.open(run_dir.path) if link is None else \
        Connection.over(Connection(link.client, where="slow", local=False))
    core = RemoteCore(conn)
    try:
        wait_until(lambda: all_ended(sup), timeout=30, what="the burst's end")
        began = time.monotonic()
        server.close()
        assert time.monotonic() - began < 3.0
        wait_until(lambda: core.snapshot().link.gone is not None, timeout=30,
                   what="the goodbye")
        said = core.snapshot().link
        assert said.not_answering is None and said.down_since is None, said
        lines = core.output.buffer("burst").read(0).lines
        assert "THE END" in lines[-3:], lines[-3:]
        if rate is None:
            assert said.dropped == 0 and sum(x.startswith("line ") for x in lines) == 3000
        else:
            assert said.dropped > 0
    finally:
        core.close()
        if link is not None:
            link.close()
        server.close()
        sup.close()
        run_dir.close()


def test_a_quiet_process_beside_a_flood_is_not_left_behind_on_a_slow_link(tmp_path):
    ticker = ("import sys, time\nwhile True:\n    print(f'{time.monotonic():.3f} tick', "
              "flush=True)\n    time.sleep(0.01)\n")
    specs = [pyspec("flood", FLOOD), pyspec("ticker", ticker)]
    with served(tmp_path, specs) as (_sup, run_dir):
        link = SlowLink(run_dir, 50_000)
        core = RemoteCore(Connection.over(Connection(link.client, where="slow",
                                                     local=False)))
        try:
            wait_until(lambda: link.carried > 5 * 50_000, timeout=60, what="5 s of the link")
            ticks = [x for x in core.output.buffer("ticker").read(0).lines if x.endswith(" tick")]
            lag = time.monotonic() - float(ticks[-1].split()[0])
            assert lag < 1.5, f"the ticker's pane is {lag:.1f}s behind"
        finally:
            core.close()
            link.close()


def test_a_push_is_sized_in_bytes_not_characters():
    for text in ("x" * 100, "日本語" * 33, "🙂" * 50, "\x1b[31mred\x1b[0m" * 8):
        lines = [text] * 200
        for newest in (False, True):
            keep = fitting(lines, 4096, newest)
            on_the_wire = len(wire.dumps({"l": lines[keep]}))
            assert 2048 < on_the_wire <= 4096 + 200, (text[:10], on_the_wire)


def test_watching_again_without_acks_stops_the_marks(tmp_path):
    with served(tmp_path) as (_sup, run_dir):
        conn = Connection.open(run_dir)
        try:
            conn.send(commands.Watch("all", acks=True))
            assert [m["k"] for m in heard(conn, 1.0) if m.get("t") == "push"] == [1, 2]
            conn.send(commands.Watch("all"))
            after = heard(conn, 1.0)
            assert not [m for m in after if m.get("t") == "push"]
            assert len([m for m in after if m.get("t") == "out"]) > 3  # it goes on
        finally:
            conn.close()


def test_a_long_answer_arriving_slowly_is_an_answer_and_silence_is_not():
    """A page of ``logs`` (256 KiB) takes 13 s at 20 KB/s: a connection that waits 1 s
    for an answer hears one arriving, and still gives up on silence."""
    ours, theirs = socket.socketpair()
    conn = Connection(ours, where="slow", local=False, timeout=1.0)

    def answer_slowly() -> None:
        request = wire.loads(theirs.recv(1 << 16).split(b"\n")[0])
        reply = wire.dumps({"t": "reply", "id": request["id"], "ok": True,
                            "text": "x" * 60_000})
        for i in range(0, len(reply), 2_000):  # 3 s in all, never 1 s of silence
            theirs.sendall(reply[i:i + 2_000])
            time.sleep(0.1)

    speaker = threading.Thread(target=answer_slowly, daemon=True)
    speaker.start()
    try:
        began = time.monotonic()
        done = conn.call(commands.Ping())
        assert done.ok and len(done.text) == 60_000
        assert time.monotonic() - began > 2.0
        speaker.join(10)
        began = time.monotonic()
        with pytest.raises(NotAnswering):
            conn.call(commands.Ping())  # nobody answers now
        assert time.monotonic() - began < 3.0
    finally:
        conn.close()
        theirs.close()
