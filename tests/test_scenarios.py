"""Lifecycle scenarios replayed on the real engine over a fake OS and a fake clock
(tests/scenario.py): each runs in milliseconds, the same way every time, however busy
the machine. Real processes test the OS seam elsewhere; these test the decisions."""

from __future__ import annotations

import signal
from dataclasses import replace

import pytest

from proctui.commands.abandon import Abandon
from proctui.commands.extend import Extend
from proctui.commands.interrupt import Interrupt
from proctui.commands.kill import Kill
from proctui.commands.reload import Reload
from proctui.commands.stop import Stop
from proctui.commands.stop_all import StopAll
from proctui.config import DependCondition, OnTimeout, RestartPolicy
from proctui.core.life import effects as fx
from proctui.core.life.outcome import ExitStatus, OutcomeKind
from proctui.core.life.stop import Phase
from tests.scenario import Behaviour, Scenario, spec


@pytest.fixture
def scenarios():
    made: list[Scenario] = []

    def make(*args, **kw) -> Scenario:
        s = Scenario(*args, **kw)
        made.append(s)
        return s

    yield make
    for s in made:
        s.close()


def test_a_term_ignoring_process_is_killed_at_its_deadline_to_the_instant(scenarios):
    s = scenarios([spec("stub", stop_timeout=3, kill_timeout=2)],
                  behaviour={"stub": Behaviour(ends_after=None)}).start()
    assert s.send(Stop("stub")).text == "stopping stub"
    asked = s.now
    s.advance(2.999)
    assert [sig for _, _, sig in s.signals] == [signal.SIGTERM, signal.SIGCONT]
    s.advance(0.001)
    assert s.signals[-1] == (asked + 3, "stub", signal.SIGKILL)
    assert s.view("stub").outcome.text == "killed with SIGKILL after 3s stop timeout"


def test_three_interrupts_during_a_start_of_two_thousand_abandon_exactly_what_started(
        scenarios):
    """The README promises: exit 3, every pid left running named, and nothing that got
    a pid called "not started" -- at whatever moment of the start the third comes."""
    names = [f"p{n}" for n in range(2000)]
    s = scenarios([spec(n) for n in names], behaviour={
        n: Behaviour(ends_after=None) for n in names})
    s.engine.startup()  # the launch goes a slice at a time; the interrupts come between
    s.loop.run_until_complete(__import__("asyncio").sleep(0))
    for _ in range(3):
        s.send(Interrupt("SIGINT"))
    s.settle()
    snap = s.snapshot
    assert snap.abandoned_all and snap.all_ended, [v.phase for v in snap.views][:5]
    assert snap.exit_status == 3
    spawned = {name for _, name, e in s.history if isinstance(e, fx.Spawn)}
    assert spawned and len(spawned) < 2000  # it did come in the middle of the start
    for name, outcome in snap.final():
        if name in spawned:
            assert outcome is not None and outcome.kind is OutcomeKind.ABANDONED, name
            assert f"pid {snap.view(name).pid} left running" in outcome.text
        else:
            assert outcome is None, name  # "not started": it never had a pid


def test_the_ladder_stops_then_kills_then_abandons(scenarios):
    s = scenarios([spec("a", stop_timeout=30), spec("b", stop_timeout=30)],
                  behaviour={"a": Behaviour(ends_after=None),
                             "b": Behaviour(ends_after=None, unkillable=True)}).start()
    s.send(Interrupt("SIGTERM"))
    assert [v.phase for v in s.snapshot.views] == [Phase.STOPPING, Phase.STOPPING]
    s.send(Interrupt("SIGTERM"))  # a second SIGTERM only repeats the stop
    assert not any(sig == signal.SIGKILL for _, _, sig in s.signals)
    s.send(Interrupt("SIGINT"))
    s.advance(0)
    assert s.view("a").outcome.kind is OutcomeKind.KILLED
    assert s.view("b").phase is Phase.KILLING
    s.send(Interrupt("SIGINT"))
    snap = s.snapshot
    assert snap.abandoned_all and snap.all_ended and snap.exit_status == 3
    assert snap.view("b").outcome.kind is OutcomeKind.ABANDONED


def test_a_staged_shutdown_stops_the_dependent_first_and_says_it_in_that_order(scenarios):
    db = spec("db", stop_timeout=5)
    web = spec("web", depends_on=(("db", DependCondition.STARTED),))
    s = scenarios([db, web], behaviour={"web": Behaviour(ends_after=0.2),
                                        "db": Behaviour(ends_after=0.5)}).start()
    s.send(StopAll())
    assert [n for _, n, sig in s.signals if sig == signal.SIGTERM] == ["web"]
    assert s.view("db").stops_after == ("web",)
    s.advance(0.2)
    s.advance(0)
    assert [n for _, n, sig in s.signals if sig == signal.SIGTERM] == ["web", "db"]
    s.advance(1)
    outcomes = [(t, n) for t, n, e in s.history if isinstance(e, fx.Journal)
                and e.kind.value == "outcome"]
    assert [n for _, n in outcomes] == ["web", "db"]
    assert s.snapshot.exit_status == 0


