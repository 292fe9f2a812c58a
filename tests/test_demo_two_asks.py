"""The README's "1 of 2 waiting" is true of the real demo: quit without extending slow-8s
and two processes reach their deadline and ask; decide later and slow-8s still ends by
itself, its question gone."""

from __future__ import annotations

import re

from proctui import demo
from proctui.core.supervisor import Supervisor
from proctui.frontends.console.app import ProctuiApp
from proctui.frontends.console.dialogs import AskScreen
from proctui.frontends.console.keys import hint
from tests.test_console import screen, until


async def test_quitting_the_demo_without_extending_asks_about_two():
    sup = Supervisor(demo.config().processes, interactive=True)
    sup.start()
    app = ProctuiApp(sup, hint=hint("demo", demo.HINT))
    try:
        async with app.run_test(size=(120, 30)) as pilot:
            await until(pilot, lambda: all(sup.buffer(v.name).output_total for v in sup.views()),
                        what="every demo program to have printed")
            await pilot.press("q")
            await until(pilot, lambda: isinstance(app.screen, AskScreen) and app.screen.armed
                        and app.screen.waiting == 2, timeout=20,
                        what="a question with two waiting")
            assert "1 of 2 waiting" in screen(app)
            asked = {app.screen.view.name}
            await pilot.press("escape")  # decide later: slow-8s ends by itself at 8 s
            await until(pilot, lambda: dict(sup.final()).get("slow-8s") is not None,
                        timeout=20, what="slow-8s to end by itself")
            await until(pilot, lambda: isinstance(app.screen, AskScreen) and app.screen.armed,
                        timeout=20, what="the question about ignores-term again")
            assert app.screen.view.name == "ignores-term"
            assert asked <= {"ignores-term", "slow-8s"}
            await pilot.press("K")
            await until(pilot, lambda: not app.is_running, timeout=30, what="the exit")
    finally:
        if not sup.all_ended():
            sup.kill_all().result(timeout=5)
        sup.close()
    final = {name: outcome.text for name, outcome in sup.final() if outcome}
    assert re.fullmatch(r"stopped after [89]\.\ds: exit code 0", final["slow-8s"]), final
    assert final["ignores-term"].startswith("killed with SIGKILL by operator"), final
