"""One configured process (or one leftover) across all its runs, and the snapshot of it
that frontends read."""

from __future__ import annotations

import asyncio
import time

from proctui.config import ProcessSpec
from proctui.core.life.machine import Life, Stage
from proctui.core.life.outcome import Outcome, signal_name
from proctui.core.life.stop import DeadlineAction, Phase
from proctui.core.output.lines import OutputBuffer
from proctui.core.run import Run
from proctui.core.store.leftovers import Verdict
from proctui.core.store.logfiles import LogFile
from proctui.core.store.pidfile import PidRecord
from proctui.core.view import ProcessView, Usage


class Managed:
    def __init__(self, spec: ProcessSpec, name: str | None = None) -> None:
        self.spec = spec
        self.name = name or spec.name
        self.pid_name = spec.name  # its PID file's name (a leftover keeps the original's)
        self.buffer = OutputBuffer(spec.scrollback)
        self.run: Run | None = None
        self.outcomes: list[Outcome] = []
        # Its life outside a live run: written only by the engine's carrying-out of
        # the life machine's steps.
        self.life = Life(self.name, spec.restart, has_deps=bool(spec.depends_on))
        self.restart_at: float | None = None
        self.backoff_timer: asyncio.TimerHandle | None = None
        self.record: PidRecord | None = None  # a leftover's PID file
        self.verdict: Verdict | None = None
        self.held = ""  # why a leftover is held for the operator
        self.blocked_by: Managed | None = None
        self.notify_dropped = 0  # as the current run's notify socket last counted
        self.pid_members: tuple[tuple[int, int, int], ...] = ()  # as last written
        self.pid_cmdline: list[str] = []  # as last written
        self.usage: Usage | None = None
        self.paused = False
        self.status = ""
        self.ready_at: float | None = None
        self.log: LogFile | None = None  # its output on disk (none for a leftover)
        self.last_output_at: float | None = None  # its last line (monotonic)
        self.silent_since: float | None = None  # marked silent (silence_warning) since
        # (run, decision number, since when): views are built at each transition, so the
        # first view that shows a decision knows when it began.
        self._decision: tuple[int, int, float] | None = None
        self.view = self.build_view(0)

    @property
    def phase(self) -> Phase:
        """Where it is when no run is live (a live run's phase is its stop machine's)."""
        return _PHASES[self.life.stage]

    @property
    def over(self) -> bool:
        """Nothing runs, stops or waits to (re)start."""
        return self.life.over

    @property
    def stop_wanted(self) -> bool:
        return self.life.stop_wanted

    @property
    def waiting_for(self) -> tuple[str, ...]:
        return self.life.waiting_for

    @property
    def stops_after(self) -> tuple[str, ...]:
        return self.life.stops_after

    @property
    def restarts(self) -> int:
        return self.life.restarts

    @property
    def leftover(self) -> bool:
        return self.record is not None

    @property
    def active(self) -> bool:
        """A run exists and has no outcome yet."""
        return self.run is not None and self.run.outcome is None

    def heard(self, now: float) -> bool:
        """It printed a line: True when that ends its silence."""
        self.last_output_at = now
        if self.silent_since is None:
            return False
        self.silent_since = None
        return True

    def look_silent(self, now: float) -> bool:
        """Has its running run printed nothing for silence_warning? Looked at on the walk
        of the tree, never per line. True when its mark changed."""
        limit, run = self.spec.silence_warning, self.run
        since = None
        if limit is not None and run is not None and run.started_at is not None \
                and run.state.phase is Phase.RUNNING and not run.leftover:
            last = max(self.last_output_at or run.started_at, run.started_at)
            if now - last >= limit:
                since = last
        if since == self.silent_since:
            return False
        self.silent_since = since
        return True

    def build_view(self, seq: int) -> ProcessView:
        run = self.run
        live = run is not None and run.outcome is None
        s = run.state if run is not None else None
        mark = self.buffer.mark()
        phase = s.phase if live and s is not None else self.phase
        return ProcessView(
            name=self.name,
            phase=phase,
            cmd=self.spec.cmd,
            pid=run.pid if run else self.record.pid if self.record else None,
            pgid=run.pgid if run else None,
            started_at=run.started_at if run else None,
            ended_at=run.ended_at if run and not live else None,
            restarts=self.restarts,
            stop_requested_at=s.stop_requested_at if s else None,
            stop_signal=signal_name(self.spec.stop_signal),
            stop_command=bool(self.spec.stop_command),
            kill_sent_at=s.kill_sent_at if s else None,
            deadline=s.deadline if live and s else None,
            window_start=s.window_start if live and s else None,
            deadline_action=s.action if live and s else DeadlineAction.NONE,
            extended=s.extended if s else 0.0,
            extended_by_process=s.extended_by_process if s else False,
            extend_step=self.spec.extend_step,
            outcome=self._last() if phase in (Phase.ENDED, Phase.BACKOFF) else None,
            restart_at=self.restart_at if phase is Phase.BACKOFF else None,
            leftover=self.leftover,
            held=self.held if phase is Phase.HELD else "",
            paused=self.paused and live,
            escapees=tuple(e.pid for e in run.escapees.values() if e.alive)
            if live and run else (),
            usage=self.usage if live else None,
            lines=mark.total,
            output_lines=mark.output_total,
            decisions=s.decisions if s else 0,
            status=self.status,
            ready_at=self.ready_at if live else None,
            ready_check=self.spec.ready.describe() if self.spec.ready is not None else "",
            decision_since=self._decision_since(phase, s.decisions if s else 0),
            notify_dropped=self.notify_dropped,
            # Blocked by its own leftover, it said "starting" for as long as that lasted.
            waiting_for=self.waiting_for if phase is Phase.WAITING else
            (f"{self.blocked_by.name} to end",) if self.life.stage is Stage.BLOCKED and
            self.blocked_by is not None else (),
            stops_after=self.stops_after,
            silent_since=self.silent_since if live else None,
            stage=self.life.stop_stage,
            stages=self.life.stop_stages,
            seq=seq,
        )

    def _decision_since(self, phase: Phase, decisions: int) -> float | None:
        if phase is not Phase.DECIDING:
            return None
        key = (id(self.run), decisions)
        if self._decision is None or self._decision[:2] != key:
            self._decision = (*key, time.monotonic())
        return self._decision[2]

    def _last(self) -> Outcome | None:
        return self.outcomes[-1] if self.outcomes else None


_PHASES = {Stage.NEW: Phase.STARTING, Stage.BLOCKED: Phase.STARTING,
           Stage.WAITING: Phase.WAITING,
           Stage.RUNNING: Phase.RUNNING, Stage.BACKOFF: Phase.BACKOFF, Stage.HELD: Phase.HELD,
           Stage.ENDED: Phase.ENDED}
