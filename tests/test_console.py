"""The console driven with Pilot, over a real supervisor and real child processes."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import threading
import time
from collections.abc import AsyncIterator, Callable

import pytest

from proctui.commands.abandon_all import AbandonAll
from proctui.commands.interactive import SetInteractive
from proctui.commands.kill import Kill
from proctui.commands.stop_all import StopAll
from proctui.config import OnTimeout
from proctui.core.life.outcome import OutcomeKind
from proctui.core.life.stop import Phase
from proctui.core.supervisor import Supervisor
from proctui.core.view import ProcessView
from proctui.frontends.console.app import ProctuiApp
from proctui.frontends.console.dialogs import AskScreen, ConfirmScreen
from proctui.frontends.console.screen import ConsoleScreen
from tests.children import POLITE, STUBBORN
from tests.conftest import alive, pyspec

SIZE = (100, 30)
SIZES = [(120, 30), (80, 24), (60, 15)]


async def until(pilot, predicate: Callable[[], object], timeout: float = 15.0,
                what: str = "condition") -> None:
    """Let the app run until ``predicate`` holds (real processes have no event to await)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await pilot.pause(0.05)


@contextlib.asynccontextmanager
async def console(specs, size=SIZE, hint=(),
                  **kw) -> AsyncIterator[tuple[ProctuiApp, object, Supervisor]]:
    sup = Supervisor(specs, interactive=True, **kw)
    sup.start()
    app = ProctuiApp(sup, hint=hint)
    try:
        async with app.run_test(size=size) as pilot:
            yield app, pilot, sup
    finally:
        if not sup.snapshot().all_ended:
            sup.send(AbandonAll()).result(timeout=5)
        sup.close()


@contextlib.asynccontextmanager
async def demo_console() -> AsyncIterator[tuple[ProctuiApp, object, Supervisor]]:
    """The console on the real demo at 120x30, once every demo program has printed."""
    from proctui import demo
    from proctui.frontends.console.keys import hint

    async with console(demo.config().processes, size=(120, 30),
                       hint=hint("demo", demo.HINT)) as (app, pilot, sup):
        await until(pilot, lambda: all(sup.output.buffer(v.name).output_total
                                           for v in sup.snapshot().views),
                    what="every demo program to have printed")
        yield app, pilot, sup


def answer(app: ProctuiApp) -> str:
    """The answer on the console's answer line now ("" when none)."""
    notice = app.main.notices.current
    return notice.text if notice is not None else ""


def view(sup: Supervisor, name: str) -> ProcessView:
    found = sup.snapshot().view(name)
    assert found is not None, name
    return found


def header(app: ProctuiApp, name: str) -> str:
    return app.main.panes[name].header.render().plain


def pane_text(app: ProctuiApp) -> str:
    return app.main.selected_pane.output.text()


def screen(app: ProctuiApp) -> str:
    """The whole screen as plain text, as the terminal would show it."""
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


async def wait_ready(pilot, sup, *names: str) -> None:
    await until(pilot, lambda: all("ready" in sup.output.buffer(n).read(0).lines
                                           for n in names),
                what=f"{names} ready")


async def asked(pilot, app, armed: bool = True) -> AskScreen:
    await until(pilot, lambda: isinstance(app.screen, AskScreen), what="the question")
    if armed:
        await until(pilot, lambda: app.screen.armed, what="the dialog to arm")
    return app.screen


# -- selecting, stopping, killing -----------------------------------------------------------

async def test_selecting_processes():
    async with console([pyspec("one", POLITE), pyspec("two", POLITE),
                        pyspec("three", POLITE)]) as (app, pilot, _sup):
        assert app.main.selected_view.name == "one"
        await pilot.press("j")
        assert app.main.selected_view.name == "two"
        await pilot.press("down")
        assert app.main.selected_view.name == "three"
        await pilot.press("k")
        assert app.main.selected_view.name == "two"
        await pilot.press("1")
        assert app.main.selected_view.name == "one"
        await pilot.press("3")
        assert app.main.selected_view.name == "three"
        assert app.main.panes["three"].display and not app.main.panes["one"].display
        await pilot.press("z")  # grid: every pane at once
        assert all(p.display for p in app.main.panes.values())


async def test_stop_one_and_the_outcome_stays_visible():
    async with console([pyspec("web", POLITE), pyspec("other", POLITE)]) as (app, pilot, sup):
        await wait_ready(pilot, sup, "web", "other")
        await pilot.press("s")
        await until(pilot, lambda: view(sup, "web").outcome is not None, what="web to stop")
        assert view(sup, "web").outcome.kind is OutcomeKind.STOPPED
        await until(pilot, lambda: "stopped after" in header(app, "web"), what="the header")
        assert re.search(r"stopped after \d+\.\ds: exit code 0", header(app, "web"))
        # The state is said once: "■ web  stopped  stopped after 0.0s" said it twice.
        assert header(app, "web").count("stopped") == 1, header(app, "web")
        await until(pilot, lambda: "stopped after" in pane_text(app), what="the pane's end")
        assert view(sup, "other").phase is Phase.RUNNING


