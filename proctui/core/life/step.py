"""The one writer of a process's state: ``step(proc, event, at) -> (proc, effects)``.

Every input about a process comes here, in order, one at a time: its life's events
(start, stop, restart, a shutdown, a dependency met, a reload), the operator's commands
on its run (kill, abandon, extend, wait), and the facts the executor and the sensors
report (spawned, the leader's exit, a signal sent, readiness, the deadline come). The
life machine (``machine.py``) decides the life, the stop machine (``stop.py``) the
stop; this module composes them into one value, gathers a run's facts into its outcome
(``outcome.describe``), and says what is to be done as effects, which the executor
carries out and which write nothing here. Pure: no I/O, no clock (``at`` is when the
event is taken), so every scenario replays as a history in a test.

A process's state is a ``Proc`` (state.py); nothing else makes or changes one, and a
test over the source holds it so (tests/test_one_owner.py).
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from proctui.core.life import effects as fx
from proctui.core.life import inputs as i
from proctui.core.life import machine as life
from proctui.core.life import stop as stop_machine
from proctui.core.life.outcome import (
    EndKind,
    Outcome,
    OutcomeKind,
    Reason,
    RunRecord,
    Sent,
    Who,
    describe,
    exit_status_for,
    pids_phrase,
    seconds,
    setting,
    signal_name,
)
from proctui.core.life.stages import Leftover, Stage
from proctui.core.life.state import Escapee, LeftoverFacts, Proc, RunState, policy_of
from proctui.core.life.stop import Phase
from proctui.core.reply import Fault
from proctui.core.store.kinds import Kind

POLL_STOPPING = 0.05  # seconds between looks at a group once its leader is gone
POLL_IDLE = 1.0
_LEFT_RUNNING_ENDS = (EndKind.ABANDONED, EndKind.UNKILLABLE, EndKind.STOP_FAILED,
                      EndKind.KILL_FAILED)

Result = tuple[Proc, list[fx.Effect]]


def step(p: Proc, e: object, at: float) -> Result:
    handler = _HANDLERS.get(type(e))
    if handler is not None:
        return handler(p, e, at)
    return _life(p, e, at)  # type: ignore[arg-type]


def new_proc(spec: Any, name: str | None = None, *, interactive: bool = True,
             blocked_by: str | None = None, shutdown: bool = False,
             leftover: LeftoverFacts | None = None, kind: Leftover = Leftover.NO) -> Proc:
    """A process as it is before its first event: configured, or an earlier run's
    leftover found at start-up."""
    name = name or spec.name
    lf = life.Life(name, spec.restart, has_deps=bool(spec.depends_on) and leftover is None,
                   leftover=kind, blocked=blocked_by is not None, interactive=interactive,
                   shutdown=shutdown, stop_wanted=leftover is not None)
    return Proc(name=name, spec=spec, life=lf, pid_name=spec.name, leftover=leftover,
                blocked_by=blocked_by)


# -- the life, and what its effects make of the process -----------------------------------


def _life(p: Proc, e: life.Event, at: float) -> Result:
    e = _with_facts(p, e)
    before = p.life
    new, effects = life.step(before, e)
    p = replace(p, life=new)
    out: list[fx.Effect] = []
    for effect in effects:
        p, more = _life_effect(p, effect, at)
        out += more
    if new.stage is Stage.HELD and before.stage is not Stage.HELD and p.leftover is not None:
        out.append(fx.Notice(held_words(p.leftover)))
    return p, out


def _with_facts(p: Proc, e: life.Event) -> life.Event:
    """The life machine's commands carry what only the whole process knows: whether its
    run is stopping already, whether it ever ran."""
    stopping = p.active and p.run is not None and p.run.stop.phase.stopping
    if isinstance(e, life.StopCmd):
        return replace(e, stopping=stopping)
    if isinstance(e, life.RestartCmd | life.ChangedCmd):
        return replace(e, stopping=stopping, ran=p.runs > 0)
    if isinstance(e, life.StartCmd):
        return replace(e, ran=p.runs > 0)
    if isinstance(e, life.RemoveCmd):
        return replace(e, stopping=stopping)
    return e


def _life_effect(p: Proc, effect: life.Effect, at: float) -> Result:
    if isinstance(effect, life.Spawn):
        number = p.runs + 1
        run = RunState(number=number, token="", stop=stop_machine.initial(
            policy_of(p.spec, p.life.interactive)))
        return replace(p, run=run, runs=number, restart_at=None, paused=False, usage=None,
                       silent_since=None, notify_dropped=0), [fx.Spawn(number)]
    if isinstance(effect, life.TakeOver):
        return _take_over(p, effect.stop, at)
    if isinstance(effect, life.RequestStop):
        if p.live:
            return _request_stop(p, at)
        return p, []
    if isinstance(effect, life.LookAtDeps):
        return p, [fx.LookAtDeps()]
    if isinstance(effect, life.ArmBackoff):
        when = at + effect.delay
        return replace(p, restart_at=when), [
            fx.ArmBackoff(when),
            fx.Notice(f"restarting in {setting(effect.delay)} "
                      f"(restart = {p.spec.restart.value})")]
    if isinstance(effect, life.CancelBackoff):
        return replace(p, restart_at=None), [fx.ArmBackoff(None)]
    if isinstance(effect, life.Say):
        return p, [fx.Notice(effect.text)]
    if isinstance(effect, life.Record):
        return p, [fx.Journal(effect.kind, effect.data)]
    if isinstance(effect, life.HoldForever):
        return _hold_forever(p, at)
    if isinstance(effect, life.Answer):
        return p, [fx.Answer(effect.ok, effect.text, None if effect.ok else Fault.REFUSED)]
    if isinstance(effect, life.AnswerEnded):
        return p, [not_running(p, effect.verb)]
    if isinstance(effect, life.Finished):
        return replace(p, restart_at=None), [fx.Finished()]
    if isinstance(effect, life.Forget):
        return p, [fx.Forget()]
    raise TypeError(f"unknown life effect {effect!r}")


def _take_over(p: Proc, stop: bool, at: float) -> Result:
    """Watch an earlier run's leftover, proven ours, as a run (and stop it, unless it is
    adopted or waits for its dependents)."""
    lf = p.leftover
    assert lf is not None
    record, verdict = lf.record, lf.verdict
    number = p.runs + 1
    pgid = verdict.pgid
    run = RunState(
        number=number, token=record.token,
        stop=stop_machine.initial(policy_of(p.spec, p.life.interactive, pgid or 0)),
        pid=record.pid, pgid=pgid, start_ticks=verdict.start_ticks or record.start_ticks,
        leftover=True, started_at=at, started_wall=record.started_at,
        escapees=tuple(Escapee(st.pid, st.pgid, st.start_ticks) for st in verdict.escapees))
    p = replace(p, run=run, runs=number, leftover=replace(lf, held=""))
    out: list[fx.Effect] = [fx.Watch(run), fx.TreeChanged()]
    if verdict.note:
        out.append(fx.Notice(verdict.note))
    words = take_over_words(p, stop)
    if words:
        out.append(fx.Notice(words))
    if stop:
        p, more = _request_stop(p, at)
        out += more
    return p, out


def _hold_forever(p: Proc, at: float) -> Result:
    """Nobody can decide about a doubtful leftover: leave it, say so, keep its file."""
    lf = p.leftover
    assert lf is not None
    outcome = describe(RunRecord(end=EndKind.HELD, pid=lf.record.pid, ended_at=at,
                                 error=lf.held, left_running=(lf.record.pid,)))
    p = replace(p, last=outcome, outcomes=p.outcomes + 1, leftover=replace(lf, held=""),
                worst=max(p.worst, exit_status_for([outcome])))
    return p, [fx.Notice(outcome.text), _outcome_entry(outcome, p.life.restarts)]


# -- the run's stop -----------------------------------------------------------------------


def _request_stop(p: Proc, at: float, watchdog_sec: float | None = None,
                  ready_timeout: float | None = None) -> Result:
    run = p.run
    assert run is not None
    out: list[fx.Effect] = []
    if run.stop.phase is Phase.RUNNING:
        out.append(_entry(Kind.STOP, watchdog_sec=watchdog_sec, ready_timeout=ready_timeout))
    p, more = _stop(p, stop_machine.StopRequested(at, watchdog_sec, ready_timeout), at)
    return p, out + more


def _stop(p: Proc, event: stop_machine.Event, at: float) -> Result:
    """Feed the run's stop machine, and say what its effects ask for."""
    run = p.run
    assert run is not None
    before = run.stop
    was = before.phase
    state, effects = stop_machine.step(before, event)
    run = replace(run, stop=state)
    if state.phase is Phase.DECIDING and (was is not Phase.DECIDING
                                          or state.decisions != before.decisions):
        run = replace(run, decision_since=at)
    elif state.phase is not Phase.DECIDING:
        run = replace(run, decision_since=None)
    p = replace(p, run=run)
    out: list[fx.Effect] = []
    for effect in effects:
        if isinstance(effect, stop_machine.Send):
            find = effect.reason is Reason.STOP_REQUEST or (
                effect.sig == signal.SIGKILL and was is Phase.RUNNING)
            out.append(fx.Signal(run.number, effect.sig, effect.reason, find_escapees=find))
        elif isinstance(effect, stop_machine.Arm):
            out.append(fx.ArmDeadline(run.number, effect.deadline))
            if effect.deadline is not None or state.phase is Phase.DECIDING:
                out.append(_entry(Kind.DEADLINE, phase=state.phase.value,
                                  deadline=effect.deadline, action=state.action.value or None))
        elif isinstance(effect, stop_machine.Say):
            out.append(fx.Notice(effect.text))
        elif isinstance(effect, stop_machine.Finish):
            if effect.end is EndKind.FAILED_TO_START:
                continue  # concluded by whoever said so (SpawnFailed)
            assert p.run is not None
            p = replace(p, run=replace(p.run, concluding=True))
            out.append(fx.Conclude(run.number, effect.end))
        elif isinstance(effect, stop_machine.StartStopCommand):
            out.append(fx.StartStopCommand(p.run))  # type: ignore[arg-type]
        elif isinstance(effect, stop_machine.EndStopCommand):
            out.append(fx.EndStopCommand(run.number, effect.why))
    return p, out


