"""The stop sequence as a pure state machine: ``step(state, event) -> (state, effects)``.

No I/O, no clock, no asyncio: events carry the time they happened, effects say what to
do (send a signal, arm the deadline timer, say something, finish the run). ``Run``
carries the effects out and feeds back what happened. One place decides.

    RUNNING --stop--> STOPPING --deadline--> KILLING --deadline--> ended (unkillable)
                         |  ^                   ^
                 (ask)   v  | extend            |
                      DECIDING --kill-----------+
"""

from __future__ import annotations

import signal
from dataclasses import replace
from enum import Enum

from proctui.config.spec import OnTimeout
from proctui.core.life.outcome import EndKind, Reason, Who, seconds, setting, signal_name
from proctui.core.life.stop_events import (
    AbandonRequested,
    Arm,
    DeadlineReached,
    Effect,
    EndStopCommand,
    Event,
    ExtendRequested,
    Finish,
    GroupGone,
    InteractiveChanged,
    KillRequested,
    Say,
    Send,
    SignalFailed,
    StartStopCommand,
    StopCommandEnded,
    StopCommandFailed,
    StopRequested,
    WaitFailed,
    WaitRequested,
)
from proctui.records import dataclass

__all__ = [
    "EARLY",
    "AbandonRequested",
    "Arm",
    "DeadlineAction",
    "DeadlineReached",
    "Effect",
    "EndStopCommand",
    "Event",
    "ExtendRequested",
    "Finish",
    "GroupGone",
    "InteractiveChanged",
    "KillRequested",
    "Phase",
    "Policy",
    "Say",
    "Send",
    "SignalFailed",
    "StartStopCommand",
    "StopCommandEnded",
    "StopCommandFailed",
    "StopRequested",
    "StopState",
    "WaitFailed",
    "WaitRequested",
    "initial",
    "step",
]

# A timer may fire a hair early; a deadline this close counts as reached.
EARLY = 0.0005


class Phase(Enum):
    WAITING = "waiting"  # for its dependencies
    STARTING = "starting"
    RUNNING = "running"
    STOPPING = "stopping"  # stop signal sent; waiting for the group to go, up to a deadline
    DECIDING = "deciding"  # on_timeout = "ask": parked at the deadline for the operator
    KILLING = "killing"  # SIGKILL sent; waiting up to kill_timeout
    BACKOFF = "backoff"  # exited; waiting to restart
    HELD = "held"  # a leftover not proven ours: waits for the operator, never signalled
    ENDED = "ended"  # has its outcome

    @property
    def stopping(self) -> bool:
        return self in (Phase.STOPPING, Phase.DECIDING, Phase.KILLING)

    @property
    def live(self) -> bool:
        """A run exists and has no outcome yet."""
        return self in (Phase.RUNNING, Phase.STOPPING, Phase.DECIDING, Phase.KILLING)


class DeadlineAction(Enum):
    """What happens when the current deadline comes."""

    NONE = ""  # no deadline
    KILL = "SIGKILL"
    ABANDON = "abandon"
    ASK = "decision"
    GIVE_UP = "give up"


# -- state --------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Policy:
    stop_signal: int = signal.SIGTERM
    stop_timeout: float = 10.0
    kill_timeout: float = 5.0
    on_timeout: OnTimeout = OnTimeout.KILL
    interactive: bool = True  # somebody can answer "ask"; without, ask acts as kill
    max_stop_time: float | None = None  # caps what the process itself may ask for
    pgid: int = 0  # for the words only
    stop_command: bool = False  # a stop command runs instead of the stop signal...
    then_signal: bool = False  # ...or before it: the signal follows when it ends


