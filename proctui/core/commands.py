"""The operator's commands, carried out on the core's loop. Each becomes an event for the
life machine (what may start, restart or stop is its decision) or for the run's stop
machine (kill, abandon, extend, wait), and answers with a Reply that says what happened
or why nothing did, in words a frontend can show as they are."""

from __future__ import annotations

from proctui.core.engine import Engine
from proctui.core.life import machine as life
from proctui.core.life.machine import Stage, Why
from proctui.core.life.outcome import Who, setting
from proctui.core.life.words import not_running
from proctui.core.process import Managed
from proctui.core.view import Action, Reply

SLICE_WALK_AGE = 1.0  # seconds a shutdown's later slices reuse its walk (the walks' pace)


class Commands:
    def __init__(self, engine: Engine) -> None:
        self.e = engine

    def get(self, name: str) -> Managed:
        try:
            return self.e.by_name[name]
        except KeyError:
            raise KeyError(f"no process named {name!r}") from None

    def _post(self, m: Managed, event: life.Event) -> Reply:
        return self.e.post(m, event) or Reply(True)

    # -- stopping ---------------------------------------------------------------------

    def stop(self, m: Managed) -> Reply:
        stopping = m.active and m.run is not None and m.run.state.phase.stopping
        return self._post(m, life.StopCmd(stopping=stopping))

    def stop_all(self, ordered: bool = True, chunk: int = 50,
                 why: Why = Why.OPERATOR) -> Reply:
        """Every stop at once, in slices: between slices the loop sees the processes
        that already ended, so a thousand stops never delay the first one's ending. With
        dependencies, in stages: a process waits for everything that depends on it to
        end first (``ordered=False``: now, regardless of order)."""
        e = self.e
        already = e.shutdown_why is not None
        e.begin_shutdown(why, ordered=ordered)
        staged = ordered and e.deps.any
        if not ordered:
            for m in e.processes:
                e.post(m, life.ReleaseStop())
        todo = list(e.processes)
        e.lineage.update(e._runs)  # a fresh walk: escapees get the stop signal too

        def next_slice() -> None:
            # The later slices, a moment behind, reuse that walk rather than walk 2,000
            # again.
            e.lineage.update(e._runs, max_age=SLICE_WALK_AGE)
            with e.os.one_walk():
                for m in todo[:chunk]:
                    after = e.inbox.dependents_of(m) if staged and m.active else ()
                    e.post(m, life.Shutdown(why, after, e.deps.stage.get(m.spec.name, 0),
                                            e.deps.stages))
            del todo[:chunk]
            if todo:
                e.loop.call_soon(next_slice)

        next_slice()
        if not ordered and e.deps.any:
            return Reply(True, "stopping everything now, regardless of order")
        # (X during q said nothing at all: everything was stopping already.)
        return Reply(True, "everything is already stopping" if already else
                     "stopping everything")

    def act(self, m: Managed, action: Action) -> Reply:
        run = m.run
        if not m.active or run is None:
            if action is Action.WAIT:
                return not_running(m, action.value)
            reply = self.e.post(m, life.GiveUpCmd())
            return reply or not_running(m, action.value)
        if action is not Action.WAIT:
            self.e.post(m, life.GiveUpCmd())  # whatever ends this run, nothing restarts
        if action is Action.KILL:
            run.kill()
            return Reply(True, f"SIGKILL sent to {m.name}")
        if action is Action.ABANDON:
            run.abandon()
            return Reply(True, f"abandoned {m.name}")
        if not run.state.phase.stopping:
            return Reply(False, f"{m.name} is not stopping; nothing to wait for")
        run.wait_forever()
        return Reply(True, f"waiting for {m.name} without a deadline")

    def each_active(self, action: Action) -> Reply:
        e = self.e
        for m in e.processes:
            e.post(m, life.ReleaseStop())  # held stops: the kill or abandon reaches them
        if action is Action.ABANDON:
            e.begin_shutdown(Why.OPERATOR, abandon=True)
        for m in e.processes:
            if m.active or (action is Action.ABANDON and m.life.stage is Stage.HELD):
                self.act(m, action)
            elif action is Action.ABANDON:
                e.post(m, life.Shutdown(Why.OPERATOR))
        return Reply(True)

    def extend(self, m: Managed, by: float | None, who: Who = Who.OPERATOR) -> Reply:
        step = m.spec.extend_step if by is None else by
        run = m.run
        if not m.active or run is None or not run.state.phase.stopping:
            if m.active:
                return Reply(False, f"nothing to extend: {m.name} is not stopping")
            return not_running(m, "extend")
        if not run.extend(step, who):
            return Reply(False, f"{m.name}'s deadline did not move")
        return Reply(True, f"{m.name}: deadline extended by {setting(step)}")

    def set_interactive(self, interactive: bool) -> Reply:
        """Nobody can answer any more (the terminal hung up): "ask" acts as "kill", a
        process already parked for a decision is killed now, and a held leftover is left
        alone."""
        self.e.interactive = interactive  # for the runs spawned from now on
        for m in self.e.processes:
            if m.active and m.run is not None:
                m.run.set_interactive(interactive)
            elif not interactive:
                self.e.post(m, life.NobodyAnswers())
        return Reply(True)

    # -- starting ---------------------------------------------------------------------

    def _left_running(self, m: Managed) -> int | None:
        last = m.run
        if last is not None and last.outcome is not None and last.outcome.left_running \
                and last.pgid is not None and self.e.os.group_alive(last.pgid):
            return last.pid
        return None

    def restart(self, m: Managed) -> Reply:
        stopping = m.active and m.run is not None and m.run.state.phase.stopping
        return self._post(m, life.RestartCmd(stopping=stopping, ran=m.run is not None,
                                             left_running=self._left_running(m)))

    def start(self, m: Managed) -> Reply:
        return self._post(m, life.StartCmd(left_running=self._left_running(m),
                                           ran=m.run is not None))

    def adopt(self, m: Managed) -> Reply:
        """Take a held leftover as this project's own: watch it, stop it on quit."""
        return self._post(m, life.AdoptCmd())

    def clear(self, m: Managed) -> Reply:
        self.e.clear_output(m)
        name = m.spec.name
        return Reply(True, f"{name}'s pane cleared (proctui logs {name} still has its lines)")
