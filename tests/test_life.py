"""The life machine, in milliseconds: events in, effects out, no process, no clock. Every
event in every stage is handled, and the decisions the issue found scattered (restart,
backoff, a start during a shutdown, staged stops, leftovers) are each pinned here."""

from __future__ import annotations

import itertools
from dataclasses import replace

import pytest

from proctui.config.spec import RestartPolicy
from proctui.core.life import machine as life
from proctui.core.life.machine import (
    Answer,
    ArmBackoff,
    CancelBackoff,
    Finished,
    Leftover,
    Life,
    RequestStop,
    Say,
    Spawn,
    Stage,
    TakeOver,
)


def run(state: Life, *events: life.Event) -> tuple[Life, list[life.Effect]]:
    effects: list[life.Effect] = []
    for event in events:
        state, got = life.step(state, event)
        effects.extend(got)
    return state, effects


def running(**kw: object) -> Life:
    state, _ = life.step(Life("web", **kw), life.Launch())  # type: ignore[arg-type]
    assert state.stage is Stage.RUNNING
    return state


def answers(effects: list[life.Effect]) -> list[Answer]:
    return [e for e in effects if isinstance(e, Answer)]


def ended(restartable: bool = True, clean: bool = False, left: bool = False,
          lived: float = 1.0) -> life.RunEnded:
    return life.RunEnded(restartable, clean, left, lived)


# -- a start during a shutdown --------------------------------------------------------------

@pytest.mark.parametrize("command", [life.StartCmd(), life.RestartCmd()])
def test_a_start_or_restart_during_a_shutdown_is_refused_with_words(command):
    state, _ = run(running(), life.Shutdown())
    state, effects = run(state, command)
    (answer,) = answers(effects)
    assert not answer.ok and "everything is stopping" in answer.text
    assert not any(isinstance(e, Spawn) for e in effects)
    # The run's end closes its life: nothing restarts, the shutdown can finish.
    state, effects = run(state, ended())
    assert state.over and Finished() in effects


def test_a_restart_asked_before_the_shutdown_does_not_outlive_it():
    state, effects = run(running(), life.RestartCmd())
    assert RequestStop() in effects and state.restart_wanted
    state, _ = run(state, life.Shutdown())
    state, effects = run(state, ended(restartable=False))
    assert state.over and not any(isinstance(e, Spawn) for e in effects)


def test_a_shutdown_asked_before_launch_starts_nothing():
    state, effects = run(Life("web", shutdown=True), life.Launch())
    assert state.over and Say("not started: everything is stopping") in effects


# -- restart and backoff --------------------------------------------------------------------

def test_backoff_doubles_to_its_cap_and_resets_after_a_long_run():
    state = running(policy=RestartPolicy.ALWAYS)
    delays = []
    for _ in range(7):
        state, effects = run(state, ended(lived=0.5))
        (arm,) = [e for e in effects if isinstance(e, ArmBackoff)]
        delays.append(arm.delay)
        state, effects = run(state, life.BackoffOver())
        assert Spawn() in effects
    assert delays == [1, 2, 4, 8, 16, 30, 30]
    state, effects = run(state, ended(lived=60))
    assert [e.delay for e in effects if isinstance(e, ArmBackoff)] == [1]
    assert state.restarts == 7


@pytest.mark.parametrize(("policy", "clean", "restarts"), [
    (RestartPolicy.NO, False, False), (RestartPolicy.ON_FAILURE, True, False),
    (RestartPolicy.ON_FAILURE, False, True), (RestartPolicy.ALWAYS, True, True)])
def test_restart_policies(policy, clean, restarts):
    state, _effects = run(running(policy=policy), ended(clean=clean))
    assert (state.stage is Stage.BACKOFF) is restarts
    assert state.over is not restarts


def test_a_stop_in_backoff_cancels_the_restart():
    state, _ = run(running(policy=RestartPolicy.ALWAYS), ended())
    state, effects = run(state, life.StopCmd())
    assert state.over and CancelBackoff() in effects
    assert Answer(True, "web will not start") in effects


def test_nothing_that_was_killed_or_stopped_restarts():
    state, _ = run(running(policy=RestartPolicy.ALWAYS), life.StopCmd())
    state, _effects = run(state, ended(restartable=False))
    assert state.over
    state, _ = run(running(policy=RestartPolicy.ALWAYS), life.GiveUpCmd())
    state, _ = run(state, ended(restartable=True))
    assert state.over


def test_a_restart_of_a_running_process_starts_it_again_once_it_ended():
    state, effects = run(running(), life.RestartCmd())
    assert RequestStop() in effects
    state, effects = run(state, ended(restartable=False))
    assert Spawn() in effects and state.restarts == 1 and not state.stop_wanted


