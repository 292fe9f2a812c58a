"""The run directory: one lock for the life of a run, one PID file per live process.

Everything in it may have been tampered with. The path to it is checked component by
component (as ssh checks ~/.ssh), the directory is then held open and every file in it
is opened relative to that descriptor, without following symlinks and without blocking
(a FIFO must not hang us), and must be a regular file.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import grp
import os
import pwd
import socket
import stat
from hashlib import sha1
from pathlib import Path
from urllib.parse import quote, unquote

from proctui.core.store.pidfile import MAX_PID_FILE, PidRecord
from proctui.records import dataclass

PID_SUFFIX = ".pid"
SUPERVISOR_LOG = "supervisor.log"  # a detached supervisor's own lines (proctui.daemon)
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class RunDirError(Exception):
    """The run directory cannot be used; ``str()`` is a one-line message."""


@dataclass(frozen=True, slots=True)
class PidFileEntry:
    path: Path
    record: PidRecord | None
    error: str | None = None




def default_run_dir(anchor: Path) -> Path:
    """$XDG_RUNTIME_DIR/proctui/NAME-HASH (or /tmp/proctui-UID/NAME-HASH), one per config
    file or working directory, so two projects never share a lock."""
    base = os.environ.get("XDG_RUNTIME_DIR")
    root = Path(base) / "proctui" if base and os.path.isabs(base) else \
        Path(f"/tmp/proctui-{os.getuid()}")
    resolved = anchor.resolve()
    digest = sha1(str(resolved).encode()).hexdigest()[:8]
    slug = "".join(c if c.isalnum() or c in "-_." else "_" for c in resolved.name)[:40]
    return root / f"{slug or 'root'}-{digest}"


def file_stem(name: str) -> str:
    """A process name as a file name: quoted, and never starting with a dot."""
    stem = quote(name, safe="")
    return "%2E" + stem[1:] if stem.startswith(".") else stem


def _only_mine(gid: int) -> bool:
    """Is group ``gid`` a private group of this user (nobody else in it)?"""
    if gid != os.getgid():
        return False
    try:
        me = pwd.getpwuid(os.getuid()).pw_name
        return set(grp.getgrgid(gid).gr_mem) <= {me}
    except KeyError:
        return False


def check_chain(path: Path) -> None:
    """Every directory from / down to ``path`` (resolved) must be owned by root or by us,
    and not writable by anyone else unless it is sticky (like /tmp): otherwise another
    user could swap the run directory for another project's and make us signal its
    processes. The run directory itself must be ours and writable by us alone."""
    uid = os.getuid()
    parts = path.parts
    for i in range(1, len(parts) + 1):
        here = Path(*parts[:i])
        try:
            st = os.lstat(here)
        except OSError as e:
            raise RunDirError(f"run directory {path}: {here}: {e.strerror or e}") from None
        if not stat.S_ISDIR(st.st_mode):
            raise RunDirError(f"run directory {path}: {here} is not a directory")
        last = i == len(parts)
        if st.st_uid not in (0, uid) or (last and st.st_uid != uid):
            raise RunDirError(f"run directory {path}: {here} is owned by uid {st.st_uid}, "
                              f"not by you (uid {uid}) or root")
        mode = stat.S_IMODE(st.st_mode)
        if last:
            if mode & 0o022:
                raise RunDirError(f"run directory {path}: writable by others (mode "
                                  f"{mode:o}); use chmod 700")
            continue
        sticky = bool(mode & stat.S_ISVTX)
        if mode & 0o002 and not sticky:
            raise RunDirError(f"run directory {path}: {here} is writable by everyone "
                              f"(mode {mode:o}) and not sticky")
        if mode & 0o020 and not sticky and not _only_mine(st.st_gid):
            raise RunDirError(f"run directory {path}: {here} is writable by group "
                              f"{st.st_gid} (mode {mode:o})")


def _name_holder(path: Path) -> int | None:
    from proctui.core.store import namelock

    return namelock.holder(path)


class RunDir:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd: int | None = None
        self._lock_fd: int | None = None
        self.name_lock: socket.socket | None = None  # see namelock.py

    @property
    def lock_path(self) -> Path:
        return self.path / "lock"

    def open(self, name_lock: socket.socket | None = None) -> None:
        """Check the path, hold the directory open, and take the exclusive lock for this
        run, or raise RunDirError naming the holder. ``name_lock``: the name this run
        holds already (the directory is being rebuilt under it)."""
        self._make()
        real = Path(os.path.realpath(self.path))
        check_chain(real)
        self.path = real
        try:
            fd = os.open(real, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError as e:
            raise RunDirError(f"run directory {real}: {e.strerror or e}") from None
        held, checked = os.fstat(fd), os.lstat(real)
        if (held.st_dev, held.st_ino) != (checked.st_dev, checked.st_ino):
            os.close(fd)
            raise RunDirError(f"run directory {real}: replaced while it was being checked")
        self.fd = fd
        try:
            self._lock()
            self._hold_name(name_lock)
        except RunDirError:
            self.close()
            raise

    def _hold_name(self, held: socket.socket | None) -> None:
        from proctui.core.store import namelock

        if held is not None:
            self.name_lock = held
            return
        try:
            self.name_lock = namelock.take(self.path)
        except namelock.NameHeld as e:
            raise RunDirError(f"another proctui (pid {e.pid}) is running with run "
                              f"directory {self.path} (the directory was removed under it, "
                              "and it is making it again); stop it first or pass "
                              "--run-dir") from None

    def _make(self) -> None:
        """Create the missing directories of the path, each 0700."""
        missing = []
        here = self.path if self.path.is_absolute() else Path.cwd() / self.path
        while not os.path.lexists(here) and here != here.parent:
            missing.append(here)
            here = here.parent
        for d in reversed(missing):
            try:
                os.mkdir(d, 0o700)
            except FileExistsError:
                pass
            except OSError as e:
                raise RunDirError(f"run directory {self.path}: {d}: {e.strerror or e}") \
                    from None

    def _lock(self) -> None:
        try:
            fd = os.open("lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK
                         | os.O_CLOEXEC, 0o600, dir_fd=self.fd)
        except OSError as e:
            reason = "a symlink" if e.errno == errno.ELOOP else (e.strerror or str(e))
            raise RunDirError(f"lock file {self.lock_path}: {reason}") from None
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid():
            os.close(fd)
            what = "not a regular file" if not stat.S_ISREG(st.st_mode) else "not yours"
            raise RunDirError(f"lock file {self.lock_path}: {what}; remove it")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or \
                str(_name_holder(self.path) or "unknown")  # (the pid is written just after)
            os.close(fd)
            if e.errno in (errno.EWOULDBLOCK, errno.EACCES):
                raise RunDirError(f"another proctui (pid {holder}) is running with run "
                                  f"directory {self.path}; stop it first or pass "
                                  f"--run-dir") from None
            raise RunDirError(f"lock file {self.lock_path}: {e.strerror or e}") from None
        # The pid in it only names the holder in the message above: a full disk (or a
        # quota) must not stop a run whose lock is held.
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._lock_fd = fd

    def close(self) -> None:
        if self.name_lock is not None:
            self.name_lock.close()
            self.name_lock = None
        if self._lock_fd is not None:
            # The lock file stays: removing it would race with a new run taking it.
            with contextlib.suppress(OSError):
                os.ftruncate(self._lock_fd, 0)
            os.close(self._lock_fd)
            self._lock_fd = None
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    # -- files inside -----------------------------------------------------------------

    def pid_path(self, name: str) -> Path:
        return self.path / (file_stem(name) + PID_SUFFIX)

    def output_path(self, name: str) -> Path:
        """Where the output of a process left running goes once proctui has exited."""
        return self.path / (file_stem(name) + ".out")

    def _fd(self) -> int:
        """The held directory. Closed, it is an error: never a path relative to the cwd."""
        if self.fd is None:
            raise OSError(errno.EBADF, f"run directory {self.path} is closed")
        return self.fd

    def open_append(self, filename: str) -> int:
        """A descriptor appending to a regular file here (created 0600), never through a
        symlink; blocking, for a writer that may wait."""
        self._fd()
        fd = os.open(filename, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW
                     | os.O_NONBLOCK | os.O_CLOEXEC, 0o600, dir_fd=self.fd)
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise OSError(errno.EINVAL, f"{filename} is not a regular file")
        os.set_blocking(fd, True)
        return fd

    def append_text(self, filename: str, text: str) -> None:
        """Append ``text`` to a file here (as open_append), never raising: for the logs
        written on the way out, where a full disk must lose the words, not the exit."""
        if self.fd is None or not text:
            return
        with contextlib.suppress(OSError):
            fd = self.open_append(filename)
            try:
                os.write(fd, text.encode(errors="backslashreplace"))
            finally:
                os.close(fd)

    def write_pid(self, record: PidRecord) -> Path:
        """Atomically (see replace_file). Not fsynced: a PID file must survive proctui's
        death, not the machine's (its processes would not)."""
        name = file_stem(record.name) + PID_SUFFIX
        self.replace_file(name, record.to_json().encode(errors="backslashreplace"))
        return self.path / name

    def replace_file(self, filename: str, data: bytes) -> None:
        """Write ``data`` as the whole of a file here, atomically: a temporary file, then
        a rename over. Raises OSError (a full disk), and leaves no half-written file."""
        tmp = f"{filename}.tmp-{os.getpid()}"
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_NONBLOCK | \
            os.O_CLOEXEC
        fd = os.open(tmp, flags, 0o600, dir_fd=self._fd())
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise OSError(errno.EINVAL, f"{tmp} is not a regular file")
            if os.write(fd, data) != len(data):
                raise OSError(errno.ENOSPC, "short write")
            os.close(fd)
            fd = -1
            os.replace(tmp, filename, src_dir_fd=self.fd, dst_dir_fd=self.fd)
        except OSError:
            # A full disk: no half-written file may be left to be judged next time.
            if fd >= 0:
                os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=self.fd)
            raise

    def remove_pid(self, name: str) -> None:
        self.remove(file_stem(name) + PID_SUFFIX)

    def remove(self, filename: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(filename, dir_fd=self._fd())

    def scan(self) -> list[PidFileEntry]:
        """Every PID file here (dot-files too: names used to be written that way),
        parsed, or with the reason it could not be."""
        try:
            names = sorted(os.listdir(self.fd if self.fd is not None else self.path))
        except OSError as e:
            raise RunDirError(f"run directory {self.path}: {e.strerror or e}") from None
        entries = []
        for filename in names:
            if not filename.endswith(PID_SUFFIX) or len(filename) == len(PID_SUFFIX):
                continue
            entries.append(read_pid_file(self.path / filename, unquote(filename[:-4]),
                                         self.fd))
        return entries


def read_head(dir_fd: int, name: str, limit: int) -> bytes | None:
    """The first ``limit`` bytes of a regular file in a directory, never through a
    symlink nor blocking on a FIFO; None when it cannot be read as such."""
    try:
        fd = os.open(name, _READ, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return os.read(fd, limit)
    except OSError:
        return None
    finally:
        os.close(fd)


def read_pid_file(path: Path, expected_name: str | None = None,
                  dir_fd: int | None = None) -> PidFileEntry:
    try:
        fd = os.open(path.name if dir_fd is not None else path, _READ, dir_fd=dir_fd)
    except OSError as e:
        reason = "a symlink" if e.errno == errno.ELOOP else (e.strerror or str(e))
        return PidFileEntry(path, None, f"unreadable PID file: {reason}")
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return PidFileEntry(path, None, "unreadable PID file: not a regular file")
        raw = os.read(fd, MAX_PID_FILE + 1)
    except OSError as e:
        return PidFileEntry(path, None, f"unreadable PID file: {e.strerror or e}")
    finally:
        os.close(fd)
    if len(raw) > MAX_PID_FILE:
        return PidFileEntry(path, None, "unreadable PID file: too large")
    try:
        record = PidRecord.from_json(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError, TypeError, RecursionError) as e:
        return PidFileEntry(path, None, f"unreadable PID file: {e}")
    if expected_name is not None and record.name != expected_name:
        return PidFileEntry(path, None, f"unreadable PID file: it names process "
                                        f"{record.name!r}, its file name says {expected_name!r}")
    return PidFileEntry(path, record)
