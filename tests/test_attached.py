"""The console attached to a supervisor through its socket, driven with Pilot: the same
table, panes and dialog; q asks with detach the default; d detaches; a decision made
elsewhere closes the dialog here."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from proctui.commands.abandon_all import AbandonAll
from proctui.commands.extend import Extend
from proctui.commands.kill import Kill
from proctui.commands.stop_all import StopAll
from proctui.config import OnTimeout
from proctui.core.life.outcome import OutcomeKind
from proctui.core.life.stop import Phase
from proctui.core.store.rundir import RunDir
from proctui.core.supervisor import Supervisor
from proctui.frontends.console.app import ProctuiApp
from proctui.frontends.console.dialogs import AskScreen, LeaveScreen
from proctui.remote.client import Connection, RemoteCore
from proctui.remote.server import Server
from tests.children import POLITE, STUBBORN
from tests.conftest import alive, pyspec, wait_until
from tests.test_console import SIZE, until


@contextlib.asynccontextmanager
async def attached(tmp_path: Path, specs) -> AsyncIterator:  # type: ignore[no-untyped-def]
    run_dir = RunDir(tmp_path / "run")
    run_dir.open()
    sup = Supervisor(specs, run_dir=run_dir, interactive=True)
    sup.start()
    server = Server(sup, run_dir)
    server.start()
    wait_until(lambda: all(sup.output.buffer(s.name).output_total for s in specs), timeout=20,
               what="every child ready")
    core = RemoteCore(Connection.open(run_dir.path))
    app = ProctuiApp(core, attached="supervisor pid 1")
    try:
        async with app.run_test(size=SIZE) as pilot:
            yield app, pilot, sup, core
    finally:
        core.close()
        if not sup.snapshot().all_ended:
            sup.send(AbandonAll()).result(timeout=5)
        server.close()
        sup.close()
        run_dir.close()


def view(sup: Supervisor, name: str):  # type: ignore[no-untyped-def]
    return sup.snapshot().view(name)


async def test_the_attached_console_shows_the_supervisors_processes_and_output(tmp_path):
    async with attached(tmp_path, [pyspec("web", POLITE), pyspec("db", POLITE)]) as (
            app, pilot, sup, _core):
        await until(pilot, lambda: [v.name for v in app.main.views] == ["web", "db"])
        assert [v.pid for v in app.main.views] == [v.pid for v in sup.snapshot().views]
        await until(pilot, lambda: "ready" in app.main.panes["web"].output.text(),
                    what="the replayed output")


@pytest.mark.parametrize("key", ["q", "ctrl+c"])
async def test_q_asks_and_enter_detaches_leaving_everything_running(tmp_path, key):
    async with attached(tmp_path, [pyspec("web", POLITE)]) as (app, pilot, sup, _core):
        pid = view(sup, "web").pid
        await pilot.press(key)
        await until(pilot, lambda: isinstance(app.screen, LeaveScreen), what="the question")
        assert app.screen.focused is not None and app.screen.focused.id == "leave-detach"
        await pilot.press("enter")
        await pilot.pause(0.2)
        assert app.main.quit.detached == "detached" and not app.is_running
        assert view(sup, "web").phase is Phase.RUNNING and alive(pid)
        assert not sup.snapshot().shutting_down


async def test_habits_never_stop_anything_from_the_question(tmp_path):
    """s, y, q, K pressed at the question stop nothing; Escape stays attached."""
    async with attached(tmp_path, [pyspec("web", POLITE)]) as (app, pilot, sup, _core):
        await pilot.press("q")
        await until(pilot, lambda: isinstance(app.screen, LeaveScreen), what="the question")
        await pilot.press("s", "y", "q", "K", "x")
        await pilot.pause(0.3)
        assert view(sup, "web").phase is Phase.RUNNING and not sup.snapshot().shutting_down
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, LeaveScreen))
        assert app.is_running and app.main.quit.detached is None


async def test_stop_everything_needs_its_own_key_and_shows_the_countdowns(tmp_path):
    specs = [pyspec("web", POLITE), pyspec("hung", STUBBORN, stop_timeout=1.0)]
    async with attached(tmp_path, specs) as (app, pilot, sup, _core):
        await pilot.press("q")
        await until(pilot, lambda: isinstance(app.screen, LeaveScreen), what="the question")
        await pilot.press("S")
        await until(pilot, lambda: app.main.quit.quitting and app.main.panel.display,
                    what="the panel")
        await until(pilot, lambda: sup.snapshot().all_ended, timeout=20,
                    what="everything ended")
        assert view(sup, "hung").outcome.kind is OutcomeKind.KILLED
        await until(pilot, lambda: not app.is_running, what="the console to close")


async def test_d_detaches_at_once(tmp_path):
    async with attached(tmp_path, [pyspec("web", POLITE)]) as (app, pilot, sup, _core):
        # (The palette offers it here, and only in an attached console.)
        assert "Detach" in {c.title for c in app.get_system_commands(app.screen)}
        await pilot.press("d")
        await pilot.pause(0.2)
        assert app.main.quit.detached == "detached" and not app.is_running
        assert view(sup, "web").phase is Phase.RUNNING


async def test_d_detaches_at_a_question_too_and_the_question_waits(tmp_path):
    """d at an open question answered 'a question is open first'; the README says d
    leaves at any time. Nothing is answered: the process stays at its decision."""
    specs = [pyspec("hung", STUBBORN, stop_timeout=0.5, on_timeout=OnTimeout.ASK)]
    async with attached(tmp_path, specs) as (app, pilot, sup, _core):
        await pilot.press("s")
        await until(pilot, lambda: isinstance(app.screen, AskScreen) and app.screen.armed,
                    what="the armed dialog")
        await pilot.press("d")
        await until(pilot, lambda: not app.is_running, what="the console to detach")
        assert app.main.quit.detached == "detached"
        assert view(sup, "hung").phase is Phase.DECIDING


async def test_a_decision_made_elsewhere_closes_the_dialog_here(tmp_path):
    specs = [pyspec("hung", STUBBORN, stop_timeout=0.5, on_timeout=OnTimeout.ASK)]
    async with attached(tmp_path, specs) as (app, pilot, sup, _core):
        other = RemoteCore(Connection.open(sup.run_dir.path))  # a second console
        try:
            await pilot.press("s")
            await until(pilot, lambda: isinstance(app.screen, AskScreen), what="the dialog")
            assert other.send(Extend("hung", 30)).result(5).ok
            await until(pilot, lambda: not isinstance(app.screen, AskScreen),
                        what="the dialog to close")
            assert view(sup, "hung").phase is Phase.STOPPING
            assert other.send(Kill("hung")).result(5).ok
            await until(pilot, lambda: app.main.views[0].outcome is not None,
                        what="the outcome")
            assert "by operator" in app.main.views[0].outcome.text
        finally:
            other.close()


async def test_the_console_leaves_when_the_supervisor_goes_away(tmp_path):
    async with attached(tmp_path, [pyspec("web", POLITE)]) as (app, pilot, sup, core):
        sup.send(StopAll())
        wait_until(lambda: sup.snapshot().all_ended, timeout=20, what="everything ended")
        # The supervisor's own end: it closes its socket.
        core.conn.sock.shutdown(2)
        await until(pilot, lambda: not app.is_running, what="the console to close")
        assert app.main.quit.detached is not None
