"""An attached console whose link drops, as over SSH when Wi-Fi goes: a real supervisor
and its control socket, a real console driven with Pilot, and a dial the test holds,
which opens a real connection each time and can drop the link (shutting its socket
down) or fail the next tries. The console says it is reconnecting, keeps its picture,
refuses keys that act, changes nothing on the box, comes back by itself with a fresh
snapshot and its output going on, and asks a waiting decision again. And attached
--read-only, no key acts and nothing that acts is sent."""

from __future__ import annotations

import contextlib
import re
import socket
import subprocess
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from proctui.commands.abandon_all import AbandonAll
from proctui.commands.kill import Kill
from proctui.commands.stop import Stop
from proctui.commands.stop_all import StopAll
from proctui.config import OnTimeout
from proctui.core.life.stop import Phase
from proctui.core.output.lines import Stream
from proctui.core.snapshot import Link
from proctui.core.store.rundir import RunDir
from proctui.core.supervisor import Supervisor
from proctui.frontends.console.app import ProctuiApp
from proctui.frontends.console.dialogs import AskScreen
from proctui.frontends.console.link import LinkBanner
from proctui.frontends.console.panels import KeyBar
from proctui.frontends.console.reading import HelpScreen
from proctui.protocol.decode import decode
from proctui.remote.client import Connection, RemoteCore
from proctui.remote.redial import READ_ONLY, RECONNECTING, Backoff, SupervisorEnded, local_dial
from proctui.remote.server import Server
from tests import table as commands
from tests.children import POLITE, STUBBORN
from tests.conftest import PY, alive, all_ended, journal, pyspec, wait_until
from tests.test_console import SIZE, until

# The real console on a pty, the wheel, ssh or hundreds of processes: the second
# CI stage (README: "Tests").
pytestmark = pytest.mark.slow

# Prints a numbered line every 20 ms: the numbers prove nothing was lost or repeated.
COUNTER = (
    "import signal,sys,time\n"
    "signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))\n"
    "i = 0\n"
    "while True:\n"
    "    print(f'n{i}', flush=True); i += 1; time.sleep(0.02)\n"
)
# The same, while the file FLAG exists (a test stops the flow by removing it).
GATED = COUNTER.replace("while True:\n", "import os\nwhile True:\n"
                        "    if not os.path.exists(FLAG): time.sleep(0.02); continue\n")
ACTING = ["s", "S", "r", "K", "e", "a", "A", "c", "X", "Q"]


class Dial:
    """The console's dial, held by the test: each call a new real connection (through
    the same rule as attach: no supervisor there ends the console), unless told to fail
    the next ``failing`` calls as a dead network would."""

    def __init__(self, run_dir: Path) -> None:
        self.real = local_dial(run_dir)
        self.failing = 0
        self.calls = 0
        self.conns: list[Connection] = []

    def __call__(self) -> Connection:
        self.calls += 1
        if self.failing > 0:
            self.failing -= 1
            raise OSError("ssh: connect to host box: Network is unreachable")
        conn = self.real()
        self.conns.append(conn)
        return conn

    def drop(self, then_fail: int = 0) -> None:
        """The link drops under the console: its socket is shut down, both ways."""
        self.failing = then_fail
        self.conns[-1].sock.shutdown(socket.SHUT_RDWR)


class Box:
    """The supervisor on the box, its control socket, and what reached it."""

    def __init__(self, tmp_path: Path, specs: list[Any]) -> None:
        self.run_dir = RunDir(tmp_path / "run")
        self.run_dir.open()
        self.sup = Supervisor(specs, run_dir=self.run_dir, interactive=True)
        self.sup.start()
        self.server = Server(self.sup, self.run_dir)
        self.requests: list[commands.Request[Any]] = []
        dispatch = self.server.dispatch

        async def recording(c: Any, message: dict[str, Any]) -> Any:
            request = decode(message)
            if not isinstance(request, commands.Done):
                self.requests.append(request)
            return await dispatch(c, message)

        self.server.dispatch = recording  # type: ignore[assignment]
        self.server.start()

    def view(self, name: str):  # type: ignore[no-untyped-def]
        return next(v for v in self.sup.snapshot().views if v.name == name)

    def acted(self) -> list[commands.Request[Any]]:
        return [r for r in self.requests if isinstance(r, commands.CoreCommand)]

    def close(self) -> None:
        if not self.sup.snapshot().all_ended:
            self.sup.send(AbandonAll()).result(timeout=5)
        self.server.close()
        self.sup.close()
        self.run_dir.close()


