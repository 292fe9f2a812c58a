"""``proctui reload``: the config read again, and the difference carried out on the core's
loop. Each process is matched by name: one that was added is a new life; one that was
removed stops as a shutdown would stop it (its stop sequence and countdowns, after its
removed dependents) and is forgotten once it has ended; one whose resolved settings
changed is restarted with them; the rest are left alone (same pids). Every decision is
the life machine's (``RemoveCmd``, ``ChangedCmd``, ``Launch``); this module only sorts
the processes and words the reply."""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from proctui.config import ProcessSpec
from proctui.core.engine import Engine
from proctui.core.life import machine as life
from proctui.core.process import Managed
from proctui.core.speak.deps import Deps
from proctui.core.store.kinds import Kind
from proctui.core.view import Reply

REPLY_WAIT = 5.0  # seconds the reply waits for removed processes to end (clients wait 10)


@dataclass
class Difference:
    added: list[ProcessSpec] = field(default_factory=list)
    removed: list[Managed] = field(default_factory=list)
    changed: list[tuple[Managed, ProcessSpec]] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)


def difference(processes: Sequence[Managed], specs: Sequence[ProcessSpec]) -> Difference:
    """By name: leftovers of earlier runs are in no config, and processes an earlier
    reload removed are on their way out: both are left out."""
    current = {m.name: m for m in processes if not m.leftover and not m.life.removed}
    wanted = {s.name for s in specs}
    d = Difference(removed=[m for name, m in current.items() if name not in wanted])
    for spec in specs:
        m = current.get(spec.name)
        if m is None:
            d.added.append(spec)
        elif m.spec != spec:
            d.changed.append((m, spec))
        else:
            d.unchanged.append(spec.name)
    return d


def reload(e: Engine, specs: Sequence[ProcessSpec]) -> concurrent.futures.Future[Reply]:
    """Carry the new config out; the future answers with one line per change once every
    removed process has ended, or after REPLY_WAIT seconds (then with where they are)."""
    answer: concurrent.futures.Future[Reply] = concurrent.futures.Future()
    if e.shutdown_why is not None or e.stop_asked.is_set():
        answer.set_result(Reply(False, "not reloaded: everything is stopping"))
        return answer
    going = [m.name for m in e.processes if m.life.removed and
             m.name in {s.name for s in specs}]
    if going:
        answer.set_result(Reply(False, f"not reloaded: {', '.join(going)} is still stopping "
                                       "after the last reload; reload again once it has "
                                       "ended"))
        return answer
    d = difference(e.processes, specs)
    e.journal.write(Kind.RELOAD, added=[s.name for s in d.added],
                    removed=[m.name for m in d.removed],
                    changed=[m.name for m, _ in d.changed])
    # The new dependency graph, with the removed processes in it while they stop: a
    # removed process stops after its removed dependents, as in a shutdown.
    e.specs = tuple(specs)
    e.deps = e.inbox.deps = Deps([*specs, *(m.spec for m in d.removed)], e.by_name,
                                 e.inbox.look_again)
    lines: list[str] = []
    pending: dict[Managed, str] = {}
    ended: dict[Managed, str] = {}
    armed = [False]  # every change is made: the answer may go

    def forgotten(m: Managed) -> None:
        if m in pending:
            del pending[m]
            ended[m] = m.outcomes[-1].text if m.outcomes else "not started"
            if not pending and armed[0]:
                finish()

    def finish() -> None:
        if answer.done():
            return
        if hook in e.forget_hooks:
            e.forget_hooks.remove(hook)
        for m in d.removed:
            said = ended.get(m) or pending.get(m, "")
            lines.append(f"removed {m.name}: {said}" if said else f"removed {m.name}")
        changed = [f"changed {m.name}: {how}" for m, how in changed_words]
        unchanged = [f"unchanged: {', '.join(d.unchanged)}"] if d.unchanged else []
        everything = [*lines, *changed, *unchanged] or ["nothing to do"]
        answer.set_result(Reply(True, "\n".join(everything)))

    hook = forgotten
    e.forget_hooks.append(hook)
    added = [e.add(spec) for spec in d.added]
    changed_words: list[tuple[Managed, str]] = []
    for m, spec in d.changed:
        m.spec = spec
        run = m.run
        stopping = m.active and run is not None and run.state.phase.stopping
        reply = e.post(m, life.ChangedCmd(spec.restart, bool(spec.depends_on), stopping,
                                          ran=run is not None))
        changed_words.append((m, reply.text if reply is not None else "restarting"))
    for m in d.removed:
        pending[m] = "stopping"
    for m in d.removed:
        if m not in pending:
            continue  # forgotten already (a removed dependent's stop can end it)
        run = m.run
        stopping = m.active and run is not None and run.state.phase.stopping
        after = e.inbox.dependents_of(m) if m.active else ()
        e.post(m, life.RemoveCmd(after, stopping))
    for m in added:
        lines.append(f"added {m.name}")
        e.post(m, life.Launch())
    e.inbox.look_again()
    armed[0] = True
    if pending:
        e.loop.call_later(REPLY_WAIT, _still_stopping, pending, finish)
    else:
        finish()
    return answer


def _still_stopping(pending: dict[Managed, str], finish: Callable[[], None]) -> None:
    for m in pending:
        pending[m] = "still stopping (proctui status shows it until it has ended)"
    finish()