async def test_countdown_decreases_extend_moves_it_and_the_bar_refills():
    stub = pyspec("stub", STUBBORN, stop_timeout=20, extend_step=30)
    async with console([stub]) as (app, pilot, sup):
        await wait_ready(pilot, sup, "stub")
        await pilot.press("s")
        await until(pilot, lambda: "SIGKILL in" in header(app, "stub"), what="countdown")

        def left() -> float:
            return float(re.search(r"SIGKILL in (\d+(?:\.\d)?)s", header(app, "stub")).group(1))

        first = left()
        assert 15 <= first <= 20
        await until(pilot, lambda: left() <= first - 1.0, what="the countdown to decrease")
        before = view(sup, "stub").deadline
        await pilot.press("e")
        await until(pilot, lambda: view(sup, "stub").deadline != before, what="extend")
        assert view(sup, "stub").deadline == pytest.approx(before + 30)
        await until(pilot, lambda: left() > 40, what="the countdown to jump")
        # 40-odd seconds left of a fresh window: the bar is measured over that window.
        bar = re.search(r"([█░]+)", header(app, "stub")).group(1)
        assert bar.count("█") >= len(bar) - 1, bar
        await pilot.press("K")
        await until(pilot, lambda: view(sup, "stub").outcome is not None, what="kill")
        assert view(sup, "stub").outcome.kind is OutcomeKind.KILLED


async def test_kill_now():
    async with console([pyspec("stub", STUBBORN, stop_timeout=60)]) as (_app, pilot, sup):
        await wait_ready(pilot, sup, "stub")
        pid = view(sup, "stub").pid
        await pilot.press("K")
        await until(pilot, lambda: view(sup, "stub").outcome is not None, what="kill")
        assert view(sup, "stub").outcome.text == "killed with SIGKILL by operator"
        assert not alive(pid)


async def test_abandon_asks_first_and_leaves_it_running():
    async with console([pyspec("stub", STUBBORN, stop_timeout=60)]) as (app, pilot, sup):
        await wait_ready(pilot, sup, "stub")
        pid = view(sup, "stub").pid
        await pilot.press("a")
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("enter")  # No has the focus: Enter never abandons
        assert not isinstance(app.screen, ConfirmScreen)
        assert view(sup, "stub").outcome is None
        await pilot.press("a", "y")
        await until(pilot, lambda: view(sup, "stub").outcome is not None, what="abandon")
        assert view(sup, "stub").outcome.kind is OutcomeKind.ABANDONED
        assert alive(pid)
        # Every key says what it did: K on an abandoned process that still runs.
        await pilot.press("K")
        await until(pilot, lambda: "left running" in answer(app), what="the feedback")
        os.kill(pid, signal.SIGKILL)


async def test_s_on_a_process_that_has_ended_says_so():
    async with console([pyspec("quick", "print('done')")]) as (app, pilot, sup):
        await until(pilot, lambda: view(sup, "quick").phase is Phase.ENDED, what="the end")
        await pilot.press("s")
        await until(pilot, lambda: "has already ended (exited: exit code 0)" in
                                answer(app), what="the feedback")


# -- the decision at the deadline -----------------------------------------------------------

def parked(**kw) -> list:
    return [pyspec("stub", STUBBORN, stop_timeout=0.3, on_timeout=OnTimeout.ASK,
                   extend_step=5, **kw)]


@pytest.mark.parametrize("key", ["enter", "escape"])
async def test_enter_and_escape_never_kill_or_abandon(key):
    async with console(parked()) as (app, pilot, sup):
        await wait_ready(pilot, sup, "stub")
        await pilot.press("s")
        question = await asked(pilot, app)
        assert question.focused.id == "later"
        await pilot.press(key)
        await until(pilot, lambda: not isinstance(app.screen, AskScreen), what="later")
        await pilot.pause(0.5)
        assert view(sup, "stub").phase is Phase.DECIDING, "parked, still waiting"
        assert view(sup, "stub").outcome is None
        assert not isinstance(app.screen, AskScreen), "later means not asked again now"
        sup.send(Kill("stub"))


@pytest.mark.slow
async def test_keys_in_the_first_half_second_are_ignored_and_the_dialog_says_so(monkeypatch):
    from proctui.frontends.console import dialogs

    assert dialogs.ARMING == 0.5
    # Longer here, so that a busy machine cannot arm it before the keys below arrive.
    monkeypatch.setattr(dialogs, "ARMING", 3.0)
    async with console(parked()) as (app, pilot, sup):
        await wait_ready(pilot, sup, "stub")
        await pilot.press("s")
        question = await asked(pilot, app, armed=False)
        await until(pilot, lambda: "arming" in screen(app), what="the arming notice")
        await pilot.press("K", "a", "e", "enter")  # typed for the main screen
        assert isinstance(app.screen, AskScreen) and not question.armed
        assert view(sup, "stub").phase is Phase.DECIDING
        await until(pilot, lambda: question.armed, what="arming")
        assert "arming" not in screen(app)
        await pilot.press("K")
        await until(pilot, lambda: view(sup, "stub").outcome is not None, what="the kill")
        assert view(sup, "stub").outcome.kind is OutcomeKind.KILLED