@contextlib.asynccontextmanager
async def attached(tmp_path: Path, specs: list[Any], read_only: bool = False) \
        -> AsyncIterator[tuple[ProctuiApp, Any, Box, RemoteCore, Dial]]:
    box = Box(tmp_path, specs)
    core: RemoteCore | None = None
    try:
        wait_until(lambda: all(box.sup.output.buffer(s.name).output_total for s in specs),
                   timeout=20, what="every child ready")
        dial = Dial(box.run_dir.path)
        core = RemoteCore.dialled(dial, read_only=read_only)
        app = ProctuiApp(core, attached="supervisor pid 1", read_only=read_only)
        app.notices = notices = []  # type: ignore[attr-defined]
        notify = app.notify

        def spy(message: str, *args: Any, **kw: Any) -> None:
            notices.append(str(message))
            notify(message, *args, **kw)

        app.notify = spy  # type: ignore[method-assign]
        async with app.run_test(size=SIZE) as pilot:
            yield app, pilot, box, core, dial
    finally:
        if core is not None:
            core.close()
        box.close()


def link(core: RemoteCore) -> Link:
    """How the link stands, as the console reads it: from the remote core's snapshot."""
    got = core.snapshot().link
    assert got is not None
    return got


def banner(app: ProctuiApp) -> str:
    widget = app.query_one(LinkBanner)
    return " · ".join(widget.items) if widget.display else ""


def said(app: ProctuiApp, words: str) -> int:
    """How many notices said ``words`` (counted as said: a toast expires on screen)."""
    return sum(words in notice for notice in app.notices)  # type: ignore[attr-defined]


def numbers(core: RemoteCore, name: str) -> list[int]:
    got = core.output.buffer(name).read(0)
    return [int(line[1:]) for line, stream in zip(got.lines, got.streams, strict=True)
            if stream != Stream.PROCTUI and line.startswith("n")]


def table_text(app: ProctuiApp) -> str:
    table = app.main.table
    return "\n".join(table.render_line(y).text for y in range(table.size.height))


def gaps(core: RemoteCore) -> list[str]:
    """The marker lines in the count pane (its other notices say it started)."""
    got = core.output.buffer("count").read(0)
    return [line for line, stream in zip(got.lines, got.streams, strict=True)
            if stream == Stream.PROCTUI and " missed " in line]


async def test_a_dropped_link_says_reconnecting_refuses_keys_and_comes_back(tmp_path):
    specs = [pyspec("web", POLITE), pyspec("count", COUNTER),
             pyspec("slow", STUBBORN, stop_timeout=120)]
    async with attached(tmp_path, specs) as (app, pilot, box, core, dial):
        assert core.send(Stop("slow")).result(10).ok  # a countdown on screen
        await until(pilot, lambda: "SIGKILL in" in table_text(app), what="the countdown")
        pids = {v.name: v.pid for v in box.sup.snapshot().views}
        await until(pilot, lambda: len(numbers(core, "count")) > 5, what="output")
        seen = len(numbers(core, "count"))
        dial.drop(then_fail=2)
        await until(pilot, lambda: "reconnecting" in banner(app), what="the banner")
        assert re.search(r"reconnecting · link lost \d+s ago · (next try in \d+s|trying now)",
                         banner(app)), banner(app)
        assert "ssh: connect to host box" in banner(app) or \
            "the connection closed" in banner(app)
        assert app.screen_stack[0].has_class("-stale")  # the last picture, greyed
        # The key bar offers no key that acts (each would answer "not connected").
        bar = str(app.query_one(KeyBar).render())
        assert "Detach" in bar and not re.search(r"Stop|Kill|Restart|Quit", bar), bar
        # Every acting key answers, visibly; nothing reaches the box.
        before = len(box.acted())
        for key in ACTING:
            await pilot.press(key)
            await pilot.pause(0.05)
            while len(app.screen_stack) > 1:  # (no dialog may open: close it if one did)
                await pilot.press("escape")
        await until(pilot, lambda: said(app, RECONNECTING) >= len(ACTING),
                    what="an answer to every key")
        assert len(box.acted()) == before
        # The picture's clock stands still while the banner's ages go on.
        frozen, picture = app.main.table.now, table_text(app)
        await until(pilot, lambda: "link lost 2s ago" in banner(app), what="the age moving")
        assert app.main.table.now == frozen and table_text(app) == picture
        # Nothing on the box changed.
        assert {v.name: v.pid for v in box.sup.snapshot().views} == pids
        assert all(alive(pid) for pid in pids.values())
        assert box.view("web").phase is box.view("count").phase is Phase.RUNNING
        assert box.view("slow").phase is Phase.STOPPING and not box.sup.snapshot().shutting_down
        # Back by itself, with a fresh snapshot, the output going on.
        await until(pilot, lambda: link(core).links == 2, timeout=30, what="a new link")
        await until(pilot, lambda: not banner(app), what="the banner to go")
        assert dial.calls == 4 and not app.screen_stack[0].has_class("-stale")
        await until(pilot, lambda: table_text(app) != picture, what="the countdown again")
        # Each pane's output went on from the line it had reached: nothing sent twice,
        # nothing lost, the lines from before the drop still there.
        (resume,) = [r for r in box.requests if isinstance(r, commands.Watch) and r.start]
        assert resume.start is not None and resume.start["count"] >= seen
        await until(pilot, lambda: len(numbers(core, "count")) > resume.start["count"] + 20,
                    what="output after the new link")
        got = numbers(core, "count")
        assert got == list(range(len(got))), "a line lost or repeated"
        # And the keys act again.
        await pilot.press("s")
        await until(pilot, lambda: box.view("web").outcome is not None, what="web stopped")
        assert box.acted()[-1] == commands.Stop("web")


