"""The stop machine on its own: pure transitions, no processes, no clock. Milliseconds."""

from __future__ import annotations

import signal
from dataclasses import replace

import pytest

from proctui.config import OnTimeout
from proctui.core.life import stop as m
from proctui.core.life.outcome import EndKind, Reason, Who
from proctui.core.life.stop import DeadlineAction, Phase, Policy

T0 = 1000.0


def start(**policy: object) -> m.StopState:
    return m.initial(Policy(stop_timeout=10, kill_timeout=5, pgid=42, **policy))  # type: ignore[arg-type]


def run(state: m.StopState, *events: m.Event) -> tuple[m.StopState, list[m.Effect]]:
    effects: list[m.Effect] = []
    for event in events:
        state, out = m.step(state, event)
        effects += out
    return state, effects


def sends(effects: list[m.Effect]) -> list[tuple[int, Reason]]:
    return [(e.sig, e.reason) for e in effects if isinstance(e, m.Send)]


def finish(effects: list[m.Effect]) -> EndKind | None:
    ends = [e.end for e in effects if isinstance(e, m.Finish)]
    assert len(ends) <= 1, "a run finishes once"
    return ends[0] if ends else None


def test_stop_sends_the_stop_signal_then_sigcont_and_arms_the_deadline():
    s, fx = run(start(), m.StopRequested(T0))
    assert s.phase is Phase.STOPPING and s.deadline == T0 + 10 and s.window_start == T0
    assert sends(fx) == [(signal.SIGTERM, Reason.STOP_REQUEST), (signal.SIGCONT, Reason.CONTINUE)]
    assert m.Arm(T0 + 10) in fx
    assert s.action is DeadlineAction.KILL
    assert any(isinstance(e, m.Say) and e.text
               == "SIGTERM sent to process group 42; SIGKILL in 10s" for e in fx)


def test_deadline_kills_then_gives_up():
    s, _ = run(start(), m.StopRequested(T0))
    s, fx = run(s, m.DeadlineReached(T0 + 10))
    assert s.phase is Phase.KILLING and s.kill_reason is Reason.TIMEOUT
    assert sends(fx) == [(signal.SIGKILL, Reason.TIMEOUT)]
    assert s.deadline == T0 + 15 and s.action is DeadlineAction.GIVE_UP
    s, fx = run(s, m.DeadlineReached(T0 + 15))
    assert s.phase is Phase.ENDED and finish(fx) is EndKind.UNKILLABLE


def test_an_early_or_stale_timer_rearms_instead_of_acting():
    s, _ = run(start(), m.StopRequested(T0))
    s2, fx = run(s, m.DeadlineReached(T0 + 9))
    assert s2 == s and fx == [m.Arm(T0 + 10)]


def test_group_gone_in_any_live_phase_finishes_once():
    for events in ([], [m.StopRequested(T0)], [m.StopRequested(T0), m.DeadlineReached(T0 + 10)]):
        s, _ = run(start(), *events)
        s, fx = run(s, m.GroupGone(T0 + 11))
        assert finish(fx) is EndKind.GONE and s.phase is Phase.ENDED
        s2, fx2 = run(s, m.GroupGone(T0 + 12), m.KillRequested(T0 + 12),
                      m.AbandonRequested(T0 + 12))
        assert s2 == s and fx2 == [], "nothing happens after the end"


def test_operator_extend_moves_the_deadline_and_counts():
    s, _ = run(start(), m.StopRequested(T0))
    s, fx = run(s, m.ExtendRequested(T0 + 4, 30))
    assert s.deadline == T0 + 40 and s.timeout_total == 40 and s.extended == 30
    assert s.window_start == T0 + 4, "the bar measures the current window"
    assert m.Arm(T0 + 40) in fx


def test_ask_parks_and_every_deadline_after_an_extend_asks_again():
    s, _ = run(start(on_timeout=OnTimeout.ASK), m.StopRequested(T0))
    assert s.action is DeadlineAction.ASK
    s, fx = run(s, m.DeadlineReached(T0 + 10))
    assert s.phase is Phase.DECIDING and s.deadline is None and sends(fx) == []
    s, _ = run(s, m.ExtendRequested(T0 + 12, 5))
    assert s.phase is Phase.STOPPING and s.deadline == T0 + 17 and s.timeout_total is None
    s, fx = run(s, m.DeadlineReached(T0 + 17))
    assert s.phase is Phase.DECIDING, "the new deadline asks again"
    assert any(isinstance(e, m.Say) and "waiting for a decision" in e.text for e in fx)
    s, fx = run(s, m.KillRequested(T0 + 20))
    assert s.phase is Phase.KILLING and s.kill_reason is Reason.OPERATOR
    assert sends(fx) == [(signal.SIGKILL, Reason.OPERATOR)]


def test_ask_without_anyone_to_answer_acts_as_kill():
    s, _ = run(start(on_timeout=OnTimeout.ASK, interactive=False), m.StopRequested(T0))
    assert s.action is DeadlineAction.KILL
    s, fx = run(s, m.DeadlineReached(T0 + 10))
    assert s.phase is Phase.KILLING and sends(fx) == [(signal.SIGKILL, Reason.TIMEOUT)]