@pytest.mark.parametrize("key", ["K", "e", "a", "w"])
async def test_the_decision_keys(key):
    async with console(parked()) as (_app, pilot, sup):
        app = _app
        await wait_ready(pilot, sup, "stub")
        pid = view(sup, "stub").pid
        await pilot.press("s")
        await asked(pilot, app)
        await pilot.press(key)
        if key == "K":
            await until(pilot, lambda: view(sup, "stub").outcome is not None, what="kill")
            assert view(sup, "stub").outcome.kind is OutcomeKind.KILLED
        elif key == "e":
            await until(pilot, lambda: view(sup, "stub").phase is Phase.STOPPING,
                        what="extension")
            assert 3 < view(sup, "stub").deadline - time.monotonic() <= 5.1
            sup.send(Kill("stub"))
        elif key == "a":
            await until(pilot, lambda: view(sup, "stub").outcome is not None, what="abandon")
            assert view(sup, "stub").outcome.kind is OutcomeKind.ABANDONED
            assert alive(pid)
            os.kill(pid, signal.SIGKILL)
        else:
            await until(pilot, lambda: view(sup, "stub").phase is Phase.STOPPING, what="wait")
            assert view(sup, "stub").deadline is None
            await until(pilot, lambda: "waiting without a deadline" in header(app, "stub"),
                        what="the header to say so")
            sup.send(Kill("stub"))


@pytest.mark.slow
async def test_digits_set_the_extension_and_every_deadline_after_it_asks_again():
    async with console(parked()) as (app, pilot, sup):
        await wait_ready(pilot, sup, "stub")
        await pilot.press("s")
        await asked(pilot, app)
        await pilot.press("2", "e")  # extend by 2 seconds, not the configured 5
        await until(pilot, lambda: view(sup, "stub").phase is Phase.STOPPING, what="extension")
        assert 1 < view(sup, "stub").deadline - time.monotonic() <= 2.1
        question = await asked(pilot, app)
        assert question.view.decisions == 2, "the new deadline asks again"
        await pilot.press("K")
        await until(pilot, lambda: view(sup, "stub").outcome is not None, what="the kill")


@pytest.mark.slow
async def test_several_waiting_processes_are_one_queue_with_a_pause_between():
    specs = [pyspec(n, STUBBORN, stop_timeout=0.3, on_timeout=OnTimeout.ASK) for n in "ab"]
    async with console(specs) as (app, pilot, sup):
        await wait_ready(pilot, sup, "a", "b")
        await pilot.press("q")
        first = await asked(pilot, app)
        await until(pilot, lambda: "1 of 2 waiting" in screen(app), what="the queue")
        name = first.view.name
        await pilot.press("K", "K")  # a repeated key must not answer the next question
        await until(pilot, lambda: view(sup, name).outcome is not None, what="the first kill")
        other = "b" if name == "a" else "a"
        assert not isinstance(app.screen, AskScreen), "the next comes after a visible pause"
        await pilot.pause(0.3)
        assert view(sup, other).phase is Phase.DECIDING
        second = await asked(pilot, app)
        assert second.view.name == other and "1 of 1 waiting" in screen(app)
        await pilot.press("K")
        await until(pilot, lambda: not app.is_running, what="the app to exit")


@pytest.mark.parametrize("size", SIZES)
async def test_the_question_names_the_process_pid_and_time_at_every_size(size):
    async with console(parked(), size=size) as (app, pilot, sup):
        await wait_ready(pilot, sup, "stub")
        pid = view(sup, "stub").pid
        await pilot.press("s")
        await asked(pilot, app)
        text = screen(app)
        assert f"stub · pid {pid} · 1 of 1 waiting" in text, text
        assert re.search(r"SIGTERM sent \d+\.\ds ago", text), text
        assert "Kill K" in text and "Later Esc" in text, text
        sup.send(Kill("stub"))


async def test_a_tick_between_the_push_and_the_mount_of_the_question_is_harmless():
    """The console pushes the question on one tick and keeps it current on the next; a
    tick that came before the pushed dialog was mounted crashed the console (it looked
    for rows not made yet). The dialog keeps what it was told and shows it once up."""
    from proctui.frontends.console.dialogs import AskScreen

    async with console(parked()) as (app, pilot, sup):
        await wait_ready(pilot, sup, "stub")
        await pilot.press("s")
        question = await asked(pilot, app)
        await pilot.press("escape")  # later: the question comes back, but not yet
        await until(pilot, lambda: app.screen is not question, what="the dialog closed")
        now = time.monotonic()
        early = AskScreen(question.view, 1, 1, now)
        early.show(view(sup, "stub"), 1, 3, now)  # not mounted: kept, not drawn
        await app.push_screen(early)
        await until(pilot, lambda: "1 of 3 waiting" in screen(app), what="the kept state")
        sup.send(Kill("stub"))


# -- everything within reach ----------------------------------------------------------------

async def test_help_lists_every_key():
    from proctui.frontends.console.keys import DIALOG, MAIN

    async with console([pyspec("web", POLITE)], size=(100, 60)) as (app, pilot, _sup):
        await pilot.press("question_mark")
        text = screen(app)
        for key in MAIN + DIALOG:
            assert key.help[:40] in text, key.help
        await pilot.press("escape")
        assert not app.screen.query("#help")