async def test_the_box_sees_a_drop_as_a_detach_and_changes_nothing(tmp_path):
    specs = [pyspec("web", POLITE), pyspec("hung", STUBBORN)]
    async with attached(tmp_path, specs) as (app, pilot, box, _core, dial):
        pids = {v.name: v.pid for v in box.sup.snapshot().views}
        await until(pilot, lambda: box.server.clients, what="the console connected")
        seen = len(journal(box.sup))
        dial.drop(then_fail=1000)
        await until(pilot, lambda: "reconnecting" in banner(app), what="the banner")
        wait_until(lambda: not box.server.clients, what="the server to drop the client")
        await pilot.pause(1.0)
        assert {v.name: v.pid for v in box.sup.snapshot().views} == pids
        assert all(alive(pid) for pid in pids.values())
        assert {v.phase for v in box.sup.snapshot().views} == {Phase.RUNNING}
        assert not box.sup.snapshot().shutting_down and not box.sup.snapshot().all_ended
        kinds = {e.get("kind") for e in journal(box.sup)[seen:]}
        assert not kinds & {"shutdown", "stop", "signal", "decision", "extend"}, kinds
        assert box.acted() == []


async def test_a_waiting_decision_is_asked_again_after_reconnecting(tmp_path):
    specs = [pyspec("hung", STUBBORN, stop_timeout=0.5, on_timeout=OnTimeout.ASK)]
    async with attached(tmp_path, specs) as (app, pilot, box, core, dial):
        pid = box.view("hung").pid
        await pilot.press("s")
        await until(pilot, lambda: isinstance(app.screen, AskScreen), what="the question")
        await until(pilot, lambda: app.screen.armed, what="the dialog armed")
        await pilot.press("escape")  # later
        await until(pilot, lambda: not isinstance(app.screen, AskScreen), what="closed")
        await pilot.pause(1.5)
        assert not isinstance(app.screen, AskScreen), "later means later"
        dial.drop(then_fail=1)
        await until(pilot, lambda: "reconnecting" in banner(app), what="the banner")
        await pilot.press("K")
        await until(pilot, lambda: said(app, RECONNECTING), what="the refusal")
        assert box.view("hung").phase is Phase.DECIDING and alive(pid)
        await until(pilot, lambda: link(core).links == 2, timeout=30, what="a new link")
        await until(pilot, lambda: isinstance(app.screen, AskScreen), what="asked again")
        await until(pilot, lambda: app.screen.armed, what="the dialog armed")
        await pilot.press("K")
        await until(pilot, lambda: box.view("hung").outcome is not None, what="killed")
        assert "by operator" in box.view("hung").outcome.text
        assert not alive(pid)


