"""The console driven with Pilot, over a real supervisor and real child processes."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import time
from collections.abc import AsyncIterator, Callable

import pytest

from proctui.config import OnTimeout
from proctui.console.app import ProctuiApp
from proctui.console.screens import AskScreen, ConfirmScreen
from proctui.core.machine import Phase
from proctui.core.outcome import OutcomeKind
from proctui.core.supervisor import Supervisor
from tests.children import POLITE, STUBBORN
from tests.conftest import alive, pyspec

SIZE = (100, 30)


async def until(pilot, predicate: Callable[[], object], timeout: float = 15.0,
                what: str = "condition") -> None:
    """Let the app run until ``predicate`` holds (real processes have no event to await)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await pilot.pause(0.05)


@contextlib.asynccontextmanager
async def console(specs, **kw) -> AsyncIterator[tuple[ProctuiApp, object, Supervisor]]:
    sup = Supervisor(specs, interactive=True, **kw)
    sup.start()
    app = ProctuiApp(sup)
    try:
        async with app.run_test(size=SIZE) as pilot:
            yield app, pilot, sup
    finally:
        if not sup.all_ended():
            sup.abandon_all().result(timeout=5)
        sup.close()


def view(sup: Supervisor, name: str):
    return next(v for v in sup.views() if v.name == name)


def header(app: ProctuiApp, name: str) -> str:
    return app.panes[name].header.render().plain


def screen_text(app: ProctuiApp) -> str:
    """The visible lines of the selected pane, as plain text."""
    output = app.selected_pane.output
    return "\n".join(strip.text for strip in output._rows)


async def wait_ready(pilot, sup, *names: str) -> None:
    def ready() -> bool:
        for name in names:
            lines = sup.buffer(name).read(0).lines
            if "ready" not in lines:
                return False
        return True

    await until(pilot, ready, what=f"{names} ready")


async def test_selecting_processes():
    async with console([pyspec("one", POLITE), pyspec("two", POLITE),
                        pyspec("three", POLITE)]) as (app, pilot, _sup):
        assert app.selected_view.name == "one"
        await pilot.press("j")
        assert app.selected_view.name == "two"
        await pilot.press("down")
        assert app.selected_view.name == "three"
        await pilot.press("k")
        assert app.selected_view.name == "two"
        await pilot.press("1")
        assert app.selected_view.name == "one"
        await pilot.press("3")
        assert app.selected_view.name == "three"
        assert app.panes["three"].display and not app.panes["one"].display
        await pilot.press("z")  # grid: every pane at once
        assert all(p.display for p in app.panes.values())


async def test_stop_one_and_the_outcome_stays_visible():
    async with console([pyspec("web", POLITE), pyspec("other", POLITE)]) as (app, pilot, sup):
        await wait_ready(pilot, sup, "web", "other")
        await pilot.press("s")
        await until(pilot, lambda: view(sup, "web").outcome is not None, what="web to stop")
        assert view(sup, "web").outcome.kind is OutcomeKind.STOPPED
        await pilot.pause(0.2)
        assert re.search(r"stopped after \d+\.\ds: exit code 0", header(app, "web"))
        assert "stopped after" in screen_text(app)  # at the end of its pane
        assert view(sup, "other").phase is Phase.RUNNING
        assert not app.is_headless or app.return_code is None  # still open


async def test_countdown_appears_decreases_and_extend_moves_it():
    stub = pyspec("stub", STUBBORN, stop_timeout=20, extend_step=30)
    async with console([stub]) as (app, pilot, sup):
        await wait_ready(pilot, sup, "stub")
        await pilot.press("s")
        await until(pilot, lambda: "SIGKILL in" in header(app, "stub"), what="countdown")

        def left() -> float:
            return float(re.search(r"SIGKILL in (\d+(?:\.\d)?)s", header(app, "stub")).group(1))

        first = left()
        assert 15 <= first <= 20
        assert "SIGTERM sent" in header(app, "stub") and "█" in header(app, "stub")
        await until(pilot, lambda: left() <= first - 1.0, what="the countdown to decrease")
        before = view(sup, "stub").deadline
        await pilot.press("e")
        await until(pilot, lambda: view(sup, "stub").deadline != before, what="extend")
        assert view(sup, "stub").deadline == pytest.approx(before + 30)
        await until(pilot, lambda: left() > 40, what="the countdown to jump")
        await pilot.press("K")
        await until(pilot, lambda: view(sup, "stub").outcome is not None, what="kill")
        assert view(sup, "stub").outcome.kind is OutcomeKind.KILLED


