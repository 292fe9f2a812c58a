"""Everything a frontend may read about the core, frozen: one ``CoreSnapshot`` made on
the core's thread after each drain of the inbox, and published by swapping one
reference. Readers on other threads (the console, the headless printer, the control
server, the summary, the exit status) never see a value the core is still changing,
nor two moments mixed in one screen or one message."""

from __future__ import annotations

from dataclasses import field

from proctui.core.life.asks import Ask
from proctui.core.life.outcome import Outcome, exit_status_for
from proctui.core.life.stages import Stage
from proctui.core.life.state import Proc
from proctui.core.life.stop import DeadlineAction, Phase
from proctui.core.life.world import World
from proctui.core.output.lines import Mark
from proctui.core.speak.deps import Deps
from proctui.core.view import ProcessView
from proctui.records import dataclass


@dataclass(frozen=True, slots=True)
class Link:
    """How a remote core's snapshots reach its reader (none for a local core): where the
    supervisor is, and whether the link is up."""

    where: str = ""  # "supervisor pid 4121", on another machine "... on HOST"
    pid: int | None = None
    local: bool = True  # on this machine (its pid is ours to look up)
    down_since: float | None = None  # the link is down: since when (monotonic)
    down_why: str = ""
    next_try: float | None = None  # when the next try begins (None: one is under way)
    tries: int = 0
    gone: str | None = None  # ended for good, and why
    not_answering: str | None = None  # ... because the supervisor stopped answering
    links: int = 1  # links made so far (a console asks its questions anew on each)
    read_only: bool = False  # it may look, never act
    settled: bool = True  # no output still coming, as the last pushes said
    dropped: int = 0  # lines that left the supervisor's scrollback before they were seen
    heard: float | None = None  # when the supervisor last said anything (monotonic)
    host: str = ""  # the machine it is on ("" on this one)
    started: float | None = None  # when its supervisor started (wall clock, its own)


@dataclass(frozen=True, slots=True)
class CoreSnapshot:
    seq: int = 0
    views: tuple[ProcessView, ...] = ()
    all_ended: bool = False  # nothing runs, stops or waits to (re)start
    launched: bool = False  # every process of the config was launched
    shutting_down: bool = False
    shutdown_why: str | None = None
    abandoned_all: bool = False  # everything left was abandoned: exit now
    interactive: bool = True
    crash: str | None = None
    # What keeps proctui from keeping a promise now (a full disk under its log, journal
    # or PID files), in words: supervision goes on regardless.
    troubles: tuple[str, ...] = ()
    strays: tuple[int, ...] = ()  # pids left behind that no run could be proven to own
    # Processes a reload removed, with their last outcome (the summary names them).
    removed: tuple[tuple[str, Outcome | None], ...] = ()
    journal_seq: int = 0  # the newest journal entry's number
    worst: int = 0  # the exit status the outcomes so far give (see exit_status)
    # Agents' requests for a decision: those waiting for an operator, and the latest that
    # ended (asks.py), in the order they were asked.
    asks: tuple[Ask, ...] = ()
    consoles: int = field(default=0, compare=False)  # consoles attached (a remote's)
    link: Link | None = field(default=None, compare=False)

    @classmethod
    def of(cls, *, seq: int, views: tuple[ProcessView, ...], world: World, launched: bool,
           all_ended: bool, journal_seq: int, worst: int) -> CoreSnapshot:
        """``worst``: the exit status the processes' runs give so far."""
        removed = tuple((n, o) for n, o in world.removed)
        worst = worst_of([worst], world)
        return cls(seq=seq, views=views, all_ended=all_ended, launched=launched,
                   shutting_down=world.shutting_down,
                   shutdown_why=world.shutdown_why.value if world.shutdown_why else None,
                   abandoned_all=world.abandon_all, interactive=world.interactive,
                   crash=world.crash, troubles=tuple(t for _, t in world.troubles),
                   strays=world.strays, removed=removed, journal_seq=journal_seq,
                   worst=worst, asks=world.asks.all())

    def final(self) -> list[tuple[str, Outcome | None]]:
        """Each process's last outcome (None: it never started), and those a reload
        removed: what the summary shows."""
        return [(v.name, v.outcome) for v in self.views] + \
            [(f"{n} (removed)", o) for n, o in self.removed]

    @property
    def exit_status(self) -> int:
        """3 if anything was left running, else 1 if anything was killed, crashed or
        failed (or proctui itself), else 0: from every outcome the summary shows, and
        the runs before them."""
        return max(self.worst, 1) if self.crash else self.worst

    def view(self, name: str) -> ProcessView | None:
        for v in self.views:
            if v.name == name:
                return v
        return None

    @property
    def names(self) -> list[str]:
        return [v.name for v in self.views]

    @property
    def waiting_asks(self) -> tuple[Ask, ...]:
        """Agents' requests that wait for an operator, oldest first."""
        return tuple(a for a in self.asks if a.waiting)