def test_start_after_the_end_and_not_before():
    state, effects = run(running(), life.StartCmd())
    assert not answers(effects)[0].ok
    state, _ = run(state, ended(restartable=False))
    state, effects = run(state, life.StartCmd(left_running=4121))
    assert "pid 4121 is still running" in answers(effects)[0].text
    state, effects = run(state, life.StartCmd())
    assert Spawn() in effects and answers(effects)[0].ok and state.restarts == 1


# -- dependencies and stages ----------------------------------------------------------------

def test_waiting_for_dependencies_then_starting_or_never():
    state, effects = run(Life("web", has_deps=True), life.Launch())
    assert state.stage is Stage.WAITING and life.LookAtDeps() in effects
    state, effects = run(state, life.DepsLooked(("db",)))
    assert state.waiting_for == ("db",) and not any(isinstance(e, Spawn) for e in effects)
    state2, effects = run(state, life.DepsLooked(()))
    assert state2.stage is Stage.RUNNING and Spawn() in effects
    state3, effects = run(state, life.DepsLooked((), ("db failed to start: no such file",)))
    assert state3.over and Say("not started: db failed to start: no such file") in effects
    # Kept, for status, why, is-ready and the summary (they said "never started").
    assert state3.not_started == "db failed to start: no such file"


def test_a_staged_stop_waits_for_its_dependents_then_stops():
    state, effects = run(running(), life.Shutdown(after=("web",), stage=2, stages=2))
    assert RequestStop() not in effects and state.stops_after == ("web",)
    state, effects = run(state, life.DependentsLeft(("web",)))
    assert RequestStop() not in effects
    state, effects = run(state, life.DependentsLeft(()))
    assert RequestStop() in effects and not state.stops_after
    state, effects = run(running(), life.Shutdown(after=("web",)), life.ReleaseStop())
    assert RequestStop() in effects


# -- leftovers ------------------------------------------------------------------------------

def test_a_proven_leftover_waits_for_its_dependents_leftovers_before_its_stop():
    state, effects = run(Life("db (leftover)", leftover=Leftover.PROVEN, stop_wanted=True,
                              stops_after=("web (leftover)",)), life.Launch())
    assert effects == [TakeOver(stop=False)]
    state, effects = run(state, life.Shutdown())
    assert RequestStop() not in effects
    state, effects = run(state, life.DependentsLeft(()))
    assert RequestStop() in effects
    state, effects = run(state, ended())
    assert state.over  # a leftover never restarts


def test_a_doubtful_leftover_is_held_until_the_operator_says():
    held, _ = run(Life("x", leftover=Leftover.DOUBT, stop_wanted=True), life.Launch())
    assert held.stage is Stage.HELD
    state, effects = run(held, life.StopCmd())
    assert TakeOver(stop=True) in effects
    state, effects = run(held, life.AdoptCmd())
    assert TakeOver(stop=False) in effects and not state.stop_wanted
    state, effects = run(held, life.NobodyAnswers())
    assert state.over and life.HoldForever() in effects
    state, effects = run(Life("x", leftover=Leftover.DOUBT, interactive=False), life.Launch())
    assert state.over and life.HoldForever() in effects


def test_a_successor_waits_for_its_leftover_and_never_doubles_it():
    state, _ = run(Life("db", blocked=True), life.Launch())
    assert state.stage is Stage.BLOCKED
    state2, effects = run(state, life.BlockerEnded(4121))
    assert state2.over and Say("not started: its leftover (pid 4121) is still running") in \
        effects
    _state3, effects = run(state, life.BlockerEnded())
    assert Spawn() in effects
    # The leftover ended before its successor was launched: the successor remembers.
    state4, _ = run(Life("db", blocked=True), life.BlockerEnded(4121), life.Launch())
    assert state4.over


@pytest.mark.parametrize("command", [life.GiveUpCmd(), life.StopCmd()])
def test_a_successor_stopped_while_blocked_and_started_again_still_waits(command):
    """K (or s) on a successor waiting for its held leftover, then S or r: it started a
    second copy beside the leftover, which still ran. K said "nothing to stop" though it
    had cancelled the start."""
    state, _ = run(Life("db", blocked=True), life.Launch())
    state, effects = run(state, command)
    assert state.over and Answer(True, "db will not start") in effects
    for again in (life.StartCmd(), life.RestartCmd()):
        later, effects = run(state, again)
        assert later.stage is Stage.BLOCKED and Spawn() not in effects, again
        _, effects = run(later, life.BlockerEnded())
        assert Spawn() in effects  # once the leftover has gone