async def test_an_open_question_stays_while_reconnecting_and_refuses_answers(tmp_path):
    specs = [pyspec("hung", STUBBORN, stop_timeout=0.5, on_timeout=OnTimeout.ASK)]
    async with attached(tmp_path, specs) as (app, pilot, box, _core, dial):
        await pilot.press("s")
        await until(pilot, lambda: isinstance(app.screen, AskScreen), what="the question")
        await until(pilot, lambda: app.screen.armed, what="the dialog armed")
        dial.drop(then_fail=1000)
        await until(pilot, lambda: "reconnecting" in banner(app), what="the banner")
        await pilot.press("a")
        await until(pilot, lambda: said(app, RECONNECTING), what="the refusal")
        assert isinstance(app.screen, AskScreen), "the question stays"
        assert box.view("hung").phase is Phase.DECIDING
        assert not any(isinstance(r, commands.Abandon) for r in box.requests)
        dial.failing = 0
        await until(pilot, lambda: not banner(app), timeout=30, what="the link back")
        assert isinstance(app.screen, AskScreen)
        await pilot.press("w")  # answered once we may: wait, no deadline
        await until(pilot, lambda: box.view("hung").phase is Phase.STOPPING,
                    what="the wait taken")


async def test_lines_the_box_no_longer_holds_are_one_marker_line(tmp_path):
    flag = tmp_path / "flowing"
    flag.touch()
    specs = [pyspec("count", GATED.replace("FLAG", repr(str(flag))), scrollback=60)]
    async with attached(tmp_path, specs) as (app, pilot, box, core, dial):
        await until(pilot, lambda: len(numbers(core, "count")) > 10, what="output")
        dial.drop(then_fail=1000)
        await until(pilot, lambda: "reconnecting" in banner(app), what="the banner")
        last = numbers(core, "count")[-1]
        # Until the box's ring no longer holds the line after ours; then quiet, so that
        # the marker stays in the console's scrollback while the test reads it.
        wait_until(lambda: box.sup.output.buffer("count").mark().first > last + 5, timeout=30,
                   what="the ring to move past us")
        flag.unlink()
        dial.failing = 0
        await until(pilot, lambda: link(core).links == 2, timeout=30, what="a new link")
        await until(pilot, lambda: gaps(core), what="the marker")
        got = core.output.buffer("count").read(0)
        (mark,) = gaps(core)
        assert "missed while the link was down" in mark
        missed = int(mark.split()[0])
        i = got.lines.index(mark)
        old, new = got.lines[i - 1], got.lines[i + 1]
        assert int(new[1:]) - int(old[1:]) - 1 == missed  # exactly the lines not held
        assert app.main.panes["count"].output.buffer.renumbered == 1
        assert link(core).dropped == missed
        await pilot.press("slash", *"missed", "enter")  # searched for, it is on screen
        await until(pilot, lambda: "missed while the link" in app.main.panes["count"].output.text(),
                    what="the marker on screen")


async def test_the_console_ends_when_the_supervisor_ended_meanwhile(tmp_path):
    async with attached(tmp_path, [pyspec("web", POLITE)]) as (app, pilot, box, core, dial):
        dial.drop(then_fail=1000)
        await until(pilot, lambda: "reconnecting" in banner(app), what="the banner")
        box.sup.send(StopAll())
        wait_until(lambda: all_ended(box.sup), timeout=20, what="everything ended")
        box.server.close()  # the supervisor's end: its socket goes
        dial.failing = 0
        await until(pilot, lambda: not app.is_running, timeout=30, what="the console ended")
        gone = link(core).gone
        assert gone is not None and "no supervisor is running" in gone
        assert app.main.quit.detached == gone


async def test_a_goodbye_ends_the_console_without_reconnecting(tmp_path):
    async with attached(tmp_path, [pyspec("web", POLITE)]) as (app, pilot, box, core, dial):
        box.sup.send(StopAll())
        wait_until(lambda: all_ended(box.sup), timeout=20, what="everything ended")
        box.server.close()  # says what is final, then closes every connection
        await until(pilot, lambda: not app.is_running, timeout=20, what="the console ended")
        assert core.snapshot().all_ended and link(core).down_since is None and dial.calls == 1


async def test_another_supervisor_there_now_ends_the_console(tmp_path):
    async with attached(tmp_path, [pyspec("web", POLITE)]) as (app, pilot, box, core, dial):
        dial.drop(then_fail=1000)
        await until(pilot, lambda: "reconnecting" in banner(app), what="the banner")
        box.close()
        other = Box(tmp_path, [pyspec("web", POLITE)])
        try:
            dial.failing = 0
            await until(pilot, lambda: not app.is_running, timeout=30, what="the end")
            gone = link(core).gone
            assert gone is not None and "runs there now" in gone
        finally:
            other.close()
        box.close = lambda: None  # type: ignore[method-assign]  # (closed above)