@pytest.mark.slow
@pytest.mark.parametrize("size", [(80, 24), (60, 15)])
async def test_twenty_processes_the_table_scrolls_and_the_grid_pages(size):
    specs = [pyspec(f"p{i:02d}", POLITE) for i in range(20)]
    async with console(specs, size=size) as (app, pilot, _sup):
        await pilot.pause(0.3)
        assert "more (j/k)" in screen(app)
        for _ in range(14):
            await pilot.press("j")
        assert app.main.selected_view.name == "p14"
        text = screen(app)
        assert "▶" in text and re.search(r"▶. p14", text), text
        assert "above" in text
        await pilot.press("z")
        await pilot.pause(0.2)
        shown = [p for p in app.main.panes.values() if p.display]
        assert 0 < len(shown) < 20 and app.main.panes["p14"].display
        # Room for the header and three lines of output in each, besides the border.
        assert all(p.size.height >= 4 and p.outer_size.height >= 6 for p in shown), \
            [p.outer_size for p in shown]
        assert re.search(r"(panes \d+-\d+|pane \d+) of 20", screen(app)), screen(app)
        assert not re.search(r"panes (\d+)-\1 of", screen(app)), screen(app)  # one pane


@pytest.mark.parametrize("size", SIZES)
async def test_the_key_bar_and_hint_never_cut_a_word(size):
    sup = Supervisor([pyspec("web", POLITE)], interactive=True)
    sup.start()
    from proctui.demo import HINT
    from proctui.frontends.console.keys import bar_items, hint

    app = ProctuiApp(sup, hint=hint("demo", HINT))
    try:
        async with app.run_test(size=size) as pilot:
            await pilot.pause(0.2)
            lines = screen(app).splitlines()
            bar = lines[-1].strip()
            words = {f"{k} {label}" for k, label in bar_items()}
            assert bar and all(part.strip() in words for part in bar.split("  ")), bar
            hint_line = next(line for line in lines if line.strip().startswith("demo"))
            items = set(hint("demo", HINT))
            assert all(part.strip() in items for part in hint_line.split("·")), hint_line
    finally:
        sup.send(AbandonAll()).result(timeout=5)
        sup.close()


@pytest.mark.slow
async def test_a_paused_process_shows_as_paused():
    async with console([pyspec("web", POLITE)]) as (app, pilot, sup):
        await wait_ready(pilot, sup, "web")
        os.kill(view(sup, "web").pid, signal.SIGSTOP)
        await until(pilot, lambda: "paused" in screen(app), what="the pause to show")
        os.kill(view(sup, "web").pid, signal.SIGCONT)
        await until(pilot, lambda: "paused" not in screen(app), what="running again")


async def test_output_before_the_first_frame_gets_the_activity_mark():
    sup = Supervisor([pyspec("one", POLITE), pyspec("two", POLITE)], interactive=True)
    sup.start()
    try:
        deadline = time.monotonic() + 10
        while "ready" not in sup.output.buffer("two").read(0).lines and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        app = ProctuiApp(sup)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause(0.2)
            assert app.main.table.rows[1].active, "two printed before the console opened"
            assert not app.main.table.rows[0].active, "one is selected: nothing to point at"
    finally:
        sup.send(AbandonAll()).result(timeout=5)
        sup.close()


# -- quitting ---------------------------------------------------------------------------------

@pytest.mark.slow
async def test_quit_with_a_term_ignoring_child_exits_after_the_kill():
    specs = [pyspec("web", POLITE), pyspec("stub", STUBBORN, stop_timeout=4.0)]
    async with console(specs) as (app, pilot, sup):
        await wait_ready(pilot, sup, "web", "stub")
        stub = view(sup, "stub").pid
        await pilot.press("q")
        assert app.main.quit.quitting
        await until(pilot, lambda: "SIGKILL in" in screen(app), what="shutdown panel")
        assert "Quitting" in screen(app)
        await until(pilot, lambda: not app.is_running, what="the app to exit")
        assert view(sup, "stub").outcome.text == "killed with SIGKILL after 4s stop timeout"
        assert not alive(stub)


async def test_ctrl_q_and_ctrl_c_go_through_the_stop_sequence():
    for key in ("ctrl+q", "ctrl+c"):
        async with console([pyspec("stub", STUBBORN, stop_timeout=30)]) as (app, pilot, sup):
            await wait_ready(pilot, sup, "stub")
            await pilot.press(key)
            await until(pilot, lambda: view(sup, "stub").phase is Phase.STOPPING,
                        what="the stop")
            assert app.is_running, f"{key} exited without stopping"
            await pilot.press("q")  # again: offers kill all now
            assert isinstance(app.screen, ConfirmScreen)
            await pilot.press("y")
            await until(pilot, lambda: not app.is_running, what="the app to exit")
            assert view(sup, "stub").outcome.kind is OutcomeKind.KILLED


async def test_palette_quit_goes_through_the_stop_sequence():
    async with console([pyspec("stub", STUBBORN, stop_timeout=30)]) as (app, pilot, sup):
        await wait_ready(pilot, sup, "stub")
        commands = {c.title: c for c in app.get_system_commands(app.screen)}
        # Detach only where there is a supervisor to leave running (it was offered here,
        # then refused).
        assert "Detach" not in commands and "Abandon all" in commands, sorted(commands)
        commands["Quit"].callback()
        await until(pilot, lambda: view(sup, "stub").phase is Phase.STOPPING, what="the stop")
        assert app.is_running and app.main.quit.quitting
        sup.send(Kill("stub"))
        await until(pilot, lambda: not app.is_running, what="the app to exit")