# -- the operator's commands on a run -----------------------------------------------------


def _kill(p: Proc, e: i.KillCmd, at: float) -> Result:
    return _give_up_run(p, at, "kill", stop_machine.KillRequested(at),
                        f"SIGKILL sent to {p.name}")


def _abandon(p: Proc, e: i.AbandonCmd, at: float) -> Result:
    return _give_up_run(p, at, "abandon", stop_machine.AbandonRequested(at),
                        f"abandoned {p.name}")


def _give_up_run(p: Proc, at: float, verb: str, event: stop_machine.Event,
                 said: str) -> Result:
    """Kill or abandon: whatever ends this run, nothing restarts it; with no live run,
    whatever was to start will not."""
    p, out = _life(p, life.GiveUpCmd(), at)
    if not p.live:
        answers = [x for x in out if isinstance(x, fx.Answer)]
        return p, out if answers else [*out, not_running(p, verb)]
    out.append(_entry(Kind.DECISION, action=verb))
    p, more = _stop(p, event, at)
    return p, [*out, *more, fx.Answer(True, said)]


def _wait(p: Proc, e: i.WaitCmd, at: float) -> Result:
    if not p.live:
        return p, [not_running(p, "wait")]
    assert p.run is not None
    if not p.run.stop.phase.stopping:
        return p, [fx.Answer(False, f"{p.name} is not stopping; nothing to wait for",
                             Fault.REFUSED)]
    p, out = _stop(p, stop_machine.WaitRequested(at), at)
    return p, [_entry(Kind.DECISION, action="wait"), *out,
               fx.Answer(True, f"waiting for {p.name} without a deadline")]