async def test_detaching_while_reconnecting_leaves_nothing_behind(tmp_path):
    async with attached(tmp_path, [pyspec("web", POLITE)]) as (app, pilot, box, core, dial):
        pid = box.view("web").pid
        dial.drop(then_fail=1000)
        await until(pilot, lambda: "reconnecting" in banner(app), what="the banner")
        await pilot.press("d")
        await until(pilot, lambda: not app.is_running, what="detached at once")
        assert app.main.quit.detached == "detached"
        core.close()
        assert not any(t.name == "proctui-remote" and t.is_alive()
                       for t in threading.enumerate())
        assert all(c.sock.fileno() == -1 for c in dial.conns)
        assert box.view("web").phase is Phase.RUNNING and alive(pid)


# -- read-only -------------------------------------------------------------------------


async def test_read_only_refuses_every_acting_key_and_sends_nothing(tmp_path):
    specs = [pyspec("web", POLITE), pyspec("hung", STUBBORN, stop_timeout=0.5,
                                            on_timeout=OnTimeout.ASK)]
    async with attached(tmp_path, specs, read_only=True) as (app, pilot, box, core, _d):
        seen = len(journal(box.sup))
        for key in ACTING:
            await pilot.press(key)
            await pilot.pause(0.05)
        await until(pilot, lambda: said(app, READ_ONLY) >= len(ACTING),
                    what="an answer to every key")
        assert len(app.screen_stack) == 1, "no confirmation opened"
        assert not app.main.quit.quitting
        assert {v.phase for v in box.sup.snapshot().views} == {Phase.RUNNING}
        # The core refuses too: nothing that acts reaches the box, even asked directly.
        assert core.send(Stop("web")).result(5).text == READ_ONLY
        kinds = {e.get("kind") for e in journal(box.sup)[seen:]}
        assert not kinds & {"shutdown", "stop", "signal", "decision", "extend"}, kinds
        # A decision reached elsewhere is shown, and its answers refused.
        other = RemoteCore(Connection.open(box.run_dir.path))
        try:
            assert other.send(Stop("hung")).result(5).ok
            await until(pilot, lambda: isinstance(app.screen, AskScreen), what="question")
            await until(pilot, lambda: app.screen.armed, what="the dialog armed")
            count = said(app, READ_ONLY)
            await pilot.press("K")
            await until(pilot, lambda: said(app, READ_ONLY) > count, what="the refusal")
            assert isinstance(app.screen, AskScreen)
            assert box.view("hung").phase is Phase.DECIDING
            assert other.send(Kill("hung")).result(5).ok
            await until(pilot, lambda: not isinstance(app.screen, AskScreen),
                        what="the question closed once answered elsewhere")
        finally:
            other.close()
        ours = [r for r in box.acted() if not isinstance(r, commands.Stop | commands.Kill)
                or r.name != "hung"]
        assert ours == [], ours
        # Navigation, wrap, search and help still work; the footer and help say it.
        await pilot.press("j")
        await until(pilot, lambda: app.main.selected == 1, what="moved")
        await pilot.press("w")
        assert not app.main.selected_pane.output.wrap
        bar = app.query_one(KeyBar)
        assert bar.note == "read-only view"
        assert "Stop" not in str(bar.render()) and "Detach" in str(bar.render())
        await pilot.press("question_mark")
        await until(pilot, lambda: isinstance(app.screen, HelpScreen), what="help")
        assert "Read-only view" in str(app.screen.body(80))
        await pilot.press("question_mark")
        # q only detaches.
        await pilot.press("q")
        await until(pilot, lambda: not app.is_running, what="detached")
        assert app.main.quit.detached == "detached"
        assert box.view("web").phase is Phase.RUNNING and not box.sup.snapshot().shutting_down


def test_backoff_doubles_to_five_seconds_and_starts_over_after_a_steady_link():
    b = Backoff()
    assert [b.next() for _ in range(6)] == [0.5, 1.0, 2.0, 4.0, 5.0, 5.0]
    b.link_lasted(1.0)  # up and down at once: no busy loop
    assert b.next() == 5.0
    b.link_lasted(60.0)
    assert b.next() == 0.5


