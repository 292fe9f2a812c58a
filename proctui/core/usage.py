"""CPU and memory of whole process groups (children count), sampled about once a second.

One pass over /proc per sample serves every group at once, so ten processes cost one
directory scan, not ten. Without /proc (macOS), psutil does the same job more slowly.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from dataclasses import dataclass

from proctui.core.oslayer import HAVE_PROC

_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


@dataclass(frozen=True, slots=True)
class Usage:
    cpu_percent: float  # of one core; may exceed 100 for several busy members
    rss_bytes: int
    members: int


class UsageSampler:
    def __init__(self) -> None:
        self._last: dict[int, tuple[float, float]] = {}  # pgid -> (cpu seconds, when)

    def sample(self, pgids: Iterable[int]) -> dict[int, Usage]:
        wanted = set(pgids)
        if not wanted:
            return {}
        totals = _scan_proc(wanted) if HAVE_PROC else _scan_psutil(wanted)
        now = time.monotonic()
        result: dict[int, Usage] = {}
        for pgid, (cpu, rss, members) in totals.items():
            before = self._last.get(pgid)
            percent = 0.0
            if before is not None and now > before[1]:
                percent = max(0.0, (cpu - before[0]) / (now - before[1]) * 100)
            self._last[pgid] = (cpu, now)
            result[pgid] = Usage(percent, rss, members)
        for pgid in list(self._last):
            if pgid not in wanted:
                del self._last[pgid]
        return result


def _scan_proc(wanted: set[int]) -> dict[int, tuple[float, int, int]]:
    totals: dict[int, tuple[float, int, int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                raw = f.read()
        except OSError:
            continue
        rest = raw[raw.rindex(b")") + 2 :].split()
        pgid = int(rest[2])
        if pgid not in wanted or rest[0] in (b"Z", b"X"):
            continue
        cpu = (int(rest[11]) + int(rest[12])) / _TICKS
        rss = int(rest[21]) * _PAGE
        c, r, n = totals.get(pgid, (0.0, 0, 0))
        totals[pgid] = (c + cpu, r + rss, n + 1)
    return totals


def _scan_psutil(wanted: set[int]) -> dict[int, tuple[float, int, int]]:
    import psutil

    totals: dict[int, tuple[float, int, int]] = {}
    for proc in psutil.process_iter(["pid"]):
        try:
            pgid = os.getpgid(proc.pid)
            if pgid not in wanted:
                continue
            times = proc.cpu_times()
            rss = proc.memory_info().rss
        except (psutil.Error, OSError):
            continue
        c, r, n = totals.get(pgid, (0.0, 0, 0))
        totals[pgid] = (c + times.user + times.system, r + rss, n + 1)
    return totals