def _extend(p: Proc, e: i.ExtendCmd, at: float) -> Result:
    by = p.spec.extend_step if e.by is None else e.by
    run = p.run
    if not p.live or run is None or not run.stop.phase.stopping:
        if p.live:
            return p, [fx.Answer(False, f"nothing to extend: {p.name} is not stopping",
                                 Fault.REFUSED)]
        return p, [not_running(p, "extend")]
    before, asked = run.stop.deadline, run.stop.phase is Phase.DECIDING
    p, out = _stop(p, stop_machine.ExtendRequested(at, by, e.who), at)
    assert p.run is not None
    moved = p.run.stop.deadline != before
    if moved and e.who is Who.OPERATOR:
        # At a question, extend is the operator's answer, as kill, abandon and wait are.
        out.insert(0, _entry(Kind.DECISION if asked else Kind.EXTEND,
                             **({"action": "extend"} if asked else {}), who="operator",
                             by=by, deadline=p.run.stop.deadline))
    if not moved:
        return p, [*out, fx.Answer(False, f"{p.name}'s deadline did not move", Fault.REFUSED)]
    return p, [*out, fx.Answer(True, f"{p.name}: deadline extended by {setting(by)}")]


def _interactive(p: Proc, e: i.InteractiveCmd, at: float) -> Result:
    """Nobody can answer any more (the terminal hung up): "ask" acts as "kill", a process
    parked at a decision is killed now, a held leftover is left alone."""
    p = replace(p, life=replace(p.life, interactive=e.interactive))
    if p.live:
        return _stop(p, stop_machine.InteractiveChanged(at, e.interactive), at)
    if not e.interactive:
        return _life(p, life.NobodyAnswers(), at)
    return p, []


