"""An agent's request for a decision, in the console: a question with the agent's reason,
armed as the console's own questions are (later focused, keys ignored for a moment, one
question at a time with a pause between), granted only by the key of what it asks, and
gone once answered elsewhere. Driven with Pilot over a real supervisor."""

from __future__ import annotations

import re

import pytest

from proctui.commands.answer import AnswerAsk
from proctui.commands.kill import Kill
from proctui.commands.request_decision import RequestDecision
from proctui.commands.stop import Stop
from proctui.config import OnTimeout
from proctui.core.life.outcome import OutcomeKind
from proctui.core.life.stop import Phase
from proctui.frontends.console.dialogs import AgentAskScreen, AskScreen
from tests.children import POLITE, STUBBORN
from tests.conftest import pyspec
from tests.test_console import SIZES, console, screen, until, view, wait_ready

AGENT = {"uid": 1000, "pid": 42, "client": "mcp"}
WHY = "the dev server [bold]hangs[/bold] on :8000 and ignores SIGTERM"


def specs() -> list:
    return [pyspec("web", STUBBORN), pyspec("db", POLITE)]


def ask(sup, choice: str = "kill", name: str = "web", why: str = WHY):
    reply = sup.send(RequestDecision(choice, why, name), who=AGENT).result(timeout=5)
    assert reply.ok, reply
    return reply.ask["id"]


async def asked(pilot, app, armed: bool = True) -> AgentAskScreen:
    await until(pilot, lambda: isinstance(app.screen, AgentAskScreen), what="the request")
    if armed:
        await until(pilot, lambda: app.screen.armed, what="the request to arm")
    return app.screen


def journal(sup, kind: str) -> list[dict]:
    from proctui.commands.journal_read import ReadJournal

    page = sup.send(ReadJournal(0)).result(timeout=5)
    return [e for e in page.entries if e["kind"] == kind]


@pytest.mark.parametrize("size", SIZES)
async def test_the_request_is_a_question_with_the_agents_reason_at_every_size(size):
    async with console(specs(), size=size) as (app, pilot, sup):
        await wait_ready(pilot, sup, "web")
        ask(sup)
        question = await asked(pilot, app)
        assert question.focused.id == "later"
        text = screen(app)
        pid = view(sup, "web").pid
        # The reason as the agent wrote it (markup is text), who asked, and its lapse.
        flat = " ".join(re.sub("[█▀▄▌▐]", " ", text).split())  # the box's words, in a line
        assert "the dev server [bold]hangs[/bold] on :8000" in flat, text
        assert f"An agent asks to kill web · pid {pid} · 1 of 1 waiting" in flat or \
            "An agent asks to kill web" in flat, text
        assert "an agent through proctui mcp" in flat and "it lapses in" in flat, text
        assert "Kill K" in text and "Deny n" in text and "Later Esc" in text, text
        # Only the key of what it asks grants it: no Abandon, no Stop everything button.
        assert "Abandon a" not in text and "Stop everything S" not in text
        await pilot.press("n")
        await until(pilot, lambda: journal(sup, "answer"), what="the denial")
        (denied,) = journal(sup, "answer")
        assert denied["answer"] == "denied" and "own console" in denied["text"]
        assert view(sup, "web").phase is Phase.RUNNING
        sup.send(Kill("web"))


async def test_the_questions_age_and_lapse_move_while_nothing_else_does():
    """Every process has ended, so no figure of the table moves with the clock: the
    question's own words still do (they froze at "asked 0.0s ago" before)."""
    import time

    from proctui.core.life.asks import Ask
    from proctui.core.life.outcome import Outcome
    from proctui.frontends.console.app import ProctuiApp
    from tests.fake_core import FakeCore
    from tests.fake_core import view as fixed

    now = time.monotonic()
    ended = fixed("db", Phase.ENDED, ended_at=now - 100,
                  outcome=Outcome(OutcomeKind.EXITED, "exited: exit code 0"))
    request = Ask(1, "down", "", "the work is done", "an agent through proctui mcp",
                  now, now + 300)
    app = ProctuiApp(FakeCore([ended], asks=(request,)), clock=time.monotonic)
    async with app.run_test(size=(100, 30)) as pilot:
        await asked(pilot, app)
        await until(pilot, lambda: "it lapses in 4m58s" in
                    " ".join(re.sub("[█▀▄▌▐]", " ", screen(app)).split()),
                    timeout=10, what="the countdown to its lapse to move")


@pytest.mark.parametrize("key", ["enter", "escape"])
async def test_enter_and_escape_put_it_off_and_grant_nothing(key):
    async with console(specs()) as (app, pilot, sup):
        await wait_ready(pilot, sup, "web")
        ask(sup)
        await asked(pilot, app)
        await pilot.press(key)
        await until(pilot, lambda: not isinstance(app.screen, AgentAskScreen), what="later")
        await pilot.pause(0.5)
        assert not isinstance(app.screen, AgentAskScreen), "later means not asked again now"
        assert view(sup, "web").phase is Phase.RUNNING
        assert [a.state for a in sup.snapshot().asks] == ["waiting"]
        sup.send(Kill("web"))