async def test_sighup_stops_everything_with_ask_acting_as_kill():
    async with console(parked()) as (app, pilot, sup):
        await wait_ready(pilot, sup, "stub")
        # What the hangup handler does:
        sup.send(SetInteractive(False))
        sup.send(StopAll())
        app.main.quit.hangup = "SIGHUP"
        await until(pilot, lambda: not app.is_running, what="the app to exit")
        assert view(sup, "stub").outcome.text == "killed with SIGKILL after 0.3s stop timeout"


# -- output -----------------------------------------------------------------------------------

async def test_markup_and_escapes_in_output_and_names_are_shown_as_text():
    code = ("print('[/bold] [bold red]x[/] [@click=quit]q[/] \\x1b[31mred\\x1b[0m "
            "\\x1b]0;title\\x07\\x1b[2Jend', flush=True)\n"
            "import time\nwhile True: time.sleep(1)\n")
    async with console([pyspec("[/bold]name", code)]) as (app, pilot, _sup):
        await until(pilot, lambda: "end" in pane_text(app), what="the output")
        text = pane_text(app)
        assert "[/bold] [bold red]x[/] [@click=quit]q[/] red end" in text
        assert "\x1b" not in text
        assert "[/bold]name" in header(app, "[/bold]name")
        await pilot.press("j")
        assert app.is_running


async def test_scrolling_holds_the_pane_and_end_follows_again():
    code = "for i in range(500): print(f'line {i}')\nimport time\nwhile True: time.sleep(1)\n"
    async with console([pyspec("many", code)]) as (app, pilot, _sup):
        await until(pilot, lambda: "line 499" in pane_text(app), what="the output")
        output = app.main.selected_pane.output
        await pilot.press("z", "z")  # a layout change (a resize) never stops following
        await pilot.pause(0.2)
        assert output.follow
        await pilot.press("pageup")
        assert not output.follow
        await pilot.pause(0.2)
        assert "line 499" not in pane_text(app)
        assert "held at" in header(app, "many")
        await pilot.press("end")
        assert output.follow
        await pilot.pause(0.2)
        assert "line 499" in pane_text(app)


async def test_c_says_it_cleared_only_once_the_pane_is_clear():
    """c's answer ("final's pane cleared") came with the reply, the pane drawn empty only
    at the next tick: the operator read "cleared" over a pane still full (a real screen
    under load caught it). The answer now comes after the snapshot it speaks of is drawn;
    a slow refresh rate keeps the next tick far off."""
    sup = Supervisor([pyspec("final", "for i in range(40): print(f'line {i}')\n"
                             "print('FINAL LINE', flush=True)\nimport time\ntime.sleep(100)\n")],
                     interactive=True)
    sup.start()
    app = ProctuiApp(sup, refresh_hz=0.2)
    said: list[tuple[str, bool]] = []  # each answer, and whether the pane still held lines
    app.main.notices.listen(lambda notice: notice is not None and said.append(
        (notice.text, "FINAL LINE" in screen(app))))
    try:
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: "FINAL LINE" in screen(app), what="the output")
            await pilot.press("c")
            await until(pilot, lambda: any("pane cleared" in m for m, _ in said),
                        what="the answer")
            assert [held for m, held in said if "pane cleared" in m] == [False], said
            assert "FINAL LINE" not in screen(app)
    finally:
        sup.send(AbandonAll()).result(timeout=5)
        sup.close()


async def test_search_finds_and_highlights():
    code = ("for i in range(200): print(f'row {i}' + (' needle' if i % 50 == 7 else ''))\n"
            "import time\nwhile True: time.sleep(1)\n")
    async with console([pyspec("hay", code)]) as (app, pilot, _sup):
        await until(pilot, lambda: "row 199" in pane_text(app), what="output")
        await pilot.press("slash", *"needle", "enter")
        assert len(app.main.search.matches) == 4
        await pilot.pause(0.1)
        assert "row 157 needle" in pane_text(app)
        await pilot.press("n")
        await pilot.pause(0.1)
        assert "row 107 needle" in pane_text(app)
        await pilot.press("j")  # letters are keys again once the search box is closed
        assert app.is_running


async def test_search_goes_on_over_lines_that_came_since(tmp_path):
    """n and N look at the lines printed after Enter too: the search found only those
    there were then, and N stopped at the last of them with newer matches on screen."""
    go = tmp_path / "go"
    code = ("import os, time\nfor i in range(3): print(f'old {i} needle')\n"
            f"while not os.path.exists({str(go)!r}): time.sleep(0.05)\n"
            "for i in range(3): print(f'new {i} needle')\nwhile True: time.sleep(1)\n")
    async with console([pyspec("hay", code)]) as (app, pilot, sup):
        await until(pilot, lambda: "old 2 needle" in pane_text(app), what="the old lines")
        await pilot.press("slash", *"needle", "enter")
        assert len(app.main.search.matches) == 3
        go.touch()
        await until(pilot, lambda: sup.output.buffer("hay").output_total == 6, what="the new lines")
        await pilot.press("N")
        search = app.main.search
        assert len(search.matches) == 6
        assert search.matches[search.index] == search.matches[3]  # the first new one
        await until(pilot, lambda: "new 0 needle" in pane_text(app), what="the new match")
        await pilot.press("N", "N", "N")
        assert app.main.search.index == 5


