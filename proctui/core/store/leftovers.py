"""Is a PID file's process group still alive, and provably the one an earlier proctui
started? Only a proven group is signalled; a doubtful one is held for the operator.

What a process cannot change proves it: the boot id, its start time in clock ticks, and
that a leader proctui started leads its own session (pid = group = session). The kernel
never hands out a pid that is still in use as a group id, so while a proven member of
group G lives, G is still that group. The command line is only a hint.
"""

from __future__ import annotations

from dataclasses import field
from enum import Enum

from proctui.core.os.oslayer import OSLayer
from proctui.core.os.procfs import ProcStat
from proctui.core.store.pidfile import PidRecord
from proctui.records import dataclass


class Proof(Enum):
    PROVEN = "proven"  # ours: stop it (its group, and its recorded escapees)
    GONE = "gone"  # nothing of it is left: the file is stale
    STRANGER = "stranger"  # the pid belongs to another process now: leave it alone
    DOUBT = "doubt"  # something lives that may be ours, but cannot be proven: hold it


@dataclass(frozen=True, slots=True)
class Verdict:
    proof: Proof
    why: str = ""
    pgid: int | None = None  # the group to signal: verified, never just the file's word
    leader_alive: bool = False
    start_ticks: int = 0
    escapees: tuple[ProcStat, ...] = ()  # recorded processes outside the group, alive
    members: tuple[int, ...] = field(default=())  # live group members found
    note: str = ""  # a hint worth saying (the command line changed)


def judge(record: PidRecord, os_layer: OSLayer, boot: str | None = None) -> Verdict:
    boot = os_layer.boot_id() if boot is None else boot
    if record.boot_id != boot:
        return Verdict(Proof.GONE, "recorded in an earlier boot")
    pid, pgid = record.pid, record.pgid
    leader = os_layer.read_stat(pid)
    if pgid != pid or record.sid != pid:
        own = leader is not None and leader.live and \
            leader.start_ticks == record.start_ticks and leader.pgid == leader.sid == pid
        return Verdict(Proof.DOUBT, f"the file says group {pgid} and session {record.sid} "
                                    f"for pid {pid}, but proctui starts each process in a "
                                    "session of its own: the file was edited",
                       pgid=pid if own else None, leader_alive=own,
                       start_ticks=record.start_ticks)
    escapees = tuple(_recorded_alive(record, os_layer, outside=True))
    if leader is not None and leader.live:
        if leader.start_ticks != record.start_ticks:
            # pid G is another process now, so group G (which would keep pid G from
            # being reused) is gone: nothing of ours is left in it.
            if escapees:
                return Verdict(Proof.PROVEN, escapees=escapees, start_ticks=0)
            return Verdict(Proof.STRANGER, "that pid now belongs to another process")
        if leader.pgid != pid or leader.sid != pid:
            return Verdict(Proof.DOUBT, f"pid {pid} started at the recorded instant but now "
                                        f"leads group {leader.pgid}, not its own")  # pgid unknown
        note = ""
        cmdline = os_layer.read_cmdline(pid)
        if cmdline is not None and cmdline != record.cmdline:
            note = f"its command line changed since (now {' '.join(cmdline)[:80]!r})"
        return Verdict(Proof.PROVEN, pgid=pid, leader_alive=True,
                       start_ticks=leader.start_ticks, escapees=escapees, note=note)
    members = [st for st in os_layer.group_members(pgid, ours=False, max_age=0)
               if st.pid != pid]
    proven = {(m.pid, m.start_ticks) for m in record.members}
    sure = [st for st in members if (st.pid, st.start_ticks) in proven
            or (record.token and os_layer.has_env(st.pid, "PROCTUI_RUN", record.token))]
    if sure:
        return Verdict(Proof.PROVEN, pgid=pgid, escapees=escapees,
                       members=tuple(st.pid for st in members),
                       start_ticks=record.start_ticks)
    if members:
        pids = ", ".join(str(st.pid) for st in members[:8])
        return Verdict(Proof.DOUBT, f"pid {pid} is gone, but processes {pids} live on in "
                                    f"its group {pgid} and none of them is on record",
                       pgid=pgid, members=tuple(st.pid for st in members))
    if escapees:
        return Verdict(Proof.PROVEN, escapees=escapees, start_ticks=record.start_ticks)
    return Verdict(Proof.GONE, "that process is gone")


def _recorded_alive(record: PidRecord, os_layer: OSLayer, outside: bool) -> list[ProcStat]:
    """Recorded members still alive as themselves (same start time)."""
    out = []
    for member in record.members:
        if outside and member.pgid == record.pgid:
            continue
        st = os_layer.read_stat(member.pid)
        if st is not None and st.live and st.start_ticks == member.start_ticks:
            out.append(st)
    return out