def test_hangup_while_parked_kills_at_once():
    s, _ = run(start(on_timeout=OnTimeout.ASK), m.StopRequested(T0),
               m.DeadlineReached(T0 + 10))
    s, fx = run(s, m.InteractiveChanged(T0 + 30, False))
    assert s.phase is Phase.KILLING and s.kill_reason is Reason.TIMEOUT
    assert s.timeout_total == 10, "worded as the timeout that was reached"
    assert sends(fx) == [(signal.SIGKILL, Reason.TIMEOUT)]


def test_on_timeout_abandon_finishes_by_policy():
    s, _ = run(start(on_timeout=OnTimeout.ABANDON), m.StopRequested(T0))
    s, fx = run(s, m.DeadlineReached(T0 + 10))
    assert finish(fx) is EndKind.ABANDONED and s.abandoned_by is Who.POLICY
    assert sends(fx) == []


@pytest.mark.parametrize("phase_events", [
    [], [m.StopRequested(T0)], [m.StopRequested(T0), m.DeadlineReached(T0 + 10)]])
def test_operator_abandon_in_any_live_phase(phase_events):
    s, _ = run(start(), *phase_events)
    s, fx = run(s, m.AbandonRequested(T0 + 11))
    assert finish(fx) is EndKind.ABANDONED and s.abandoned_by is Who.OPERATOR
    assert m.Arm(None) in fx


def test_wait_without_deadline_and_extend_from_there():
    s, _ = run(start(), m.StopRequested(T0))
    s, fx = run(s, m.WaitRequested(T0 + 3))
    assert s.phase is Phase.STOPPING and s.deadline is None and m.Arm(None) in fx
    assert s.action is DeadlineAction.NONE
    s, _ = run(s, m.DeadlineReached(T0 + 10))
    assert s.phase is Phase.STOPPING, "no deadline, no action"
    s, _ = run(s, m.ExtendRequested(T0 + 20, 5))
    assert s.deadline == T0 + 25


def test_kill_phase_extend_and_wait():
    s, _ = run(start(), m.StopRequested(T0), m.DeadlineReached(T0 + 10))
    s, _ = run(s, m.ExtendRequested(T0 + 11, 4))
    assert s.phase is Phase.KILLING and s.deadline == T0 + 19
    s, _ = run(s, m.WaitRequested(T0 + 12))
    assert s.deadline is None
    s, fx = run(s, m.KillRequested(T0 + 13))
    assert sends(fx) == [(signal.SIGKILL, Reason.OPERATOR)], "an operator's kill is sent again"
    assert s.kill_reason is Reason.TIMEOUT, "the first kill's reason stays"


def test_kill_without_a_stop():
    s, fx = run(start(), m.KillRequested(T0))
    assert s.phase is Phase.KILLING and s.stop_requested_at is None
    assert sends(fx) == [(signal.SIGKILL, Reason.OPERATOR)]


def test_sigkill_as_the_stop_signal_is_the_stop_itself():
    s, fx = run(start(stop_signal=signal.SIGKILL), m.StopRequested(T0))
    assert sends(fx) == [(signal.SIGKILL, Reason.STOP_REQUEST)]
    assert s.phase is Phase.KILLING and s.kill_sent_at is None, "not an operator kill"
    assert s.deadline == T0 + 5
    say = [e.text for e in fx if isinstance(e, m.Say)]
    assert say == ["SIGKILL (its stop signal) sent to process group 42; giving up in 5s"]


def test_signal_failures_end_the_run():
    s, fx = run(start(), m.StopRequested(T0), m.SignalFailed(T0, signal.SIGTERM, "EPERM"))
    assert finish(fx) is EndKind.STOP_FAILED and s.error == "EPERM"
    s, fx = run(start(), m.KillRequested(T0), m.SignalFailed(T0, signal.SIGKILL, "EPERM"))
    assert finish(fx) is EndKind.KILL_FAILED


def test_process_extension_follows_systemd_and_is_capped():
    s, _ = run(start(max_stop_time=60), m.StopRequested(T0))
    s, fx = run(s, m.ExtendRequested(T0 + 8, 20, Who.PROCESS))
    assert s.deadline == T0 + 28 and s.extended_by_process
    s2, fx = run(s, m.ExtendRequested(T0 + 9, 5, Who.PROCESS))
    assert s2 == s and fx == [], "never shortens the deadline"
    s, _ = run(s, m.ExtendRequested(T0 + 20, 600, Who.PROCESS))
    assert s.deadline == T0 + 60, "capped at max_stop_time after the stop request"
    s, fx = run(s, m.DeadlineReached(T0 + 60))
    assert s.phase is Phase.KILLING, "past the cap the policy applies as usual"


