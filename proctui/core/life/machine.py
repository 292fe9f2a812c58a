"""A process's whole life as a pure state machine: ``step(life, event) -> (life, effects)``.

Waiting for dependencies, waiting for its own leftover to go, starting, running,
backoff, held (a leftover not proven ours), ended; and the decisions around a run: restart
or not, stop now or after its dependents (a staged shutdown), start or refuse. While a run
is live its stop sequence is the nested machine in ``stop.py``; this one hears only that
the run ended. No I/O, no clock, no asyncio: the engine carries the effects out and feeds
back what happened, and the tests feed events and read effects in milliseconds.

    NEW --> WAITING --deps met--> RUNNING (spawn) --run ended--> BACKOFF --> RUNNING
     |         ^                     ^     |                         |
     +--> BLOCKED (own leftover)     +-----+--restart                +--> ENDED
    HELD (leftover in doubt) --operator stops or adopts--> RUNNING
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from proctui.config.spec import RestartPolicy
from proctui.core.life.events import (
    AdoptCmd,
    Answer,
    AnswerEnded,
    ArmBackoff,
    BackoffOver,
    BlockerEnded,
    CancelBackoff,
    ChangedCmd,
    DependentsLeft,
    DepsLooked,
    Effect,
    Event,
    Finished,
    Forget,
    GiveUpCmd,
    HoldForever,
    Launch,
    LookAtDeps,
    NobodyAnswers,
    Record,
    ReleaseStop,
    RemoveCmd,
    RequestStop,
    RestartCmd,
    RunEnded,
    Say,
    Shutdown,
    Spawn,
    StartCmd,
    StopCmd,
    StopsAfter,
    TakeOver,
)
from proctui.core.life.stages import (
    BACKOFF_MAX,
    BACKOFF_RESET,
    BACKOFF_START,
    Leftover,
    Life,
    Stage,
    Why,
)
from proctui.core.store.kinds import Kind

__all__ = [
    "BACKOFF_MAX", "BACKOFF_RESET", "BACKOFF_START", "AdoptCmd", "Answer",
    "AnswerEnded", "ArmBackoff", "BackoffOver", "BlockerEnded", "CancelBackoff",
    "ChangedCmd", "DependentsLeft", "DepsLooked", "Effect", "Event", "Finished",
    "Forget", "GiveUpCmd", "HoldForever", "Launch", "Leftover", "Life", "LookAtDeps",
    "NobodyAnswers", "Record", "ReleaseStop", "RemoveCmd", "RequestStop", "RestartCmd",
    "RunEnded", "Say", "Shutdown", "Spawn", "Stage", "StartCmd", "StopCmd", "StopsAfter",
    "TakeOver",
    "Why", "step",
]


# -- the machine ----------------------------------------------------------------------------

def step(life: Life, event: Event) -> tuple[Life, list[Effect]]:
    handler: Callable[[Life, Any], tuple[Life, list[Effect]]] = _HANDLERS[type(event)]
    return handler(life, event)


def _end(life: Life, *said: Effect) -> tuple[Life, list[Effect]]:
    forget: list[Effect] = [Forget()] if life.removed else []
    return (replace(life, stage=Stage.ENDED, stops_after=(), waiting_for=(),
                    restart_wanted=False), [*said, Finished(), *forget])


def _begin(life: Life) -> tuple[Life, list[Effect]]:
    """Past every block: wait for dependencies, or start."""
    if life.has_deps:
        return replace(life, stage=Stage.WAITING), [LookAtDeps()]
    return replace(life, stage=Stage.RUNNING), [Spawn()]


def _not_started(life: Life) -> str:
    return "everything is stopping" if life.shutdown else "stop requested"


def _never(life: Life, why: str, *more: Effect) -> tuple[Life, list[Effect]]:
    """It ends without ever having started, and keeps why: status, why, is-ready and the
    summary say it (they said "never started" and no more)."""
    return _end(replace(life, not_started=why), Say(f"not started: {why}"), *more)


def _launch(life: Life, e: Launch) -> tuple[Life, list[Effect]]:
    if life.stage not in (Stage.NEW, Stage.ENDED):
        return life, []
    if life.leftover is Leftover.DOUBT:
        held = replace(life, stage=Stage.HELD)
        if not life.interactive or life.shutdown:
            return _end(held, HoldForever())
        return held, []
    if life.leftover is Leftover.UNPROVABLE:
        return _end(life, Say("no group of it could be proven, so there is nothing proctui "
                              "can signal; stop it yourself"), HoldForever())
    if life.leftover is Leftover.PROVEN:
        return replace(life, stage=Stage.RUNNING), [TakeOver(stop=not life.stops_after)]
    if life.stop_wanted or life.shutdown:
        return _never(life, _not_started(life))
    if life.blocker_left is not None:
        return _never(life, f"its leftover (pid {life.blocker_left}) is still running")
    if life.blocked:
        return replace(life, stage=Stage.BLOCKED), []
    return _begin(life)


def _deps_looked(life: Life, e: DepsLooked) -> tuple[Life, list[Effect]]:
    if life.stage is not Stage.WAITING:
        return life, []
    if life.stop_wanted or life.shutdown:
        return _never(life, _not_started(life))
    if e.failed:
        return _never(life, "; ".join(e.failed))
    if not e.waiting:
        return replace(life, stage=Stage.RUNNING, waiting_for=()), [Spawn()]
    if e.waiting == life.waiting_for:
        return life, []
    return replace(life, waiting_for=e.waiting), \
        [Record(Kind.WAITING, (("waits_for", list(e.waiting)),))]


def _blocker_ended(life: Life, e: BlockerEnded) -> tuple[Life, list[Effect]]:
    life = replace(life, blocked=False, blocker_left=e.left_running)
    if life.stage is not Stage.BLOCKED:
        return life, []  # not launched yet: Launch will look
    if life.stop_wanted or life.shutdown:
        return _never(life, _not_started(life))
    return _launch(replace(life, stage=Stage.NEW), Launch())


def _run_ended(life: Life, e: RunEnded) -> tuple[Life, list[Effect]]:
    if life.stage is not Stage.RUNNING:
        return life, []
    if life.leftover is not Leftover.NO:
        return _end(life)
    if life.restart_wanted and not e.left_running and not life.shutdown:
        return (replace(life, stage=Stage.RUNNING, restart_wanted=False, stop_wanted=False,
                        restarts=life.restarts + 1, backoff=BACKOFF_START, stops_after=()),
                [Spawn()])
    if life.stop_wanted or life.shutdown or not e.restartable or not _policy_restarts(
            life.policy, e.clean):
        return _end(life)
    backoff = BACKOFF_START if e.lived >= BACKOFF_RESET else life.backoff
    return (replace(life, stage=Stage.BACKOFF, backoff=min(backoff * 2, BACKOFF_MAX)),
            [ArmBackoff(backoff)])


def _policy_restarts(policy: RestartPolicy, clean: bool) -> bool:
    if policy is RestartPolicy.ALWAYS:
        return True
    return policy is RestartPolicy.ON_FAILURE and not clean


def _backoff_over(life: Life, e: BackoffOver) -> tuple[Life, list[Effect]]:
    if life.stage is not Stage.BACKOFF:
        return life, []
    if life.stop_wanted or life.shutdown:
        return _end(life, Say("restart cancelled: stop requested"))
    return replace(life, stage=Stage.RUNNING, restarts=life.restarts + 1), [Spawn()]


def _stop(life: Life, e: StopCmd) -> tuple[Life, list[Effect]]:
    name = life.name
    stage = life.stage
    if stage is Stage.HELD:
        # The operator vouches for it: stop it like a proven leftover.
        life = replace(life, stage=Stage.RUNNING, stop_wanted=True)
        return life, [TakeOver(stop=True), Answer(True, f"stopping {name}")]
    if stage is Stage.RUNNING:
        life = replace(life, stop_wanted=True, restart_wanted=False)
        if e.stopping:
            return life, [Answer(False, f"{name} is already stopping")]
        return replace(life, stops_after=()), [RequestStop(), Answer(True, f"stopping {name}")]
    life = replace(life, stop_wanted=True)
    if stage in (Stage.NEW, Stage.BLOCKED, Stage.WAITING):
        return _never(life, "stop requested",
                    Answer(True, f"{name} will not start"))
    if stage is Stage.BACKOFF:
        return _end(life, CancelBackoff(), Say("restart cancelled: stop requested"),
                    Answer(True, f"{name} will not start"))
    return life, [AnswerEnded("stop")]


def _give_up(life: Life, e: GiveUpCmd) -> tuple[Life, list[Effect]]:
    """Kill or abandon of a process that has no live run: whatever was to start, won't."""
    if life.stage is Stage.HELD:
        return _end(replace(life, stop_wanted=True), HoldForever(),
                    Answer(True, f"left {life.name} alone"))
    if life.stage in (Stage.NEW, Stage.BLOCKED, Stage.WAITING):
        # It did something (the start is cancelled): "nothing to stop" said it did not.
        return _never(replace(life, stop_wanted=True), "stop requested",
                    Answer(True, f"{life.name} will not start"))
    if life.stage is Stage.BACKOFF:
        # It did something (the restart is cancelled): "nothing to stop" said it did not,
        # and of a kill at that.
        return _end(replace(life, stop_wanted=True), CancelBackoff(),
                    Say("restart cancelled: it was not running"),
                    Answer(True, f"{life.name} will not restart (it was waiting to; "
                                 "nothing was running)"))
    return replace(life, stop_wanted=life.stop_wanted or life.stage is Stage.RUNNING), []


