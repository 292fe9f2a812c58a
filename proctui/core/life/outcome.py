"""How a process run ended, worded so that nobody has to guess.

``describe(record)`` is a pure function of a run's final record: the stop machine
decides how a run ends, the run gathers the facts, and this module alone words them.
"""

from __future__ import annotations

import os
import signal
from dataclasses import field, replace
from enum import Enum

from proctui.records import dataclass


class OutcomeKind(Enum):
    EXITED = "exited"
    STOPPED = "stopped"
    KILLED = "killed"
    ABANDONED = "abandoned"
    UNKILLABLE = "unkillable"
    STOP_FAILED = "stop-failed"
    KILL_FAILED = "kill-failed"
    WAIT_FAILED = "wait-failed"
    FAILED_TO_START = "failed-to-start"
    WATCHDOG = "watchdog"
    HELD = "held"  # a leftover that could not be proven ours: never signalled


# Kinds after which the process (or part of its group) may still be running.
LEFT_RUNNING = frozenset(
    {OutcomeKind.ABANDONED, OutcomeKind.UNKILLABLE, OutcomeKind.STOP_FAILED,
     OutcomeKind.KILL_FAILED, OutcomeKind.WAIT_FAILED, OutcomeKind.HELD}
)


class EndKind(Enum):
    """What the stop machine decided; ``describe`` turns it into an OutcomeKind."""

    GONE = "gone"  # the whole group (and every process it left outside it) ended
    ABANDONED = "abandoned"
    UNKILLABLE = "unkillable"
    STOP_FAILED = "stop-failed"
    KILL_FAILED = "kill-failed"
    WAIT_FAILED = "wait-failed"
    FAILED_TO_START = "failed-to-start"
    HELD = "held"


class Reason(Enum):
    """Why proctui sent a signal."""

    STOP_REQUEST = "stop request"
    CONTINUE = "continue"  # SIGCONT after the stop signal: a stopped process must see it
    TIMEOUT = "stop timeout"
    OPERATOR = "operator"
    WATCHDOG = "watchdog"


class Who(Enum):
    OPERATOR = "operator"
    POLICY = "policy"
    PROCESS = "process"  # EXTEND_TIMEOUT_USEC from the process itself


@dataclass(frozen=True, slots=True)
class Sent:
    """One signal proctui sent, ``at`` seconds after the run started."""

    signal: int
    at: float
    reason: Reason


@dataclass(frozen=True, slots=True)
class ExitStatus:
    """The leader's wait status, decoded. ``known`` is False for a process we cannot
    reap (a leftover from an earlier run is not our child)."""

    code: int | None = None
    signal: int | None = None
    core_dumped: bool = False
    known: bool = True

    @classmethod
    def from_wait_status(cls, status: int) -> ExitStatus:
        if os.WIFSIGNALED(status):
            return cls(signal=os.WTERMSIG(status), core_dumped=os.WCOREDUMP(status))
        if os.WIFEXITED(status):
            return cls(code=os.WEXITSTATUS(status))
        return cls(known=False)

    def describe(self, stop_signal: int | None = None) -> str:
        if not self.known:
            return "exit status unknown (not a child of this proctui)"
        if self.signal is not None:
            verb = "terminated" if self.signal == stop_signal else "killed"
            core = " (core dumped)" if self.core_dumped else ""
            return f"{verb} by {signal_name(self.signal)}{core}"
        return f"exit code {self.code}"


@dataclass(frozen=True, slots=True)
class RunRecord:
    """Everything known about a run when it ended: the input of ``describe``."""

    end: EndKind
    pid: int | None
    ended_at: float
    started_at: float | None = None
    stop_requested_at: float | None = None
    stop_signal: int = signal.SIGTERM
    stop_timeout: float = 0.0
    kill_timeout: float = 0.0
    kill_sent_at: float | None = None
    kill_reason: Reason | None = None
    # Seconds from the stop request to the deadline that ran out, when the deadline was
    # only ever moved by whole extensions; None once it was re-armed from a decision.
    timeout_total: float | None = None
    extended: float = 0.0  # seconds the operator added
    extended_by_process: bool = False
    abandoned_by: Who | None = None
    status: ExitStatus | None = None
    # Live members when SIGKILL was sent (None: not known); empty: it reached nobody.
    kill_reached: tuple[int, ...] | None = None
    sent: tuple[Sent, ...] = ()
    left_running: tuple[int, ...] = ()
    left_behind: tuple[int, ...] = ()  # outside its group, still running at the end
    state_word: str = ""  # what the survivors are doing (disk-sleep) for UNKILLABLE
    error: str = ""
    watchdog_sec: float | None = None  # set when the run was stopped for a missed watchdog
    ready_timeout: float | None = None  # set when it was stopped for never becoming ready
    stop_reached: bool = True  # False: the stop signal found nothing left to stop
    success_codes: tuple[int, ...] = (0,)  # exit codes that count as a clean end


