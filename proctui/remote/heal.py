"""A run directory that heals: ``rm -rf RUN_DIR`` under a running supervisor (what a logout
does to /run/user/UID) left it unreachable, and the next ``up`` started a second copy of
every process. The control server checks (when: below) that the path still names the
directory it holds (st_dev, st_ino); when it does not, it makes the directory again, takes
the lock, puts back the PID files it last saw, and the server binds its socket there anew.

It keeps a copy of the PID files (re-read only when the directory changed): once the
directory is unlinked nothing can read them back. A file written in the last moment before
the removal may be missing from the copy; the core writes a PID file again whenever its
process's members change. The core then moves its journal (beginning with
the entries it still holds) and its output logs into the new directory (the server
asks it to: they belong to the core).

When does it look: an idle supervisor must not wake four times a second for a directory
that does not change. Where inotify is at hand (Watch), the server looks when the
directory's entries or its parent's change (``rm -rf`` takes the entries first, and the
directory itself last), when it or a directory above it is moved, and once a SAFETY
for what inotify cannot see (a mount over a parent, a symlink on the path switched).
Looks wait for the directory to settle and stay at least a HEAL_EVERY apart (Pace):
2,000 PID files rewritten in a stop are a listing a second, not 2,000. Without inotify,
or while the directory is gone and cannot be made again, it looks every HEAL_EVERY as it
always did.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
from collections.abc import Callable
from pathlib import Path

from proctui.core.store import namelock
from proctui.core.store.rundir import PID_SUFFIX, RunDir, RunDirError, read_head

HEAL_EVERY = 0.25  # seconds between two checks (two stat calls; a re-read only on change)
SAFETY = 60.0  # seconds between two checks while inotify watches and nothing changed
SETTLE = 1.0  # seconds from a change to its look at the latest, however busy the directory
MAX_PID_FILE = 64 << 10  # bytes: a PID file is a few hundred
MAX_PID_FILES = 4096
LOCK = "lock"  # RunDir's: there for as long as the directory is whole
# Called with the rebuilt directory (``proctui up`` reopens supervisor.log there).
REBUILT: list[Callable[[RunDir], None]] = []


class Healer:
    def __init__(self, run_dir: RunDir, say: Callable[[str], object]) -> None:
        self.run_dir = run_dir
        self.say = say
        self.pid_files: dict[str, bytes] = {}
        # PID files are replaced whole (a new inode per write): only a new inode is read
        # again, so 2,000 processes stopping cost a listing a second, not 2,000 reads.
        self._inodes: dict[str, int] = {}
        self._seen: tuple[int, int, int] | None = None  # dev, ino, mtime of the last read
        self._graveyard: list[int] = []
        self._told = ""
        self.broken = False  # gone and not made again: look again soon, not on an event
        if run_dir.fd is not None:
            with contextlib.suppress(OSError):
                self._remember(run_dir.fd, os.fstat(run_dir.fd))

    def check(self) -> bool:
        """True when the directory had gone and has been rebuilt."""
        fd = self.run_dir.fd
        if fd is None:
            return False
        namelock.clear(self.run_dir.name_lock)
        try:
            held = os.fstat(fd)
            here = os.stat(self.run_dir.path, follow_symlinks=False)
        except FileNotFoundError:
            return self._rebuild("was removed")
        except OSError:
            return False  # (a parent we may not search: nothing we can do either)
        if (here.st_dev, here.st_ino) != (held.st_dev, held.st_ino):
            return self._rebuild("was replaced")
        self.broken = False
        self._remember(fd, held)
        return False

    def _remember(self, fd: int, held: os.stat_result) -> None:
        seen = (held.st_dev, held.st_ino, held.st_mtime_ns)
        if seen == self._seen:
            return
        files: dict[str, bytes] = {}
        inodes: dict[str, int] = {}
        lock = False
        with contextlib.suppress(OSError), os.scandir(fd) as entries:
            for n, entry in enumerate(entries):
                name = entry.name
                lock = lock or name == LOCK
                if n >= MAX_PID_FILES * 4 or len(files) >= MAX_PID_FILES:
                    break
                if not name.endswith(PID_SUFFIX):
                    continue
                ino = entry.inode()
                data = self.pid_files.get(name) if self._inodes.get(name) == ino else None
                if data is None:
                    data = read_head(fd, name, MAX_PID_FILE)
                if data is not None:
                    files[name], inodes[name] = data, ino
            if not lock:
                return  # being taken apart (its lock goes with it): keep what it held
            self.pid_files, self._inodes = files, inodes
            self._seen = seen

    def _rebuild(self, what: str) -> bool:
        run_dir = self.run_dir
        fresh = RunDir(run_dir.path)
        try:
            fresh.open(name_lock=run_dir.name_lock)  # the name stays ours throughout
        except RunDirError as e:
            self.broken = True
            if self._told != str(e):  # once per reason, not once a second
                self._told = str(e)
                self.say(f"run directory {run_dir.path} {what} and cannot be rebuilt: {e}")
            return False
        # RunDir is shared with the core, which reads its descriptors on its own thread:
        # swap them in place, and keep the old directory's open (closing it could let its
        # number be reused under a write the core is making right now).
        old_fd, old_lock = run_dir.fd, run_dir._lock_fd
        run_dir.fd, run_dir._lock_fd = fresh.fd, fresh._lock_fd
        fresh.fd = fresh._lock_fd = None
        # The name too, when it could be taken only now (a stranger's socket was on it
        # at start): dropped here, it was released at once.
        run_dir.name_lock, fresh.name_lock = fresh.name_lock, None
        if old_fd is not None:
            self._graveyard.append(old_fd)
        if old_lock is not None:
            with contextlib.suppress(OSError):
                os.close(old_lock)
        assert run_dir.fd is not None
        restored = 0
        for name, data in self.pid_files.items():
            restored += _write_new(run_dir.fd, name, data)
        self._seen, self._told, self.broken = None, "", False
        for hook in REBUILT:
            with contextlib.suppress(Exception):
                hook(run_dir)
        self.say(f"run directory {run_dir.path} {what}: rebuilt it (lock, {restored} PID "
                 f"file{'s' if restored != 1 else ''}, control socket)")
        return True

    def close(self) -> None:
        for fd in self._graveyard:
            with contextlib.suppress(OSError):
                os.close(fd)
        self._graveyard.clear()


def _write_new(dir_fd: int, name: str, data: bytes) -> int:
    """1 when written; never over a file that is there already (the core's is newer)."""
    try:
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                     | os.O_CLOEXEC, 0o600, dir_fd=dir_fd)
    except OSError:
        return 0
    try:
        os.write(fd, data)
    except OSError:
        return 0
    finally:
        os.close(fd)
    return 1


