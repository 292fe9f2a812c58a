"""Snapshots of the console over a frozen core (fixed views, frozen clock), at the three
sizes operators use: 120x30, 80x24 and 60x15."""

from __future__ import annotations

import pytest

from proctui.demo import HINT
from proctui.frontends.console.keys import hint
from tests import fake_core

SIZES = {"120x30": (120, 30), "80x24": (80, 24), "60x15": (60, 15)}
DEMO_HINT = hint("demo", HINT)


@pytest.mark.parametrize("size", SIZES)
def test_running_console(snap_compare, size):
    assert snap_compare(fake_core.app(fake_core.running(), DEMO_HINT),
                        terminal_size=SIZES[size])


@pytest.mark.parametrize("size", ["120x30", "80x24"])
def test_stop_in_progress_with_a_frozen_clock(snap_compare, size):
    assert snap_compare(fake_core.app(fake_core.stopping()), press=["2"],
                        terminal_size=SIZES[size])


@pytest.mark.parametrize("size", ["120x30", "80x24"])
def test_stop_in_progress_grid(snap_compare, size):
    assert snap_compare(fake_core.app(fake_core.stopping()), press=["2", "z"],
                        terminal_size=SIZES[size])


@pytest.mark.parametrize("size", SIZES)
def test_the_question_at_a_deadline(snap_compare, size):
    async def armed(pilot) -> None:  # type: ignore[no-untyped-def]
        await pilot.pause(0.7)  # past the half second in which keys are ignored

    assert snap_compare(fake_core.app(fake_core.deciding()), run_before=armed,
                        terminal_size=SIZES[size])


def test_final_state(snap_compare):
    assert snap_compare(fake_core.app(fake_core.final()), terminal_size=SIZES["80x24"])


def test_help(snap_compare):
    assert snap_compare(fake_core.app(fake_core.running()), press=["question_mark"],
                        terminal_size=SIZES["80x24"])


def test_many_processes_table_and_grid(snap_compare):
    assert snap_compare(fake_core.app(fake_core.many(20)), press=["z"],
                        terminal_size=SIZES["80x24"])