def test_a_local_dial_with_no_supervisor_there_is_the_end(tmp_path):
    with pytest.raises(SupervisorEnded, match="no run directory"):
        local_dial(tmp_path / "nothing")()


# -- a link through a child process, as ssh is ---------------------------------------------

# Relays its stdin and stdout to the control socket, as `ssh box proctui stdio` would, and
# ends on EOF from either side.
RELAY = """
import os, selectors, socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
sel = selectors.DefaultSelector()
sel.register(0, selectors.EVENT_READ)
sel.register(s, selectors.EVENT_READ)
while True:
    for key, _ in sel.select():
        if key.fileobj == 0:
            data = os.read(0, 65536)
            if not data:
                sys.exit(0)
            s.sendall(data)
        else:
            data = s.recv(65536)
            if not data:
                sys.exit(0)
            os.write(1, data)
"""


class Piped(Connection):
    """A connection through a child process; closing it ends the child too."""

    child: subprocess.Popen[bytes]

    def close(self) -> None:
        super().close()
        try:
            self.child.wait(5)
        except subprocess.TimeoutExpired:
            self.child.kill()
            self.child.wait(5)


def piped_dial(run_dir: Path, children: list[subprocess.Popen[bytes]]):  # type: ignore[no-untyped-def]
    def dial() -> Connection:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        child = subprocess.Popen([PY, "-c", RELAY, str(run_dir / "control.sock")],
                                 stdin=theirs, stdout=theirs)
        theirs.close()
        children.append(child)
        conn = Piped(ours, run_dir, child.pid, timeout=5.0)
        conn.child = child
        try:
            conn._first()  # (what Connection.open does once connected)
        except Exception:
            conn.close()
            raise
        return conn

    return dial


async def test_a_link_through_a_child_killed_comes_back_and_detach_ends_every_child(
        tmp_path):
    box = Box(tmp_path, [pyspec("web", POLITE)])
    children: list[subprocess.Popen[bytes]] = []
    core: RemoteCore | None = None
    try:
        pid = box.view("web").pid
        core = RemoteCore.dialled(piped_dial(box.run_dir.path, children))
        app = ProctuiApp(core, attached="supervisor pid 1")
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: "ready" in app.main.panes["web"].output.text(),
                        what="the output through the child")
            children[0].kill()  # the ssh client dies
            await until(pilot, lambda: link(core).links == 2, timeout=30, what="a new link")
            assert children[0].poll() is not None and len(children) == 2
            assert box.view("web").phase is Phase.RUNNING and alive(pid)
            await pilot.press("d")
            await until(pilot, lambda: not app.is_running, what="detached")
        core.close()
        core = None
        assert all(child.poll() is not None for child in children), "a child left behind"
        assert not any(t.name == "proctui-remote" and t.is_alive()
                       for t in threading.enumerate())
        assert box.view("web").phase is Phase.RUNNING and alive(pid)
    finally:
        if core is not None:
            core.close()
        for child in children:
            if child.poll() is None:
                child.kill()
                child.wait()
        box.close()


def test_a_link_lost_to_silence_counts_its_age_from_the_last_word(tmp_path):
    """A supervisor stopped (SIGSTOP): "no answer from the supervisor for 9s", then
    "reconnecting · link lost 0s ago", its age counted again from the redial. It counts
    from the supervisor's last word."""
    import os
    import signal
    import sys
    import time

    run_dir = tmp_path / "run"
    subprocess.run([sys.executable, "-m", "proctui", "up", "--run-dir", str(run_dir),
                    "web=sleep 100"], check=True, capture_output=True, timeout=60)
    core = RemoteCore.at(run_dir)
    pid = int(core.conn.hello.pid)
    try:
        os.kill(pid, signal.SIGSTOP)
        stopped = time.monotonic()
        wait_until(lambda: link(core).down_since is not None, timeout=40,
                   what="the link given up")
        lost = link(core).down_since
        assert lost is not None
        # Lost when it fell silent (about when it was stopped), not 10 s later.
        assert lost <= stopped + 2.0, (lost - stopped)
    finally:
        os.kill(pid, signal.SIGCONT)
        core.close()
        subprocess.run([sys.executable, "-m", "proctui", "down", "--run-dir", str(run_dir)],
                       capture_output=True, timeout=60)
