"""A process's whole state, as one frozen value: its life (``Life``: stage, restarts,
what it waits for) with its current run nested inside (``RunState``: pid, group, what was
sent, the stop machine's ``StopState``), and what it said and showed about itself.

Only ``step.py`` makes new ones; everything else reads them. A snapshot of the core is
a tuple of views made from these values, so a reader never sees a process half-changed.
"""

from __future__ import annotations

from proctui.config import ProcessSpec
from proctui.core.life.outcome import ExitStatus, Outcome, Sent
from proctui.core.life.stages import Life, Stage
from proctui.core.life.stop import Phase, Policy, StopState
from proctui.core.store.leftovers import Verdict
from proctui.core.store.pidfile import PidRecord
from proctui.core.view import Usage
from proctui.records import dataclass


@dataclass(frozen=True, slots=True)
class Escapee:
    """A process of the run that left its group (setsid, a daemon's double fork), held
    by a pidfd in the executor while ``alive``."""

    pid: int
    pgid: int
    start_ticks: int
    alive: bool = True


@dataclass(frozen=True, slots=True)
class RunState:
    """One run of a process: spawned (or an earlier proctui's process taken over), until
    its outcome. ``number`` tells the runs of one process apart: a fact about an earlier
    run (its pidfd readable late) is never taken for the current one's."""

    number: int
    token: str  # PROCTUI_RUN of every descendant: lineage, notify senders, leftovers
    stop: StopState
    pid: int | None = None
    pgid: int | None = None
    start_ticks: int | None = None
    leftover: bool = False  # an earlier proctui's process: not our child
    started_at: float | None = None  # monotonic
    started_wall: float = 0.0  # for people (PID files)
    exit: ExitStatus | None = None  # the leader's, once it has ended
    leader_exited_at: float | None = None
    ended_at: float | None = None
    escapees: tuple[Escapee, ...] = ()
    sent: tuple[Sent, ...] = ()
    # Live members when SIGKILL went out (None: none went out): who it was meant for.
    kill_reached: tuple[int, ...] | None = None
    stop_reached: bool = True  # False: the stop signal found nothing left to stop
    said_escapees: bool = False  # "its group has ended, but ... still run" said once
    looked_again: bool = False  # the group outlived the leader's exit at least once
    concluding: bool = False  # the stop machine finished: its facts are being gathered
    outcome: Outcome | None = None
    ready_at: float | None = None
    status: str = ""  # its last STATUS= (and ERRNO=), as shown
    asked_ready_said: float = -1e9  # when "asked for more time to become ready" was said
    decision_since: float | None = None  # when the current decision began waiting
    stop_command_pid: int | None = None

    @property
    def live(self) -> bool:
        """Spawned (or taken over) and not yet ended."""
        return self.pid is not None and self.outcome is None and self.stop.phase.live

    @property
    def phase(self) -> Phase:
        return self.stop.phase

    @property
    def outside(self) -> tuple[int, ...]:
        """Its processes outside the group that are still alive."""
        return tuple(e.pid for e in self.escapees if e.alive)


@dataclass(frozen=True, slots=True)
class LeftoverFacts:
    """An earlier proctui's process found in a PID file at start-up, and the verdict on
    it (leftovers.judge)."""

    record: PidRecord
    verdict: Verdict
    held: str = ""  # why it is held for the operator (not proven ours), else ""


@dataclass(frozen=True, slots=True)
class Proc:
    name: str
    spec: ProcessSpec
    life: Life
    pid_name: str = ""  # its PID file's name (a leftover keeps the original's)
    run: RunState | None = None
    runs: int = 0  # runs so far: the next one's number is runs + 1
    last: Outcome | None = None  # the last run's outcome
    outcomes: int = 0  # how many runs had one
    restart_at: float | None = None  # in backoff: when it starts again
    leftover: LeftoverFacts | None = None
    blocked_by: str | None = None  # the leftover whose end it waits for
    notify_dropped: int = 0
    usage: Usage | None = None
    paused: bool = False  # its leader is stopped (SIGSTOP)
    silent_since: float | None = None  # running, and no output since (silence_warning)
    worst: int = 0  # the exit status its runs so far give: 0 clean, 1 failed, 3 left running

    @property
    def stage(self) -> Stage:
        return self.life.stage

    @property
    def active(self) -> bool:
        """A run exists and has no outcome yet."""
        return self.run is not None and self.run.outcome is None

    @property
    def live(self) -> bool:
        return self.run is not None and self.run.live

    @property
    def over(self) -> bool:
        return self.life.over

    @property
    def is_leftover(self) -> bool:
        return self.leftover is not None

    @property
    def phase(self) -> Phase:
        """Where it is: a live run's stop phase, else its life's stage."""
        run = self.run
        if run is not None and run.outcome is None and run.pid is not None:
            return run.stop.phase
        return _PHASES[self.life.stage]


_PHASES = {Stage.NEW: Phase.STARTING, Stage.BLOCKED: Phase.STARTING,
           Stage.WAITING: Phase.WAITING, Stage.RUNNING: Phase.STARTING,
           Stage.BACKOFF: Phase.BACKOFF, Stage.HELD: Phase.HELD, Stage.ENDED: Phase.ENDED}


def policy_of(spec: ProcessSpec, interactive: bool, pgid: int = 0) -> Policy:
    return Policy(stop_signal=spec.stop_signal, stop_timeout=spec.stop_timeout,
                  kill_timeout=spec.kill_timeout, on_timeout=spec.on_timeout,
                  interactive=interactive, max_stop_time=spec.max_stop_time, pgid=pgid,
                  stop_command=bool(spec.stop_command),
                  then_signal=spec.stop_command_then_signal)