# -- the whole product ----------------------------------------------------------------------

EVENTS: list[life.Event] = [
    life.Launch(), life.DepsLooked(()), life.DepsLooked(("a",)), life.DepsLooked((), ("a",)),
    life.BlockerEnded(), life.BlockerEnded(7), ended(), ended(clean=True),
    ended(left=True), life.BackoffOver(), life.StopCmd(), life.StopCmd(stopping=True),
    life.RestartCmd(), life.StartCmd(), life.GiveUpCmd(), life.AdoptCmd(), life.Shutdown(),
    life.Shutdown(after=("b",)), life.DependentsLeft(()), life.DependentsLeft(("b",)),
    life.ReleaseStop(), life.NobodyAnswers(),
]


def _states() -> list[Life]:
    out = []
    for stage, leftover, shutdown, policy in itertools.product(
            Stage, Leftover, (False, True), (RestartPolicy.NO, RestartPolicy.ALWAYS)):
        out.append(Life("p", policy=policy, leftover=leftover, stage=stage, shutdown=shutdown,
                        has_deps=True))
    return out


def test_every_event_in_every_stage_is_handled_and_a_shutdown_always_ends_a_life():
    for state in _states():
        assert state.stage in Stage
        for event in EVENTS:
            after, effects = life.step(state, event)
            assert isinstance(after, Life)
            # Once everything is stopping, nothing is ever spawned again.
            if state.shutdown:
                assert Spawn() not in effects, (state, event)
            # A command always gets an answer.
            if isinstance(event, (life.StartCmd, life.RestartCmd, life.AdoptCmd,
                                  life.StopCmd)):
                assert any(isinstance(e, (Answer, life.AnswerEnded)) for e in effects), \
                    (state, event)
        # From any stage, a shutdown and the run's end leave nothing to wait for.
        after, _ = run(state, life.Shutdown(), life.ReleaseStop(), ended(), ended())
        assert after.over, (state, after)


# -- the emergency stop: the same stop machine, without the loop ----------------------------

class _FakeOS:
    """Groups that die on the signals listed for them (the OS cannot be made to crash the
    core's loop on demand; the decisions are what is tested)."""

    def __init__(self, dies_on: dict[int, int | None]) -> None:
        self.dies_on = dies_on
        self.alive = set(dies_on)
        self.sent: list[tuple[float, int, int]] = []
        self.now = 100.0

    def signal_group(self, pgid: int, sig: int) -> None:
        self.sent.append((self.now, pgid, sig))
        if self.dies_on[pgid] == sig or (sig == 9 and self.dies_on[pgid] is not None):
            self.alive.discard(pgid)

    def group_alive(self, pgid: int) -> bool:
        return pgid in self.alive


def test_the_emergency_stop_follows_the_stop_machine_and_is_bounded():
    from pathlib import Path

    from proctui.config import ProcessSpec
    from proctui.config.spec import OnTimeout
    from proctui.core.emergency import emergency_stop

    def spec(name: str, **kw: object) -> ProcessSpec:
        return replace(ProcessSpec(name=name, argv=("x",), cmd="x", cwd=Path("/")),
                       **kw)  # type: ignore[arg-type]

    os_layer = _FakeOS({10: 15, 20: 9, 30: None})
    clock = lambda: os_layer.now  # noqa: E731

    def sleep(dt: float) -> None:
        os_layer.now += dt

    said = emergency_stop([(10, spec("polite", stop_timeout=3.0)),
                           (20, spec("stubborn", stop_timeout=2.0,
                                     on_timeout=OnTimeout.ASK)),
                           (30, spec("unkillable", stop_timeout=1.0, kill_timeout=1.0))],
                          os_layer, clock, sleep)  # type: ignore[arg-type]
    sent = [(round(t - 100.0, 1), pgid, sig) for t, pgid, sig in os_layer.sent]
    assert (0.0, 10, 15) in sent and (0.0, 20, 15) in sent and (0.0, 30, 15) in sent
    assert not any(pgid == 10 and sig == 9 for _, pgid, sig in sent)  # it stopped in time
    # "ask" with nobody to answer is the kill, at its deadline, not before.
    assert [t for t, pgid, sig in sent if pgid == 20 and sig == 9] == [2.0]
    assert [t for t, pgid, sig in sent if pgid == 30 and sig == 9] == [1.0]
    assert os_layer.now - 100.0 < 3.0  # gave up on the unkillable one after kill_timeout
    assert any("unkillable" in line or "30" in line for line in said)