def _restart(life: Life, e: RestartCmd) -> tuple[Life, list[Effect]]:
    name = life.name
    if life.leftover is not Leftover.NO:
        return life, [Answer(False, f"{name} is a leftover; it is not restarted")]
    if life.shutdown:
        return life, [Answer(False, f"{name} not restarted: everything is stopping")]
    if life.stage is Stage.RUNNING:
        if e.stopping:
            return life, [Answer(False, f"{name} is already stopping")]
        return (replace(life, restart_wanted=True, stop_wanted=True),
                [RequestStop(), Answer(True, f"restarting {name}")])
    if life.stage is Stage.BACKOFF:
        return (replace(life, stage=Stage.RUNNING, restarts=life.restarts + 1),
                [CancelBackoff(), Spawn(), Answer(True, f"restarting {name} now")])
    return _start(life, StartCmd(left_running=e.left_running, ran=e.ran))


def _start(life: Life, e: StartCmd) -> tuple[Life, list[Effect]]:
    name = life.name
    if life.leftover is not Leftover.NO:
        return life, [Answer(False, f"{name} is a leftover; it is not started again")]
    if life.shutdown:
        return life, [Answer(False, f"{name} not started: everything is stopping")]
    if life.stage is not Stage.ENDED:
        return life, [Answer(False, f"{name} is {_words(life.stage)}; start works on a "
                                    "process that has ended")]
    if e.left_running is not None:
        return life, [Answer(False, f"not started again: pid {e.left_running} is still "
                                    "running")]
    # Still blocked while its leftover lives (BlockerEnded clears that): a start then
    # waits for it again. Cleared here, it started a second copy beside a held leftover.
    life = replace(life, stage=Stage.NEW, stop_wanted=False, restart_wanted=False,
                   blocker_left=None, restarts=life.restarts + (1 if e.ran else 0),
                   backoff=BACKOFF_START)
    life, effects = _launch(life, Launch())
    return life, [*effects, Answer(True, f"starting {name}")]


