"""The README's "1 of 2 waiting" is true of the real demo: quit without extending slow-8s
and two processes reach their deadline and ask; decide later and slow-8s still ends by
itself, its question gone."""

from __future__ import annotations

import re

import pytest

from proctui.frontends.console.dialogs import AskScreen
from tests.test_console import demo_console, screen, until

# The real console on a pty, the wheel, ssh or hundreds of processes: the second
# CI stage (README: "Tests").
pytestmark = pytest.mark.slow


async def test_quitting_the_demo_without_extending_asks_about_two():
    async with demo_console() as (app, pilot, sup):
        await pilot.press("q")
        try:
            await until(pilot, lambda: isinstance(app.screen, AskScreen) and app.screen.armed
                        and app.screen.waiting == 2, timeout=20,
                        what="a question with two waiting")
        except AssertionError as e:  # once in a loaded CI run: say what was there instead
            phases = {v.name: (v.phase.name, v.outcome.text if v.outcome else None)
                      for v in sup.snapshot().views}
            raise AssertionError(f"{e}\n{phases}\n{screen(app)}") from None
        assert "1 of 2 waiting" in screen(app)
        asked = {app.screen.view.name}
        await pilot.press("escape")  # decide later: slow-8s ends by itself at 8 s
        await until(pilot, lambda: dict(sup.snapshot().final()).get("slow-8s") is not None,
                    timeout=20, what="slow-8s to end by itself")
        # The console takes the ending at its next look: until then slow-8s's question
        # may still be the one on screen. It must go, and ignores-term's come back.
        await until(pilot, lambda: isinstance(app.screen, AskScreen) and app.screen.armed
                    and app.screen.view.name == "ignores-term",
                    timeout=20, what="the question about ignores-term again")
        assert asked <= {"ignores-term", "slow-8s"}
        await pilot.press("K")
        await until(pilot, lambda: not app.is_running, timeout=30, what="the exit")
    final = {name: outcome.text for name, outcome in sup.snapshot().final() if outcome}
    assert re.fullmatch(r"stopped after [89]\.\ds: exit code 0", final["slow-8s"]), final
    assert final["ignores-term"].startswith("killed with SIGKILL by operator"), final
