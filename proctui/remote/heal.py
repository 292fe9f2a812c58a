"""A run directory that heals: ``rm -rf RUN_DIR`` under a running supervisor (what a logout
does to /run/user/UID) left it unreachable, and the next ``up`` started a second copy of
every process. The control server checks, once a HEAL_EVERY, that the path still names the
directory it holds (st_dev, st_ino); when it does not, it makes the directory again, takes
the lock, puts back the PID files it last saw, and the server binds its socket there anew.

It keeps a copy of the PID files (re-read only when the directory changed): once the
directory is unlinked nothing can read them back. A file written in the last moment before
the removal may be missing from the copy; the core writes a PID file again whenever its
process's members change. The core then moves its journal (beginning with
the entries it still holds) and its output logs into the new directory (the server
asks it to: they belong to the core).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable

from proctui.core.store import namelock
from proctui.core.store.rundir import PID_SUFFIX, RunDir, RunDirError, read_head

HEAL_EVERY = 0.25  # seconds between two checks (two stat calls; a re-read only on change)
MAX_PID_FILE = 64 << 10  # bytes: a PID file is a few hundred
MAX_PID_FILES = 4096
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
        self._remember(fd, held)
        return False

    def _remember(self, fd: int, held: os.stat_result) -> None:
        seen = (held.st_dev, held.st_ino, held.st_mtime_ns)
        if seen == self._seen:
            return
        files: dict[str, bytes] = {}
        inodes: dict[str, int] = {}
        with contextlib.suppress(OSError), os.scandir(fd) as entries:
            for n, entry in enumerate(entries):
                name = entry.name
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
            self.pid_files, self._inodes = files, inodes
            self._seen = seen

    def _rebuild(self, what: str) -> bool:
        run_dir = self.run_dir
        fresh = RunDir(run_dir.path)
        try:
            fresh.open(name_lock=run_dir.name_lock)  # the name stays ours throughout
        except RunDirError as e:
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
        self._seen, self._told = None, ""
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