def _words(stage: Stage) -> str:
    return {Stage.BLOCKED: "starting", Stage.NEW: "starting"}.get(stage, stage.value)


def _adopt(life: Life, e: AdoptCmd) -> tuple[Life, list[Effect]]:
    if life.stage is not Stage.HELD:
        return life, [Answer(False, f"{life.name} is not a held leftover; nothing to adopt")]
    return (replace(life, stage=Stage.RUNNING, adopted=True, stop_wanted=False),
            [TakeOver(stop=False),
             Answer(True, f"adopted {life.name}: it is watched, and stopped on quit")])


def _shutdown(life: Life, e: Shutdown) -> tuple[Life, list[Effect]]:
    first = not life.shutdown
    life = replace(life, shutdown=True)
    stage = life.stage
    if stage is Stage.HELD:
        # Not proven ours: never signalled unless the operator says so, and no reason to
        # wait for it either.
        return _end(replace(life, stop_wanted=True), HoldForever())
    if stage in (Stage.NEW, Stage.BLOCKED, Stage.WAITING):
        return _never(replace(life, stop_wanted=True), "everything is stopping")
    if stage is Stage.BACKOFF:
        return _end(replace(life, stop_wanted=True), CancelBackoff(),
                    Say("restart cancelled: everything is stopping"))
    if stage is not Stage.RUNNING or not first or life.stop_wanted:
        return replace(life, stop_wanted=True, restart_wanted=False), []
    life = replace(life, stop_wanted=True, restart_wanted=False)
    if e.after:
        return replace(life, stops_after=e.after, stop_stage=e.stage,
                       stop_stages=e.stages), [
            Say(f"stops after {', '.join(e.after)} (stage {e.stage} of {e.stages})"),
            Record(Kind.STAGE, (("stage", e.stage), ("of", e.stages), ("after", list(e.after))))]
    return life, [RequestStop()]