@pytest.mark.slow
async def test_flood_keeps_the_console_responsive(monkeypatch):
    """Keys act and the screen keeps refreshing while a child floods."""
    flood = pyspec("flood", "import sys\nwhile True: sys.stdout.write('x' * 60 + '\\n')\n")
    ticks: list[float] = []
    tick = ConsoleScreen.tick

    def counted(self: ConsoleScreen) -> None:
        tick(self)
        ticks.append(time.monotonic())

    monkeypatch.setattr(ConsoleScreen, "tick", counted)
    async with console([flood, pyspec("calm", POLITE)]) as (app, pilot, sup):
        await until(pilot, lambda: sup.output.buffer("flood").total > 100_000, what="flood")
        await pilot.press("j")
        assert app.main.selected_view.name == "calm"
        ticks.clear()
        await asyncio.sleep(1.0)
        assert len(ticks) >= 5, f"only {len(ticks)} refreshes in 1s while flooding"
        await pilot.press("1", "s")
        await until(pilot, lambda: view(sup, "flood").outcome is not None, what="flood stop")


async def test_the_console_never_signals_a_process_itself(monkeypatch):
    """Every key, with the OS's signal calls watched: only the core's thread sends."""
    sent: list[tuple[str, str]] = []
    for module, name in ((os, "kill"), (os, "killpg"), (signal, "pidfd_send_signal")):
        real = getattr(module, name)

        def watched(*args, _real=real, _name=name):  # type: ignore[no-untyped-def]
            sent.append((threading.current_thread().name, _name))
            return _real(*args)

        monkeypatch.setattr(module, name, watched)
    specs = [pyspec("stub", STUBBORN, stop_timeout=0.5, on_timeout=OnTimeout.ASK),
             pyspec("web", POLITE)]
    async with console(specs) as (app, pilot, sup):
        await wait_ready(pilot, sup, "stub", "web")
        for key in ("j", "k", "z", "z", "w", "f", "c", "s", "e", "r", "S", "K"):
            await pilot.press(key)
        await pilot.press("q")
        await until(pilot, lambda: not app.is_running, timeout=30, what="the app to exit")
    assert sent, "the core sent the signals, and this test saw them"
    assert {thread for thread, _ in sent} == {"proctui-core"}, sent


# -- processes that speak -----------------------------------------------------------------

async def test_the_quit_panel_shows_the_stages_and_t_shows_the_timeline():
    from proctui.frontends.console.reading import TimelineScreen
    from tests.children import SLOW

    specs = [pyspec("db", POLITE), pyspec("web", SLOW.format(seconds=1.5),
                                          depends_on=(("db", None),))]
    async with console(specs) as (app, pilot, sup):
        await wait_ready(pilot, sup, "db", "web")
        await pilot.press("q")
        await until(pilot, lambda: "stage 2/2 · stops after web" in screen(app),
                    what="the stage in the quit panel")
        await pilot.press("t")
        await until(pilot, lambda: isinstance(app.screen, TimelineScreen), what="timeline")
        text = screen(app)
        assert re.search(r"db +│", text) and re.search(r"web +│", text), text
        await pilot.press("escape")
        await until(pilot, lambda: not app.is_running, what="the app to exit")
    outcomes = {n: o.text for n, o in sup.snapshot().final()}
    assert outcomes["db"].startswith("stopped after") and outcomes["web"].startswith("stopped")


# -- an idle console ------------------------------------------------------------------------

def test_ages_change_each_second_then_each_ten_then_each_minute():
    """What an idle console shows changes as rarely as the words allow: it redraws when a
    figure changes, measured from each view's own instant, never from a rounded clock."""
    from proctui.frontends.console.render import clock_face, next_change
    from proctui.frontends.words import duration
    from tests import fake_core

    assert [duration(s) for s in (0, 9.9, 10, 19.9, 47, 59.9, 60, 3599, 3600)] == \
        ["0s", "9s", "10s", "10s", "40s", "50s", "1m", "59m", "1h00m"]
    now = fake_core.NOW

    def wait(age: float) -> float:
        return next_change([fake_core.view("a", Phase.RUNNING, started_at=now - age),
                            fake_core.view("b", Phase.RUNNING, started_at=now - 3600)], now)

    assert wait(3.25) == pytest.approx(0.75, abs=0.06)
    assert wait(31) == pytest.approx(9, abs=0.06)
    assert wait(301) == pytest.approx(59, abs=0.06)
    assert next_change([fake_core.view("a", Phase.BACKOFF, restart_at=now + 2.4)], now) == \
        pytest.approx(0.4, abs=0.06)
    assert next_change([fake_core.view("a", Phase.STOPPING, stop_requested_at=now - 1,
                                       deadline=now + 4)], now) == 0.1
    # An age read across the 10 s boundary only goes up (it went 9s, then back to 5s).
    started = now - 9.5
    faces = [clock_face([fake_core.view("a", Phase.RUNNING, started_at=started)], now + t)[0]
             for t in (0, 0.4, 0.6, 5, 10.6, 20.6)]
    assert faces == ["9s", "9s", "10s", "10s", "20s", "30s"]


