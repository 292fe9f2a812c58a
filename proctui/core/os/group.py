"""What a run signals and watches: its leader (held by a pidfd), its process group, and
the processes it started outside the group (escapees, each held by a pidfd too, so a
reused pid is never signalled)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Callable

from proctui.core.life.outcome import ExitStatus
from proctui.core.os.oslayer import OSLayer
from proctui.core.os.procfs import ProcStat

POLL_NO_PIDFD = 0.1  # watching the leader without a pidfd (out of descriptors)


class Escapee:
    """A descendant that left the group (a plain class: a mutable dataclass's methods
    are compiled at import, about 0.8 ms)."""

    __slots__ = ("alive", "pgid", "pid", "pidfd", "start_ticks")

    def __init__(self, pid: int, start_ticks: int, pgid: int, pidfd: int | None) -> None:
        self.pid = pid
        self.start_ticks = start_ticks
        self.pgid = pgid
        self.pidfd = pidfd
        self.alive = True


class Group:
    def __init__(self, os_layer: OSLayer, loop: asyncio.AbstractEventLoop, pid: int,
                 pgid: int | None, start_ticks: int | None, leftover: bool) -> None:
        self.os = os_layer
        self.loop = loop
        self.pid = pid
        self.pgid = pgid
        self.start_ticks = start_ticks
        self.leftover = leftover
        self.escapees: dict[int, Escapee] = {}
        self.exit: ExitStatus | None = None  # the leader's, once it has ended
        self.leader_exited_at: float | None = None
        self._pidfd: int | None = None
        self._on_leader_exit: Callable[[], None] | None = None
        self._closed = False

    # -- the leader -------------------------------------------------------------------

    def watch_leader(self, on_exit: Callable[[], None]) -> None:
        """Call ``on_exit`` once the leader has ended (its status is then in ``exit``)."""
        self._on_leader_exit = on_exit
        try:
            self._pidfd = self.os.pidfd_open(self.pid)
        except OSError:
            self._pidfd = -1  # out of descriptors, or no pidfds here: poll instead
        if self._pidfd is None:
            self._leader_ended(None)  # already gone
        elif self._pidfd < 0:
            self.loop.call_later(POLL_NO_PIDFD, self._poll_leader)
        else:
            self.loop.add_reader(self._pidfd, self._pidfd_readable)

    def _poll_leader(self) -> None:
        if self._closed:
            return
        if self.leftover:
            st = self.os.read_stat(self.pid)
            if st is not None and st.live and st.start_ticks == self.start_ticks:
                self.loop.call_later(POLL_NO_PIDFD, self._poll_leader)
                return
            self._leader_ended(ExitStatus(known=False))
            return
        status = self.os.reap(self.pid)
        if status is None:
            self.loop.call_later(POLL_NO_PIDFD, self._poll_leader)
            return
        self._leader_ended(status)

    def _pidfd_readable(self) -> None:
        self._close_pidfd()
        self._leader_ended(None)

    def _leader_ended(self, status: ExitStatus | None) -> None:
        self.leader_exited_at = time.monotonic()
        if self.exit is None:
            if status is None:
                status = ExitStatus(known=False) if self.leftover else \
                    (self.os.reap(self.pid) or ExitStatus(known=False))
            self.exit = status
        if self._on_leader_exit is not None:
            self._on_leader_exit()

    def reap_now(self) -> None:
        """The leader may have ended without our noticing yet: take its status if so."""
        if self.exit is None and not self.leftover:
            self.exit = self.os.reap(self.pid)

    # -- signals ----------------------------------------------------------------------

    def signal(self, sig: int, spare: frozenset[int] = frozenset()) -> tuple[bool, list[str]]:
        """Send ``sig`` to the group and every escapee but those in ``spare``. Returns
        whether it reached anyone, and the escapees it could not reach; raises the group's
        OSError (not ESRCH)."""
        reached = False
        if self.pgid is not None:
            try:
                self.os.signal_group(self.pgid, sig)
                reached = True
            except ProcessLookupError:
                pass  # nothing left in the group: it ended just now
        failures = []
        for esc in self.escapees.values():
            if esc.alive and esc.pidfd is not None and esc.pid not in spare:
                try:
                    self.os.signal_pidfd(esc.pidfd, sig)
                    reached = True
                except ProcessLookupError:
                    esc.alive = False
                except OSError as e:
                    failures.append(f"cannot signal pid {esc.pid} (outside its group): {e}")
        return reached, failures

    def live_pids(self) -> list[int]:
        """Members and escapees alive right now (fresh reads, not a cached scan: what a
        SIGKILL is about to reach decides how the run is worded)."""
        pids: list[int] = []
        if self.pgid is not None:
            for st in self.os.group_members(self.pgid, ours=not self.leftover):
                fresh = self.os.read_stat(st.pid)
                if fresh is not None and fresh.live and fresh.pgid == self.pgid:
                    pids.append(st.pid)
            leader = self.os.read_stat(self.pgid)
            if leader is not None and leader.live and leader.pgid == self.pgid \
                    and self.pgid not in pids:
                pids.insert(0, self.pgid)
        return pids + [e.pid for e in self.escapees.values() if e.alive]

    def group_alive(self) -> bool:
        return self.pgid is not None and self.os.group_alive(self.pgid, ours=not self.leftover)

    def describe(self) -> str:
        return self.os.describe(self.pgid, ours=not self.leftover) if self.pgid else "gone"

    # -- escapees ---------------------------------------------------------------------

    @property
    def outside(self) -> list[Escapee]:
        return [e for e in self.escapees.values() if e.alive]

    def track(self, st: ProcStat, on_exit: Callable[[], None]) -> None:
        if st.pid in self.escapees:
            return
        try:
            pidfd = self.os.pidfd_open(st.pid)
        except OSError:
            pidfd = None
        if pidfd is None:
            return
        esc = Escapee(st.pid, st.start_ticks, st.pgid, pidfd)
        self.escapees[st.pid] = esc
        self.loop.add_reader(pidfd, self._escapee_ended, esc, on_exit)

    def _escapee_ended(self, esc: Escapee, on_exit: Callable[[], None]) -> None:
        self._drop(esc)
        esc.alive = False
        self.os.reap(esc.pid)  # ours once re-parented to us; harmless otherwise
        on_exit()

    def _drop(self, esc: Escapee) -> None:
        if esc.pidfd is not None:
            self.loop.remove_reader(esc.pidfd)
            os.close(esc.pidfd)
            esc.pidfd = None

    # -- the end ----------------------------------------------------------------------

    def _close_pidfd(self) -> None:
        if self._pidfd is not None and self._pidfd >= 0:
            self.loop.remove_reader(self._pidfd)
            with contextlib.suppress(OSError):
                os.close(self._pidfd)
        self._pidfd = None

    def close(self) -> None:
        """Stop watching (after the outcome): escapees not known dead stay "alive"."""
        self._closed = True
        self._close_pidfd()
        for esc in self.escapees.values():
            self._drop(esc)