@dataclass(frozen=True, slots=True)
class Outcome:
    kind: OutcomeKind
    text: str
    pid: int | None = None
    status: ExitStatus | None = None
    duration: float | None = None  # seconds from the stop request (or start) to the end
    sent: tuple[Sent, ...] = field(default_factory=tuple)
    left_behind: tuple[int, ...] = ()
    left_pids: tuple[int, ...] = ()  # everything this run left running
    # Whether its exit code is one of its success_exit_codes; None: not told, and only
    # code 0 is a success.
    success_code: bool | None = None

    @property
    def clean(self) -> bool:
        """Ended as asked: stopped on request, or exited by itself with a success code
        (0 unless configured), and nothing of it left running."""
        if self.left_behind:
            return False
        if self.kind is OutcomeKind.STOPPED:
            return True
        if self.kind is not OutcomeKind.EXITED or self.status is None:
            return False
        if self.success_code is not None:
            return self.success_code
        return self.status.code == 0

    @property
    def left_running(self) -> bool:
        return self.kind in LEFT_RUNNING or bool(self.left_behind)

    def __str__(self) -> str:
        return self.text


def exit_status_for(outcomes: list[Outcome], strays: int = 0) -> int:
    """proctui's own exit status: 3 if anything was left running, else 1 if anything was
    killed, crashed or failed, else 0."""
    if strays or any(o.left_running for o in outcomes):
        return 3
    if any(not o.clean for o in outcomes):
        return 1
    return 0


# -- the wording --------------------------------------------------------------------------

# A kill further than this from its deadline is told with its true time, not the setting.
LATE = 0.1


def describe(r: RunRecord) -> Outcome:
    kind, text = _words(r)
    if r.left_behind and kind not in LEFT_RUNNING:
        text += f"; {pids_phrase(r.left_behind)} left behind (outside its process group)"
    since = r.stop_requested_at if r.stop_requested_at is not None else r.started_at
    code = r.status.code if r.status is not None and r.status.known else None
    return Outcome(kind=kind, text=text, pid=r.pid, status=r.status,
                   duration=None if since is None else max(0.0, r.ended_at - since),
                   sent=r.sent, left_behind=r.left_behind,
                   left_pids=r.left_running + r.left_behind,
                   success_code=None if code is None else code in r.success_codes)


def _words(r: RunRecord) -> tuple[OutcomeKind, str]:
    left = f"{pids_phrase(r.left_running or ((r.pid,) if r.pid else ()))} left running"
    if r.end is EndKind.FAILED_TO_START:
        return OutcomeKind.FAILED_TO_START, f"failed to start: {r.error}"
    if r.end is EndKind.WAIT_FAILED:
        return OutcomeKind.WAIT_FAILED, f"wait failed: {r.error}"
    if r.end is EndKind.STOP_FAILED:
        return OutcomeKind.STOP_FAILED, f"stop request failed: {r.error}: {left}"
    if r.end is EndKind.KILL_FAILED:
        return OutcomeKind.KILL_FAILED, f"SIGKILL failed: {r.error}: {left}"
    if r.end is EndKind.HELD:
        return OutcomeKind.HELD, f"held, not proven to be ours ({r.error}): {left}"
    if r.end is EndKind.UNKILLABLE:
        state = f" ({r.state_word})" if r.state_word else ""
        return OutcomeKind.UNKILLABLE, (f"still running {setting(r.kill_timeout)} after "
                                        f"SIGKILL{state}: {left}")
    if r.end is EndKind.ABANDONED:
        return OutcomeKind.ABANDONED, f"{_abandoned(r)}: {left}"
    return _gone(r)


def _abandoned(r: RunRecord) -> str:
    if r.abandoned_by is Who.POLICY:
        return f"abandoned after {_timeout(r)} stop timeout"
    if r.stop_requested_at is not None:
        return f"abandoned after {seconds(r.ended_at - r.stop_requested_at)}"
    if r.kill_sent_at is not None:
        return f"abandoned {seconds(r.ended_at - r.kill_sent_at)} after SIGKILL"
    return "abandoned while running (no signal sent)"


def _timeout(r: RunRecord) -> str:
    total = r.timeout_total if r.timeout_total is not None else r.stop_timeout
    return setting(total)


