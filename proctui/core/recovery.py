"""Leftovers of an earlier run, at start-up: each PID file is judged (leftovers.judge),
and what is proven ours is shown and stopped with the normal countdown before its
successor starts; what is doubtful is held for the operator, never signalled; what is
gone or a stranger's loses its stale file."""

from __future__ import annotations

import contextlib
import time
from dataclasses import replace
from typing import TYPE_CHECKING

from proctui.config import ProcessSpec
from proctui.core.leftovers import Proof, judge
from proctui.core.life.machine import Leftover, Life
from proctui.core.outcome import EndKind, RunRecord, describe
from proctui.core.process import Managed
from proctui.core.run import Run
from proctui.core.rundir import RunDirError

if TYPE_CHECKING:
    from proctui.core.engine import Engine


class Recovery:
    def __init__(self, engine: Engine) -> None:
        self.e = engine

    def find(self) -> list[Managed]:
        if self.e.run_dir is None:
            return []
        try:
            entries = self.e.run_dir.scan()
        except RunDirError as e:
            self.e.notice(None, f"warning: {e}")
            return []
        found: list[Managed] = []
        for entry in entries:
            record = entry.record
            if record is None:
                self.e.notice(None, f"{entry.path}: {entry.error}; left in place, remove it "
                                  "once you have checked")
                continue
            who = f"PID file {entry.path.name} (process {record.name!r}, pid {record.pid})"
            verdict = judge(record, self.e.os, self.e.boot_id)
            if verdict.proof in (Proof.GONE, Proof.STRANGER):
                with contextlib.suppress(OSError):
                    self.e.run_dir.remove(entry.path.name)
                if verdict.proof is Proof.GONE:
                    self.e.notice(None, f"{who}: {verdict.why}; removed the stale file")
                else:
                    self.e.notice(None, f"{who}: {verdict.why}; left it alone and removed "
                                      "the stale file")
                continue
            spec = next((s for s in self.e.specs if s.name == record.name), None)
            spec = spec or self.e.leftover_defaults or ProcessSpec(
                name=record.name, argv=tuple(record.cmdline), cmd="", cwd=self.e.run_dir.path)
            name = f"{record.name} (leftover)"
            while name in self.e.by_name or any(lo.name == name for lo in found):
                name += "'"
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
                          interactive=self.e.interactive)
            found.append(m)
        return found

    def held_notice(self, m: Managed) -> None:
        record = m.record
        assert record is not None
        self.e.notice(m, f"leftover from an earlier run (pid {record.pid}, started "
                         f"{_when(record.started_at)}) held: {m.held}. It is not signalled; "
                         "stop, abandon or adopt it yourself")

    def take_over(self, m: Managed, stop: bool) -> None:
        """Watch a leftover proven ours as a run (and stop it, unless adopted)."""
        record, verdict = m.record, m.verdict
        assert record is not None and verdict is not None
        m.held = ""
        run = Run(m.spec, m.name, self.e, m.buffer, self.e.interactive)
        self.e.by_run[id(run)] = m
        m.run = run
        run.adopt(record.pid, verdict.pgid, verdict.start_ticks or record.start_ticks,
                  list(verdict.escapees))
        if verdict.note:
            self.e.notice(m, verdict.note)
        if m.stops_after and not stop:
            self.e.notice(m, f"leftover from an earlier run (pid {record.pid}, started "
                             f"{_when(record.started_at)}): stops after "
                             f"{', '.join(m.stops_after)}, which depend on it")
        elif stop:
            self.e.notice(m, f"leftover from an earlier run (pid {record.pid}, started "
                             f"{_when(record.started_at)}): stopping it")
            run.request_stop()

    def hold_forever(self, m: Managed) -> None:
        """Nobody can decide about a doubtful leftover: leave it, say so, keep its file."""
        assert m.record is not None
        record = RunRecord(end=EndKind.HELD, pid=m.record.pid, ended_at=time.monotonic(),
                           error=m.held, left_running=(m.record.pid,))
        outcome = describe(record)
        m.outcomes.append(outcome)
        self.e.notice(m, outcome.text)
        m.held = ""


def _when(started_at: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(started_at)) \
        if started_at > 0 else "at an unknown time"