def test_ask_waits_for_a_decision_and_extend_moves_it(scenarios):
    s = scenarios([spec("slow", stop_timeout=2, on_timeout=OnTimeout.ASK, extend_step=10)],
                  interactive=True, behaviour={"slow": Behaviour(ends_after=None)}).start()
    s.send(Stop("slow"))
    s.advance(2)
    assert s.view("slow").phase is Phase.DECIDING
    assert s.view("slow").decision_since == s.now
    assert s.send(Extend("slow", 5)).text == "slow: deadline extended by 5s"
    assert s.view("slow").phase is Phase.STOPPING
    s.advance(5)
    assert s.view("slow").phase is Phase.DECIDING
    assert s.send(Kill("slow")).ok
    s.advance(0)
    assert s.view("slow").outcome.text.startswith("killed with SIGKILL by operator")


def test_abandon_names_the_pid_and_restarts_nothing(scenarios):
    s = scenarios([spec("svc", restart=RestartPolicy.ALWAYS)],
                  behaviour={"svc": Behaviour(ends_after=None)}).start()
    pid = s.view("svc").pid
    s.send(Abandon("svc"))
    v = s.view("svc")
    assert v.phase is Phase.ENDED and v.outcome.text.endswith(f"pid {pid} left running")
    s.advance(60)
    assert len(s.effects("svc", fx.Spawn)) == 1


def test_a_crash_restarts_with_backoff_and_a_stop_cancels_it(scenarios):
    s = scenarios([spec("crashy", restart=RestartPolicy.ON_FAILURE)]).start()
    s.exits("crashy", ExitStatus(code=3))
    s.advance(0)
    assert s.view("crashy").phase is Phase.BACKOFF
    s.advance(1)
    assert len(s.effects("crashy", fx.Spawn)) == 2
    s.exits("crashy", ExitStatus(code=3))
    s.advance(0)
    assert s.view("crashy").restart_at == s.now + 2  # doubled
    s.send(Stop("crashy"))
    s.advance(10)
    assert len(s.effects("crashy", fx.Spawn)) == 2
    assert s.snapshot.exit_status == 1  # it crashed, whatever came after


@pytest.mark.parametrize("command", [Kill, Abandon])
def test_kill_or_abandon_in_backoff_cancels_the_restart_and_says_so(scenarios, command):
    """K on a process waiting to restart said "nothing to stop" (it had cancelled the
    restart, and the key was kill)."""
    s = scenarios([spec("crashy", restart=RestartPolicy.ON_FAILURE)]).start()
    s.exits("crashy", ExitStatus(code=3))
    s.advance(0)
    assert s.view("crashy").phase is Phase.BACKOFF
    reply = s.send(command("crashy"))
    assert reply.ok and reply.text == ("crashy will not restart (it was waiting to; nothing "
                                       "was running)"), reply
    s.advance(10)
    assert len(s.effects("crashy", fx.Spawn)) == 1
    assert fx.Notice("restart cancelled: it was not running") in \
        [e for _, e in s.effects("crashy", fx.Notice)]


def test_reload_restarts_only_what_changed_and_not_for_the_file_s_name(scenarios):
    a, b = spec("a", source="proctui.toml"), spec("b", source="proctui.toml")
    again = [replace(a, source="/srv/app/proctui.toml"),
             replace(b, source="/srv/app/proctui.toml", stop_timeout=99),
             spec("c")]
    s = scenarios([a, b], reload_from=lambda: again).start()
    future = s.engine.loop.run_until_complete(_reload(s))
    s.advance(1)
    s.settle()
    text = future.result(timeout=0).text
    assert "changed b" in text and "added c" in text and "unchanged: a" in text, text
    assert len(s.effects("a", fx.Spawn)) == 1  # the same process: same pid
    assert len(s.effects("b", fx.Spawn)) == 2


async def _reload(s: Scenario):  # type: ignore[no-untyped-def]
    import asyncio
    import concurrent.futures

    future: concurrent.futures.Future = concurrent.futures.Future()  # type: ignore[type-arg]
    s.engine.command(Reload().execute, future)
    for _ in range(50):
        await asyncio.sleep(0.01)
        if future.done() or s.engine.forget_hooks:
            break
    return future


@pytest.mark.slow
def test_two_thousand_stops_each_killed_at_its_own_deadline(scenarios):
    names = [f"p{n}" for n in range(2000)]
    s = scenarios([spec(n, stop_timeout=3, kill_timeout=5) for n in names],
                  behaviour={n: Behaviour(ends_after=None) for n in names}).start()
    began = s.now
    s.send(StopAll())
    s.advance(3)
    kills = [t for t, _, sig in s.signals if sig == signal.SIGKILL]
    assert len(kills) == 2000 and all(t == began + 3 for t in kills)
    s.advance(1)
    assert s.snapshot.all_ended
    assert {v.outcome.text for v in s.snapshot.views} == {
        "killed with SIGKILL after 3s stop timeout"}