@dataclass(frozen=True, slots=True)
class StopState:
    policy: Policy
    phase: Phase = Phase.RUNNING
    stop_requested_at: float | None = None
    deadline: float | None = None
    window_start: float | None = None  # when the current wait began: the bar's full width
    kill_sent_at: float | None = None
    kill_reason: Reason | None = None
    timeout_total: float | None = None  # see RunRecord.timeout_total
    extended: float = 0.0
    extended_by_process: bool = False
    # The operator chose to wait with no deadline: the process may not bring one back
    # (EXTEND_TIMEOUT_USEC); only the operator can, by extending or killing.
    operator_waits: bool = False
    abandoned_by: Who | None = None
    watchdog_sec: float | None = None
    ready_timeout: float | None = None
    decisions: int = 0  # how often this stop has reached a decision: each one asks anew
    command_running: bool = False  # the stop command runs (bounded by the deadline)
    end: EndKind | None = None
    error: str = ""

    @property
    def action(self) -> DeadlineAction:
        if self.deadline is None or not self.phase.live:
            return DeadlineAction.NONE
        if self.phase is Phase.KILLING:
            return DeadlineAction.GIVE_UP
        return _policy_action(self.policy)


def _policy_action(policy: Policy) -> DeadlineAction:
    if policy.on_timeout is OnTimeout.ABANDON:
        return DeadlineAction.ABANDON
    if policy.on_timeout is OnTimeout.ASK and policy.interactive:
        return DeadlineAction.ASK
    return DeadlineAction.KILL


def initial(policy: Policy) -> StopState:
    return StopState(policy=policy)


# -- the transition function -----------------------------------------------------------

Result = tuple[StopState, tuple[Effect, ...]]


def step(s: StopState, e: Event) -> Result:
    if s.phase is Phase.ENDED or not s.phase.live:
        return s, ()
    if isinstance(e, GroupGone):
        return _finish(s, EndKind.GONE)
    if isinstance(e, StopRequested):
        return _stop(s, e)
    if isinstance(e, KillRequested):
        return _kill(s, e.at, Reason.OPERATOR)
    if isinstance(e, ExtendRequested):
        return _extend(s, e)
    if isinstance(e, AbandonRequested):
        return _finish(replace(s, abandoned_by=Who.OPERATOR), EndKind.ABANDONED)
    if isinstance(e, WaitRequested):
        return _wait_forever(s)
    if isinstance(e, DeadlineReached):
        return _deadline(s, e.at)
    if isinstance(e, SignalFailed):
        end = EndKind.KILL_FAILED if e.sig == signal.SIGKILL else EndKind.STOP_FAILED
        return _finish(replace(s, error=e.error), end)
    if isinstance(e, WaitFailed):
        return _finish(replace(s, error=e.error), EndKind.WAIT_FAILED)
    if isinstance(e, StopCommandEnded):
        return _command_ended(s)
    if isinstance(e, StopCommandFailed):
        return _command_failed(s, e)
    if isinstance(e, InteractiveChanged):
        s = replace(s, policy=replace(s.policy, interactive=e.interactive))
        if s.phase is Phase.DECIDING and not e.interactive:
            # Nobody is left to answer: the question becomes the kill it stands for.
            return _kill(s, e.at, Reason.TIMEOUT, why="nobody can answer any more: ")
        return s, ()
    raise TypeError(f"unknown event {e!r}")


def _stop(s: StopState, e: StopRequested) -> Result:
    if s.phase is not Phase.RUNNING:
        return s, ()
    p = s.policy
    at = e.at
    why = f"watchdog timeout after {setting(e.watchdog_sec)}: " \
        if e.watchdog_sec is not None else \
        f"not ready within {setting(e.ready_timeout)}: " if e.ready_timeout is not None else ""
    if p.stop_signal == signal.SIGKILL and not p.stop_command:
        # SIGKILL is the configured stop signal: the stop request is the kill itself,
        # and a death by it is a clean stop. Wait kill_timeout for it to take.
        deadline = at + p.kill_timeout
        s = replace(s, phase=Phase.KILLING, stop_requested_at=at, deadline=deadline,
                    window_start=at, watchdog_sec=e.watchdog_sec,
                    ready_timeout=e.ready_timeout)
        return s, (Send(signal.SIGKILL, Reason.STOP_REQUEST), Arm(deadline),
                   Say(f"{why}SIGKILL (its stop signal) sent to process group {p.pgid}; "
                       f"giving up in {setting(p.kill_timeout)}"))
    deadline = at + p.stop_timeout
    s = replace(s, phase=Phase.STOPPING, stop_requested_at=at, deadline=deadline,
                window_start=at, timeout_total=p.stop_timeout, watchdog_sec=e.watchdog_sec,
                ready_timeout=e.ready_timeout)
    if p.stop_command:
        then = f", then {signal_name(p.stop_signal)}" if p.then_signal else ""
        s = replace(s, command_running=True)
        return s, (StartStopCommand(), Arm(deadline),
                   Say(f"{why}stop command started{then}; {_action_words(s)} in "
                       f"{setting(p.stop_timeout)}"))
    effects: list[Effect] = [Send(p.stop_signal, Reason.STOP_REQUEST)]
    if p.stop_signal != signal.SIGCONT:
        effects.append(Send(signal.SIGCONT, Reason.CONTINUE))
    effects += [Arm(deadline), Say(f"{why}{signal_name(p.stop_signal)} sent to process group "
                                   f"{p.pgid}; {_action_words(s)} in "
                                   f"{setting(p.stop_timeout)}")]
    return s, tuple(effects)


