"""One run of one process: spawn it, watch its group, carry out the stop machine's effects.

Runs on the core's own asyncio loop. The leader's exit is taken from a pidfd, never from
pipe EOF (a grandchild holding stdout must not keep a dead process "running"). A run is
over when its whole process group is gone, and every descendant that left the group too.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import signal
import subprocess
import time
import uuid
from collections import deque
from dataclasses import dataclass, replace
from typing import Protocol

from proctui.config import ProcessSpec
from proctui.core import machine as m
from proctui.core.lines import OutputBuffer
from proctui.core.machine import Phase, Policy
from proctui.core.oslayer import OSLayer
from proctui.core.outcome import (
    EndKind,
    ExitStatus,
    Outcome,
    Reason,
    RunRecord,
    Sent,
    Who,
    describe,
    pids_phrase,
)
from proctui.core.pipes import Pipes
from proctui.core.procfs import ProcStat

RUN_TOKEN_VAR = "PROCTUI_RUN"  # set in each child's environment, one value per run
POLL_STOPPING = 0.05  # seconds between group checks once the leader is gone
POLL_IDLE = 1.0
POLL_NO_PIDFD = 0.1  # watching the leader without a pidfd (out of descriptors)
FD_RETRIES = 30  # times POLL_IDLE: how long a lack of file descriptors is waited out


class Host(Protocol):
    """What a run needs from its supervisor."""

    os: OSLayer

    def notice(self, run: Run, text: str) -> None: ...
    def output(self, run: Run, stream: int, lines: list[str]) -> None: ...
    def changed(self, run: Run) -> None: ...
    def ended(self, run: Run, outcome: Outcome) -> None: ...
    def escapees_of(self, run: Run) -> list[ProcStat]: ...
    def members_changed(self, run: Run) -> None: ...


@dataclass(slots=True)
class Escapee:
    pid: int
    start_ticks: int
    pgid: int
    pidfd: int | None
    alive: bool = True


class Run:
    """A spawned (or adopted) process group and its stop sequence."""

    def __init__(self, spec: ProcessSpec, name: str, host: Host, buffer: OutputBuffer,
                 interactive: bool) -> None:
        self.spec = spec
        self.name = name
        self.host = host
        self.os = host.os
        self.buffer = buffer
        self.loop = asyncio.get_running_loop()
        self.token = uuid.uuid4().hex  # inherited by every descendant
        self.pid: int | None = None
        self.pgid: int | None = None
        self.start_ticks: int | None = None
        self.popen: subprocess.Popen[bytes] | None = None
        self.leftover = False
        self.started_at: float | None = None  # monotonic
        self.ended_at: float | None = None
        self.exit: ExitStatus | None = None
        self.state = m.initial(Policy(
            stop_signal=spec.stop_signal, stop_timeout=spec.stop_timeout,
            kill_timeout=spec.kill_timeout, on_timeout=spec.on_timeout,
            interactive=interactive, max_stop_time=spec.max_stop_time))
        self.sent: list[Sent] = []
        self.kill_reached: tuple[int, ...] | None = None
        self.escapees: dict[int, Escapee] = {}
        self.outcome: Outcome | None = None
        self.pipes = Pipes(self.loop, buffer, spec.max_line_length,
                           lambda stream, lines: host.output(self, stream, lines))
        self._pidfd: int | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._poll: asyncio.TimerHandle | None = None
        self._events: deque[m.Event] = deque()
        self._feeding = False
        self._fd_failures = 0
        self._said_escapees = False

    # -- starting ---------------------------------------------------------------------

    def spawn(self) -> bool:
        """Start the process. False (with a failed-to-start outcome) when it cannot be."""
        spec = self.spec
        try:
            w_out, w_err = self.pipes.create()
        except OSError as e:
            return self._failed_to_start(e)
        try:
            env = spec.environ()
            env[RUN_TOKEN_VAR] = self.token
            self.popen = subprocess.Popen(
                spec.argv, cwd=str(spec.cwd), env=env, stdin=subprocess.DEVNULL,
                stdout=w_out, stderr=w_err, start_new_session=True, close_fds=True,
            )
        except (OSError, ValueError, subprocess.SubprocessError) as e:
            self.pipes.close()
            return self._failed_to_start(e)
        finally:
            for fd in (w_out, w_err):
                with contextlib.suppress(OSError):
                    os.close(fd)
        self.started_at = time.monotonic()
        self.pid = self.pgid = self.popen.pid  # own session: the group id is the pid
        self._set_policy_pgid()
        st = self.os.read_stat(self.pid)
        self.start_ticks = st.start_ticks if st is not None else None
        self.pipes.start()
        self._watch_leader()
        return True

    def _failed_to_start(self, e: BaseException) -> bool:
        self.started_at = self.ended_at = time.monotonic()
        self.state = m.StopState(self.state.policy, phase=Phase.ENDED,
                                 end=EndKind.FAILED_TO_START, error=str(e))
        self._conclude(EndKind.FAILED_TO_START)
        return False

    def adopt(self, pid: int, pgid: int, start_ticks: int,
              escapees: list[ProcStat] = ()) -> None:  # type: ignore[assignment]
        """Take over a leftover from an earlier run: not our child, no pipes."""
        self.leftover = True
        self.pid, self.pgid, self.start_ticks = pid, pgid, start_ticks
        self._set_policy_pgid()
        self.started_at = time.monotonic()
        for st in escapees:
            self._track(st)
        self._watch_leader()

    def _set_policy_pgid(self) -> None:
        self.state = replace(self.state, policy=replace(self.state.policy, pgid=self.pgid))

    # -- the one way in: events to the machine, effects out ------------------------------

    def feed(self, event: m.Event) -> None:
        self._events.append(event)
        if self._feeding:
            return  # an effect fed back an event: handled after the current one
        self._feeding = True
        try:
            while self._events:
                self.state, effects = m.step(self.state, self._events.popleft())
                for effect in effects:
                    self._apply(effect)
        finally:
            self._feeding = False
        self.host.changed(self)

    def _apply(self, effect: m.Effect) -> None:
        if isinstance(effect, m.Send):
            self._send(effect.sig, effect.reason)
        elif isinstance(effect, m.Arm):
            self._arm(effect.deadline)
        elif isinstance(effect, m.Say):
            self.host.notice(self, effect.text)
        elif isinstance(effect, m.Finish):
            self._conclude(effect.end)

    def _arm(self, deadline: float | None) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if deadline is not None:
            # The loop's clock is time.monotonic(), the machine's clock too.
            self._timer = self.loop.call_at(deadline, self._on_deadline)

    def _on_deadline(self) -> None:
        self._timer = None
        # A SIGKILL due now is sent from right here, in this callback: under a flood,
        # waking a task first would cost another pass over every busy pipe.
        self.feed(m.DeadlineReached(time.monotonic()))

    # -- commands ---------------------------------------------------------------------

    def request_stop(self, watchdog_sec: float | None = None) -> None:
        if self.state.phase is Phase.RUNNING:
            self._find_escapees()  # so that the stop signal reaches them too
        self.feed(m.StopRequested(time.monotonic(), watchdog_sec))

    def kill(self) -> None:
        if self.state.phase is Phase.RUNNING:
            self._find_escapees()
        self.feed(m.KillRequested(time.monotonic()))

    def abandon(self) -> None:
        self.feed(m.AbandonRequested(time.monotonic()))

    def wait_forever(self) -> None:
        self.feed(m.WaitRequested(time.monotonic()))

    def extend(self, by: float, who: Who = Who.OPERATOR) -> bool:
        before = self.state.deadline
        self.feed(m.ExtendRequested(time.monotonic(), by, who))
        return self.state.deadline != before

    def set_interactive(self, interactive: bool) -> None:
        self.feed(m.InteractiveChanged(time.monotonic(), interactive))

    @property
    def live(self) -> bool:
        return self.outcome is None and self.state.phase.live

    # -- signals ----------------------------------------------------------------------

    def _send(self, sig: int, reason: Reason) -> None:
        assert self.pgid is not None
        now = time.monotonic()
        if sig == signal.SIGKILL:
            self.kill_reached = tuple(self._live_pids())
        reached = True
        try:
            self.os.signal_group(self.pgid, sig)
        except ProcessLookupError:
            reached = False  # nothing left in the group: it ended just now
        except OSError as e:
            if reason is not Reason.CONTINUE:
                self.feed(m.SignalFailed(now, sig, f"{e}"))
            return
        for esc in self.escapees.values():
            if esc.alive and esc.pidfd is not None:
                try:
                    self.os.signal_pidfd(esc.pidfd, sig)
                    reached = True
                except ProcessLookupError:
                    esc.alive = False
                except OSError as e:
                    self.host.notice(self, f"cannot signal pid {esc.pid} (outside its group): "
                                           f"{e}")
        if reached:
            self.sent.append(Sent(sig, now - (self.started_at or now), reason))
        if reason is Reason.STOP_REQUEST or sig == signal.SIGKILL:
            self._schedule_check(POLL_STOPPING)

    def _live_pids(self) -> list[int]:
        """Group members and escapees alive right now (fresh reads, not a cached scan:
        what the SIGKILL is about to reach decides how the run is worded)."""
        assert self.pgid is not None
        pids = []
        for st in self.os.group_members(self.pgid, ours=not self.leftover):
            fresh = self.os.read_stat(st.pid)
            if fresh is not None and fresh.live and fresh.pgid == self.pgid:
                pids.append(st.pid)
        leader = self.os.read_stat(self.pgid)
        if leader is not None and leader.live and leader.pgid == self.pgid \
                and self.pgid not in pids:
            pids.insert(0, self.pgid)
        pids += [e.pid for e in self.escapees.values() if e.alive]
        return pids

    # -- watching ---------------------------------------------------------------------

    def _watch_leader(self) -> None:
        assert self.pid is not None
        try:
            self._pidfd = self.os.pidfd_open(self.pid)
        except OSError:
            self._pidfd = -1  # out of descriptors, or no pidfds here: poll instead
        if self._pidfd is None:
            self._leader_ended()  # already gone
        elif self._pidfd < 0:
            self._schedule_leader_poll()
        else:
            self.loop.add_reader(self._pidfd, self._on_leader_exit)

    def _schedule_leader_poll(self) -> None:
        self.loop.call_later(POLL_NO_PIDFD, self._poll_leader)

    def _poll_leader(self) -> None:
        if self.outcome is not None:
            return
        assert self.pid is not None
        if self.leftover:
            st = self.os.read_stat(self.pid)
            if st is not None and st.live and st.start_ticks == self.start_ticks:
                self._schedule_leader_poll()
                return
        elif self.os.reap(self.pid) is None:
            self._schedule_leader_poll()
            return
        self._leader_ended()

    def _on_leader_exit(self) -> None:
        if self._pidfd is not None and self._pidfd >= 0:
            self.loop.remove_reader(self._pidfd)
            os.close(self._pidfd)
        self._pidfd = None
        self._leader_ended()

    def _leader_ended(self) -> None:
        assert self.pid is not None
        if self.exit is None:
            if self.leftover:
                self.exit = ExitStatus(known=False)
            else:
                self.exit = self.os.reap(self.pid) or ExitStatus(known=False)
                if self.popen is not None and self.exit.known:
                    # Keep subprocess from ever waiting on this pid again.
                    self.popen.returncode = self.exit.code if self.exit.code is not None \
                        else -int(self.exit.signal or 0)
        self._check_gone()

    def _schedule_check(self, delay: float) -> None:
        if self.exit is None or self.outcome is not None:
            return  # the leader's exit starts the checks
        if self._poll is not None:
            self._poll.cancel()
        self._poll = self.loop.call_later(delay, self._check_gone)

    def _check_gone(self) -> None:
        self._poll = None
        if self.outcome is not None:
            return
        assert self.pgid is not None
        try:
            group = self.os.group_alive(self.pgid, ours=not self.leftover)
        except OSError as e:
            if e.errno in (errno.EMFILE, errno.ENFILE) and self._fd_failures < FD_RETRIES:
                self._fd_failures += 1  # a passing state of the machine, not an answer
                self._schedule_check(POLL_IDLE)
                return
            self.feed(m.WaitFailed(time.monotonic(), str(e)))
            return
        if not group:
            self._find_escapees()
        outside = [e for e in self.escapees.values() if e.alive]
        if not group and not outside:
            self._gone()
            return
        if group:
            self.host.members_changed(self)
        elif not self._said_escapees:
            self._said_escapees = True
            self.host.notice(self, f"its group has ended ({self._status_text()}), but "
                                   f"{pids_phrase([e.pid for e in outside])} it started "
                                   "outside the group still run; watching them")
            self.host.members_changed(self)
            self.host.changed(self)
        stopping = self.state.phase.stopping
        self._schedule_check(POLL_STOPPING if stopping else POLL_IDLE)

    def _gone(self) -> None:
        now = time.monotonic()
        self.ended_at = now
        # Output already in the pipes belongs before the outcome.
        self.pipes.read_now()
        self.feed(m.GroupGone(now))

    def _find_escapees(self) -> None:
        for st in self.host.escapees_of(self):
            if st.pid not in self.escapees:
                self._track(st)

    def _track(self, st: ProcStat) -> None:
        try:
            pidfd = self.os.pidfd_open(st.pid)
        except OSError:
            pidfd = None
        if pidfd is None:
            return
        esc = Escapee(st.pid, st.start_ticks, st.pgid, pidfd)
        self.escapees[st.pid] = esc
        self.loop.add_reader(pidfd, self._on_escapee_exit, esc)

    def _on_escapee_exit(self, esc: Escapee) -> None:
        self._drop_escapee(esc)
        self.os.reap(esc.pid)  # ours once re-parented to us; harmless otherwise
        if self.exit is not None:
            self._schedule_check(0)

    def _drop_escapee(self, esc: Escapee) -> None:
        esc.alive = False
        if esc.pidfd is not None:
            self.loop.remove_reader(esc.pidfd)
            os.close(esc.pidfd)
            esc.pidfd = None

    # -- the ending -------------------------------------------------------------------

    def _status_text(self) -> str:
        status = self.exit or ExitStatus(known=False)
        stop_sig = self.spec.stop_signal if self.state.stop_requested_at is not None else None
        return status.describe(stop_sig)

    def _conclude(self, end: EndKind) -> None:
        """The machine has decided: gather the facts, word them, tell the host."""
        if self.outcome is not None:
            return
        now = time.monotonic()
        left: tuple[int, ...] = ()
        state_word = ""
        if end in (EndKind.ABANDONED, EndKind.UNKILLABLE, EndKind.STOP_FAILED,
                   EndKind.KILL_FAILED):
            left = tuple(self._live_pids())
            if not left and end is EndKind.ABANDONED:
                end = EndKind.GONE  # it ended just before the operator gave up on it
                if self.exit is None and self.pid is not None and not self.leftover:
                    self.exit = self.os.reap(self.pid)
            if end is EndKind.UNKILLABLE and self.pgid is not None:
                state_word = self.os.describe(self.pgid, ours=not self.leftover)
        if self.ended_at is None:
            self.ended_at = now
        s = self.state
        record = RunRecord(
            end=end, pid=self.pid, ended_at=self.ended_at, started_at=self.started_at,
            stop_requested_at=s.stop_requested_at, stop_signal=self.spec.stop_signal,
            stop_timeout=self.spec.stop_timeout, kill_timeout=self.spec.kill_timeout,
            kill_sent_at=s.kill_sent_at, kill_reason=s.kill_reason,
            timeout_total=s.timeout_total, extended=s.extended,
            extended_by_process=s.extended_by_process, abandoned_by=s.abandoned_by,
            status=self.exit, kill_reached=self.kill_reached, sent=tuple(self.sent),
            left_running=tuple(p for p in left if p not in self.escapees),
            left_behind=tuple(e.pid for e in self.escapees.values()
                              if e.alive and e.pid in left),
            state_word=state_word, error=s.error, watchdog_sec=s.watchdog_sec)
        outcome = describe(record)
        self._stop_watching(keep_leader=end is not EndKind.GONE)
        # The bookkeeping (PID file, history) happens before the outcome is visible to
        # frontends, so whoever sees the outcome also sees its consequences.
        self.host.ended(self, outcome)
        self.outcome = outcome

    def _stop_watching(self, keep_leader: bool) -> None:
        for handle in (self._timer, self._poll):
            if handle is not None:
                handle.cancel()
        self._timer = self._poll = None
        if self._pidfd is not None and self._pidfd >= 0:
            self.loop.remove_reader(self._pidfd)
            os.close(self._pidfd)
        self._pidfd = None
        for esc in self.escapees.values():
            if esc.pidfd is not None:
                self._drop_escapee(esc)
                esc.alive = True  # not watched any more, not known dead either
        if keep_leader and self.popen is not None and self.exit is None:
            # Left running: never wait for it (subprocess would, at interpreter exit).
            self.popen.returncode = 0

    def cancel(self) -> None:
        """Drop timers and pipes of this run (at shutdown, after its outcome)."""
        self._stop_watching(keep_leader=True)
        self.pipes.close()
