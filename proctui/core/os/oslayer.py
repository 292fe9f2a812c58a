"""The one place that talks to the OS about processes that already exist.

Signals, pidfds, reaping, group liveness and process-table scans all go through
``OSLayer``, so tests can inject what the OS will not do on demand (an unkillable
process, EPERM as root), and a port to another OS changes this module (and procfs.py).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import time
from collections.abc import Callable, Iterator

from proctui.core.life.outcome import ExitStatus
from proctui.core.os import procfs
from proctui.core.os.procfs import HAVE_PROC, ProcStat, ProcTable

PR_SET_CHILD_SUBREAPER = 36
SCAN_MAX_AGE = 0.05  # seconds a scan is reused: many runs ending at once share one


class OSLayer:
    """Signals, liveness and scans. Subclass to fake what the OS won't do."""

    def __init__(self) -> None:
        self.subreaper = False
        self._tree: tuple[float, ProcTable] | None = None
        self._all: tuple[float, ProcTable] | None = None
        self._tree_kids: set[int] = set()
        self._same = False  # inside one_walk()
        # Called now and then during a walk of our tree (the engine takes the deadlines
        # that came meanwhile); None: nothing.
        self.between: Callable[[], None] | None = None

    def take_between(self) -> None:
        """In a long piece of work on our processes, what cannot wait is taken now."""
        if self.between is not None:
            self.between()

    # -- this process ------------------------------------------------------------------

    def become_subreaper(self) -> bool:
        """Orphaned descendants (a daemon's double fork) are re-parented to proctui, not
        to init: nothing a process starts can leave proctui's sight."""
        if not HAVE_PROC:
            return False
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            self.subreaper = libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
        except (OSError, AttributeError):
            self.subreaper = False
        return self.subreaper

    # -- signals -----------------------------------------------------------------------

    def signal_group(self, pgid: int, sig: int) -> None:
        """Send ``sig`` to every process in the group. Raises ProcessLookupError when the
        group is empty, PermissionError (or another OSError) when the OS refuses."""
        os.killpg(pgid, sig)

    def signal_pidfd(self, pidfd: int, sig: int) -> None:
        """Signal one process held by a pidfd: safe against pid reuse."""
        signal.pidfd_send_signal(pidfd, sig)

    def pidfd_open(self, pid: int) -> int | None:
        """A pidfd for ``pid``, None if it is gone; raises OSError when pidfds are missing
        or the table is full."""
        try:
            return os.pidfd_open(pid)
        except ProcessLookupError:
            return None

    def reap(self, pid: int) -> ExitStatus | None:
        """The exit status of our child ``pid`` once it has ended, else None."""
        try:
            wpid, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return ExitStatus(known=False)
        if wpid != pid:
            return None
        return ExitStatus.from_wait_status(status)

    # -- looking -----------------------------------------------------------------------

    @contextlib.contextmanager
    def one_walk(self) -> Iterator[None]:
        """Inside, descendants() answers from the walk before, however old: for a batch of
        runs signalled, checked or observed together. A walk per run made 2,000 processes
        take 25 s to stop."""
        if self._tree is None:
            self.descendants()
        was, self._same = self._same, True
        try:
            yield
        finally:
            self._same = was

    def descendants(self, max_age: float = SCAN_MAX_AGE,
                    newer_than: float | None = None) -> ProcTable:
        """Every descendant of proctui (orphans included, being re-parented to us), from
        a walk at most ``max_age`` old that knows of everything re-parented to us
        after ``newer_than``."""
        now = time.monotonic()
        tree = self._tree
        if tree is not None and self._same:
            return tree[1]
        if tree is not None and now - tree[0] <= max_age and newer_than is not None \
                and tree[0] < newer_than:
            # A newer walk is needed only if something new was re-parented to us since
            # the last one; our own children say so at the cost of a few reads.
            if set(procfs.children(os.getpid())) <= self._tree_kids:
                return tree[1]
        elif tree is not None and now - tree[0] <= max_age:
            return tree[1]
        table = procfs.scan_tree([os.getpid()], self.between)
        self._tree = (now, table)
        self._tree_kids = set(table.kids.get(os.getpid(), ()))
        return table

    def everything(self, max_age: float = SCAN_MAX_AGE) -> ProcTable:
        now = time.monotonic()
        if self._all is None or now - self._all[0] > max_age:
            self._all = (now, procfs.scan_all())
        return self._all[1]

    def forget_scans(self) -> None:
        self._tree = self._all = None

    def boot_id(self) -> str:
        return procfs.boot_id()

    def read_stat(self, pid: int) -> ProcStat | None:
        return procfs.read_stat(pid)

    def read_cmdline(self, pid: int) -> list[str] | None:
        return procfs.read_cmdline(pid)

    def dying(self, pid: int) -> bool:
        return procfs.dying(pid)

    def uid_of(self, pid: int) -> int | None:
        """The real user id a process runs as, or None when it is gone."""
        try:
            return os.stat(f"/proc/{pid}").st_uid
        except OSError:
            return None

    def has_env(self, pid: int, name: str, value: str) -> bool:
        return procfs.has_env(pid, name, value)

    def env_value(self, pid: int, name: str) -> str | None:
        return procfs.env_value(pid, name)

    def group_alive(self, pgid: int, ours: bool = True) -> bool:
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
        leader = procfs.read_stat(pgid)
        if leader is not None and leader.pgid == pgid and leader.live:
            return True
        return bool(self.group_members(pgid, ours))

    def group_members(self, pgid: int, ours: bool = True,
                      max_age: float = SCAN_MAX_AGE) -> list[ProcStat]:
        """Live (non-zombie) members of the group, leader first if it is among them. Our
        own groups are all inside proctui's tree (it is their subreaper); a leftover's
        group needs the whole table."""
        if not HAVE_PROC:
            return []
        table = self.descendants(max_age) if ours and self.subreaper else \
            self.everything(max_age)
        return table.members(pgid)

    def describe(self, pgid: int, ours: bool = True) -> str:
        """A word for what the group's first live member is doing (e.g. disk-sleep)."""
        members = self.group_members(pgid, ours, max_age=0)
        return procfs.state_name(members[0].state) if members else "gone"

    def reap_orphans(self, table: ProcTable, keep: set[int]) -> None:
        """Reap zombie children of ours that nobody else waits for (orphans re-parented
        to us, drainers); ``keep`` are the pids whose status a run still wants."""
        me = os.getpid()
        for st in list(table.stats.values()):
            if st.ppid == me and not st.live and st.pid not in keep:
                with contextlib.suppress(ChildProcessError, OSError):
                    os.waitpid(st.pid, os.WNOHANG)


def raise_fd_limit(processes: int) -> None:
    """Each process costs three descriptors (two pipes and a pidfd): raise the soft limit
    when a big config needs it."""
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        need = processes * 6 + 64  # two pipes, a pidfd, a notify socket, and some
        if soft != resource.RLIM_INFINITY and soft < need:
            new = need if hard == resource.RLIM_INFINITY else min(need, hard)
            resource.setrlimit(resource.RLIMIT_NOFILE, (new, hard))
    except (ImportError, ValueError, OSError):
        pass
