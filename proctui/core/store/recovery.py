"""Leftovers of an earlier run, at start-up: each PID file is judged (leftovers.judge),
and what is proven ours is shown and stopped with the normal countdown before its
successor starts; what is doubtful is held for the operator, never signalled; what is
gone or a stranger's loses its stale file.

This finds and words; the life machine decides (``Leftover``) and the engine carries it
out (taking a leftover over as a run, holding it for good)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence
from dataclasses import replace

from proctui.config import ProcessSpec
from proctui.core.life.machine import Leftover, Life
from proctui.core.life.outcome import EndKind, Outcome, RunRecord, describe
from proctui.core.os.oslayer import OSLayer
from proctui.core.process import Managed
from proctui.core.store.leftovers import Proof, judge
from proctui.core.store.rundir import RunDir, RunDirError


def find(run_dir: RunDir | None, os_layer: OSLayer, boot_id: str,
         specs: Sequence[ProcessSpec], defaults: ProcessSpec | None, interactive: bool,
         say: Callable[[str], None]) -> list[Managed]:
    """Every leftover in the run directory, judged, as processes to show (stale files of
    processes that are gone, or strangers', are removed)."""
    if run_dir is None:
        return []
    try:
        entries = run_dir.scan()
    except RunDirError as e:
        say(f"warning: {e}")
        return []
    taken = {s.name for s in specs}
    found: list[Managed] = []
    for entry in entries:
        record = entry.record
        if record is None:
            say(f"{entry.path}: {entry.error}; left in place, remove it once you have "
                "checked")
            continue
        who = f"PID file {entry.path.name} (process {record.name!r}, pid {record.pid})"
        verdict = judge(record, os_layer, boot_id)
        if verdict.proof in (Proof.GONE, Proof.STRANGER):
            with contextlib.suppress(OSError):
                run_dir.remove(entry.path.name)
            if verdict.proof is Proof.GONE:
                say(f"{who}: {verdict.why}; removed the stale file")
            else:
                say(f"{who}: {verdict.why}; left it alone and removed the stale file")
            continue
        spec = next((s for s in specs if s.name == record.name), None)
        spec = spec or defaults or ProcessSpec(
            name=record.name, argv=tuple(record.cmdline), cmd="", cwd=run_dir.path)
        name = f"{record.name} (leftover)"
        while name in taken:
            name += "'"
        taken.add(name)
        m = Managed(replace(spec, name=record.name, cmd=" ".join(record.cmdline)), name)
        m.pid_name = record.name
        m.record, m.verdict = record, verdict
        if verdict.pgid is None and not verdict.escapees:
            kind = Leftover.UNPROVABLE
        elif verdict.proof is Proof.DOUBT:
            kind = Leftover.DOUBT
            m.held = verdict.why
        else:
            kind = Leftover.PROVEN
        m.life = Life(name, has_deps=False, leftover=kind, stop_wanted=True,
                      interactive=interactive)
        found.append(m)
    return found


def held_words(m: Managed) -> str:
    record = m.record
    assert record is not None
    return (f"leftover from an earlier run (pid {record.pid}, started "
            f"{_when(record.started_at)}) held: {m.held}. It is not signalled; stop, abandon "
            "or adopt it yourself")


def take_over_words(m: Managed, stop: bool) -> str | None:
    record = m.record
    assert record is not None
    start = f"leftover from an earlier run (pid {record.pid}, started " \
            f"{_when(record.started_at)})"
    if m.stops_after and not stop:
        return f"{start}: stops after {', '.join(m.stops_after)}, which depend on it"
    return f"{start}: stopping it" if stop else None


def held_outcome(m: Managed) -> Outcome:
    """Nobody can decide about a doubtful leftover: leave it, say so, keep its file."""
    assert m.record is not None
    return describe(RunRecord(end=EndKind.HELD, pid=m.record.pid, ended_at=time.monotonic(),
                              error=m.held, left_running=(m.record.pid,)))


def _when(started_at: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(started_at)) \
        if started_at > 0 else "at an unknown time"