def _reconfigure(p: Proc, e: i.Reconfigure, at: float) -> Result:
    p = replace(p, spec=e.spec)
    return _life(p, life.ChangedCmd(e.spec.restart, bool(e.spec.depends_on),
                                    left_running=e.left_running), at)


def _signal(p: Proc, e: i.SignalCmd, at: float) -> Result:
    if not p.live or p.run is None:
        return p, [not_running(p, f"send {signal_name(e.sig)} to")]
    run = p.run
    return p, [fx.Signal(run.number, e.sig, Reason.OPERATOR),
               fx.Answer(True, f"{signal_name(e.sig)} sent to {p.name} (process group "
                               f"{run.pgid})")]


# -- facts about a run --------------------------------------------------------------------


def _current(p: Proc, number: int) -> RunState | None:
    """The run a fact is about, if it is still the current one and not yet over."""
    run = p.run
    if run is None or run.number != number or run.outcome is not None:
        return None
    return run


def _spawned(p: Proc, e: i.Spawned, at: float) -> Result:
    run = _current(p, e.number)
    if run is None:
        return p, []
    stop = replace(run.stop, policy=replace(run.stop.policy, pgid=e.pid))
    run = replace(run, pid=e.pid, pgid=e.pid, start_ticks=e.start_ticks, token=e.token,
                  started_at=at, started_wall=e.wall, stop=stop)
    p = replace(p, run=run)
    spec = p.spec
    return p, [
        fx.Watch(run), fx.TreeChanged(),
        fx.Notice(f"started (pid {e.pid}): {spec.cmd}"),
        _entry(Kind.START, pid=e.pid, cmd=spec.cmd,
               ready=spec.ready.describe() if spec.ready else None,
               depends_on=[d for d, _ in spec.depends_on] or None,
               restarts=p.life.restarts or None),
        fx.WritePidFile(p), fx.StartChecks(run), fx.LookAgain()]


def _spawn_failed(p: Proc, e: i.SpawnFailed, at: float) -> Result:
    run = _current(p, e.number)
    if run is None:
        return p, []
    stop = replace(run.stop, phase=Phase.ENDED, end=EndKind.FAILED_TO_START, error=e.error)
    p = replace(p, run=replace(run, stop=stop, started_at=at, ended_at=at))
    return _conclude(p, i.Concluded(e.number, EndKind.FAILED_TO_START), at)


def _leader_exited(p: Proc, e: i.LeaderExited, at: float) -> Result:
    run = _current(p, e.number)
    if run is None or run.exit is not None:
        return p, []
    p = replace(p, run=replace(run, exit=e.status, leader_exited_at=e.at))
    # Many leaders end at once when everything stops: the executor looks at them
    # together, with one walk of the process tree.
    return p, [fx.LookGone(e.number, 0.0, newer_than=e.at)]


def _merge(run: RunState, found: tuple[Escapee, ...]) -> RunState:
    known = {x.pid for x in run.escapees}
    new = tuple(x for x in found if x.pid not in known)
    return replace(run, escapees=run.escapees + new) if new else run