class Pace:
    """When the next look is due (loop time). A change inotify saw is looked at once the
    directory has been quiet for HEAL_EVERY (an ``rm -rf`` half-way through showed a
    directory still there, its PID files already gone, and the copy forgot them), but
    no later than SETTLE after the first change (a stop of 2,000 processes rewrites PID
    files for seconds), and never closer than HEAL_EVERY to the last look. With nothing
    seen, SAFETY after the last look."""

    def __init__(self, now: float) -> None:
        self.last = now  # when the directory was last looked at
        self.first: float | None = None  # the first change seen since, and the latest
        self.latest = 0.0

    @property
    def woken(self) -> bool:
        return self.first is not None

    def seen(self, now: float) -> None:
        if self.first is None:
            self.first = now
        self.latest = now

    def due(self, watched: bool, broken: bool) -> float:
        soonest = self.last + HEAL_EVERY
        if not watched or broken:
            return soonest
        if self.first is None:
            return self.last + SAFETY
        return max(soonest, min(self.latest + HEAL_EVERY, self.first + SETTLE))

    def looked(self, now: float) -> None:
        self.last, self.first = now, None


# inotify(7): entries made, removed or renamed; the watched directory itself gone or moved.
IN_MOVED_FROM, IN_MOVED_TO, IN_CREATE, IN_DELETE = 0x40, 0x80, 0x100, 0x200
IN_DELETE_SELF, IN_MOVE_SELF, IN_ONLYDIR = 0x400, 0x800, 0x1000000
ENTRIES = IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE
SELF = IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR


class Watch:
    """inotify on the run directory and every directory above it, through libc (no
    dependency). ``fd`` is None where there is none (not Linux, out of instances): the
    healer then looks every HEAL_EVERY."""

    def __init__(self) -> None:
        self.fd: int | None = None
        self._wds: list[int] = []
        self._libc: ctypes.CDLL | None = None
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        except (OSError, AttributeError):
            return
        if fd >= 0:
            self.fd, self._libc = fd, libc

    @property
    def watching(self) -> bool:
        return bool(self._wds)

    def arm(self, path: Path) -> bool:
        """Watch ``path`` (anew: after a rebuild it is another directory) and the ones
        above it. False when it could not watch the directory itself."""
        libc, fd = self._libc, self.fd
        if libc is None or fd is None:
            return False
        for wd in self._wds:
            libc.inotify_rm_watch(fd, wd)  # (EINVAL for a watch the kernel dropped)
        self._wds = []
        wd = libc.inotify_add_watch(fd, os.fsencode(path), ENTRIES | SELF)
        if wd < 0:
            return False  # (gone, or ENOSPC: out of watches; looked at every HEAL_EVERY)
        self._wds.append(wd)
        # The directory's own rmdir comes last, and no event of its own says so while we
        # hold it open: its parent's entries do (the parent is $XDG_RUNTIME_DIR/proctui,
        # quiet, unless --run-dir puts it elsewhere; looks are paced anyway). Above that,
        # only a directory moved away matters (/tmp's entries are busy).
        for n, above in enumerate(path.parents):
            wd = libc.inotify_add_watch(fd, os.fsencode(above), SELF | (ENTRIES if n == 0
                                                                          else 0))
            if wd >= 0:
                self._wds.append(wd)
        return True

    def drain(self) -> None:
        """Read what inotify has (what it says does not matter: any event is a look)."""
        if self.fd is None:
            return
        while True:
            try:
                if not os.read(self.fd, 1 << 16):
                    return
            except OSError as e:
                if e.errno in (errno.EAGAIN, errno.EWOULDBLOCK):
                    return
                raise

    def close(self) -> None:
        if self.fd is not None:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd, self._libc, self._wds = None, None, []