def test_a_list_in_a_dialog_fits_its_rows_and_counts_the_rest():
    from proctui.frontends.console.dialogs import listed
    from proctui.frontends.printer import cells

    items = tuple(f"p{i} (pid {1000 + i})" for i in range(1, 26))
    assert listed(items, 72, 20, "Left running:")[-1].endswith("p25 (pid 1025)")
    for rows in (1, 2, 5):
        lines = listed(items, 40, rows, "Left running:")
        assert len(lines) <= rows and all(len(line) <= 40 for line in lines), lines
        more = int(re.search(r"\+(\d+) more$", lines[-1]).group(1))
        assert len(re.findall(r"p\d+ \(pid \d+\)", " ".join(lines))) + more == 25
    # A name as long as the row, with its comma: one column too wide, Textual wrapped it
    # again, "(pid" above "20135),". Cut in the middle to fit, the pid kept; by columns.
    long = "ignorer-00-with-a-rather-long-name-to-test-the-quit" + "-panel-ok (pid 20135)"
    for width in (40, 56, 72):
        lines = listed((long, "日本語のプロセス名前がとても長いです日本 (pid 7)", "b (pid 2)"),
                       width, 10, "Left running:")
        assert all(cells(line) <= width for line in lines), (width, lines)
        assert all(line.count("(pid") == line.count(")") for line in lines), lines
        assert "20135)," in " ".join(lines) and "b (pid 2)" in lines[-1], lines


async def test_the_picker_takes_names_as_text_never_markup():
    names = ["web", "[/bold]odd[red]", "worker"]
    async with console([pyspec(n, POLITE) for n in names]) as (app, pilot, _sup):
        await pilot.press("p")
        await until(pilot, lambda: app.screen.query("CommandInput"), what="the picker")
        await pilot.press(*"odd")
        await pilot.pause(0.5)
        await pilot.press("enter")
        await until(pilot, lambda: app.main.selected == 1, what="the odd name selected")


async def test_a_new_line_costs_one_line_of_drawing():
    """The pane keeps each line's rows: a new line at the bottom draws that line only,
    not every row on screen (the old cache was keyed by the whole viewport)."""
    from textual.app import App

    from proctui.core.output.lines import OutputBuffer, Stream
    from proctui.frontends.console.output import OutputView

    buffer = OutputBuffer(1000)
    buffer.append(Stream.STDOUT, [f"line {i} \x1b[31mred\x1b[0m" for i in range(100)])

    class One(App[None]):
        def compose(self):  # type: ignore[no-untyped-def]
            yield OutputView(buffer)

    app = One()
    async with app.run_test(size=(60, 20)) as pilot:
        view = app.query_one(OutputView)
        view.sync()
        await pilot.pause(0.1)
        assert "line 99" in view.text()
        for n in range(100, 105):
            before = view.drawn
            buffer.append(Stream.STDOUT, [f"line {n}"])
            view.sync()
            await pilot.pause(0.05)
            assert f"line {n}" in view.text()
            assert view.drawn - before == 1, view.drawn - before


async def test_with_wrap_on_the_end_of_the_scroll_range_shows_the_last_line():
    """Wrapped lines take several rows: the scroll range ends where the newest line is
    at the bottom (it ended lines-minus-rows, a screen above it, with a scrollbar that
    said the end was in view)."""
    from textual.app import App

    from proctui.core.output.lines import OutputBuffer, Stream
    from proctui.frontends.console.output import OutputView

    buffer = OutputBuffer(1000)
    buffer.append(Stream.STDOUT, [f"line {i} " + "word " * 20 for i in range(50)])

    class One(App[None]):
        def compose(self):  # type: ignore[no-untyped-def]
            yield OutputView(buffer)

    app = One()
    async with app.run_test(size=(60, 20)) as pilot:
        view = app.query_one(OutputView)
        view.sync()
        await pilot.pause(0.1)
        view.follow = False
        view.home()
        await pilot.pause(0.05)
        assert "line 49" not in view.text()
        view.page(1)
        view.follow = False
        view._scroll(view.max_scroll_y)  # held at the end of the range, not following
        await pilot.pause(0.05)
        assert "line 49" in view.text(), (view.max_scroll_y, view.text())
        view.wrap = False
        await pilot.pause(0.05)
        assert view.max_scroll_y == 50 - view.scrollable_content_region.height


async def test_a_key_bound_to_nothing_is_answered_once_per_burst():
    """0 held down (its repeats) is one answer, not a stack of them; another key is
    answered at once, and its answer replaces the one before (four stacked toasts hid
    the pane's header at 60x15)."""
    async with console([pyspec("web", POLITE)]) as (app, pilot, _sup):
        said: list[str] = []
        notify = app.notify
        app.notify = lambda message, **options: (said.append(message),  # type: ignore
                                                 notify(message, **options))
        await pilot.press(*"00000")
        await pilot.press("x", "f5")
        await pilot.pause(0.2)
        assert said == ["0: no key does that here · ? lists every key",
                        "x: no key does that here · ? lists every key",
                        "f5: no key does that here · ? lists every key"], said
        shown = answer(app)
        assert shown == "f5: no key does that here · ? lists every key", shown
        await pilot.press("f1")  # the help habit
        await until(pilot, lambda: type(app.screen).__name__ == "HelpScreen", what="help")
        await pilot.press("f1")  # and the same key closes it, as ? does
        await until(pilot, lambda: type(app.screen).__name__ != "HelpScreen", what="closed")