def _group_looked(p: Proc, e: i.GroupLooked, at: float) -> Result:
    run = _current(p, e.number)
    if run is None or run.concluding:
        return p, []
    run = _merge(run, e.escapees)
    p = replace(p, run=run)
    outside = run.outside
    if not e.group_alive and not outside:
        # Nothing outlived the leader (this is the first look since it ended): it all
        # ended when the leader did, however long the look took to come.
        first_look = not run.looked_again and not run.escapees
        ended = run.leader_exited_at if first_look and run.leader_exited_at is not None \
            else at
        p = replace(p, run=replace(run, ended_at=ended))
        return _stop(p, stop_machine.GroupGone(at), at)
    out: list[fx.Effect] = []
    run = replace(run, looked_again=True)
    if e.group_alive:
        out.append(fx.WritePidFile(replace(p, run=run)))
    elif not run.said_escapees:
        run = replace(run, said_escapees=True)
        out += [fx.WritePidFile(replace(p, run=run)),
                fx.Notice(f"its group has ended ({_status_text(p, run)}), but "
                          f"{pids_phrase(list(outside))} it started outside the group still "
                          "run; watching them")]
    p = replace(p, run=run)
    delay = POLL_STOPPING if run.stop.phase.stopping else POLL_IDLE
    return p, [*out, fx.LookGone(run.number, delay)]


def _look_failed(p: Proc, e: i.LookFailed, at: float) -> Result:
    run = _current(p, e.number)
    if run is None or run.concluding:
        return p, []
    if e.retry:  # out of descriptors: a passing state of the machine, not an answer
        return p, [fx.LookGone(run.number, POLL_IDLE)]
    return _stop(p, stop_machine.WaitFailed(at, e.error), at)


def _escapee_ended(p: Proc, e: i.EscapeeEnded, at: float) -> Result:
    run = _current(p, e.number)
    if run is None:
        return p, []
    run = replace(run, escapees=tuple(replace(x, alive=False) if x.pid == e.pid else x
                                      for x in run.escapees))
    p = replace(p, run=run)
    if run.exit is not None and not run.concluding:
        return p, [fx.LookGone(run.number, 0.0)]
    return p, []


def _signal_done(p: Proc, e: i.SignalDone, at: float) -> Result:
    run = _current(p, e.number)
    if run is None:
        return p, []
    run = _merge(run, e.escapees)
    if e.sig == signal.SIGKILL and e.reached_pids is not None:
        run = replace(run, kill_reached=e.reached_pids)
    out: list[fx.Effect] = [fx.Notice(text) for text in e.failures]
    if e.reached:
        run = replace(run, sent=(*run.sent, Sent(int(e.sig), e.at - (run.started_at or e.at),
                                                 e.reason)))
        if e.reason is not Reason.CONTINUE:
            out.append(replace(_entry(Kind.SIGNAL, signal=signal_name(e.sig),
                                      reason=e.reason.value), at=e.at))
    elif e.reason is Reason.STOP_REQUEST:
        run = replace(run, stop_reached=False)
    p = replace(p, run=run)
    if (e.reason is Reason.STOP_REQUEST or e.sig == signal.SIGKILL) and run.exit is not None \
            and not run.concluding:
        out.append(fx.LookGone(run.number, POLL_STOPPING))
    return p, out


def _signal_failed(p: Proc, e: i.SignalFailed, at: float) -> Result:
    run = _current(p, e.number)
    if run is None:
        return p, []
    if e.reason is Reason.CONTINUE:
        return p, []
    if e.reason is Reason.OPERATOR and e.sig != signal.SIGKILL:
        # The operator's own signal (proctui signal): said, and the run goes on.
        return p, [fx.Notice(f"{signal_name(e.sig)} not sent: {e.error}")]
    return _stop(p, stop_machine.SignalFailed(at, e.sig, e.error), at)


def _deadline(p: Proc, e: i.DeadlineReached, at: float) -> Result:
    if _current(p, e.number) is None:
        return p, []
    return _stop(p, stop_machine.DeadlineReached(at), at)


