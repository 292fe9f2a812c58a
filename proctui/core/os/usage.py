"""CPU and memory of a run: its leader, its group and what it left outside the group,
from the process-table walk the core makes anyway (about once a second)."""

from __future__ import annotations

import os
import time

from proctui.core.os.lineage import Lineage, Traceable
from proctui.core.os.procfs import HAVE_PROC, ProcTable
from proctui.core.view import Usage

_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


Samples = dict[str, tuple[float, float]]  # run token -> (CPU seconds, when): for rates


def usage_of(run: Traceable, lineage: Lineage, table: ProcTable,
             samples: Samples) -> Usage | None:
    if run.pid is None:
        return None
    if not HAVE_PROC:
        return _psutil_usage(run)
    members = {st.pid: st for st in lineage.members(run)}
    leader = table.stats.get(run.pid)
    if leader is not None and leader.live:
        members[leader.pid] = leader
    if run.pgid is not None:
        for st in table.members(run.pgid):
            members.setdefault(st.pid, st)
    if not members:  # none of it in the walk (a leftover's leader): not measured, not 0 B
        return None
    cpu = sum(st.cpu_ticks for st in members.values()) / _TICKS
    rss = sum(st.rss_pages for st in members.values()) * _PAGE
    now = time.monotonic()
    last = samples.get(run.token)
    samples[run.token] = (cpu, now)
    percent = 0.0
    if last is not None and now > last[1]:
        percent = max(0.0, (cpu - last[0]) / (now - last[1]) * 100)
    return Usage(float(round(percent)), _shown(rss), len(members))


def _shown(rss: int) -> int:
    """Memory at the precision a person reads it (two or three digits), so a snapshot
    is published only when what it shows would change."""
    mib = 1 << 20
    if rss < 10 * mib:
        return round(rss / (mib / 10)) * (mib // 10)
    if rss < 1000 * mib:
        return round(rss / mib) * mib
    return round(rss / (100 * mib)) * (100 * mib)


def _psutil_usage(run: Traceable) -> Usage | None:
    """Without /proc (macOS): psutil, imported only here."""
    try:
        import psutil  # type: ignore[import-untyped,unused-ignore]
    except ImportError:
        return None
    total_cpu, rss, count = 0.0, 0, 0
    for proc in psutil.process_iter(["pid"]):
        try:
            if os.getpgid(proc.pid) != run.pgid:
                continue
            times = proc.cpu_times()
            total_cpu += times.user + times.system
            rss += proc.memory_info().rss
            count += 1
        except (psutil.Error, OSError):
            continue
    return Usage(0.0, rss, count)