def test_the_bar_offers_no_key_that_is_always_refused():
    """A successor waiting for its leftover (starting, no pid) was offered K and a, which
    had nothing to act on; an ended leftover S and r, which are always refused."""
    from proctui.frontends.console.keys import MAIN, bar_now

    def offered(view: ProcessView) -> set[str]:
        return {k.action for k in bar_now(MAIN, view, False) if k.bar} & \
            {"stop", "start", "restart", "kill", "extend", "abandon", "adopt"}

    assert offered(ProcessView("db", Phase.STARTING, "x")) == {"stop"}
    assert offered(ProcessView("db", Phase.STARTING, "x", pid=42)) == \
        {"stop", "restart", "kill", "abandon"}
    assert offered(ProcessView("db (leftover)", Phase.ENDED, "x", leftover=True)) == set()
    assert offered(ProcessView("db", Phase.ENDED, "x")) == {"start", "restart"}
    # Abandoned, still running: a start would be refused (S was offered all the same).
    from proctui.core.life.outcome import Outcome, OutcomeKind

    abandoned = Outcome(OutcomeKind.ABANDONED, "abandoned after 4.1s: pid 7502 left running",
                        pid=7502, left_pids=(7502,))
    assert offered(ProcessView("probe", Phase.ENDED, "x", outcome=abandoned)) == set()


def test_search_matches_follow_a_mirror_that_renumbered_its_lines():
    """An attached console's buffer renumbers what it holds at a gap: the matches found
    before pointed at other lines (n landed on 'line 4'); they are looked for again."""
    from types import SimpleNamespace

    from proctui.core.output.lines import OutputBuffer, Stream
    from proctui.frontends.console.search import Search

    buf = OutputBuffer(100)
    lines = [f"line {i}" + (" needle" if i in (2, 6) else "") for i in range(10)]
    buf.receive(0, lines, [Stream.STDOUT] * 10, 10, "", 0)

    core = SimpleNamespace(output=SimpleNamespace(buffer=lambda _name: buf))
    s = Search(None, core, None, None)  # type: ignore[arg-type]  (only the output is read)
    s.searched, s.matches, s.scanned = ("hay", "needle"), [], 0
    s._more_matches()
    assert [buf.read(n, 1).lines[0] for n in s.matches] == ["line 2 needle", "line 6 needle"]
    buf.receive(12, ["line 12 needle"], [Stream.STDOUT], 13, "", 0, gap="3 lines missed")
    s._more_matches()
    found = [buf.read(n, 1).lines[0] for n in s.matches]
    assert found == ["line 2 needle", "line 6 needle", "line 12 needle"], found


def test_an_extended_countdown_keeps_its_bar_and_says_who_extended_it():
    """db extends its own deadline (EXTEND_TIMEOUT_USEC): the words grew (", by the
    process", which read as if the process would send the SIGKILL) and pushed the bar out
    at 80 columns. The bar may displace the extra words, never "SIGKILL in 5.8s"."""
    from proctui.frontends.console.render import countdown_text
    from proctui.frontends.words import countdown
    from tests.fake_core import NOW, view

    v = view("db", Phase.STOPPING, stop_requested_at=NOW - 4.2, deadline=NOW + 5.8,
             window_start=NOW - 1, extended_by_process=True, status="flushing WAL 3/7")
    cd = countdown(v, NOW)
    assert cd is not None
    assert "SIGKILL in 5.8s, extended by the process" in cd.text
    assert not any(", by the process" in form for form in (cd.text, *cd.forms))
    for room in range(20, 100):
        shown = countdown_text(cd, room, short=True).plain
        assert len(shown) <= room
        words = shown.rstrip(" █░")
        if len("flushing WAL 3/7 · SIGKILL in 5.8s") + 8 <= room:
            # Words and a bar both, whatever the room: the bar never vanishes here.
            assert "SIGKILL in 5.8s" in words and shown != words, (room, shown)
        if len("flushing WAL 3/7 · SIGKILL in 5.8s, extended by the process") + 8 <= room:
            assert words.endswith("extended by the process"), (room, shown)


async def test_help_opens_over_a_question_and_closes_back_to_it():
    """The key bar under a question offers ? Help: it opens the help over the question,
    and Esc goes back to the question, still unanswered."""
    async with console(parked()) as (app, pilot, sup):
        await wait_ready(pilot, sup, "stub")
        await pilot.press("s")
        question = await asked(pilot, app)
        await pilot.press("question_mark")
        await until(pilot, lambda: type(app.screen).__name__ == "HelpScreen", what="help")
        await pilot.press("escape")
        await until(pilot, lambda: app.screen is question, what="the question again")
        assert view(sup, "stub").phase is Phase.DECIDING
        sup.send(Kill("stub"))


def test_the_commands_a_waiting_decision_offers_run_as_printed():
    """status offered "(proctui kill|extend|abandon alpha (leftover), ...)": pasted as
    printed, the unquoted parentheses were a shell syntax error."""
    import shlex

    from proctui.frontends.status import detail
    from tests import fake_core

    now = fake_core.NOW
    view = fake_core.view("alpha (leftover)", Phase.DECIDING, decision_since=now - 5,
                          stop_requested_at=now - 8)
    words = detail(view, now)
    assert "proctui kill|extend|abandon 'alpha (leftover)'" in words, words
    command = words.split("(proctui ", 1)[1].split(", or")[0].replace("kill|extend|abandon",
                                                                       "kill")
    assert shlex.split(command) == ["kill", "alpha (leftover)"], command