def _conclude(p: Proc, e: i.Concluded, at: float) -> Result:
    """The run is over: its facts, worded; the PID file kept or removed; then its life
    decides what comes next (restart, backoff, the end)."""
    run = _current(p, e.number)
    if run is None:
        return p, []
    s = run.stop
    end = e.end
    status = run.exit or e.exit
    left = e.left if end in _LEFT_RUNNING_ENDS else ()
    ended_at = run.ended_at if run.ended_at is not None else at
    outside = {x.pid for x in run.escapees}
    record = RunRecord(
        end=end, pid=run.pid, ended_at=ended_at, started_at=run.started_at,
        stop_requested_at=s.stop_requested_at, stop_signal=p.spec.stop_signal,
        stop_timeout=p.spec.stop_timeout, kill_timeout=p.spec.kill_timeout,
        kill_sent_at=s.kill_sent_at, kill_reason=s.kill_reason,
        timeout_total=s.timeout_total, extended=s.extended,
        extended_by_process=s.extended_by_process, abandoned_by=s.abandoned_by,
        status=status, kill_reached=run.kill_reached, sent=run.sent,
        left_running=tuple(x for x in left if x not in outside),
        left_behind=tuple(x for x in left if x in outside),
        state_word=e.state_word if end is EndKind.UNKILLABLE else "", error=s.error,
        watchdog_sec=s.watchdog_sec, ready_timeout=s.ready_timeout,
        stop_reached=run.stop_reached, success_codes=p.spec.success_exit_codes)
    outcome = describe(record)
    stop = s if s.phase is Phase.ENDED else replace(s, phase=Phase.ENDED, end=end,
                                                    deadline=None, window_start=None)
    run = replace(run, outcome=outcome, ended_at=ended_at, exit=status, stop=stop,
                  concluding=False, decision_since=None)
    p = replace(p, run=run, last=outcome, outcomes=p.outcomes + 1, paused=False, usage=None,
                silent_since=None, worst=max(p.worst, exit_status_for([outcome])))
    out: list[fx.Effect] = [
        fx.StopWatching(run.number, keep_leader=end is not EndKind.GONE), fx.TreeChanged(),
        fx.Notice(outcome.text), _outcome_entry(outcome, p.life.restarts)]
    if run.pid is not None:
        out.append(fx.RemovePidFile(p.pid_name) if not outcome.left_running
                   else fx.WritePidFile(p))
    p, more = _life(p, life.RunEnded(
        restartable=outcome.kind in (OutcomeKind.EXITED, OutcomeKind.WATCHDOG),
        clean=outcome.clean, left_running=outcome.left_running,
        lived=ended_at - (run.started_at or ended_at)), at)
    return p, [*out, *more, fx.LookAgain()]


def _outcome_entry(outcome: Outcome, restarts: int) -> fx.Journal:
    """How a run ended, with what a reader of the events needs of it (``events``)."""
    st = outcome.status
    return _entry(Kind.OUTCOME, outcome=outcome.kind.value, text=outcome.text,
                  pid=outcome.pid, exit_code=st.code if st is not None else None,
                  signal=signal_name(st.signal) if st is not None and st.signal else None,
                  after=round(outcome.duration, 3) if outcome.duration is not None else None,
                  clean=outcome.clean, restarts=restarts or None)


# -- the stop command ---------------------------------------------------------------------


def _stop_command_started(p: Proc, e: i.StopCommandStarted, at: float) -> Result:
    run = _current(p, e.number)
    if run is None:
        return p, []
    return replace(p, run=replace(run, stop_command_pid=e.pid)), [
        _entry(Kind.STOP_COMMAND, pid=e.pid)]


def _stop_command_ended(p: Proc, e: i.StopCommandEnded, at: float) -> Result:
    run = _current(p, e.number)
    if run is None:
        return p, []
    status = e.status
    out: list[fx.Effect] = [_entry(
        Kind.STOP_COMMAND, pid=run.stop_command_pid, code=status.code,
        signal=signal_name(status.signal) if status.signal else None,
        killed=e.killed or None, left=list(e.left) or None)]
    if e.killed:
        out.append(fx.Notice(f"stop command killed (SIGKILL to its group): {e.killed}"))
    elif status.code != 0:
        out.append(fx.Notice(f"stop command {_command_words(status)}"))
    if e.left:
        out.append(fx.Notice(f"stop command left {pids_phrase(list(e.left))} running outside "
                             "its group: killed with it"))
    p, more = _stop(p, stop_machine.StopCommandEnded(at), at)
    return p, out + more


