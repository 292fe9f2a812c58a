"""The one place that talks to the OS about processes that already exist.

Everything the stop sequence needs from the OS goes through ``OSLayer``, so tests can
inject what the OS will not do on demand (an unkillable process, EPERM as root), and a
port to another OS changes this module only.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from enum import Enum

_STATE_NAMES = {
    "R": "running",
    "S": "sleeping",
    "D": "disk-sleep",
    "Z": "zombie",
    "T": "stopped",
    "t": "tracing-stop",
    "X": "dead",
    "x": "dead",
    "I": "idle",
    "P": "parked",
    "W": "paging",
}

HAVE_PROC = sys.platform.startswith("linux") and os.path.isdir("/proc/self")


@dataclass(frozen=True, slots=True)
class ProcStat:
    pid: int
    state: str  # one letter, as in /proc/PID/stat
    ppid: int
    pgid: int
    start_ticks: int  # clock ticks after boot; with the boot id, a process's identity


def read_stat(pid: int) -> ProcStat | None:
    """/proc/PID/stat, or None when there is no such process."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read()
    except (FileNotFoundError, ProcessLookupError, NotADirectoryError):
        return None
    except PermissionError:
        return None
    # The command name may contain spaces and ")"; the fields start after the last ")".
    rest = raw[raw.rindex(b")") + 2 :].split()
    return ProcStat(pid, rest[0].decode(), int(rest[1]), int(rest[2]), int(rest[19]))


def read_cmdline(pid: int) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            raw = f.read()
    except OSError:
        return None
    return [part.decode("utf-8", "replace") for part in raw.split(b"\0")[:-1]]


def boot_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip()
    except OSError:
        return ""


def state_name(letter: str) -> str:
    return _STATE_NAMES.get(letter, letter)


def _all_pids() -> list[int]:
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


class OSLayer:
    """Signals and liveness of process groups. Subclass to fake what the OS won't do."""

    def signal_group(self, pgid: int, sig: int) -> None:
        """Send ``sig`` to every process in the group. Raises ProcessLookupError when the
        group is empty, PermissionError (or another OSError) when the OS refuses."""
        os.killpg(pgid, sig)

    def group_alive(self, pgid: int) -> bool:
        """Is any member of the group still running? Zombies do not count: they are
        dead, only not yet reaped (and PID 1 here does not always reap them)."""
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            pass
        if not HAVE_PROC:
            return True
        leader = read_stat(pgid)
        if leader is not None and leader.pgid == pgid and leader.state not in "ZXx":
            return True
        return bool(self.group_members(pgid))

    def group_members(self, pgid: int) -> list[ProcStat]:
        """Live (non-zombie) members of the group, leader first if it is among them."""
        if not HAVE_PROC:
            return []
        leader = read_stat(pgid)
        members = []
        if leader is not None and leader.pgid == pgid and leader.state not in "ZXx":
            members.append(leader)
        for pid in _all_pids():
            if pid == pgid:
                continue
            st = read_stat(pid)
            if st is not None and st.pgid == pgid and st.state not in "ZXx":
                members.append(st)
        return members

    def processes_with_env(self, name: str, value: str) -> list[int]:
        """Live processes whose environment holds ``name=value``: every descendant of a
        run carries its token, even one that left the process group (setsid)."""
        if not HAVE_PROC:
            return []
        needle = f"{name}={value}".encode()
        found = []
        for pid in _all_pids():
            try:
                with open(f"/proc/{pid}/environ", "rb") as f:
                    if needle not in f.read().split(b"\0"):
                        continue
            except OSError:
                continue
            st = read_stat(pid)
            if st is not None and st.state not in "ZXx":
                found.append(pid)
        return found

    def identify(self, pid: int, boot: str, start_ticks: int, cmdline: list[str]) -> Identity:
        return identify(pid, boot, start_ticks, cmdline)

    def describe(self, pgid: int) -> str:
        """A word for what the group's first live member is doing (e.g. disk-sleep)."""
        members = self.group_members(pgid)
        if not members:
            return "gone"
        return state_name(members[0].state)


class Identity(Enum):
    SAME = "same"  # the very process the PID file describes
    GONE = "gone"  # no such process any more
    OTHER = "other"  # the PID now belongs to another process
    CHANGED = "changed"  # started at the recorded instant, but runs another command line


def identify(pid: int, boot: str, start_ticks: int, cmdline: list[str]) -> Identity:
    """Is ``pid`` still the process that was recorded? A PID is reused; the boot id and
    the start time in clock ticks together are not, and the command line must agree."""
    st = read_stat(pid)
    if st is None or st.state in "ZXx":
        return Identity.GONE
    if boot != boot_id() or st.start_ticks != start_ticks:
        return Identity.OTHER
    if read_cmdline(pid) != cmdline:
        return Identity.CHANGED
    return Identity.SAME
