"""Reading ``/proc``: one process's stat and command line, and whole-table scans.

Scans read ``stat`` only (one small read per process, about 3 µs here), never every
process's ``environ``: at 2,000 processes that cost a core.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable, Iterable

from proctui.records import dataclass

HAVE_PROC = sys.platform.startswith("linux") and os.path.isdir("/proc/self")
DEAD = frozenset("ZXx")

_STATE_NAMES = {
    "R": "running", "S": "sleeping", "D": "disk-sleep", "Z": "zombie", "T": "stopped",
    "t": "tracing-stop", "X": "dead", "x": "dead", "I": "idle", "P": "parked", "W": "paging",
}


@dataclass(frozen=True, slots=True)
class ProcStat:
    pid: int
    state: str  # one letter, as in /proc/PID/stat
    ppid: int
    pgid: int
    sid: int
    start_ticks: int  # clock ticks after boot; with the boot id, a process's identity
    cpu_ticks: int = 0  # user + system
    rss_pages: int = 0
    threads: int = 0  # 0: not known

    @property
    def live(self) -> bool:
        """Running in any sense: zombies are dead, only not yet reaped."""
        return self.state not in DEAD

    @property
    def paused(self) -> bool:
        return self.state in "Tt"


def state_name(letter: str) -> str:
    return _STATE_NAMES.get(letter, letter)


def _read(path: str, limit: int = 4096) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        return os.read(fd, limit)
    except OSError:
        return None
    finally:
        os.close(fd)


def parse_stat(pid: int, raw: bytes) -> ProcStat | None:
    try:
        # The command name may contain spaces and ")"; the fields start after the last ")".
        rest = raw[raw.rindex(b")") + 2 :].split()
        return ProcStat(pid, rest[0].decode(), int(rest[1]), int(rest[2]), int(rest[3]),
                        int(rest[19]), int(rest[11]) + int(rest[12]), int(rest[21]),
                        int(rest[17]))
    except (ValueError, IndexError):
        return None


def read_stat(pid: int) -> ProcStat | None:
    """/proc/PID/stat, or None when there is no such process."""
    raw = _read(f"/proc/{pid}/stat")
    return parse_stat(pid, raw) if raw else None


def read_cmdline(pid: int) -> list[str] | None:
    """The command line, or None when it cannot be known now: gone, a zombie, or in the
    middle of an exec (the kernel shows an empty one for a moment)."""
    raw = _read(f"/proc/{pid}/cmdline", 1 << 20)
    if not raw:
        return None
    return [part.decode("utf-8", "replace") for part in raw.split(b"\0")[:-1]]


_HARMLESS = frozenset(int(getattr(signal, n)) for n in (
    "SIGCHLD", "SIGCONT", "SIGSTOP", "SIGTSTP", "SIGTTIN", "SIGTTOU", "SIGURG", "SIGWINCH"))
_LETHAL = sum(1 << (n - 1) for n in range(1, 65) if n not in _HARMLESS)


def dying(pid: int) -> bool:
    """Is a signal that ends ``pid`` already pending, with nothing to stop it? On a busy
    machine a SIGTERM sent a moment ago can still be waiting for the process to run."""
    raw = _read(f"/proc/{pid}/status", 1 << 14)
    return raw is not None and bool(raw) and dying_by_status(raw)


def dying_by_status(raw: bytes) -> bool:
    """From /proc/PID/status: a lethal signal pending, not blocked, ignored or handled,
    and the process neither stopped (it would wait for a SIGCONT nobody may send) nor in
    an uninterruptible sleep (which can last for ever: that is "unkillable")."""
    fields: dict[bytes, bytes] = {}
    for line in raw.splitlines():
        key, _, value = line.partition(b":")
        fields[key] = value.strip()
    try:
        if fields[b"State"][:1] in (b"T", b"t", b"D"):
            return False
        pending = int(fields[b"SigPnd"], 16) | int(fields[b"ShdPnd"], 16)
        spared = int(fields[b"SigBlk"], 16) | int(fields[b"SigIgn"], 16) | \
            int(fields[b"SigCgt"], 16)
    except (KeyError, ValueError):
        return False
    return bool(pending & ~spared & _LETHAL)


def has_env(pid: int, name: str, value: str) -> bool:
    """Does ``pid``'s environment (as it started) hold ``name=value``?"""
    raw = _read(f"/proc/{pid}/environ", 1 << 22)
    return raw is not None and f"{name}={value}".encode() in raw.split(b"\0")