def _stop_command_failed(p: Proc, e: i.StopCommandFailed, at: float) -> Result:
    run = _current(p, e.number)
    if run is None:
        return p, []
    p, more = _stop(p, stop_machine.StopCommandFailed(at, e.error), at)
    return p, [_entry(Kind.STOP_COMMAND, error=e.error), *more]


def _command_words(status: Any) -> str:
    if status.signal is not None:
        return f"killed by {signal_name(status.signal)}"
    return f"exited {status.code}" if status.known else "ended (exit status unknown)"


# -- what the run says and shows ----------------------------------------------------------


def _ready(p: Proc, e: i.Ready, at: float) -> Result:
    run = _current(p, e.number)
    if run is None or not run.live or run.ready_at is not None:
        return p, []
    took = at - (run.started_at or at)
    p = replace(p, run=replace(run, ready_at=at))
    return p, [fx.Notice(f"ready after {seconds(took)} ({e.how})"),
               _entry(Kind.READY, after=round(took, 3), how=e.how), fx.LookAgain()]


def _ready_timed_out(p: Proc, e: i.ReadyTimedOut, at: float) -> Result:
    run = _current(p, e.number)
    if run is None or not run.live or run.ready_at is not None or \
            run.stop.phase is not Phase.RUNNING:
        return p, []
    p, out = _request_stop(p, at, ready_timeout=e.timeout)
    return p, [fx.Notice(f"not ready within {setting(e.timeout)}: stopping it"), *out]


def _watchdog_missed(p: Proc, e: i.WatchdogMissed, at: float) -> Result:
    run = _current(p, e.number)
    if run is None or not run.live or run.stop.phase is not Phase.RUNNING:
        return p, []
    p, out = _request_stop(p, at, watchdog_sec=e.interval)
    return p, [fx.Notice(f"watchdog timeout after {setting(e.interval)} (no WATCHDOG=1): "
                         "stopping it"), *out]


def _status_said(p: Proc, e: i.StatusSaid, at: float) -> Result:
    run = _current(p, e.number)
    if run is None or run.status == e.status:
        return p, []
    return replace(p, run=replace(run, status=e.status)), []


def _process_extends(p: Proc, e: i.ProcessExtends, at: float) -> Result:
    """EXTEND_TIMEOUT_USEC: during the stop, the deadline (the stop machine decides how
    far); before the process is ready, its ready deadline."""
    run = _current(p, e.number)
    if run is None or not run.live:
        return p, []
    if run.stop.phase.stopping:
        return _stop(p, stop_machine.ExtendRequested(at, e.by, Who.PROCESS), at)
    if run.ready_at is not None or p.spec.ready is None or p.spec.ready_timeout is None:
        return p, []
    out: list[fx.Effect] = [fx.ExtendReady(run.number, at + e.by)]
    if at - run.asked_ready_said >= 1.0:  # a stream of requests: one line a second
        p = replace(p, run=replace(run, asked_ready_said=at))
        out.append(fx.Notice(f"asked for {setting(round(e.by, 1))} more to become ready"))
    return p, out


def _observed(p: Proc, e: i.Observed, at: float) -> Result:
    if _current(p, e.number) is None:
        return p, []
    if (p.paused, p.usage, p.notify_dropped) == (e.paused, e.usage, e.notify_dropped):
        return p, []
    return replace(p, paused=e.paused, usage=e.usage, notify_dropped=e.notify_dropped), []


def _silence(p: Proc, e: i.SilenceLooked, at: float) -> Result:
    if _current(p, e.number) is None or e.silent_since == p.silent_since:
        return p, []
    p = replace(p, silent_since=e.silent_since)
    if e.silent_since is None:
        return p, []
    return p, [fx.Notice(f"silent: no output for {seconds(p.spec.silence_warning or 0)} "
                         "(silence_warning)")]


# -- words --------------------------------------------------------------------------------