def worst_of(worst: list[int], world: World) -> int:
    """The exit status every outcome so far gives (each process's runs, and the last
    word of those a reload removed), strays counted: 3 if anything was left running,
    else 1 if anything was killed, crashed or failed, else 0 (a crash aside)."""
    removed = [o for _, o in world.removed if o is not None]
    return max([exit_status_for(removed, len(world.strays)), *worst])


def view_of(p: Proc, mark: Mark, seq: int, deps: Deps) -> ProcessView:
    """The process as a frontend sees it now."""
    run = p.run
    live = run is not None and run.outcome is None and run.pid is not None
    s = run.stop if run is not None else None
    phase = p.phase
    lf = p.leftover
    stage = p.life.stage
    return ProcessView(
        name=p.name,
        phase=phase,
        cmd=p.spec.cmd,
        pid=run.pid if run is not None and run.pid is not None else
        lf.record.pid if lf is not None else None,
        pgid=run.pgid if run is not None else None,
        started_at=run.started_at if run is not None else None,
        ended_at=run.ended_at if run is not None and not live else None,
        restarts=p.life.restarts,
        stop_requested_at=s.stop_requested_at if s else None,
        stop_signal=_signal_name(p.spec.stop_signal),
        stop_command=bool(p.spec.stop_command),
        kill_sent_at=s.kill_sent_at if s else None,
        deadline=s.deadline if live and s else None,
        window_start=s.window_start if live and s else None,
        deadline_action=s.action if live and s else DeadlineAction.NONE,
        extended=s.extended if s else 0.0,
        extended_by_process=s.extended_by_process if s else False,
        extend_step=p.spec.extend_step,
        outcome=p.last if phase in (Phase.ENDED, Phase.BACKOFF) else None,
        restart_at=p.restart_at if phase is Phase.BACKOFF else None,
        leftover=p.is_leftover,
        held=lf.held if lf is not None and phase is Phase.HELD else "",
        not_started=p.life.not_started if phase is Phase.ENDED and p.last is None else "",
        paused=p.paused and live,
        escapees=run.outside if live and run is not None else (),
        usage=p.usage if live else None,
        lines=mark.total,
        output_lines=mark.output_total,
        decisions=s.decisions if s else 0,
        status=run.status if run is not None else "",
        ready_at=run.ready_at if live and run is not None else None,
        ready_check=p.spec.ready.describe() if p.spec.ready is not None else "",
        decision_since=run.decision_since if live and run is not None else None,
        notify_dropped=p.notify_dropped,
        # Blocked by its own leftover, it said "starting" for as long as that lasted.
        waiting_for=p.life.waiting_for if phase is Phase.WAITING else
        (f"{p.blocked_by} to end",) if stage is Stage.BLOCKED and p.blocked_by else (),
        stops_after=p.life.stops_after,
        silent_since=p.silent_since if live else None,
        stage=p.life.stop_stage,
        stages=p.life.stop_stages,
        seq=seq,
        worst=p.worst,
    )


def _signal_name(sig: int) -> str:
    from proctui.core.life.outcome import signal_name

    return signal_name(sig)