def env_value(pid: int, name: str) -> str | None:
    """The value of ``name`` in ``pid``'s environment as it started (None: not there)."""
    raw = _read(f"/proc/{pid}/environ", 1 << 22)
    if raw is None:
        return None
    key = name.encode() + b"="
    for item in raw.split(b"\0"):
        if item.startswith(key):
            return item[len(key):].decode(errors="replace")
    return None


def boot_id() -> str:
    raw = _read("/proc/sys/kernel/random/boot_id")
    return raw.decode().strip() if raw else ""


def all_pids() -> list[int]:
    try:
        return [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return []


def children(pid: int, threads: int = 0) -> list[int]:
    """Direct children of ``pid``, from each of its threads' ``children`` file. A process
    known to have one thread has one such file: no need to list them (an idle walk is
    mostly these reads)."""
    if threads == 1:
        raw = _read(f"/proc/{pid}/task/{pid}/children", 1 << 16)
        return [int(x) for x in raw.split()] if raw else []
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    out: list[int] = []
    for tid in tids:
        raw = _read(f"/proc/{pid}/task/{tid}/children", 1 << 16)
        if raw:
            out.extend(int(x) for x in raw.split())
    return out


HAVE_CHILDREN = HAVE_PROC and os.path.exists(
    f"/proc/{os.getpid()}/task/{os.getpid()}/children")


class ProcTable:
    """One pass over some processes: by pid, by group, and parent to children.

    A plain class: a mutable dataclass's methods are compiled at import (about 1 ms)."""

    __slots__ = ("by_pgid", "kids", "stats")

    def __init__(self) -> None:
        self.stats: dict[int, ProcStat] = {}
        self.by_pgid: dict[int, list[ProcStat]] = {}
        self.kids: dict[int, list[int]] = {}

    def add(self, st: ProcStat) -> None:
        self.stats[st.pid] = st
        self.by_pgid.setdefault(st.pgid, []).append(st)
        self.kids.setdefault(st.ppid, []).append(st.pid)

    def members(self, pgid: int) -> list[ProcStat]:
        """Live members of a group, leader first when it is one of them."""
        found = [st for st in self.by_pgid.get(pgid, ()) if st.live]
        found.sort(key=lambda st: st.pid != pgid)
        return found

    def descendants(self, pid: int) -> list[ProcStat]:
        out: list[ProcStat] = []
        todo = list(self.kids.get(pid, ()))
        while todo:
            child = todo.pop()
            st = self.stats.get(child)
            if st is not None:
                out.append(st)
                todo.extend(self.kids.get(child, ()))
        return out


def scan_all() -> ProcTable:
    table = ProcTable()
    for pid in all_pids():
        st = read_stat(pid)
        if st is not None:
            table.add(st)
    return table


BETWEEN_EVERY = 128  # processes read between two calls of a walk's ``between``


def scan_tree(roots: Iterable[int],
              between: Callable[[], None] | None = None) -> ProcTable:
    """Every descendant of ``roots`` (not the roots themselves), walking children links:
    the cost is that of our own processes, not of the whole machine. ``between`` is
    called every BETWEEN_EVERY processes: a walk of 4,000 takes 160 ms, and what
    cannot wait (a deadline come) is taken in between."""
    if not HAVE_CHILDREN:
        full = scan_all()
        table = ProcTable()
        for root in roots:
            for st in full.descendants(root):
                table.add(st)
        return table
    table = ProcTable()
    todo = [child for root in roots for child in children(root)]
    seen: set[int] = set()
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        if between is not None and len(seen) % BETWEEN_EVERY == 0:
            between()
        found = read_stat(pid)
        if found is None:
            continue
        st = found
        table.add(st)
        if st.live:
            todo.extend(children(pid, st.threads))
    return table
