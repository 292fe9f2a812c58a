"""The README's walkthrough of the demo, played key by key as written, on the real demo
programs: it must end the way the README says."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from proctui.frontends.console.dialogs import AskScreen
from proctui.frontends.console.keys import readme_table
from tests.test_console import demo_console, screen, until

# The real console on a pty, the wheel, ssh or hundreds of processes: the second
# CI stage (README: "Tests").
pytestmark = pytest.mark.slow

README = Path(__file__).resolve().parents[1] / "README.md"


async def test_the_readme_walkthrough_gives_the_outcomes_it_promises():
    async with demo_console() as (app, pilot, sup):
        started = time.monotonic()
        await pilot.press("q")  # "Press q."
        await until(pilot, lambda: "Quitting" in screen(app), what="the shutdown view")
        await pilot.press("2", "e")  # "Select slow-8s (2) and press e"
        assert time.monotonic() - started < 4, "too slow to play the walkthrough"
        await until(pilot, lambda: isinstance(app.screen, AskScreen) and app.screen.armed,
                    what="the question about ignores-term")
        assert app.screen.view.name == "ignores-term"
        await pilot.press("K")  # "K kills it now"
        await until(pilot, lambda: not app.is_running, timeout=30, what="the exit")
    final = {name: outcome.text for name, outcome in sup.snapshot().final() if outcome}
    assert re.fullmatch(r"stopped after 0\.\ds: exit code 0", final["clean-web"])
    assert re.fullmatch(r"stopped after [89]\.\ds: exit code 0", final["slow-8s"]), final
    assert re.fullmatch(r"killed with SIGKILL by operator \d+\.\ds after the stop request",
                        final["ignores-term"]), final
    rest = " (the leader ended, exit code 0; the rest of its group did not)"
    on_time = "killed with SIGKILL after 5s stop timeout" + rest
    # A machine starved by the other tests' processes may send that SIGKILL more than
    # 0.1 s after its deadline (seen once at load 3.3 on two cores): then the outcome
    # says when it truly came, and the README's on-time words would be untrue.
    late = re.fullmatch(r"killed with SIGKILL \d+(\.\d)?s after the stop request "
                        r"\(5s stop timeout\)" + re.escape(rest), final["forks-child"])
    assert final["forks-child"] == on_time or late, final
    assert final["chatty"].startswith("stopped after")
    text = README.read_text()
    for name in ("clean-web", "slow-8s", "ignores-term", "forks-child"):
        if name == "forks-child" and late:
            continue
        wording = re.sub(r"\d+\.\ds", "X", final[name])
        assert any(re.sub(r"\d+\.\ds", "X", line) == f"proctui | {name}: {wording}"
                   for line in text.splitlines()), f"README does not show {name}: {wording}"


def test_the_readme_key_table_is_the_key_table():
    """The README's table of keys is the console's own, generated from its bindings."""
    assert readme_table() in README.read_text(), "run: python -m proctui.frontends.console.keys"