def _dependents_left(life: Life, e: DependentsLeft) -> tuple[Life, list[Effect]]:
    if not life.stops_after or life.stage is not Stage.RUNNING:
        return life, []
    if e.after:
        return replace(life, stops_after=e.after), []
    return replace(life, stops_after=()), [RequestStop()]


def _stops_after(life: Life, e: StopsAfter) -> tuple[Life, list[Effect]]:
    if life.stage is not Stage.NEW:
        return life, []
    return replace(life, stops_after=e.after), []


def _release(life: Life, e: ReleaseStop) -> tuple[Life, list[Effect]]:
    if not life.stops_after or life.stage is not Stage.RUNNING:
        return life, []
    return replace(life, stops_after=()), [RequestStop()]


def _nobody(life: Life, e: NobodyAnswers) -> tuple[Life, list[Effect]]:
    life = replace(life, interactive=False)
    if life.stage is Stage.HELD:
        return _end(replace(life, stop_wanted=True), HoldForever())
    return life, []


# -- reload: a process removed from the config, or changed in it -------------------------

def _remove(life: Life, e: RemoveCmd) -> tuple[Life, list[Effect]]:
    """A stop as any other (staged after its removed dependents), then forgotten."""
    life = replace(life, removed=True, restart_wanted=False)
    stage = life.stage
    if life.leftover is not Leftover.NO:
        return life, [Answer(False, f"{life.name} is a leftover, not in any config")]
    if stage is Stage.RUNNING:
        life = replace(life, stop_wanted=True)
        if e.stopping:
            return life, [Answer(True, "stopping")]
        if e.after:
            return replace(life, stops_after=e.after), [
                Say(f"removed from the config: stops after {', '.join(e.after)}"),
                Answer(True, f"stops after {', '.join(e.after)}")]
        return replace(life, stops_after=()), [Say("removed from the config: stopping"),
                                               RequestStop(), Answer(True, "stopping")]
    life = replace(life, stop_wanted=True)
    if stage in (Stage.NEW, Stage.BLOCKED, Stage.WAITING):
        return _end(life, Say("removed from the config: not started"),
                    Answer(True, "not started"))
    if stage is Stage.BACKOFF:
        return _end(life, CancelBackoff(), Say("removed from the config: restart cancelled"),
                    Answer(True, "restart cancelled"))
    return life, [Answer(True, "had ended"), Forget()]


def _changed(life: Life, e: ChangedCmd) -> tuple[Life, list[Effect]]:
    """Its settings changed: a running process is restarted (its stop as any other), one
    in backoff starts now, one not started yet starts with them, one that ended starts
    again."""
    life = replace(life, policy=e.policy, has_deps=e.has_deps)
    if life.leftover is not Leftover.NO:
        return life, [Answer(False, f"{life.name} is a leftover; it is not restarted")]
    if life.shutdown:
        return life, [Answer(False, "not restarted: everything is stopping")]
    stage = life.stage
    if stage is Stage.RUNNING:
        if e.stopping:
            return life, [Answer(True, "stopping; the new settings apply at its next start")]
        return (replace(life, restart_wanted=True, stop_wanted=True),
                [Say("its settings changed (reload): restarting"), RequestStop(),
                 Answer(True, "restarting")])
    if stage is Stage.BACKOFF:
        return (replace(life, stage=Stage.RUNNING, restarts=life.restarts + 1),
                [CancelBackoff(), Spawn(), Answer(True, "restarting now")])
    if stage in (Stage.NEW, Stage.BLOCKED, Stage.WAITING):
        return life, [Answer(True, "starts with the new settings")]
    if stage is Stage.ENDED:
        life, effects = _start(life, StartCmd(left_running=e.left_running, ran=e.ran))
        return life, [Answer(a.ok, "starting" if a.ok else a.text)
                      if isinstance(a, Answer) else a for a in effects]
    return life, [Answer(False, f"{life.name} is {_words(stage)}; not restarted")]


_HANDLERS: dict[type, Callable[[Life, Any], tuple[Life, list[Effect]]]] = {
    Launch: _launch, DepsLooked: _deps_looked, BlockerEnded: _blocker_ended,
    RunEnded: _run_ended, BackoffOver: _backoff_over, StopCmd: _stop, RestartCmd: _restart,
    StartCmd: _start, GiveUpCmd: _give_up, AdoptCmd: _adopt, Shutdown: _shutdown,
    DependentsLeft: _dependents_left, StopsAfter: _stops_after, ReleaseStop: _release,
    NobodyAnswers: _nobody,
    RemoveCmd: _remove, ChangedCmd: _changed,
}
