"""Attacks on the start-up changes: the control socket bound before the console and
served after its first frame, the core started while Textual loads, and the question
the console remembers (``asking.question``). Real processes, real consoles."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from proctui.commands.extend import Extend
from proctui.commands.kill import Kill
from proctui.config import OnTimeout
from proctui.core.store.rundir import RunDir
from proctui.frontends.console.dialogs import AskScreen
from proctui.protocol import wire
from proctui.remote import listener
from proctui.remote.client import Connection
from proctui.remote.listener import Listener
from tests.children import POLITE, STUBBORN
from tests.conftest import PY, alive, pyspec, wait_until
from tests.test_console import asked, console, until, view, wait_ready
from tests.test_hangup import OnPty, handles_term, py

# The real console on a pty, the wheel, ssh or hundreds of processes: the second
# CI stage (README: "Tests").
pytestmark = pytest.mark.slow


def two_asking() -> list:
    return [pyspec(n, STUBBORN, stop_timeout=0.3, on_timeout=OnTimeout.ASK) for n in "ab"]


async def test_questions_answered_elsewhere_close_and_the_next_is_tracked():
    async with console(two_asking()) as (app, pilot, sup):
        await wait_ready(pilot, sup, "a", "b")
        await pilot.press("q")
        first = await asked(pilot, app)
        assert app.main.asking.question is first
        sup.send(Kill(first.view.name)).result(timeout=5)  # `proctui kill` from another terminal
        other = "b" if first.view.name == "a" else "a"
        await until(pilot, lambda: app.screen is not first, what="the first to close")
        second = await asked(pilot, app)
        assert second is not first and second.view.name == other
        assert app.main.asking.question is second
        sup.send(Extend(other, 0.5)).result(timeout=5)  # `proctui extend` from elsewhere
        await until(pilot, lambda: not isinstance(app.screen, AskScreen),
                    what="the answered question to close")
        await until(pilot, lambda: app.main.asking.question is None, what="the question forgotten")
        third = await asked(pilot, app)
        assert third.view.name == other and third.view.decisions == 2
        assert app.main.asking.question is third
        await pilot.press("K")
        await until(pilot, lambda: not app.is_running, what="the exit")
        assert app.main.asking.question is None


async def test_the_palette_over_a_question_answered_elsewhere():
    """Only the palette opens over a question (help, q, ctrl+c do not)."""
    async with console(two_asking()) as (app, pilot, sup):
        await wait_ready(pilot, sup, "a", "b")
        await pilot.press("q")
        first = await asked(pilot, app)
        await pilot.press("ctrl+p")
        await until(pilot, lambda: app.screen is not first, what="the palette over the question")
        sup.send(Kill(first.view.name)).result(timeout=5)
        await until(pilot, lambda: view(sup, first.view.name).outcome is not None,
                    what="the kill")
        await pilot.pause(0.5)
        await pilot.press("escape")  # close the palette: the answered question must go too
        other = "b" if first.view.name == "a" else "a"
        # It goes at the next tick after it is on top again, not at the very press.
        await until(pilot, lambda: first not in app.screen_stack,
                    what="the stale question to close")
        second = await asked(pilot, app)
        assert second.view.name == other, "the stale question stayed"
        assert first not in app.screen_stack
        sup.send(Kill(other)).result(timeout=5)
        await until(pilot, lambda: not app.is_running, what="the exit")


# -- the listener: served late, closed at any moment ----------------------------------------

def test_the_supervisor_is_up_since_it_started_not_since_it_was_served(supervised):
    """`proctui status` says "supervisor pid N, up 0s" while its processes are up 2s when
    the console served late (no first frame: a hang-up before it, on_hangup = detach)."""
    sup, run_dir = supervised
    before = time.time()
    control = Listener(sup, run_dir, source="test")
    try:
        assert control.bind() is None
        while time.time() - before < 1.5:  # what is measured is time going by
            time.sleep(0.05)
        control.serve()
        conn = Connection.open(run_dir.path, timeout=20)
        try:
            started = float(conn.hello.started)
        finally:
            conn.close()
        assert started <= before + 0.5, f"up since {started - before:.1f}s after it started"
    finally:
        control.close()


def fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


def proctui_threads() -> list[str]:
    """The listener's and server's threads, and the serve-at-the-latest timer."""
    return sorted(t.name for t in threading.enumerate() if t.is_alive() and (
        isinstance(t, threading.Timer) or
        (t.name.startswith("proctui-") and t.name != "proctui-core")))


@pytest.mark.parametrize("served", ["never", "timer", "frame", "both"])
def test_close_any_time_twice_leaves_no_socket_thread_or_descriptor(supervised, monkeypatch,
                                                                    served):
    monkeypatch.setattr(listener, "SERVE_AT_THE_LATEST", 0.2 if served in ("timer", "both")
                        else 30.0)
    sup, run_dir = supervised
    fds_before, threads_before = fds(), proctui_threads()
    control = Listener(sup, run_dir, source="test")
    control.bind()
    if served in ("frame", "both"):
        control.serve_soon()
    if served != "never":
        wait_until(lambda: control.server is not None, what="served")
        conn = Connection.open(run_dir.path, timeout=20)
        conn.close()
    control.close()
    control.close()
    control.serve()
    assert control.server is None or served != "never"
    assert not (run_dir.path / wire.SOCKET).exists()
    wait_until(lambda: proctui_threads() == threads_before, timeout=10,
               what=f"threads to end: {proctui_threads()}")
    wait_until(lambda: fds() <= fds_before, timeout=10,
               what=f"descriptors to close: {fds() - fds_before}")


def test_close_racing_the_timer_and_the_first_frame(supervised, monkeypatch):
    """The timer, the first frame and the end, all at once, many times: never a socket
    left behind, never an exception, never a server serving after close."""
    sup, run_dir = supervised
    for i in range(30):
        monkeypatch.setattr(listener, "SERVE_AT_THE_LATEST", 0.001 * (i % 5))
        control = Listener(sup, run_dir, source="test")
        control.bind()
        control.serve_soon()
        if i % 3:
            time.sleep(0.001 * (i % 7))
        control.close()
        wait_until(lambda: not any(t.name == "proctui-serve" and t.is_alive()
                                   for t in threading.enumerate()), what="serve thread")
        assert not (run_dir.path / wire.SOCKET).exists(), f"round {i}"
        server = control.server
        if server is not None:
            assert server._thread is not None
            server._thread.join(5)
            assert not server._thread.is_alive(), f"round {i}: still serving after close"


# -- the console on a real terminal, interrupted before its first frame --------------------

SLOW_TEXTUAL = """
import builtins, os, signal, time

