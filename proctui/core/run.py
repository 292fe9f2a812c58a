"""One run of one process: spawn it, feed its stop machine, carry out the effects.

Runs on the core's own asyncio loop. The leader's exit is taken from a pidfd, never from
pipe EOF (a grandchild holding stdout must not keep a dead process "running"). How the
run learns it is over, and how its ending is gathered, is the other half: ending.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import replace
from typing import Protocol

from proctui.config import ProcessSpec
from proctui.core.ending import POLL_STOPPING, EndWatch
from proctui.core.life import stop as m
from proctui.core.life.outcome import (
    EndKind,
    ExitStatus,
    Outcome,
    Reason,
    Sent,
    Who,
    signal_name,
)
from proctui.core.life.stop import Phase, Policy
from proctui.core.os.group import Escapee, Group
from proctui.core.os.oslayer import OSLayer
from proctui.core.os.procfs import ProcStat
from proctui.core.output.lines import Chunk, OutputBuffer
from proctui.core.output.pipes import Pipes
from proctui.core.stopcmd import StopCommand
from proctui.core.store.kinds import Kind
from proctui.core.store.logfiles import LogFile

RUN_TOKEN_VAR = "PROCTUI_RUN"  # set in each child's environment, one value per run


class Host(Protocol):
    """What a run needs from its supervisor."""

    os: OSLayer
    helpers: set[int]  # proctui's own children (probes, stop commands): no run's

    def notice(self, run: Run, text: str) -> None: ...
    def output(self, run: Run, stream: int, lines: Chunk) -> None: ...
    def changed(self, run: Run) -> None: ...
    def ended(self, run: Run, outcome: Outcome) -> None: ...
    def escapees_of(self, run: Run, newer_than: float | None = None) -> list[ProcStat]: ...
    def members_changed(self, run: Run) -> None: ...
    def check_soon(self, run: Run) -> None: ...
    def journal_run(self, run: Run, kind: Kind, **data: object) -> None: ...


class Run:
    """A spawned (or adopted) process group and its stop sequence."""

    def __init__(self, spec: ProcessSpec, name: str, host: Host, buffer: OutputBuffer,
                 interactive: bool, log: LogFile | None = None) -> None:
        self.spec = spec
        self.name = name
        self.host = host
        self.os = host.os
        self.loop = asyncio.get_running_loop()
        self.token = os.urandom(16).hex()  # inherited by every descendant
        self.pid: int | None = None
        self.pgid: int | None = None
        self.start_ticks: int | None = None
        self.popen: subprocess.Popen[bytes] | None = None
        self.group: Group | None = None
        self.leftover = False
        self.started_at: float | None = None  # monotonic
        self.started_wall = 0.0  # for people, in PID files
        self.ended_at: float | None = None
        self.state = m.initial(Policy(
            stop_signal=spec.stop_signal, stop_timeout=spec.stop_timeout,
            kill_timeout=spec.kill_timeout, on_timeout=spec.on_timeout,
            interactive=interactive, max_stop_time=spec.max_stop_time,
            stop_command=bool(spec.stop_command), then_signal=spec.stop_command_then_signal))
        self.stop_command: StopCommand | None = None
        self.sent: list[Sent] = []
        self.kill_reached: tuple[int, ...] | None = None
        self.stop_reached = True
        self.outcome: Outcome | None = None
        self.pipes = Pipes(self.loop, buffer, spec.max_line_length,
                           lambda stream, lines: host.output(self, stream, lines), log)
        self._timer: asyncio.TimerHandle | None = None
        self._events: deque[m.Event] = deque()
        self._feeding = False
        self.watch = EndWatch(self)  # how it learns that it is over, and gathers how

    # -- what others read -------------------------------------------------------------

    @property
    def live(self) -> bool:
        return self.outcome is None and self.state.phase.live

    @property
    def exit(self) -> ExitStatus | None:
        return self.group.exit if self.group is not None else None

    @property
    def leader_exited_at(self) -> float | None:
        return self.group.leader_exited_at if self.group is not None else None

    @property
    def escapees(self) -> dict[int, Escapee]:
        return self.group.escapees if self.group is not None else {}

    # -- starting ---------------------------------------------------------------------

    def spawn(self, extra_env: dict[str, str] | None = None) -> bool:
        """Start the process. False (with a failed-to-start outcome) when it cannot be."""
        spec = self.spec
        try:
            w_out, w_err = self.pipes.create()
        except OSError as e:
            return self._failed_to_start(e)
        try:
            env = spec.environ()
            env.update(extra_env or {})
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
        self.started_wall = time.time()
        self.pid = self.pgid = self.popen.pid  # own session: the group id is the pid
        st = self.os.read_stat(self.pid)
        self.start_ticks = st.start_ticks if st is not None else None
        self._begin()
        self.pipes.start()
        return True

    def _failed_to_start(self, e: BaseException) -> bool:
        self.started_at = self.ended_at = time.monotonic()
        self.state = m.StopState(self.state.policy, phase=Phase.ENDED,
                                 end=EndKind.FAILED_TO_START, error=str(e))
        self.watch.conclude(EndKind.FAILED_TO_START)
        return False

    def adopt(self, pid: int, pgid: int | None, start_ticks: int,
              escapees: Sequence[ProcStat] = ()) -> None:
        """Take over a leftover from an earlier run: not our child, no pipes. ``pgid`` is
        None when only processes outside its group are left (and proven)."""
        self.leftover = True
        self.pid, self.pgid, self.start_ticks = pid, pgid, start_ticks
        self.started_at = time.monotonic()
        self._begin(escapees)

    def _begin(self, escapees: Sequence[ProcStat] = ()) -> None:
        assert self.pid is not None
        self.state = replace(self.state, policy=replace(self.state.policy,
                                                        pgid=self.pgid or 0))
        self.group = Group(self.os, self.loop, self.pid, self.pgid, self.start_ticks,
                           self.leftover)
        for st in escapees:
            self.group.track(st, self.watch.escapee_ended)
        self.group.watch_leader(self.watch.leader_ended)

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
            if effect.deadline is not None and self.stop_command is not None:
                self.stop_command.bound(effect.deadline)
            if effect.deadline is not None or self.state.phase is Phase.DECIDING:
                self.host.journal_run(self, Kind.DEADLINE, phase=self.state.phase.value,
                                      deadline=effect.deadline,
                                      action=self.state.action.value or None)
        elif isinstance(effect, m.Say):
            # The view first: whoever reads the words finds the state they speak of (a
            # reader of "waiting for a decision" saw the process still stopping).
            self.host.changed(self)
            self.host.notice(self, effect.text)
        elif isinstance(effect, m.Finish):
            self.watch.conclude(effect.end)
        elif isinstance(effect, m.StartStopCommand):
            self.stop_command = StopCommand(self, self.host.helpers)
            self.stop_command.start()
        elif isinstance(effect, m.EndStopCommand) and self.stop_command is not None:
            self.stop_command.kill(effect.why)

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

    def request_stop(self, watchdog_sec: float | None = None,
                     ready_timeout: float | None = None) -> None:
        if self.state.phase is Phase.RUNNING:
            self.watch.find_escapees()  # so that the stop signal reaches them too
            self.host.journal_run(self, Kind.STOP, watchdog_sec=watchdog_sec,
                                  ready_timeout=ready_timeout)
        self.feed(m.StopRequested(time.monotonic(), watchdog_sec, ready_timeout))

    def kill(self) -> None:
        if self.state.phase is Phase.RUNNING:
            self.watch.find_escapees()
        if self.live:
            self.host.journal_run(self, Kind.DECISION, action="kill")
        self.feed(m.KillRequested(time.monotonic()))

    def abandon(self) -> None:
        if self.live:
            self.host.journal_run(self, Kind.DECISION, action="abandon")
        self.feed(m.AbandonRequested(time.monotonic()))

    def wait_forever(self) -> None:
        if self.live:
            self.host.journal_run(self, Kind.DECISION, action="wait")
        self.feed(m.WaitRequested(time.monotonic()))

    def extend(self, by: float, who: Who = Who.OPERATOR) -> bool:
        before, asked = self.state.deadline, self.state.phase is Phase.DECIDING
        self.feed(m.ExtendRequested(time.monotonic(), by, who))
        moved = self.state.deadline != before
        if moved and who is Who.OPERATOR:
            # At a question, extend is the operator's answer, as kill, abandon and wait are.
            self.host.journal_run(self, Kind.DECISION if asked else Kind.EXTEND,
                                  **({"action": "extend"} if asked else {}), who="operator",
                                  by=by, deadline=self.state.deadline)
        return moved

    def set_interactive(self, interactive: bool) -> None:
        self.feed(m.InteractiveChanged(time.monotonic(), interactive))

    # -- signals ----------------------------------------------------------------------

    def _send(self, sig: int, reason: Reason) -> None:
        assert self.group is not None
        now = time.monotonic()
        if sig == signal.SIGKILL:
            self.kill_reached = tuple(self.group.live_pids())
        try:
            reached, failures = self.group.signal(sig, self._nested() if sig != signal.SIGKILL
                                                  else frozenset())
        except OSError as e:
            if reason is not Reason.CONTINUE:
                self.feed(m.SignalFailed(now, sig, f"{e}"))
            return
        for text in failures:
            self.host.notice(self, text)
        if reached:
            self.sent.append(Sent(int(sig), now - (self.started_at or now), reason))
            if reason is not Reason.CONTINUE:
                self.host.journal_run(self, Kind.SIGNAL, signal=signal_name(sig),
                                      reason=reason.value)
        elif reason is Reason.STOP_REQUEST:
            self.stop_reached = False
        if reason is Reason.STOP_REQUEST or sig == signal.SIGKILL:
            self.watch.schedule_check(POLL_STOPPING)

    def _nested(self) -> frozenset[int]:
        """Escapees that another proctui inside this run supervises (their PROCTUI_RUN is
        one of its runs, not ours): that one stops them, in its own order, when it gets the
        stop signal; a signal from here would cut its staged stop short. SIGKILL still
        reaches them."""
        return frozenset(e.pid for e in self.escapees.values() if e.alive and (
            (token := self.os.env_value(e.pid, RUN_TOKEN_VAR)) is not None
            and token != self.token))

    def stop_watching(self, keep_leader: bool) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer = None
        self.watch.close()
        if self.group is not None:
            self.group.close()
        if keep_leader and self.popen is not None and self.exit is None:
            # Left running: never wait for it (subprocess would, at interpreter exit).
            self.popen.returncode = 0

    def cancel(self) -> None:
        """Drop timers and pipes of this run (at shutdown, after its outcome)."""
        self.stop_watching(keep_leader=True)
        if self.stop_command is not None:
            self.stop_command.close()
        self.pipes.close()
