"""The inbox: every input to the core (a command from any door, a signal, a timer, a
child's exit, a notify message, a readiness result, the tree walk's findings, a reload)
is an event taken here, in order, one at a time, on the core's loop. An event about a
process goes to the step function (``life/step.py``), which alone changes the process's
state; an event about everything (stop all, the interrupt ladder) goes to the world's
step (``life/world.py``) and becomes each process's events. The effects are carried out
by the executor (``executor.py``), which writes no state; the facts an effect brings at
once (a spawn's pid) are taken before anything else, so that each input is whole.

After the inbox empties, one frozen snapshot is published: every reader reads only
snapshots. Replies to commands are answered once the snapshot that shows their effect
is out."""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from proctui.config import ProcessSpec
from proctui.core.executor import Executor
from proctui.core.life import asks
from proctui.core.life import effects as fx
from proctui.core.life import inputs as i
from proctui.core.life import machine as life
from proctui.core.life import world as w
from proctui.core.life.stages import Leftover, Stage, Why
from proctui.core.life.state import Proc
from proctui.core.life.step import Table, new_proc
from proctui.core.os.oslayer import OSLayer
from proctui.core.output.events import EventQueue
from proctui.core.reply import Done, Fault
from proctui.core.snapshot import CoreSnapshot, view_of, worst_of
from proctui.core.speak.deps import Deps
from proctui.core.store import recovery
from proctui.core.store.journal import Journal
from proctui.core.store.kinds import Kind
from proctui.core.store.rundir import RunDir
from proctui.core.view import ProcessView
from proctui.records import dataclass

PUBLISH_BETWEEN = 128  # views made between two chances for the deadlines come meanwhile
LAUNCH_SLICE = 20  # processes launched per turn of the loop: commands come in between
SLICE = 50  # processes a shutdown reaches per turn of the loop


class Journaled(Protocol):
    """A command whose sender the journal keeps (the command table's, seen from here)."""

    @property
    def op(self) -> str: ...

    def journal_fields(self) -> dict[str, object]: ...


@dataclass
class _Command:
    """A command being taken: its reply, once known, goes out with the next snapshot."""

    future: concurrent.futures.Future[Any]
    answer: Done | None = None