async def test_kill_now():
    async with console([pyspec("stub", STUBBORN, stop_timeout=60)]) as (_app, pilot, sup):
        await wait_ready(pilot, sup, "stub")
        pid = view(sup, "stub").pid
        started = time.monotonic()
        await pilot.press("K")
        await until(pilot, lambda: view(sup, "stub").outcome is not None, what="kill")
        assert time.monotonic() - started < 10
        assert view(sup, "stub").outcome.text == "killed with SIGKILL by operator"
        assert not alive(pid)


async def test_abandon_asks_first_and_leaves_it_running():
    async with console([pyspec("stub", STUBBORN, stop_timeout=60)]) as (app, pilot, sup):
        await wait_ready(pilot, sup, "stub")
        pid = view(sup, "stub").pid
        await pilot.press("a")
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("n")
        await pilot.pause(0.2)
        assert view(sup, "stub").outcome is None
        await pilot.press("a")
        await pilot.press("y")
        await until(pilot, lambda: view(sup, "stub").outcome is not None, what="abandon")
        assert view(sup, "stub").outcome.kind is OutcomeKind.ABANDONED
        assert alive(pid)
        os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("key", ["k", "e", "a", "w"])
async def test_ask_modal_choices(key):
    stub = pyspec("stub", STUBBORN, stop_timeout=0.5, on_timeout=OnTimeout.ASK, extend_step=5)
    async with console([stub]) as (app, pilot, sup):
        await wait_ready(pilot, sup, "stub")
        pid = view(sup, "stub").pid
        await pilot.press("s")
        await until(pilot, lambda: isinstance(app.screen, AskScreen), what="the ask modal")
        assert view(sup, "stub").phase is Phase.DECIDING
        await pilot.press(key)
        if key == "k":
            await until(pilot, lambda: view(sup, "stub").outcome is not None, what="kill")
            assert view(sup, "stub").outcome.kind is OutcomeKind.KILLED
        elif key == "e":
            await until(pilot, lambda: view(sup, "stub").phase is Phase.STOPPING,
                        what="extension")
            left = view(sup, "stub").deadline - time.monotonic()
            assert 3 < left <= 5.1
            sup.kill("stub")
        elif key == "a":
            await until(pilot, lambda: view(sup, "stub").outcome is not None, what="abandon")
            assert view(sup, "stub").outcome.kind is OutcomeKind.ABANDONED
            assert alive(pid)
            os.kill(pid, signal.SIGKILL)
        else:
            await until(pilot, lambda: view(sup, "stub").phase is Phase.STOPPING,
                        what="waiting")
            assert view(sup, "stub").deadline is None
            await until(pilot, lambda: "waiting without a deadline" in header(app, "stub"),
                        what="the header to say so")
            sup.kill("stub")


async def test_quit_with_a_term_ignoring_child_exits_after_the_kill():
    # A generous timeout: on a busy machine Pilot's own waits take a while, and the
    # panel must still show the countdown when the test looks.
    specs = [pyspec("web", POLITE), pyspec("stub", STUBBORN, stop_timeout=4.0)]
    async with console(specs) as (app, pilot, sup):
        await wait_ready(pilot, sup, "web", "stub")
        stub = view(sup, "stub").pid
        await pilot.press("q")
        assert app.quitting
        await until(pilot, lambda: app.query_one("#shutdown").display, what="shutdown panel")
        panel = app.query_one("#shutdown").render().plain
        assert "stub" in panel and "SIGKILL in" in panel
        await until(pilot, lambda: not app.is_running, what="the app to exit")
        assert view(sup, "stub").outcome.text == "killed with SIGKILL after 4s stop timeout"
        assert not alive(stub)


async def test_ctrl_q_and_ctrl_c_go_through_the_stop_sequence():
    for key in ("ctrl+q", "ctrl+c"):
        async with console([pyspec("stub", STUBBORN, stop_timeout=30)]) as (app, pilot, sup):
            await wait_ready(pilot, sup, "stub")
            await pilot.press(key)
            await pilot.pause(0.3)
            assert app.is_running, f"{key} exited without stopping"
            assert view(sup, "stub").phase is Phase.STOPPING
            await pilot.press("q")  # again: offers kill all now
            assert isinstance(app.screen, ConfirmScreen)
            await pilot.press("y")
            await until(pilot, lambda: not app.is_running, what="the app to exit")
            assert view(sup, "stub").outcome.kind is OutcomeKind.KILLED