def not_running(p: Proc, verb: str) -> fx.Answer:
    """Why ``verb`` cannot act on a process that is not running."""
    last = p.last
    if last is not None and last.left_running and last.left_pids:
        return fx.Answer(False, f"{p.name} is not watched any more ({last.kind.value}): "
                                f"{pids_phrase(last.left_pids)} left running; proctui "
                                f"never signals it again, so it cannot {verb} it",
                         Fault.NOT_RUNNING)
    if p.life.stage is Stage.BACKOFF:
        return fx.Answer(False, f"{p.name} is waiting to restart; nothing to {verb}",
                         Fault.NOT_RUNNING)
    if p.life.stage is Stage.WAITING:
        return fx.Answer(False, f"{p.name} has not started yet; nothing to {verb}",
                         Fault.NOT_RUNNING)
    if last is not None:
        return fx.Answer(False, f"{p.name} has already ended ({last.text}); nothing to "
                                f"{verb}", Fault.NOT_RUNNING)
    return fx.Answer(False, f"{p.name} is not running; nothing to {verb}", Fault.NOT_RUNNING)


def held_words(lf: LeftoverFacts) -> str:
    record = lf.record
    return (f"leftover from an earlier run (pid {record.pid}, started "
            f"{_when(record.started_at)}) held: {lf.held}. It is not signalled; stop, "
            "abandon or adopt it yourself")


def take_over_words(p: Proc, stop: bool) -> str | None:
    lf = p.leftover
    assert lf is not None
    start = f"leftover from an earlier run (pid {lf.record.pid}, started " \
            f"{_when(lf.record.started_at)})"
    if p.life.stops_after and not stop:
        return f"{start}: stops after {', '.join(p.life.stops_after)}, which depend on it"
    return f"{start}: stopping it" if stop else None


def _when(started_at: float) -> str:
    import time

    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(started_at)) \
        if started_at > 0 else "at an unknown time"


def _status_text(p: Proc, run: RunState) -> str:
    from proctui.core.life.outcome import ExitStatus

    status = run.exit or ExitStatus(known=False)
    stop_sig = p.spec.stop_signal if run.stop.stop_requested_at is not None else None
    return status.describe(stop_sig)


def _entry(kind: Kind, **data: object) -> fx.Journal:
    return fx.Journal(kind, tuple((k, v) for k, v in data.items() if v is not None))


_HANDLERS: dict[type, Callable[[Proc, Any, float], Result]] = {
    i.KillCmd: _kill, i.AbandonCmd: _abandon, i.WaitCmd: _wait, i.ExtendCmd: _extend,
    i.InteractiveCmd: _interactive, i.SignalCmd: _signal, i.Reconfigure: _reconfigure,
    i.Spawned: _spawned,
    i.SpawnFailed: _spawn_failed, i.LeaderExited: _leader_exited,
    i.GroupLooked: _group_looked, i.LookFailed: _look_failed,
    i.EscapeeEnded: _escapee_ended, i.SignalDone: _signal_done,
    i.SignalFailed: _signal_failed, i.DeadlineReached: _deadline, i.Concluded: _conclude,
    i.StopCommandStarted: _stop_command_started, i.StopCommandEnded: _stop_command_ended,
    i.StopCommandFailed: _stop_command_failed, i.Ready: _ready,
    i.ReadyTimedOut: _ready_timed_out, i.WatchdogMissed: _watchdog_missed,
    i.StatusSaid: _status_said, i.ProcessExtends: _process_extends, i.Observed: _observed,
    i.SilenceLooked: _silence,
}


class Table:
    """Every process's state, by name, in the order they are shown. ``take`` is the only
    way one changes: the event goes through ``step``, and the new value replaces the old.
    ``changed`` names what changed since the last publication."""

    def __init__(self) -> None:
        self._procs: dict[str, Proc] = {}
        self.changed: set[str] = set()
        self.order_changed = False

    def add(self, p: Proc) -> None:
        self._procs[p.name] = p
        self.changed.add(p.name)
        self.order_changed = True

    def take(self, name: str, event: object, at: float) -> tuple[Proc, list[fx.Effect]]:
        p = self._procs[name]
        new, effects = step(p, event, at)
        if new is not p:
            self._procs[name] = new
            self.changed.add(name)
        return new, effects

    def forget(self, name: str) -> None:
        if self._procs.pop(name, None) is not None:
            self.order_changed = True

    def get(self, name: str) -> Proc | None:
        return self._procs.get(name)

    def __contains__(self, name: str) -> bool:
        return name in self._procs

    def all(self) -> list[Proc]:
        return list(self._procs.values())

    def names(self) -> list[str]:
        return list(self._procs)