def _command_ended(s: StopState) -> Result:
    """The stop command is over: with ``then_signal`` the stop signal follows, within the
    deadline already running."""
    if not s.command_running:
        return s, ()
    s = replace(s, command_running=False)
    if not s.policy.then_signal or s.phase is not Phase.STOPPING:
        return s, ()
    p = s.policy
    effects: list[Effect] = [Send(p.stop_signal, Reason.STOP_REQUEST)]
    if p.stop_signal not in (signal.SIGCONT, signal.SIGKILL):
        effects.append(Send(signal.SIGCONT, Reason.CONTINUE))
    effects.append(Say(f"{signal_name(p.stop_signal)} sent to process group {p.pgid} after "
                       "the stop command"))
    return s, tuple(effects)


def _command_failed(s: StopState, e: StopCommandFailed) -> Result:
    """No stop command ran: the stop signal goes now, within the deadline already
    running, whatever ``then_signal`` says."""
    if not s.command_running:
        return s, ()
    s = replace(s, command_running=False)
    if s.phase is not Phase.STOPPING:
        return s, ()
    p = s.policy
    effects: list[Effect] = [Send(p.stop_signal, Reason.STOP_REQUEST)]
    if p.stop_signal not in (signal.SIGCONT, signal.SIGKILL):
        effects.append(Send(signal.SIGCONT, Reason.CONTINUE))
    effects.append(Say(f"stop command failed to start ({e.error}): "
                       f"{signal_name(p.stop_signal)} sent to process group {p.pgid} "
                       f"instead; {_action_words(s)} in "
                       f"{_left(s.deadline, e.at) if s.deadline is not None else 'no time'}"))
    return s, tuple(effects)


def _end_command(s: StopState, why: str = "its deadline came") -> \
        tuple[StopState, tuple[Effect, ...]]:
    """At the deadline (or a kill) the stop command is over too."""
    if not s.command_running:
        return s, ()
    return replace(s, command_running=False), (EndStopCommand(why),)


def _kill(s: StopState, at: float, reason: Reason, why: str = "") -> Result:
    s, ended = _end_command(s, "the process is being killed")
    result = _kill_group(s, at, reason, why)
    return result[0], ended + result[1]


def _kill_group(s: StopState, at: float, reason: Reason, why: str = "") -> Result:
    p = s.policy
    if s.phase is Phase.KILLING and s.kill_sent_at is not None:
        # Already killed: an operator's kill sends it again, and nothing else changes.
        return s, (Send(signal.SIGKILL, reason),) if reason is Reason.OPERATOR else ()
    deadline = at + p.kill_timeout
    kill_reason = Reason.WATCHDOG if (reason is Reason.TIMEOUT and s.watchdog_sec is not None) \
        else reason
    s = replace(s, phase=Phase.KILLING, kill_sent_at=at, kill_reason=kill_reason,
                deadline=deadline, window_start=at)
    return s, (Send(signal.SIGKILL, kill_reason), Arm(deadline),
               Say(f"{why}SIGKILL sent to process group {p.pgid}; giving up in "
                   f"{setting(p.kill_timeout)}"))


