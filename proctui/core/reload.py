"""A config read again, carried out on the core's loop. Each process is matched by name:
one that was added is a new life; one that was removed stops as a shutdown would stop it
(its stop sequence and countdowns, after its removed dependents) and is forgotten once
it has ended; one whose settings changed (what it runs and how: ``ProcessSpec``'s
equality, which leaves out where it was said) is restarted with them; the rest are left
alone (same pids). Every decision is the life machine's (``RemoveCmd``, ``Reconfigure``,
``Launch``); this module sorts the processes and words the reply."""

from __future__ import annotations

import concurrent.futures
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from proctui.config import ProcessSpec
from proctui.core.life import inputs as i
from proctui.core.life import machine as life
from proctui.core.life.state import Proc
from proctui.core.life.step import new_proc
from proctui.core.reply import Done, Fault, failed
from proctui.core.speak.deps import Deps
from proctui.core.store.kinds import Kind

if TYPE_CHECKING:
    from proctui.core.engine import Engine

REPLY_WAIT = 5.0  # seconds the reply waits for removed processes to end (clients wait 10)


@dataclass
class Difference:
    added: list[ProcessSpec] = field(default_factory=list)
    removed: list[Proc] = field(default_factory=list)
    changed: list[tuple[Proc, ProcessSpec]] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)


def difference(processes: Sequence[Proc], specs: Sequence[ProcessSpec]) -> Difference:
    """By name: leftovers of earlier runs are in no config, and processes an earlier
    reload removed are on their way out: both are left out."""
    current = {p.name: p for p in processes if not p.is_leftover and not p.life.removed}
    wanted = {s.name for s in specs}
    d = Difference(removed=[p for name, p in current.items() if name not in wanted])
    for spec in specs:
        p = current.get(spec.name)
        if p is None:
            d.added.append(spec)
        elif p.spec != spec:
            d.changed.append((p, spec))
        else:
            d.unchanged.append(spec.name)
    return d


def carry_out(e: Engine, specs: Sequence[ProcessSpec],
              answer: concurrent.futures.Future[Done]) -> None:
    """Carry the new config out; ``answer`` gets one line per change once every removed
    process has ended, or after REPLY_WAIT seconds (then with where they are)."""
    if e.world.shutting_down:
        e.answer_later(answer, failed(Fault.REFUSED, "not reloaded: everything is stopping"))
        return
    going = [p.name for p in e.table.all() if p.life.removed and
             p.name in {s.name for s in specs}]
    if going:
        e.answer_later(answer, failed(Fault.REFUSED, f"not reloaded: {', '.join(going)} is "
                                                     "still stopping after the last reload; "
                                                     "reload again once it has ended"))
        return
    d = difference(e.table.all(), specs)
    e.journal.write(Kind.RELOAD, added=[s.name for s in d.added],
                    removed=[p.name for p in d.removed],
                    changed=[p.name for p, _ in d.changed])
    # The new dependency graph, with the removed processes in it while they stop: a
    # removed process stops after its removed dependents, as in a shutdown.
    e.specs = tuple(specs)
    e.deps = Deps([*specs, *(p.spec for p in d.removed)])
    lines: list[str] = []
    pending: dict[str, str] = {p.name: "stopping" for p in d.removed}
    ended: dict[str, str] = {}
    changed_words: list[tuple[str, str]] = []
    armed = [False]  # every change is made: the answer may go

    def forgotten(name: str) -> None:
        if name in pending:
            del pending[name]
            removed = dict(e.world.removed).get(name)
            ended[name] = removed.text if removed is not None else "not started"
            if not pending and armed[0]:
                finish()

    def finish() -> None:
        if answer.done() or hook not in e.forget_hooks:
            return
        e.forget_hooks.remove(hook)
        for p in d.removed:
            said = ended.get(p.name) or pending.get(p.name, "")
            lines.append(f"removed {p.name}: {said}" if said else f"removed {p.name}")
        changed = [f"changed {name}: {how}" for name, how in changed_words]
        unchanged = [f"unchanged: {', '.join(d.unchanged)}"] if d.unchanged else []
        everything = [*lines, *changed, *unchanged] or ["nothing to do"]
        e.answer_later(answer, Done(True, "\n".join(everything)))

    hook = forgotten
    e.forget_hooks.append(hook)

    added = []
    for spec in d.added:
        p = new_proc(spec, interactive=e.world.interactive)
        e.add(p)
        added.append(p.name)
    for p, spec in d.changed:
        said = e.ask(p.name, i.Reconfigure(spec, e.left_running(p.name)))
        changed_words.append((p.name, said.text if said is not None else "restarting"))
    for p in d.removed:
        if p.name not in pending:
            continue  # forgotten already (a removed dependent's stop can end it)
        now = e.table.get(p.name)
        after = e.dependents_of(now) if now is not None and now.active else ()
        e.ask(p.name, life.RemoveCmd(after))
    for name in added:
        lines.append(f"added {name}")
        e.post(name, life.Launch())
    e.look_again()
    armed[0] = True
    if pending:
        e.loop.call_later(REPLY_WAIT, _still_stopping, pending, finish)
    else:
        finish()


def _still_stopping(pending: dict[str, str], finish: object) -> None:
    for name in pending:
        pending[name] = "still stopping (proctui status shows it until it has ended)"
    finish()  # type: ignore[operator]
