"""The operator's commands, carried out on the core's loop. Each answers with a Reply
that says what happened or why nothing did, in words a frontend can show as they are."""

from __future__ import annotations

from proctui.core.engine import Engine
from proctui.core.machine import Phase
from proctui.core.outcome import Who, pids_phrase, setting
from proctui.core.process import Managed
from proctui.core.view import Action, Reply


class Commands:
    def __init__(self, engine: Engine) -> None:
        self.e = engine

    def get(self, name: str) -> Managed:
        try:
            return self.e.by_name[name]
        except KeyError:
            raise KeyError(f"no process named {name!r}") from None

    def _ended(self, m: Managed, verb: str) -> Reply:
        """Why ``verb`` cannot act on a process that is not running."""
        last = m.outcomes[-1] if m.outcomes else None
        if last is not None and last.left_running and last.left_pids:
            return Reply(False, f"{m.name} is not watched any more ({last.kind.value}): "
                                f"{pids_phrase(last.left_pids)} left running; proctui "
                                f"never signals it again, so it cannot {verb} it")
        if m.phase is Phase.BACKOFF:
            return Reply(False, f"{m.name} is waiting to restart; nothing to {verb}")
        if m.phase is Phase.WAITING:
            return Reply(False, f"{m.name} has not started yet; nothing to {verb}")
        if last is not None:
            return Reply(False, f"{m.name} has already ended ({last.text}); nothing to "
                                f"{verb}")
        return Reply(False, f"{m.name} is not running; nothing to {verb}")

    # -- stopping ---------------------------------------------------------------------

    def stop(self, m: Managed) -> Reply:
        if m.phase is Phase.HELD:
            m.phase = Phase.STARTING
            m.held = ""
            m.wake.set()  # the operator vouches for it: stop it like a proven leftover
            self.e.changed(m)
            return Reply(True, f"stopping {m.name}")
        was_waiting = m.phase in (Phase.BACKOFF, Phase.WAITING, Phase.STARTING)
        m.stop_wanted = True
        m.wake.set()  # cancels a pending restart or start
        if m.active and m.run is not None:
            if m.run.state.phase.stopping:
                return Reply(False, f"{m.name} is already stopping")
            m.run.request_stop()
            return Reply(True, f"stopping {m.name}")
        if was_waiting and not m.done.is_set():
            return Reply(True, f"{m.name} will not start")
        return self._ended(m, "stop")

    def stop_all(self, ordered: bool = True, chunk: int = 50) -> Reply:
        """Every stop at once, in slices: between slices the loop sees the processes
        that already ended, so a thousand stops never delay the first one's ending. With
        dependencies, in stages: a process waits for everything that depends on it to
        end first (``ordered=False``: now, regardless of order)."""
        self.e.shutting_down = True
        deps = self.e.deps
        if not ordered:
            deps.release_all()
        todo = list(self.e.processes)

        def next_slice() -> None:
            self.e.lineage.update(self.e._runs)  # one walk for the slice
            for m in todo[:chunk]:
                if m.phase is Phase.HELD:
                    # Not proven ours: never signalled unless the operator says so, and
                    # no reason to wait for it either.
                    self.act(m, Action.ABANDON)
                elif ordered and deps.any and m.active and deps.defer(m, self.stop):
                    m.stop_wanted = True
                    m.wake.set()
                    self.e.notice(m, f"stops after {', '.join(m.stops_after)} (stage "
                                     f"{m.stage} of {m.stages})")
                    self.e.journal.write("stage", m.name, stage=m.stage, of=m.stages,
                                         after=list(m.stops_after))
                else:
                    self.stop(m)
            del todo[:chunk]
            if todo:
                self.e.loop.call_soon(next_slice)

        next_slice()
        return Reply(True, "stopping everything" if ordered or not deps.any else
                     "stopping everything now, regardless of order")

    def act(self, m: Managed, action: Action) -> Reply:
        if m.phase is Phase.HELD and action is Action.ABANDON:
            m.stop_wanted = True
            m.wake.set()
            self.e.recovery.hold_forever(m)
            self.e.changed(m)
            return Reply(True, f"left {m.name} alone")
        if action is not Action.WAIT:
            m.stop_wanted = True
            m.wake.set()
        run = m.run
        if not m.active or run is None:
            return self._ended(m, action.value)
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
        self.e.deps.forget()  # held stops: the kill or abandon below reaches them instead
        for m in self.e.processes:
            if m.active or (action is Action.ABANDON and m.phase is Phase.HELD):
                self.act(m, action)
            elif action is Action.ABANDON:
                m.stop_wanted = True
                m.wake.set()
        if action is Action.ABANDON:
            self.e.shutting_down = True
        return Reply(True)

    def extend(self, m: Managed, by: float | None, who: Who = Who.OPERATOR) -> Reply:
        step = m.spec.extend_step if by is None else by
        run = m.run
        if not m.active or run is None or not run.state.phase.stopping:
            if m.active:
                return Reply(False, f"nothing to extend: {m.name} is not stopping")
            return self._ended(m, "extend")
        if not run.extend(step, who):
            return Reply(False, f"{m.name}'s deadline did not move")
        return Reply(True, f"{m.name}: deadline extended by {setting(step)}")

    def set_interactive(self, interactive: bool) -> Reply:
        """Nobody can answer any more (the terminal hung up): "ask" acts as "kill", a
        process already parked for a decision is killed now, and a held leftover is left
        alone."""
        self.e.interactive = interactive
        for m in self.e.processes:
            if m.active and m.run is not None:
                m.run.set_interactive(interactive)
            elif m.phase is Phase.HELD and not interactive:
                m.stop_wanted = True
                self.e.recovery.hold_forever(m)
                m.wake.set()
                self.e.changed(m)
        return Reply(True)

    # -- starting ---------------------------------------------------------------------

    def restart(self, m: Managed) -> Reply:
        if m.record is not None:
            return Reply(False, f"{m.name} is a leftover; it is not restarted")
        if m.active and m.run is not None:
            if m.run.state.phase.stopping:
                return Reply(False, f"{m.name} is already stopping")
            m.restart_wanted = True
            m.stop_wanted = True
            m.run.request_stop()
            return Reply(True, f"restarting {m.name}")
        if m.phase is Phase.BACKOFF:
            m.wake.set()  # restart now instead of after the backoff
            return Reply(True, f"restarting {m.name} now")
        return self.start(m)

    def start(self, m: Managed) -> Reply:
        if m.record is not None:
            return Reply(False, f"{m.name} is a leftover; it is not started again")
        if m.active or not m.done.is_set():
            return Reply(False, f"{m.name} is {m.view.phase.value}; start works on a process "
                                "that has ended")
        last = m.run
        if last is not None and last.outcome is not None and last.outcome.left_running \
                and last.pgid is not None and self.e.os.group_alive(last.pgid):
            return Reply(False, f"not started again: pid {last.pid} "
                                f"({last.outcome.kind.value}) is still running")
        if m.run is not None:
            m.restarts += 1
        m.blocked_by = None
        self.e.shutting_down = False
        self.e._launch(m)
        return Reply(True, f"starting {m.name}")

    def adopt(self, m: Managed) -> Reply:
        """Take a held leftover as this project's own: watch it, stop it on quit."""
        if m.phase is not Phase.HELD:
            return Reply(False, f"{m.name} is not a held leftover; nothing to adopt")
        m.adopted = True
        m.held = ""
        m.phase = Phase.STARTING
        m.wake.set()
        self.e.changed(m)
        return Reply(True, f"adopted {m.name}: it is watched, and stopped on quit")

    def clear(self, m: Managed) -> Reply:
        m.buffer.clear()
        self.e.changed(m)
        return Reply(True)
