"""The one inbox of a process's life: every event (a command, a start-up, a run's end, a
dependency met, a backoff over, a shutdown) is taken here, in order, one at a time, by the
life machine; then its effects are carried out. An effect that leads to another event
queues it behind the current one. This is the only writer of a process's ``life``."""

from __future__ import annotations

import asyncio
import threading
import time
from collections import deque
from collections.abc import Callable

from proctui.core.life import machine as life
from proctui.core.life.machine import Stage
from proctui.core.life.outcome import setting
from proctui.core.life.words import not_running
from proctui.core.process import Managed
from proctui.core.speak.deps import Deps
from proctui.core.store import recovery
from proctui.core.view import Reply


class Inbox:
    def __init__(self, loop: asyncio.AbstractEventLoop, processes: list[Managed], deps: Deps,
                 *, spawn: Callable[[Managed], object],
                 take_over: Callable[[Managed, bool], None],
                 notice: Callable[[Managed | None, str], None],
                 journal: Callable[..., None], publish: Callable[[Managed], None],
                 all_ended: Callable[[], None],
                 forget: Callable[[Managed], None] = lambda m: None) -> None:
        self.loop = loop
        self.processes = processes
        self.deps = deps
        self.spawn = spawn
        self.take_over = take_over
        self.notice = notice
        self.journal = journal
        self._publish = publish
        self.all_ended = all_ended  # called each time the last unfinished life ends
        self.forget = forget  # a process removed by a reload, once its life is over
        self._inbox: deque[tuple[Managed, life.Event]] = deque()
        self._taking = False
        # Who looks again when something changes: kept apart, so that a thousand endings
        # cost a thousand looks, not a million.
        self._watching: dict[Managed, None] = {}  # waiting for deps, or for dependents
        # Lives still going; read from other threads through all_done, so that "has
        # everything ended?" costs nothing however many processes there are.
        self.unfinished: set[str] = set()
        self.all_done = threading.Event()

    def post(self, m: Managed, event: life.Event) -> Reply | None:
        """Take ``event`` for ``m``; the reply when it was a command (None when it came
        while another event was being taken: it is taken right after)."""
        self._inbox.append((m, event))
        if self._taking:
            return None
        self._taking = True
        reply: Reply | None = None
        first = True
        try:
            while self._inbox:
                target, ev = self._inbox.popleft()
                answer = self._take(target, ev)
                if first:
                    reply, first = answer, False
        finally:
            self._taking = False
        return reply

    def _take(self, m: Managed, event: life.Event) -> Reply | None:
        before = m.life
        m.life, effects = life.step(before, event)
        if not m.life.over and m.name not in self.unfinished:
            self.unfinished.add(m.name)
            self.all_done.clear()
        reply = None
        for effect in effects:
            try:
                answer = self._apply(m, effect)
            except Exception as e:  # one failing effect must not lose the rest
                self.loop.call_exception_handler({"message": f"{m.name}: {effect}",
                                                  "exception": e})
                answer = None
            if answer is not None:
                reply = answer
        if m.life.stage is Stage.WAITING or m.life.stops_after:
            self._watching[m] = None
        else:
            self._watching.pop(m, None)
        if m.life.stage is Stage.HELD and before.stage is not Stage.HELD:
            self.notice(m, recovery.held_words(m))
        if m.life.over and not before.over:
            self._finished(m)
        self._publish(m)
        return reply

    def _apply(self, m: Managed, effect: life.Effect) -> Reply | None:
        if isinstance(effect, life.Spawn):
            self.spawn(m)
        elif isinstance(effect, life.TakeOver):
            self.take_over(m, effect.stop)
        elif isinstance(effect, life.RequestStop):
            if m.active and m.run is not None:
                m.run.request_stop()
        elif isinstance(effect, life.LookAtDeps):
            waiting, failed = self.deps.look(m)
            self._inbox.append((m, life.DepsLooked(waiting, failed)))
        elif isinstance(effect, life.ArmBackoff):
            self._arm_backoff(m, effect.delay)
        elif isinstance(effect, life.CancelBackoff):
            if m.backoff_timer is not None:
                m.backoff_timer.cancel()
            m.backoff_timer = m.restart_at = None
        elif isinstance(effect, life.Say):
            self.notice(m, effect.text)
        elif isinstance(effect, life.Record):
            self.journal(effect.kind, m.name, **dict(effect.data))
        elif isinstance(effect, life.HoldForever):
            outcome = recovery.held_outcome(m)
            m.outcomes.append(outcome)
            m.held = ""
            self.notice(m, outcome.text)
        elif isinstance(effect, life.Answer):
            return Reply(effect.ok, effect.text)
        elif isinstance(effect, life.AnswerEnded):
            return not_running(m, effect.verb)
        elif isinstance(effect, life.Forget):
            self._watching.pop(m, None)
            self.forget(m)
        return None

    def _arm_backoff(self, m: Managed, delay: float) -> None:
        m.restart_at = time.monotonic() + delay
        self.notice(m, f"restarting in {setting(delay)} (restart = {m.spec.restart.value})")

        def over() -> None:
            m.backoff_timer = None
            m.restart_at = None
            self.post(m, life.BackoffOver())

        m.backoff_timer = self.loop.call_later(delay, over)

    def _finished(self, m: Managed) -> None:
        m.restart_at = None
        self.unfinished.discard(m.name)
        if not self.unfinished:
            self.all_done.set()
            self.all_ended()
        if m.leftover:
            for other in self.processes:
                if other.blocked_by is m:
                    other.blocked_by = None
                    last = m.outcomes[-1] if m.outcomes else None
                    pid = last.pid if last is not None and last.left_running else None
                    self._inbox.append((other, life.BlockerEnded(pid)))
        self.look_again()

    def look_again(self) -> None:
        """Something others may wait for changed (a start, a readiness, an ending): every
        process waiting for its dependencies, or for its dependents to stop, looks again."""
        for m in list(self._watching):
            if m.life.stage is Stage.WAITING:
                waiting, failed = self.deps.look(m)
                self.post(m, life.DepsLooked(waiting, failed))
            elif m.life.stops_after:
                self.post(m, life.DependentsLeft(self.dependents_of(m)))

    def dependents_of(self, m: Managed) -> tuple[str, ...]:
        """Who must end before ``m`` stops: its live dependents (for a leftover, the
        leftovers of its dependents)."""
        if not m.leftover:
            return self.deps.live_dependents(m)
        names = self.deps.dependents.get(m.pid_name, [])
        return tuple(lo.name for lo in self.processes
                     if lo.leftover and lo.pid_name in names and not lo.over)