# As at a user's terminal: a test run started in the background (an asynchronous list in
# a shell script) inherits SIGINT ignored, and then a ctrl+c is nothing at all.
signal.signal(signal.SIGINT, signal.default_int_handler)
_import = builtins.__import__


def held(name, *args, **kw):  # the console's first frame waits for the test
    # Here, not in an import hook: a hook runs under the import lock, and would hold up
    # every other thread's imports too (the control socket's server, served meanwhile).
    if name == "proctui.frontends.console.app":
        gate, deadline = os.environ["PROCTUI_TEST_GATE"], time.monotonic() + 60
        while not os.path.exists(gate) and time.monotonic() < deadline:
            time.sleep(0.02)
    return _import(name, *args, **kw)


builtins.__import__ = held
"""


def before_the_first_frame(tmp_path: Path, *args: str) -> OnPty:
    """``proctui run ARGS`` on a pty, Textual held back until ``let_textual_load``: what
    a test does once the processes have started happens before the first frame, however
    busy the machine (a fixed delay was not enough on a loaded CI run)."""
    slow = tmp_path / "slow"
    slow.mkdir(exist_ok=True)
    (slow / "sitecustomize.py").write_text(SLOW_TEXTUAL)
    gate = tmp_path / "gate"
    console = OnPty(tmp_path, *args, env={"PYTHONPATH": str(slow),
                                          "PROCTUI_TEST_GATE": str(gate)})
    console.gate = gate  # type: ignore[attr-defined]
    return console


def let_textual_load(console: OnPty) -> None:
    console.gate.touch()  # type: ignore[attr-defined]


def test_ctrl_c_before_the_first_frame_prints_what_became_of_every_process(tmp_path):
    """Before Textual owns the terminal, ctrl+c is a SIGINT: the processes were stopped
    (by finish_stop) but proctui left without a word: no summary, status 130."""
    console = before_the_first_frame(tmp_path, "--stop-timeout", "1",
                                     f"polite={py(POLITE)}", "b=sleep 60")
    pids: list[int] = []
    try:
        pids = console.pids(2)
        console.press(b"\x03")
        status = console.finish(20)
        assert not any(alive(pid) for pid in pids)
        assert not (console.run_dir / wire.SOCKET).exists()
        assert b"summary:" in console.screen, console.screen[-600:]
        assert b"polite  stopped after" in console.screen, console.screen[-600:]
        assert status == 130
    finally:
        console.close()
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


def test_questions_answered_from_another_terminal_on_a_real_console(tmp_path):
    """`proctui kill` and `proctui extend` answer the question on screen: it closes, the
    next one opens, and the one asked again after the extension is answered by a key."""
    from tests.screen import Screen

    (tmp_path / "proctui.toml").write_text(
        "[defaults]\nstop_timeout = 0.5\non_timeout = \"ask\"\n"
        + "".join(f"[processes.{n}]\ncmd = {json.dumps([PY, '-c', STUBBORN])}\n"
                  for n in ("alpha", "beta")))
    run_dir = tmp_path / "run"
    screen = Screen([PY, "-m", "proctui", "run", "--run-dir", str(run_dir)], tmp_path,
                    30, 100)

    def control(*args: str) -> None:
        done = subprocess.run([PY, "-m", "proctui", *args, "--run-dir", str(run_dir)],
                              capture_output=True, text=True, timeout=30)
        assert done.returncode == 0, done.stderr

    def asking(name: str, waiting: int) -> None:
        screen.wait(lambda lines: any(f"{name} · pid" in line and f"of {waiting} waiting"
                                      in line for line in lines), 20,
                    f"the question about {name}")

    pids: list[int] = []
    try:
        screen.wait_text("running")
        pids = [r.pid for r in (e.record for e in RunDir(run_dir).scan()) if r]
        screen.wait(lambda lines: sum("ready" in line for line in lines) >= 1, 20, "ready")
        wait_until(lambda: len(pids) == 2 and all(handles_term(p) for p in pids), 20,
                   what="SIGTERM ignored")
        screen.press(b"q")
        screen.wait(lambda lines: any("of 2 waiting" in line for line in lines), 20,
                    "the first question")
        first = "alpha" if any("alpha · pid" in line for line in screen.lines()) else "beta"
        other = "beta" if first == "alpha" else "alpha"
        control("kill", first)
        asking(other, 1)
        control("extend", other, "1")
        screen.wait(lambda lines: not any("1 waiting" in line for line in lines), 20,
                    "the extended question to close")
        asking(other, 1)  # at the new deadline
        armed = time.monotonic() + 0.7  # the dialog ignores keys for its first half second
        while time.monotonic() < armed:
            screen.pump()
        screen.press(b"K")
        assert screen.finish(20) == 1
        assert b"summary:" in screen.pty.screen
    finally:
        screen.close()
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


def _reap(console: OnPty, pids: list[int]) -> None:
    console.close()
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def test_sigterm_before_the_first_frame_stops_everything_and_says_so(tmp_path):
    console = before_the_first_frame(tmp_path, "--stop-timeout", "1",
                                     f"polite={py(POLITE)}", "b=sleep 60")
    pids: list[int] = []
    try:
        pids = console.pids(2)
        os.kill(console.proc.pid, signal.SIGTERM)
        let_textual_load(console)
        started = time.monotonic()
        console.finish(20)
        assert time.monotonic() - started < 10
        assert not any(alive(pid) for pid in pids)
        assert not (console.run_dir / wire.SOCKET).exists()
        assert b"polite  stopped after" in console.screen, console.screen[-600:]
    finally:
        _reap(console, pids)


def test_a_hangup_before_the_first_frame_with_detach_stays_reachable(tmp_path):
    console = before_the_first_frame(tmp_path, "--on-hangup", "detach", "--stop-timeout", "1",
                    f"polite={py(POLITE)}", "b=sleep 60")
    pids: list[int] = []

    def proctui(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([PY, "-m", "proctui", *args, "--run-dir",
                               str(console.run_dir)], capture_output=True, text=True,
                              timeout=30)
    try:
        pids = console.pids(2)
        console.hang_up()
        let_textual_load(console)
        status = proctui("status")
        assert status.returncode == 0 and "polite  running" in status.stdout, status
        assert all(alive(pid) for pid in pids)
        down = proctui("down")
        assert down.returncode == 0, down
        assert console.wait(20) == 0
        assert not any(alive(pid) for pid in pids)
        assert not (console.run_dir / wire.SOCKET).exists()
    finally:
        _reap(console, pids)


def test_forty_clients_and_down_before_the_first_frame_are_all_answered(tmp_path):
    console = before_the_first_frame(tmp_path, "--stop-timeout", "1",
                                     f"polite={py(POLITE)}", "b=sleep 60")
    socket_path = console.run_dir / wire.SOCKET
    answers: list[object] = []

    def client() -> None:
        try:
            conn = Connection.open(console.run_dir, timeout=20)
        except Exception as e:  # what the test reports
            answers.append(e)
            return
        try:
            answers.append([v.name for v in conn.ordered_views()])
        finally:
            conn.close()

    pids: list[int] = []
    try:
        wait_until(socket_path.exists, 30, what="the socket bound")  # the pty is not read:
        clients = [threading.Thread(target=client) for _ in range(40)]  # no frame yet
        for t in clients:
            t.start()
        for t in clients:
            t.join(30)
        assert answers == [["polite", "b"]] * 40, [a for a in answers if isinstance(a, Exception)]
        let_textual_load(console)
        pids = console.pids(2)
        down = subprocess.run([PY, "-m", "proctui", "down", "--run-dir", str(console.run_dir)],
                              capture_output=True, text=True, timeout=30)
        assert down.returncode == 0, down
        assert not any(alive(pid) for pid in pids)
    finally:
        _reap(console, pids)


def test_ctrl_c_twice_before_the_first_frame_kills_what_is_still_stopping(tmp_path):
    """The second ctrl+c landed in finish_stop: proctui left at once, the process that
    ignores SIGTERM ran on unsupervised, its PID file and the socket left behind."""
    console = before_the_first_frame(tmp_path, "--stop-timeout", "5",
                                     f"polite={py(POLITE)}", f"stub={py(STUBBORN)}")
    pids: list[int] = []
    try:
        pids = console.pids(2)
        wait_until(lambda: all(handles_term(pid) for pid in pids), 20,
                   what="SIGTERM handlers")
        console.read()
        assert b"running" not in console.screen, "the first frame came first"
        console.press(b"\x03")
        deadline = time.monotonic() + 0.5
        while time.monotonic() < deadline:  # the first press reaches the core
            console.read(0.05)
        console.press(b"\x03")
        status = console.finish(20)
        wait_until(lambda: not any(alive(pid) for pid in pids), 10,
                   what="every process to end")
        assert not (console.run_dir / wire.SOCKET).exists()
        assert b"stub    killed with SIGKILL" in console.screen, console.screen[-600:]
        assert status == 130
    finally:
        _reap(console, pids)