def _extend(s: StopState, e: ExtendRequested) -> Result:
    if e.who is Who.PROCESS:
        return _process_extends(s, e)
    if not s.phase.stopping:
        return s, ()
    at, by = e.at, e.by
    s = replace(s, operator_waits=False)
    if s.phase is Phase.KILLING:
        deadline = (s.deadline if s.deadline is not None else at) + by
        s = replace(s, deadline=deadline, window_start=at)
        return s, (Arm(deadline), Say(f"deadline extended by {setting(by)}: giving up in "
                                      f"{_left(deadline, at)}"))
    if s.phase is Phase.STOPPING and s.deadline is not None:
        deadline = s.deadline + by
        total = s.timeout_total + by if s.timeout_total is not None else None
    else:
        # Parked at a decision, or waiting without a deadline: a fresh window from now.
        deadline, total = at + by, None
    s = replace(s, phase=Phase.STOPPING, deadline=deadline, window_start=at,
                timeout_total=total, extended=s.extended + by)
    return s, (Arm(deadline), Say(f"deadline extended by {setting(by)}: {_action_words(s)} "
                                  f"in {_left(deadline, at)}"))


def _process_extends(s: StopState, e: ExtendRequested) -> Result:
    """EXTEND_TIMEOUT_USEC, as systemd defines it: the deadline becomes at least now plus
    the value, within max_stop_time of the stop request."""
    if s.phase not in (Phase.STOPPING, Phase.DECIDING) or s.stop_requested_at is None \
            or s.operator_waits:
        return s, ()
    wanted = e.at + e.by
    cap = s.policy.max_stop_time
    if cap is not None:
        wanted = min(wanted, s.stop_requested_at + cap)
    if s.deadline is not None and wanted <= s.deadline:
        return s, ()
    if wanted <= e.at:
        if cap is None:
            return s, ()  # it asked for no time at all: nothing to grant, nothing to say
        return s, (Say("the process asked for more time, past max_stop_time "
                       f"({setting(cap)}): not granted"),)
    s = replace(s, phase=Phase.STOPPING, deadline=wanted, window_start=e.at,
                timeout_total=None, extended_by_process=True)
    return s, (Arm(wanted), Say(f"extended by the process: {_action_words(s)} in "
                                f"{_left(wanted, e.at)}"))


def _wait_forever(s: StopState) -> Result:
    if not s.phase.stopping:
        return s, ()
    if s.phase is Phase.KILLING:
        return replace(s, deadline=None, window_start=None, operator_waits=True), (
            Arm(None), Say("waiting without a deadline"))
    s = replace(s, phase=Phase.STOPPING, deadline=None, window_start=None, timeout_total=None,
                operator_waits=True)
    return s, (Arm(None), Say("waiting without a deadline"))


def _deadline(s: StopState, at: float) -> Result:
    if s.deadline is None:
        return s, ()
    if at < s.deadline - EARLY:
        return s, (Arm(s.deadline),)  # a stale or early timer: wait on
    if s.phase is Phase.KILLING:
        return _finish(s, EndKind.UNKILLABLE)
    if s.phase is not Phase.STOPPING:
        return s, ()
    s, ended = _end_command(s)
    s, effects = _at_deadline(s, at)
    return s, ended + effects


def _at_deadline(s: StopState, at: float) -> Result:
    action = _policy_action(s.policy)
    if action is DeadlineAction.KILL:
        total = f" ({setting(s.timeout_total)})" if s.timeout_total is not None else ""
        return _kill(s, at, Reason.TIMEOUT, why=f"stop timeout{total} reached: ")
    if action is DeadlineAction.ABANDON:
        return _finish(replace(s, abandoned_by=Who.POLICY), EndKind.ABANDONED)
    total = f" ({setting(s.timeout_total)})" if s.timeout_total is not None else ""
    s = replace(s, phase=Phase.DECIDING, deadline=None, window_start=None,
                decisions=s.decisions + 1)
    return s, (Arm(None), Say(f"stop timeout{total} reached: waiting for a decision (kill, "
                              "extend, abandon or wait)"))


def _finish(s: StopState, end: EndKind) -> Result:
    return replace(s, phase=Phase.ENDED, end=end, deadline=None, window_start=None), (
        Arm(None), Finish(end))


def _action_words(s: StopState) -> str:
    return _policy_action(s.policy).value


def _left(deadline: float, at: float) -> str:
    return seconds(deadline - at)