async def test_palette_quit_goes_through_the_stop_sequence():
    async with console([pyspec("stub", STUBBORN, stop_timeout=30)]) as (app, pilot, sup):
        await wait_ready(pilot, sup, "stub")
        commands = {c.title: c for c in app.get_system_commands(app.screen)}
        await commands["Quit"].callback()
        await pilot.pause(0.2)
        assert app.is_running and app.quitting
        assert view(sup, "stub").phase is Phase.STOPPING
        sup.kill("stub")
        await until(pilot, lambda: not app.is_running, what="the app to exit")


async def test_markup_and_escapes_in_output_and_names_are_shown_as_text():
    code = ("print('[/bold] [bold red]x[/] [@click=quit]q[/] \\x1b[31mred\\x1b[0m "
            "\\x1b]0;title\\x07\\x1b[2Jend', flush=True)\n"
            "import time\nwhile True: time.sleep(1)\n")
    async with console([pyspec("[/bold]name", code)]) as (app, pilot, _sup):
        await until(pilot, lambda: "end" in screen_text(app), what="the output")
        text = screen_text(app)
        assert "[/bold] [bold red]x[/] [@click=quit]q[/] red end" in text
        assert "\x1b" not in text
        assert "[/bold]name" in header(app, "[/bold]name")
        await pilot.press("j")  # still alive and responsive
        assert app.is_running


async def test_follow_pauses_on_scroll_and_end_resumes():
    code = "for i in range(500): print(f'line {i}')\nimport time\nwhile True: time.sleep(1)\n"
    async with console([pyspec("many", code)]) as (app, pilot, _sup):
        await until(pilot, lambda: "line 499" in screen_text(app), what="the output")
        await pilot.press("pageup")
        output = app.selected_pane.output
        assert not output.follow
        assert "line 499" not in screen_text(app)
        assert "paused" in header(app, "many")
        await pilot.press("end")
        assert output.follow
        await pilot.pause(0.1)
        assert "line 499" in screen_text(app)


async def test_search_finds_and_highlights():
    code = ("for i in range(200): print(f'row {i}' + (' needle' if i % 50 == 7 else ''))\n"
            "import time\nwhile True: time.sleep(1)\n")
    async with console([pyspec("hay", code)]) as (app, pilot, _sup):
        await until(pilot, lambda: "row 199" in screen_text(app), what="output")
        await pilot.press("slash")
        await pilot.press(*"needle")
        await pilot.press("enter")
        assert len(app._matches) == 4
        assert "row 157 needle" in screen_text(app)
        await pilot.press("n")
        await pilot.pause(0.1)
        assert "row 107 needle" in screen_text(app)
        # letters are keys again once the search box is closed
        await pilot.press("j")
        assert app.is_running


async def test_sighup_stops_everything_with_ask_acting_as_kill():
    stub = pyspec("stub", STUBBORN, stop_timeout=0.5, on_timeout=OnTimeout.ASK)
    async with console([stub]) as (app, pilot, sup):
        await wait_ready(pilot, sup, "stub")
        # What run_console's SIGHUP handler does:
        sup.set_interactive(False)
        sup.stop_all()
        app.hangup = "SIGHUP"
        await until(pilot, lambda: not app.is_running, what="the app to exit")
        assert view(sup, "stub").outcome.text == "killed with SIGKILL after 0.5s stop timeout"


async def test_flood_keeps_the_console_responsive(monkeypatch):
    """Keys act and the screen keeps refreshing while a child floods. (Latency figures
    are for the benchmarks; Pilot's own idle-waiting makes wall times meaningless here.)"""
    flood = pyspec("flood", "import sys\nwhile True: sys.stdout.write('x' * 60 + '\\n')\n")
    ticks: list[float] = []
    tick = ProctuiApp.tick

    def counted(self: ProctuiApp) -> None:
        tick(self)
        ticks.append(time.monotonic())

    monkeypatch.setattr(ProctuiApp, "tick", counted)
    async with console([flood, pyspec("calm", POLITE)]) as (app, pilot, sup):
        await until(pilot, lambda: view(sup, "flood").lines > 100_000, what="flood")
        await pilot.press("j")
        assert app.selected_view.name == "calm"
        ticks.clear()
        await asyncio.sleep(1.0)
        assert len(ticks) >= 5, f"only {len(ticks)} refreshes in 1s while flooding"
        await pilot.press("1", "s")
        await until(pilot, lambda: view(sup, "flood").outcome is not None, what="flood stop")


def test_the_console_never_signals_a_process_itself():
    from pathlib import Path

    import proctui.console

    for path in Path(proctui.console.__file__).parent.glob("*.py"):
        source = path.read_text()
        for call in ("os.kill(", "killpg(", "send_signal(", "pidfd_send_signal("):
            assert call not in source, f"{path.name} calls {call}"
