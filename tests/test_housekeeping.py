"""The tree walk's pace at start-up: the first walk waits while the process is still
starting (the console loading Textual), at most ``STARTING`` seconds, and never while a
stop is under way. Real event loop, real /proc; the constants shortened, and the
start-up's state a flag of the test's own: ``startup.pause`` and ``resume`` would turn
the test worker's collector off and freeze its heap under every later test (an
unfreeze to undo it hands a later full collection the whole heap, 35 ms or more)."""

from __future__ import annotations

import asyncio
import os
from types import SimpleNamespace

import pytest

from proctui import startup
from proctui.core.os import housekeeping
from proctui.core.os.housekeeping import Housekeeping
from proctui.core.os.lineage import Lineage
from proctui.core.os.oslayer import OSLayer

STARTING_UP = {"now": False}


@pytest.fixture(autouse=True)
def quick(monkeypatch):
    monkeypatch.setattr(housekeeping, "EVERY", 0.05)
    monkeypatch.setattr(housekeeping, "STARTING", 1.0)
    monkeypatch.setattr(housekeeping, "STARTING_LOOK", 0.02)
    monkeypatch.setattr(startup, "paused", lambda: STARTING_UP["now"])
    yield
    STARTING_UP["now"] = False


def _run(stopping: bool = False) -> SimpleNamespace:
    return SimpleNamespace(token="t", pid=None, pgid=None, start_ticks=None, leftover=False,
                           live=True, exit=None,
                           state=SimpleNamespace(phase=SimpleNamespace(stopping=stopping)))


def first_walk(paused: bool, resume_after: float | None = None,
               stopping: bool = False) -> float:
    """Seconds from the walks' first schedule (the engine's start-up) to the first walk."""
    async def go() -> float:
        loop = asyncio.get_running_loop()
        walked = asyncio.Event()
        at: list[float] = []

        def observed(run: object, paused: bool, usage: object) -> None:
            at.append(loop.time())
            walked.set()

        os_layer = OSLayer()
        run = _run(stopping)
        keeper = Housekeeping(loop, os_layer, Lineage(os_layer, "PROCTUI_TEST_TOKEN"),
                              lambda: [run], set, observed, lambda pid, cmd: None)
        began = loop.time()
        keeper.schedule()
        if resume_after is not None:
            loop.call_later(resume_after, STARTING_UP.update, {"now": False})
        try:
            await asyncio.wait_for(walked.wait(), 30)
        finally:
            keeper.close()
        return at[0] - began

    STARTING_UP["now"] = paused
    return asyncio.run(go())


def test_a_process_past_its_start_up_walks_at_the_usual_pace():
    assert first_walk(paused=False) < 0.8


def test_the_first_walk_waits_for_the_start_up_to_end():
    took = first_walk(paused=True, resume_after=0.4)
    assert 0.4 <= took < 0.95  # after the resume, and well before the cap


def test_a_start_up_that_never_ends_holds_the_walks_for_a_bounded_time():
    took = first_walk(paused=True)
    assert 1.0 <= took < 2.5


def test_a_stop_during_the_start_up_is_watched_at_once():
    assert first_walk(paused=True, stopping=True) < 0.8


def test_a_run_the_walk_did_not_see_is_not_measured_as_nothing():
    """A leftover's leader outside the walk read "0B" in the table and memory_bytes 0 in
    status --json while it used 9.7 MB: nothing seen is not measured (None, shown "-"),
    not zero."""
    from proctui.core.os.procfs import ProcTable
    from proctui.core.os.usage import usage_of

    run = SimpleNamespace(pid=os.getpid(), pgid=None, token="t", live=True)
    lineage = SimpleNamespace(members=lambda _run: [])
    assert usage_of(run, lineage, ProcTable(), {}) is None  # type: ignore[arg-type]