async def test_k_grants_a_kill_and_another_answer_key_only_says_which_grants():
    async with console(specs()) as (app, pilot, sup):
        await wait_ready(pilot, sup, "web")
        number = ask(sup)
        question = await asked(pilot, app)
        await pilot.press("a", "S")  # an abandon's key, a down's: not what it asks
        assert app.screen is question and view(sup, "web").phase is Phase.RUNNING
        assert "K grants it" in screen(app)
        await pilot.press("K")
        await until(pilot, lambda: view(sup, "web").outcome is not None, what="the kill")
        assert view(sup, "web").outcome.kind is OutcomeKind.KILLED
        (granted,) = [a for a in sup.snapshot().asks if a.id == number]
        assert granted.state == "granted"
        assert granted.answer == "granted by the operator at this supervisor's own console"
        assert [e["answer"] for e in journal(sup, "answer")] == ["granted"]


async def test_a_down_is_granted_with_s_and_the_console_stops_everything_and_leaves():
    async with console(specs()) as (app, pilot, sup):
        await wait_ready(pilot, sup, "web")
        ask(sup, "down", "", "the work is done")
        await asked(pilot, app)
        assert "An agent asks to stop everything and end the supervisor" in \
            " ".join(screen(app).split())
        await pilot.press("S")
        await until(pilot, lambda: sup.snapshot().shutting_down, what="the shutdown")
        assert sup.snapshot().shutdown_why == "an agent's request, granted"
        sup.send(Kill("web"))  # it ignores SIGTERM
        await until(pilot, lambda: not app.is_running, what="the console to leave")


async def test_a_request_answered_elsewhere_goes_from_the_screen():
    async with console(specs()) as (app, pilot, sup):
        await wait_ready(pilot, sup, "web")
        number = ask(sup)
        await asked(pilot, app)
        console_elsewhere = {"uid": 1000, "pid": 7, "client": "console"}
        sup.send(AnswerAsk(number, False), who=console_elsewhere).result(timeout=5)
        await until(pilot, lambda: not isinstance(app.screen, AgentAskScreen),
                    what="the question to go")
        # And one that becomes moot (the process ended meanwhile) goes too.
        number = ask(sup, "abandon", "db", "leave the db for the next run")
        await asked(pilot, app)
        sup.send(Stop("db"))
        await until(pilot, lambda: not isinstance(app.screen, AgentAskScreen),
                    what="the moot question to go")
        assert [a.state for a in sup.snapshot().asks if a.id == number] == ["moot"]
        sup.send(Kill("web"))


@pytest.mark.slow
async def test_a_request_and_a_deadline_are_one_queue_one_question_at_a_time():
    parked = pyspec("stub", STUBBORN, stop_timeout=0.3, on_timeout=OnTimeout.ASK)
    async with console([parked, *specs()]) as (app, pilot, sup):
        await wait_ready(pilot, sup, "stub", "web")
        await pilot.press("s")  # stub: its deadline asks first
        await until(pilot, lambda: isinstance(app.screen, AskScreen), what="the decision")
        ask(sup)
        await until(pilot, lambda: "1 of 2 waiting" in screen(app), what="the queue")
        await until(pilot, lambda: app.screen.armed, what="arming")
        await pilot.press("K", "K")  # twice: the second must not grant the next question
        await until(pilot, lambda: view(sup, "stub").outcome is not None, what="the kill")
        assert not isinstance(app.screen, AgentAskScreen), "the next comes after a pause"
        await pilot.pause(0.3)
        assert view(sup, "web").phase is Phase.RUNNING
        question = await asked(pilot, app)
        assert "1 of 1 waiting" in screen(app)
        await pilot.press("K")
        await until(pilot, lambda: view(sup, "web").outcome is not None, what="granted")
        assert question.ask.id == 1


@pytest.mark.slow
async def test_keys_in_its_first_moment_are_ignored_as_at_a_deadline(monkeypatch):
    from proctui.frontends.console import dialogs

    monkeypatch.setattr(dialogs, "ARMING", 3.0)  # a busy machine cannot arm it first
    async with console(specs()) as (app, pilot, sup):
        await wait_ready(pilot, sup, "web")
        ask(sup)
        question = await asked(pilot, app, armed=False)
        await until(pilot, lambda: "arming" in screen(app), what="the arming notice")
        await pilot.press("K", "n", "enter")  # typed for the main screen
        assert app.screen is question and not question.armed
        assert view(sup, "web").phase is Phase.RUNNING
        assert [a.state for a in sup.snapshot().asks] == ["waiting"]
        await until(pilot, lambda: question.armed, what="arming")
        await pilot.press("K")
        await until(pilot, lambda: view(sup, "web").outcome is not None, what="granted")
