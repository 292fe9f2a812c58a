"""Snapshots of the console over a frozen core (fixed views, frozen clock)."""

from __future__ import annotations

from tests import fake_core

SIZE = (100, 30)


def test_running_console(snap_compare):
    assert snap_compare(fake_core.app(fake_core.running()), terminal_size=SIZE)


def test_stop_in_progress_with_a_frozen_clock(snap_compare):
    assert snap_compare(fake_core.app(fake_core.stopping()), press=["2"], terminal_size=SIZE)


def test_stop_in_progress_grid(snap_compare):
    assert snap_compare(fake_core.app(fake_core.stopping()), press=["2", "z"],
                        terminal_size=SIZE)


def test_ask_modal(snap_compare):
    assert snap_compare(fake_core.app(fake_core.deciding()), press=["2"], terminal_size=SIZE)


def test_final_state(snap_compare):
    assert snap_compare(fake_core.app(fake_core.final()), terminal_size=SIZE)


def test_small_terminal(snap_compare):
    assert snap_compare(fake_core.app(fake_core.stopping()), press=["2"],
                        terminal_size=(80, 24))