def _gone(r: RunRecord) -> tuple[OutcomeKind, str]:
    if not r.stop_reached and r.kill_sent_at is None:
        # It had ended by itself just before the stop request: nothing was stopped.
        r = replace(r, stop_requested_at=None)
    stop_sig = r.stop_signal if r.stop_requested_at is not None else None
    status = (r.status or ExitStatus(known=False)).describe(stop_sig)
    code = r.status.code if r.status is not None and r.status.known else None
    if code is not None:
        if code != 0 and code in r.success_codes:
            status += " (a success code)"
        elif code == 0 and 0 not in r.success_codes and stop_sig is None:
            status += " (not a success code)"
    failed_kind, prefix = OutcomeKind.STOPPED, ""
    if r.watchdog_sec is not None:
        failed_kind, prefix = OutcomeKind.WATCHDOG, \
            f"watchdog timeout after {setting(r.watchdog_sec)}: "
    elif r.ready_timeout is not None:
        failed_kind, prefix = OutcomeKind.FAILED_TO_START, \
            f"not ready within {setting(r.ready_timeout)}: "
    failed = bool(prefix)  # stopped for a missed watchdog or never becoming ready
    if not _was_killed(r):
        if r.stop_requested_at is None:
            return OutcomeKind.EXITED, f"exited: {status}"
        took = seconds(r.ended_at - r.stop_requested_at)
        return (failed_kind, f"{prefix}stopped after {took}: {status}")
    assert r.kill_sent_at is not None
    if r.kill_reason in (Reason.TIMEOUT, Reason.WATCHDOG):
        asked = r.kill_sent_at if r.stop_requested_at is None else r.stop_requested_at
        kill_after = r.kill_sent_at - asked
        if r.timeout_total is not None and (r.stop_requested_at is None
                                            or abs(kill_after - r.timeout_total) <= LATE):
            text = f"killed with SIGKILL after {setting(r.timeout_total)} stop timeout"
            if r.extended:
                text += f" (extended by {setting(r.extended)})"
        elif r.timeout_total is not None:
            # The kill came late (a starved machine): the true time, then the setting.
            extended = f", extended by {setting(r.extended)}" if r.extended else ""
            text = (f"killed with SIGKILL {seconds(kill_after)} after the stop request "
                    f"({setting(r.timeout_total)} stop timeout{extended})")
        else:
            text = (f"killed with SIGKILL at its deadline, {seconds(kill_after)} after the "
                    "stop request")
        if r.extended_by_process:
            text += ", after the process asked for more time"
    else:
        text = "killed with SIGKILL by operator"
        if r.stop_requested_at is not None:
            text += f" {seconds(r.kill_sent_at - r.stop_requested_at)} after the stop request"
    status_known = r.status is not None and r.status.known
    if status_known and r.status.signal != signal.SIGKILL:  # type: ignore[union-attr]
        # The leader ended on its own; other members of its group had to be killed.
        text += f" (the leader ended, {status}; the rest of its group did not)"
    return (failed_kind if failed else OutcomeKind.KILLED), prefix + text


def _was_killed(r: RunRecord) -> bool:
    """Did proctui's SIGKILL end anything? Not when it reached nobody, nor when the only
    process it reached was the leader and the leader died of something else first."""
    if r.kill_sent_at is None:
        return False
    reached = r.kill_reached
    if reached is None:
        return True
    if not reached:
        return False
    status = r.status
    leader_beat_it = (reached == (r.pid,) and status is not None and status.known
                      and status.signal != signal.SIGKILL)
    return not leader_beat_it


# -- small words --------------------------------------------------------------------------

def pids_phrase(pids: tuple[int, ...] | list[int]) -> str:
    if len(pids) == 1:
        return f"pid {pids[0]}"
    shown = ", ".join(map(str, pids[:8]))
    return f"pids {shown}{'...' if len(pids) > 8 else ''}"


def signal_name(sig: int) -> str:
    """SIGTERM, SIGRTMIN+3, or "signal 99"."""
    sig = int(sig)
    rtmin, rtmax = _rt_range()
    if rtmin is not None and rtmin < sig < rtmax:  # type: ignore[operator]
        return f"SIGRTMIN+{sig - rtmin}"
    try:
        return signal.Signals(sig).name
    except ValueError:
        return f"signal {sig}"


def _rt_range() -> tuple[int | None, int | None]:
    lo, hi = getattr(signal, "SIGRTMIN", None), getattr(signal, "SIGRTMAX", None)
    return (int(lo) if lo is not None else None, int(hi) if hi is not None else None)


def seconds(value: float) -> str:
    """A duration for people: 0.4s, 1.2s, 12s, 2m05s, 3h05m12s, 11d13h46m (an extended
    deadline read 'decision in 16666m38s')."""
    if value < 0:
        value = 0.0
    # Each form chosen by the figure it shows: 9.96 is "10s", never "10.0s" beside
    # another process's "10s" (and 119.6 "2m00s", not "120s").
    if round(value, 1) < 10:
        return f"{value:.1f}s"
    if round(value) < 120:
        return f"{round(value)}s"
    minutes, secs = divmod(round(value), 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours}h{minutes:02d}m{secs:02d}s"
    days, hours = divmod(hours, 24)
    return f"{days}d{hours:02d}h{minutes:02d}m"


def setting(value: float) -> str:
    """A configured duration as the user wrote it: 10 -> 10s, 2.5 -> 2.5s."""
    return f"{value:g}s"