class Engine:
    def __init__(self, specs: Sequence[ProcessSpec], *, os_layer: OSLayer,
                 run_dir: RunDir | None, interactive: bool, events: EventQueue | None,
                 leftover_defaults: ProcessSpec | None,
                 publish: Callable[[CoreSnapshot], None],
                 clock: Callable[[], float] = time.monotonic,
                 reload_from: Callable[[], Sequence[ProcessSpec]] | None = None,
                 executor: Callable[[Engine], Executor] | None = None) -> None:
        self.specs = tuple(specs)
        self.reload_from = reload_from  # reads the config again (raises ConfigError)
        self.os = os_layer
        self._thread = threading.get_ident()  # the core's: made on its loop
        os_layer.between = self._deadlines_between
        self.run_dir = run_dir
        self.events = events
        self.leftover_defaults = leftover_defaults
        self.publish_to = publish
        self.clock = clock
        self.loop = asyncio.get_running_loop()
        self.table = Table()
        self.world = w.World(interactive=interactive)
        self.journal = Journal(run_dir)
        self.journal.on_trouble = self._journal_trouble
        self.deps = Deps(self.specs)
        # ``executor``: another executor (a test's, which fakes the OS and the clock).
        self.executor = executor(self) if executor is not None else Executor(
            self.loop, os_layer, run_dir, events, self.journal, self.post, self.table.get,
            self.table.all, self._stray, self.trouble, self._poke, self.urgent)
        self.executor.said_soon = self._said_soon
        self.seq = 0
        self.snapshot = CoreSnapshot()
        self.launched = False  # every process of the config was launched
        self.on_launched: Callable[[], None] = lambda: None
        self.poked: Callable[[], None] = lambda: None  # output arrived: readers look
        self.forget_hooks: list[Callable[[str], None]] = []  # reloads waiting
        self._inbox: deque[tuple[str | None, object]] = deque()
        self._taking = False
        self._urgent: list[tuple[str, object]] = []  # deadlines come, this turn of the loop
        self._command: _Command | None = None
        # Who sent the command being taken (the control socket's client: uid, pid, ssh,
        # what it said it is); None for the supervisor's own frontends.
        self.sender: dict[str, object] | None = None
        self._asked: set[str] = set()  # processes an agent's waiting request is about
        self._mooting: set[int] = set()  # requests found moot, their event on its way
        self._replies: list[tuple[concurrent.futures.Future[Any], Done]] = []
        self._unfinished: set[str] = set()
        self._watching: dict[str, None] = {}  # waiting for deps, or for dependents
        self._look_again = False
        self._publish_due = False
        self._world_changed = True
        self._usage_wanted = 0
        self._said_all_ended = False
        self._views: list[ProcessView] = []  # the last snapshot's, in the table's order
        self._where: dict[str, int] = {}  # name -> its place in _views
        self._worst = 0  # the exit status every outcome so far gives (see snapshot)

    # -- start-up ---------------------------------------------------------------------

    def startup(self) -> None:
        """Leftovers of an earlier run first, then every configured process, launched a
        slice at a time so that a command (a ctrl+c) is taken in between."""
        self.journal.write(Kind.BEGIN, pid=os.getpid(), processes=[s.name for s in self.specs])
        found = recovery.find(self.run_dir, self.os, self.os.boot_id(), self.specs,
                              self.leftover_defaults, self.world.interactive,
                              lambda text: self.executor.say(None, text))
        for p in found:
            self._add(p)
        leftover_of = {p.pid_name: p.name for p in found}
        for spec in self.specs:
            self._add(new_proc(spec, interactive=self.world.interactive,
                               blocked_by=leftover_of.get(spec.name),
                               shutdown=self.world.shutting_down))
        # Leftovers stop in reverse dependency order, as a shutdown does: one whose
        # dependents were left running too waits for them.
        for p in found:
            after = self._leftover_dependents(p)
            if after and p.life.leftover is Leftover.PROVEN:
                self._take(p.name, life.StopsAfter(after))
        self._launch(self.table.names())
        self.executor.housekeeping.schedule()

    def _launch(self, names: list[str]) -> None:
        for name in names[:LAUNCH_SLICE]:
            if name in self.table:
                self.post(name, life.Launch())
        rest = names[LAUNCH_SLICE:]
        if rest:
            self.loop.call_soon(self._launch, rest)
            return
        self.launched = True
        self._world_changed = True
        self.publish()  # whoever waits for the launch reads a snapshot that shows it
        self.on_launched()

    def _add(self, p: Proc) -> None:
        self.table.add(p)
        self.executor.added(p)
        self._unfinished.add(p.name)

    def add(self, p: Proc) -> None:
        """A process a reload added (its Launch comes from the caller)."""
        self._add(p)
        self._world_changed = True
    # -- the inbox --------------------------------------------------------------------

    def post(self, name: str | None, event: object) -> None:
        """An input, on the core's loop: taken now, or right after the one being taken."""
        self._inbox.append((name, event))
        if not self._taking:
            self._take_all()

    def _take_all(self, due: list[tuple[str, object]] | None = None) -> None:
        """Take the deadlines ``due`` first, then the inbox; then publish, soon."""
        self._taking = True
        try:
            if due:
                self._urgent_batch(due)
            self._drain()
        finally:
            self._taking = False
        self._publish_soon()

    def _drain(self) -> None:
        """Take the inbox, and between two of its events any deadline that has come
        meanwhile: a long batch (the looks after 2,000 kills, each a step and its
        bookkeeping) held the loop, and the deadlines' timers waited for its end (the
        last SIGKILL of 500 landed half a second late)."""
        while self._inbox:
            come = self.executor.due_deadlines(self.clock())
            if come:
                self._urgent_batch(come)
                continue
            target, ev = self._inbox.popleft()
            self._take(target, ev)

    def urgent(self, name: str, event: object) -> None:
        """A deadline come: every one that comes in this turn of the loop is taken
        together, once the timers have all fired, and their signals go out before any
        of their bookkeeping (journal, notices, PID files, the next deadline). 2,000
        SIGKILLs due at one instant each waited for the bookkeeping of those before it,
        and the last went out seconds late."""
        self._urgent.append((name, event))
        if len(self._urgent) == 1:
            self.loop.call_soon(self._take_urgent)

    def _take_urgent(self) -> None:
        due, self._urgent = self._urgent, []
        if self._taking:  # (never: the loop calls us between drains)
            self._inbox.extend(due)
            return
        self._take_all(due)

    def _deadlines_between(self) -> None:
        """During a long walk of /proc (160 ms at 4,000 processes) that nothing is being
        taken around: the deadlines come meanwhile go now, their signals first. Their
        own looks use the walk before (no walk inside a walk); the rest of what they
        bring waits in the inbox for the walk's end."""
        if self._taking or threading.get_ident() != self._thread:
            return
        come = self.executor.due_deadlines(self.clock())
        if not come:
            return
        self._taking = True
        try:
            with self.os.one_walk():
                self._urgent_batch(come)
        finally:
            self._taking = False
        self.loop.call_soon(self._drain_soon)

    def _drain_soon(self) -> None:
        if not self._taking and self._inbox:
            self._take_all()

    def _urgent_batch(self, due: list[tuple[str, object]]) -> None:
        """Deadlines come together: each one's step, its signal sent at once; then the
        bookkeeping of them all, and the facts the signals brought. A deadline that
        comes during that bookkeeping has its signal sent before the next piece of it:
        the bookkeeping of 2,000 SIGKILLs takes longer than the spread of their
        deadlines, and the last of them waited for it (130 ms late)."""
        later: deque[tuple[str, fx.Effect]] = deque()
        facts: deque[tuple[str, object]] = deque()
        self._signals_first(due, later, facts)
        while later or facts:
            come = self.executor.due_deadlines(self.clock())
            if come:
                self._signals_first(come, later, facts)
            elif later:
                name, effect = later.popleft()
                now = self.table.get(name)
                if now is not None:
                    facts.extend((name, fact) for fact in self._effect(now, effect))
            else:
                name, fact = facts.popleft()
                self._take(name, fact)

    def _signals_first(self, due: list[tuple[str, object]],
                       later: deque[tuple[str, fx.Effect]],
                       facts: deque[tuple[str, object]]) -> None:
        for name, event in due:
            if name not in self.table:
                continue
            p, effects = self.table.take(name, event, self.clock())
            self._watch(p)
            for effect in effects:
                if type(effect) is fx.Signal:
                    facts.extend((name, fact) for fact in self._effect(p, effect))
                else:
                    later.append((name, effect))

    def command(self, execute: Callable[[Engine], object],
                future: concurrent.futures.Future[Any],
                journal: tuple[Journaled, dict[str, object]] | None = None,
                who: dict[str, object] | None = None) -> None:
        """A command from any door: ``execute`` posts its events (or answers at once);
        the reply is the first answer the step function gives, with the next snapshot.
        ``journal``: the request and who sent it, journaled first; ``who``: who sent it
        (``sender`` while it is taken), whether it is journaled or not."""
        if journal is not None:
            self.journal_command(*journal)
        cmd = _Command(future)
        self._command = cmd
        self.sender = who
        try:
            result = execute(self)
        except Exception as e:  # a command the core refused outright: said, not raised
            result = Done(False, str(e).strip("'\""), Fault.REFUSED)
        finally:
            self._command = None
            self.sender = None
        if isinstance(result, concurrent.futures.Future):
            # It answers by itself, later (a reload waits for what it removes).
            def answered(done: concurrent.futures.Future[Any]) -> None:
                if not future.done():
                    future.set_result(done.result())

            result.add_done_callback(answered)
            return
        answer = result if isinstance(result, Done) else cmd.answer or Done(True)
        self._replies.append((future, answer))
        self._publish_soon()

    def ask(self, name: str, event: object) -> Done | None:
        """Take ``event`` now, and the step function's answer to it (a reload's changes
        are answered this way, one by one)."""
        cmd, outer = _Command(concurrent.futures.Future()), self._command
        self._command = cmd
        try:
            self.post(name, event)
        finally:
            self._command = outer
        return cmd.answer

    def left_running(self, name: str) -> int | None:
        """A pid of the process's last run still alive (it was abandoned, or could not be
        killed): nothing starts beside it."""
        p = self.table.get(name)
        run = p.run if p is not None else None
        if run is not None and run.outcome is not None and run.outcome.left_running \
                and run.pgid is not None and self.os.group_alive(run.pgid):
            return run.pid
        return None

    def journal_command(self, request: Journaled, who: dict[str, object]) -> None:
        """A command that came over the control socket, and who sent it (the uid the
        kernel vouches for, the SSH client's address): journaled before its effects."""
        name = getattr(request, "name", None)
        self.journal.write(Kind.COMMAND, name if isinstance(name, str) else None, None,
                           op=request.op, **request.journal_fields(), **who)

    def notice(self, text: str) -> None:
        """A line of proctui's own, about itself (the journal and headless output)."""
        self.executor.say(None, text)
        self.journal.write(Kind.NOTICE, text=text)

    def want_usage(self, wanted: bool) -> None:
        """Sample CPU and memory while at least one frontend wants them (each True
        counts once, until the same frontend says False)."""
        self._usage_wanted = max(0, self._usage_wanted + (1 if wanted else -1))
        housekeeping = self.executor.housekeeping
        if self._usage_wanted > 0 and not housekeeping.want_usage:
            housekeeping.changed()  # its figures within a second, not at an idle walk
        housekeeping.want_usage = self._usage_wanted > 0

    def output_changed(self, name: str) -> None:
        """Its pane changed without a change of its state (cleared): views are made
        anew."""
        self.table.changed.add(name)
        self._publish_soon()

    def look_again(self) -> None:
        self._looks()
        self._publish_soon()

    def dependents_of(self, p: Proc) -> tuple[str, ...]:
        return self._dependents(p)

    def _take(self, name: str | None, event: object) -> None:
        """One event and the facts its effects bring at once, depth first."""
        if name is None:
            if isinstance(event, _Slice):
                event.run()
            else:
                self._take_world(event)
            return
        local: deque[tuple[str, object]] = deque([(name, event)])
        while local:
            target, ev = local.popleft()
            if target not in self.table:
                continue  # forgotten (a reload removed it): late facts go nowhere
            p, effects = self.table.take(target, ev, self.clock())
            self._watch(p)
            for effect in effects:
                for fact in self._effect(p, effect):
                    local.append((target, fact))
        if name in self._asked:
            self._asks_still_mean(name)
        if self._look_again:
            self._look_again = False
            self._looks()

    def _effect(self, p: Proc, effect: fx.Effect) -> list[object]:
        kind = type(effect)
        if isinstance(effect, fx.Answer):
            cmd = self._command
            if cmd is not None and cmd.answer is None:
                cmd.answer = Done(effect.ok, effect.text, effect.fault)
            return []
        if kind is fx.LookAtDeps:
            waiting, failed = self.deps.look(p, self.table.get)
            return [life.DepsLooked(waiting, failed)]
        if kind is fx.LookAgain:
            self._look_again = True
            return []
        if kind is fx.Finished:
            self._finished(p)
            return []
        if kind is fx.Forget:
            self._forget(p)
            return []
        try:
            return self.executor.do(p, effect)
        except Exception as e:  # one failing effect must not lose the rest
            self.loop.call_exception_handler({"message": f"{p.name}: {effect}",
                                              "exception": e})
            return []

    def _watch(self, p: Proc) -> None:
        """Who looks again when something changes: kept apart, so that a thousand endings
        cost a thousand looks, not a million."""
        if p.life.stage is Stage.WAITING or p.life.stops_after:
            self._watching[p.name] = None
        else:
            self._watching.pop(p.name, None)
        if not p.over:
            self._unfinished.add(p.name)

    def _looks(self) -> None:
        """Something others may wait for changed (a start, a readiness, an ending): every
        process waiting for its dependencies, or for its dependents to stop, looks again."""
        for name in list(self._watching):
            p = self.table.get(name)
            if p is None:
                self._watching.pop(name, None)
            elif p.life.stage is Stage.WAITING:
                self._take(name, life.DepsLooked(*self.deps.look(p, self.table.get)))
            elif p.life.stops_after:
                self._take(name, life.DependentsLeft(self._dependents(p)))

    def _dependents(self, p: Proc) -> tuple[str, ...]:
        """Who must end before ``p`` stops: its live dependents (for a leftover, the
        leftovers of its dependents)."""
        if not p.is_leftover:
            return self.deps.live_dependents(p, self.table.get)
        return self._leftover_dependents(p)

    def _leftover_dependents(self, p: Proc) -> tuple[str, ...]:
        names = self.deps.dependents.get(p.pid_name, [])
        return tuple(o.name for o in self.table.all()
                     if o.is_leftover and o.pid_name in names and not o.over)

    def _finished(self, p: Proc) -> None:
        self._unfinished.discard(p.name)
        if not self._unfinished:
            self._world_changed = True
            if self.launched and self.world.shutting_down:
                self._all_ended_after_shutdown()
            if self.events is not None:
                self.events.wake()
        if p.is_leftover:
            last = p.last
            pid = last.pid if last is not None and last.left_running else None
            for other in self.table.all():
                if other.blocked_by == p.name:
                    self._inbox.append((other.name, life.BlockerEnded(pid)))
        self._look_again = True

    def _all_ended_after_shutdown(self) -> None:
        """Everything has ended after a shutdown: journaled once, with the exit status
        the summary will show."""
        if self._said_all_ended:
            return
        self._said_all_ended = True
        status = worst_of([x.worst for x in self.table.all()], self.world)
        self.journal.write(Kind.ALL_ENDED, exit_status=max(status, 1) if self.world.crash
                           else status)

    def _forget(self, p: Proc) -> None:
        """A process removed by a reload has ended: no name, no view, no commands; its
        last word stays for the summary."""
        self.table.forget(p.name)
        self._unfinished.discard(p.name)
        self._watching.pop(p.name, None)
        self._set_world(w.Removed(p.name, p.last))
        if p.name in self._asked:
            self._asks_still_mean(p.name)
        self.journal.write(Kind.NOTICE, p.name, text="removed from the config (reload)")
        for hook in list(self.forget_hooks):
            hook(p.name)

    # -- everything at once -----------------------------------------------------------

    def _take_world(self, event: object) -> None:
        decided = self._set_world(event)  # type: ignore[arg-type]
        if decided.asks is not None:
            self._asks_said(decided.asks)
        if decided.first:  # everything began to stop: a request to stop it means nothing
            why = self.world.shutdown_why or Why.OPERATOR
            self._asks_said(self._set_world(asks.Stopping(why.value, self.clock())).asks)
        for text in decided.said:
            self.executor.say(None, text)
            self.journal.write(Kind.NOTICE, text=text)
        if decided.trouble is not None:
            area, trouble = decided.trouble
            said = trouble if trouble is not None else f"{area}: written again"
            self.executor.say(None, said)
            self.journal.write(Kind.NOTICE, text=said)
        if decided.interactive is not None:
            for name in self.table.names():
                self._take(name, i.InteractiveCmd(decided.interactive))
        if decided.rung is w.Rung.STOP:
            self._stop_all(decided)
        elif decided.rung is w.Rung.KILL:
            self._each_active(i.KillCmd())
        elif decided.rung is w.Rung.ABANDON:
            if decided.first:
                self._journal_shutdown(Why.OPERATOR, True, abandon=True)
            self._each_active(i.AbandonCmd(), abandon=True)

    # -- agents' requests for a decision ----------------------------------------------------

    def _asks_said(self, said: asks.Said | None) -> None:
        """Carry out what the requests' step decided: the reply to the command that
        brought it, the journal (who asked, who answered) and a line in the process's
        pane, the lapse's timer, and a grant, as the operator's own command."""
        if said is None:
            return
        if said.reply is not None and self._command is not None and \
                self._command.answer is None:
            self._command.answer = said.reply
        who = self.sender or {}
        if said.new is not None:
            a = said.new
            self.journal.write(Kind.ASK, a.name or None, None, id=a.id, choice=a.choice,
                               why=a.why, **who)
            self.executor.say(a.name or None, f"{a.asker} asks to {a.what} (request {a.id}): "
                                              f"{a.why}")
            self.executor.later(max(0.0, a.expires_at - self.clock()), self._ask_lapsed, a.id)
        for a in said.ended:
            self._mooting.discard(a.id)
            answered = a.state in (asks.GRANTED, asks.DENIED)
            self.journal.write(Kind.ANSWER, a.name or None, None, id=a.id, choice=a.choice,
                               answer=a.state, text=a.answer, **(who if answered else {}))
            self.executor.say(a.name or None, f"request {a.id} ({a.what}): {a.answer}")
        granted = said.granted
        if granted is not None:
            # By name: the run is still the one asked about. Its end is seen only after
            # a look at its group (a later turn of the loop), which makes the request
            # moot before any answer; a new run cannot start in between.
            if granted.choice == "kill":
                self._inbox.append((granted.name, i.KillCmd()))
            elif granted.choice == "abandon":
                self._inbox.append((granted.name, i.AbandonCmd()))
            else:
                self._inbox.append((None, w.StopAll(Why.GRANTED)))
        self._asked = {a.name for a in self.world.asks.waiting if a.name}

    def _ask_lapsed(self, number: int) -> None:
        self.post(None, asks.Expired(number, self.clock()))

    def _asks_still_mean(self, name: str) -> None:
        """A process an agent's request is about changed: once the run it was asked
        about has ended (or the process is gone), the request means nothing."""
        p = self.table.get(name)
        for a in self.world.asks.waiting:
            if a.name != name or a.id in self._mooting:
                continue
            run = p.run if p is not None else None
            if run is not None and run.number == a.run and p is not None and p.active:
                continue
            self._mooting.add(a.id)
            if p is None:
                why = f"{name} was removed from the config meanwhile"
            elif run is not None and run.number == a.run:
                ended = run.outcome or p.last
                why = f"{name} ended meanwhile" + (f" ({ended.text})" if ended else "")
            else:
                why = f"{name} ended meanwhile, and has started again since"
            self._inbox.append((None, asks.Moot(a.id, f"{why}: nothing left to decide",
                                                self.clock())))

    def _set_world(self, event: w.WorldEvent) -> w.Decided:
        new, decided = w.world_step(self.world, event)
        if new is not self.world:
            self.world = new
            self._world_changed = True
        return decided

    def _journal_shutdown(self, why: Why, ordered: bool, abandon: bool = False) -> None:
        self.journal.write(Kind.SHUTDOWN, why=why.value, ordered=ordered,
                           abandon=abandon or None)

    def _stop_all(self, d: w.Decided) -> None:
        """Every stop at once, in slices: between slices the loop sees the processes that
        already ended, so a thousand stops never delay the first one's ending. With
        dependencies, in stages: a process waits for everything that depends on it to
        end first (``ordered=False``: now, regardless of order)."""
        why = d.why or Why.OPERATOR
        if d.first:
            self._journal_shutdown(why, d.ordered)
        staged = d.ordered and self.deps.any
        if not d.ordered:
            for name in self.table.names():
                self._take(name, life.ReleaseStop())
        todo = self.table.names()
        self.executor.walk()  # a fresh walk: escapees get the stop signal too

        def next_slice() -> None:
            with self.os.one_walk():
                for name in todo[:SLICE]:
                    p = self.table.get(name)
                    if p is None:
                        continue
                    after = self._dependents(p) if staged and p.active else ()
                    self._take(name, life.Shutdown(why, after,
                                                   self.deps.stage.get(p.spec.name, 0),
                                                   self.deps.stages))
            del todo[:SLICE]
            if todo:
                self.loop.call_soon(lambda: self.post(None, _Slice(next_slice)))

        next_slice()

    def _each_active(self, event: object, abandon: bool = False) -> None:
        for name in self.table.names():
            self._take(name, life.ReleaseStop())  # held stops: the kill or abandon reaches them
        for name in self.table.names():
            p = self.table.get(name)
            if p is None:
                continue
            if p.active or (abandon and p.life.stage is Stage.HELD):
                self._take(name, event)
            elif abandon:
                self._take(name, life.Shutdown(Why.OPERATOR))

    # -- what the executor and the sensors say about everything -------------------------

    def _stray(self, pid: int, cmdline: str) -> None:
        self.post(None, w.Strays(tuple(self.executor.housekeeping.strays)))
        self.executor.say(None, f"pid {pid} ({cmdline[:60]}) was left behind by one of these "
                                "processes (it left its group and cleared its environment, "
                                "so proctui cannot tell which); it is not signalled")

    def trouble(self, area: str, text: str | None) -> None:
        """Something keeps proctui from keeping a promise about ``area``, or no longer
        does (None): said once as it begins and as it ends, held for status until then."""
        self.post(None, w.Trouble(area, text))

    def _journal_trouble(self, why: str | None) -> None:
        self.trouble("the journal", None if why is None else
                     f"journal {self.journal.path} not written: {why} (entries are lost "
                     "until there is room; a journal-gap entry will say how many)")

    def _poke(self) -> None:
        self.poked()

    # -- publication ------------------------------------------------------------------

    def _said_soon(self) -> None:
        if not self._taking:  # (in a drain, its publication is coming anyway)
            self._publish_soon()

    def _publish_soon(self) -> None:
        if self._publish_due:
            return
        if not self.table.changed and not self._world_changed and not self._replies \
                and not self.table.order_changed and not self.executor.said_pending:
            return
        self._publish_due = True
        self.loop.call_soon(self.publish)

    def publish(self) -> None:
        """One frozen snapshot of everything, then the words and replies it shows.
        Making 2,000 views again (every process changed: a shutdown) takes 70 ms, and
        a deadline that comes meanwhile is taken in between; what it changes waits for
        the next publication, and so do the words it brought."""
        if self._taking:
            self._publish_due = False
            self._publish_soon()  # (asked for in the middle of a drain: after it)
            return
        self._publish_due = False
        changed, self.table.changed = self.table.changed, set()
        order_changed, self.table.order_changed = self.table.order_changed, False
        world_changed, self._world_changed = self._world_changed, False
        replies, self._replies = self._replies, []
        said = self.executor.said_count
        all_ended = self.launched and not self._unfinished
        journal_seq = self.journal.seq
        seq = self.seq + 1 if (changed or world_changed or order_changed) else self.seq
        buffers = self.executor.buffers
        if order_changed:
            # A process came or went (start-up, a reload): the order is made anew.
            procs = self.table.all()
            views = []
            for n, p in enumerate(procs, 1):
                if n % PUBLISH_BETWEEN == 0:
                    self._deadlines_between()
                views.append(view_of(p, buffers[p.name].mark(), seq, self.deps))
            self._views = views
            self._where = {p.name: i for i, p in enumerate(procs)}
            self._worst = max([self._worst, *(p.worst for p in procs)])
        else:
            # Only what changed is made again: a publication costs what changed, not
            # the number of processes (2,000 of them made each outcome cost 1 ms).
            for n, name in enumerate(changed, 1):
                if n % PUBLISH_BETWEEN == 0:
                    self._deadlines_between()
                now = self.table.get(name)
                if now is not None and name in self._where:
                    self._views[self._where[name]] = view_of(now, buffers[name].mark(), seq,
                                                             self.deps)
                    self._worst = max(self._worst, now.worst)
        self.seq = seq
        self.snapshot = CoreSnapshot.of(
            seq=seq, views=tuple(self._views), world=self.world, launched=self.launched,
            all_ended=all_ended, journal_seq=journal_seq, worst=self._worst)
        self.publish_to(self.snapshot)
        self.executor.flush_said(said)  # the words after the state they speak of
        if self.events is not None:
            self.events.said(seq)
        for future, answer in replies:
            if not future.done():
                future.set_result(answer)
        self._publish_soon()  # (what a deadline taken in between changed)

    def answer_later(self, future: concurrent.futures.Future[Any], answer: Done) -> None:
        """A reply that comes after the command was taken (a reload's)."""
        self._replies.append((future, answer))
        self._world_changed = True
        self._publish_soon()

    # -- the end ----------------------------------------------------------------------

    def close(self) -> None:
        for a in self.world.asks.waiting:  # nobody can answer it now
            self.journal.write(Kind.ANSWER, a.name or None, id=a.id, choice=a.choice,
                               answer="ended", text="the supervisor ended")
        self.executor.flush_said()
        self.journal.write(Kind.END)
        self.journal.close()
        self.executor.close(lambda name: self._output_path(name))

    def _output_path(self, name: str) -> str | None:
        p = self.table.get(name)
        if p is None or self.run_dir is None:
            return None
        return self.run_dir.output_path(p.pid_name).name


@dataclass(frozen=True, slots=True)
class _Slice:
    """The next slice of a shutdown: an input like any other, so it waits its turn."""

    run: Callable[[], None]