def test_process_extension_is_ignored_outside_the_stop_phase():
    s = start()
    for events in ([], [m.StopRequested(T0), m.DeadlineReached(T0 + 10)]):
        s, _ = run(start(), *events)
        s2, fx = run(s, m.ExtendRequested(T0 + 11, 30, Who.PROCESS))
        assert s2 == s and fx == []


def test_watchdog_stop_carries_its_reason_to_the_kill():
    s, fx = run(start(), m.StopRequested(T0, watchdog_sec=3))
    assert any(isinstance(e, m.Say) and e.text.startswith("watchdog timeout after 3s")
               for e in fx)
    s, fx = run(s, m.DeadlineReached(T0 + 10))
    assert sends(fx) == [(signal.SIGKILL, Reason.WATCHDOG)]


def test_stop_twice_is_one_stop():
    s, _ = run(start(), m.StopRequested(T0))
    s2, fx = run(s, m.StopRequested(T0 + 1))
    assert s2 == s and fx == []


def test_every_event_in_every_phase_is_handled():
    """No combination raises, and a finished run never acts again."""
    events = [m.StopRequested(T0 + 1), m.KillRequested(T0 + 1), m.ExtendRequested(T0 + 1, 3),
              m.ExtendRequested(T0 + 1, 3, Who.PROCESS), m.AbandonRequested(T0 + 1),
              m.WaitRequested(T0 + 1), m.DeadlineReached(T0 + 100), m.GroupGone(T0 + 1),
              m.SignalFailed(T0 + 1, signal.SIGTERM, "x"), m.WaitFailed(T0 + 1, "x"),
              m.InteractiveChanged(T0 + 1, False)]
    for first in events:
        for second in events:
            for ask in (OnTimeout.ASK, OnTimeout.KILL, OnTimeout.ABANDON):
                s, fx = run(start(on_timeout=ask), m.StopRequested(T0), first, second)
                assert len([e for e in fx if isinstance(e, m.Finish)]) <= 1
                if s.phase is Phase.ENDED:
                    after, more = run(s, *events)
                    assert more == [] and after == s
                else:
                    assert s.end is None


def test_the_state_is_immutable():
    s = start()
    with pytest.raises(AttributeError):
        s.phase = Phase.ENDED  # type: ignore[misc]
    assert replace(s, phase=Phase.ENDED).phase is Phase.ENDED and s.phase is Phase.RUNNING


def test_the_operators_wait_outranks_the_processs_extension():
    """EXTEND_TIMEOUT_USEC after the operator chose to wait with no deadline brought a
    deadline back (and a SIGKILL 1 s later): the operator's word stands."""
    s, _ = run(start(max_stop_time=60), m.StopRequested(T0), m.WaitRequested(T0 + 3))
    s, fx = run(s, m.ExtendRequested(T0 + 4, 1, Who.PROCESS))
    assert s.deadline is None and s.phase is Phase.STOPPING and s.action is DeadlineAction.NONE
    assert not any(isinstance(e, m.Arm) for e in fx) and sends(fx) == []
    s, fx = run(s, m.DeadlineReached(T0 + 5))
    assert s.phase is Phase.STOPPING and sends(fx) == []
    # From a decision, too: the operator picked "wait" there.
    s2, _ = run(start(on_timeout=OnTimeout.ASK), m.StopRequested(T0),
                m.DeadlineReached(T0 + 10), m.WaitRequested(T0 + 11),
                m.ExtendRequested(T0 + 12, 1, Who.PROCESS))
    assert s2.deadline is None and s2.phase is Phase.STOPPING
    # In the kill phase as well.
    s3, _ = run(start(), m.StopRequested(T0), m.DeadlineReached(T0 + 10),
                m.WaitRequested(T0 + 11), m.ExtendRequested(T0 + 12, 1, Who.PROCESS))
    assert s3.deadline is None and s3.phase is Phase.KILLING


def test_an_operators_deadline_after_the_wait_lets_the_process_ask_again():
    s, _ = run(start(), m.StopRequested(T0), m.WaitRequested(T0 + 3),
               m.ExtendRequested(T0 + 4, 5))
    assert s.deadline == T0 + 9
    s, fx = run(s, m.ExtendRequested(T0 + 5, 20, Who.PROCESS))
    assert s.deadline == T0 + 25 and m.Arm(T0 + 25) in fx and s.extended_by_process


def test_a_process_asking_for_no_time_is_not_told_about_a_cap_that_is_not_set():
    s, _ = run(start(on_timeout=OnTimeout.ASK), m.StopRequested(T0), m.DeadlineReached(T0 + 10))
    assert s.phase is Phase.DECIDING
    s2, fx = run(s, m.ExtendRequested(T0 + 11, 0, Who.PROCESS))
    assert fx == [] and s2 == s  # nothing granted, and no "past max_stop_time (0s)"
    capped = replace(s, policy=replace(s.policy, max_stop_time=5.0))
    _, fx = run(capped, m.ExtendRequested(T0 + 11, 3, Who.PROCESS))
    assert [e.text for e in fx if isinstance(e, m.Say)] == [
        "the process asked for more time, past max_stop_time (5s): not granted"]
