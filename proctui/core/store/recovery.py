"""Leftovers of an earlier run, at start-up: each PID file is judged (leftovers.judge),
and what is proven ours is shown and stopped with the normal countdown before its
successor starts; what is doubtful is held for the operator, never signalled; what is
gone or a stranger's loses its stale file.

This finds and words; each leftover becomes a process of its own (``step.new_proc``),
whose life machine decides what becomes of it."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import replace

from proctui.config import ProcessSpec
from proctui.core.life.stages import Leftover
from proctui.core.life.state import LeftoverFacts, Proc
from proctui.core.life.step import new_proc
from proctui.core.os.oslayer import OSLayer
from proctui.core.store.leftovers import Proof, judge
from proctui.core.store.rundir import RunDir, RunDirError


def find(run_dir: RunDir | None, os_layer: OSLayer, boot_id: str,
         specs: Sequence[ProcessSpec], defaults: ProcessSpec | None, interactive: bool,
         say: Callable[[str], None]) -> list[Proc]:
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
    found: list[Proc] = []
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
        held = ""
        if verdict.pgid is None and not verdict.escapees:
            kind = Leftover.UNPROVABLE
        elif verdict.proof is Proof.DOUBT:
            kind = Leftover.DOUBT
            held = verdict.why
        else:
            kind = Leftover.PROVEN
        found.append(new_proc(replace(spec, name=record.name, cmd=" ".join(record.cmdline)),
                              name, interactive=interactive, kind=kind,
                              leftover=LeftoverFacts(record, verdict, held)))
    return found
