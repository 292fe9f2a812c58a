"""The run directory: one lock for the life of a run, one PID file per live process.

A PID file outlives proctui only when its process does (abandoned, unkillable, or
proctui itself killed). The next run finds it, proves the process is the same one
(boot id, start time, command line) and only then treats it as its own leftover.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import stat
from dataclasses import asdict, dataclass
from pathlib import Path
from urllib.parse import quote, unquote

PID_SUFFIX = ".pid"


class RunDirError(Exception):
    """The run directory cannot be used; ``str()`` is a one-line message."""


@dataclass(frozen=True, slots=True)
class PidRecord:
    name: str
    pid: int
    pgid: int
    boot_id: str
    start_ticks: int
    cmdline: list[str]
    started_at: float  # wall clock, for people
    proctui_pid: int

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1) + "\n"

    @classmethod
    def from_json(cls, text: str) -> PidRecord:
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        fields = {
            "name": str, "pid": int, "pgid": int, "boot_id": str, "start_ticks": int,
            "cmdline": list, "started_at": (int, float), "proctui_pid": int,
        }
        for key, kind in fields.items():
            value = data.get(key)
            if not isinstance(value, kind) or isinstance(value, bool):
                raise ValueError(f"field {key!r} missing or of the wrong type")
        if data["pid"] <= 1 or data["pgid"] <= 1:
            raise ValueError("pid or pgid out of range")
        if not all(isinstance(a, str) for a in data["cmdline"]):
            raise ValueError("field 'cmdline' is not a list of strings")
        return cls(**{k: data[k] for k in fields})


@dataclass(frozen=True, slots=True)
class PidFileEntry:
    path: Path
    record: PidRecord | None
    error: str | None = None


def default_run_dir(anchor: Path) -> Path:
    """$XDG_RUNTIME_DIR/proctui/NAME-HASH (or /tmp/proctui-UID/NAME-HASH), one per config
    file or working directory, so two projects never share a lock."""
    base = os.environ.get("XDG_RUNTIME_DIR")
    root = Path(base) / "proctui" if base else Path(f"/tmp/proctui-{os.getuid()}")
    resolved = anchor.resolve()
    digest = hashlib.sha1(str(resolved).encode()).hexdigest()[:8]
    slug = "".join(c if c.isalnum() or c in "-_." else "_" for c in resolved.name) or "root"
    return root / f"{slug}-{digest}"


def _secure_dir(path: Path) -> None:
    """Create ``path`` (mode 0700) and refuse one that another user could tamper with."""
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = os.lstat(path)
    except OSError as e:
        raise RunDirError(f"run directory {path}: {e.strerror or e}") from None
    if not stat.S_ISDIR(st.st_mode):
        raise RunDirError(f"run directory {path}: not a directory")
    if st.st_uid != os.getuid():
        raise RunDirError(f"run directory {path}: owned by uid {st.st_uid}, not by you "
                          f"(uid {os.getuid()})")
    if st.st_mode & 0o022:
        raise RunDirError(f"run directory {path}: writable by others "
                          f"(mode {stat.S_IMODE(st.st_mode):o}); use chmod 700")


class RunDir:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock_fd: int | None = None

    @property
    def lock_path(self) -> Path:
        return self.path / "lock"

    def open(self) -> None:
        """Take the exclusive lock for this run, or raise RunDirError naming the holder."""
        _secure_dir(self.path)
        try:
            fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC,
                         0o600)
        except OSError as e:
            raise RunDirError(f"lock file {self.lock_path}: {e.strerror or e}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            if e.errno in (errno.EWOULDBLOCK, errno.EACCES):
                raise RunDirError(f"another proctui (pid {holder}) is running with run "
                                  f"directory {self.path}; stop it first or pass "
                                  f"--run-dir") from None
            raise RunDirError(f"lock file {self.lock_path}: {e.strerror or e}") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._lock_fd = fd

    def close(self) -> None:
        if self._lock_fd is not None:
            # The lock file stays: removing it would race with a new run taking it.
            with contextlib.suppress(OSError):
                os.ftruncate(self._lock_fd, 0)
            os.close(self._lock_fd)
            self._lock_fd = None

    def pid_path(self, name: str) -> Path:
        return self.path / (quote(name, safe="") + PID_SUFFIX)

    def output_path(self, name: str) -> Path:
        """Where the output of a process left running goes once proctui has exited."""
        return self.path / (quote(name, safe="") + ".out")

    def write_pid(self, record: PidRecord) -> Path:
        """Atomically (write a temporary file, then rename over)."""
        path = self.pid_path(record.name)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(tmp, flags, 0o600)
        try:
            os.write(fd, record.to_json().encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
        return path

    def remove_pid(self, name: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.pid_path(name))

    def scan(self) -> list[PidFileEntry]:
        """Every PID file here, parsed, or with the reason it could not be."""
        entries = []
        try:
            names = sorted(os.listdir(self.path))
        except OSError as e:
            raise RunDirError(f"run directory {self.path}: {e.strerror or e}") from None
        for filename in names:
            if not filename.endswith(PID_SUFFIX) or filename.startswith("."):
                continue
            path = self.path / filename
            entries.append(read_pid_file(path, unquote(filename[: -len(PID_SUFFIX)])))
        return entries


def read_pid_file(path: Path, expected_name: str | None = None) -> PidFileEntry:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as e:
        reason = "a symlink" if e.errno == errno.ELOOP else (e.strerror or str(e))
        return PidFileEntry(path, None, f"unreadable PID file: {reason}")
    try:
        raw = os.read(fd, 65536)
    finally:
        os.close(fd)
    try:
        record = PidRecord.from_json(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError, TypeError) as e:
        return PidFileEntry(path, None, f"unreadable PID file: {e}")
    if expected_name is not None and record.name != expected_name:
        return PidFileEntry(path, None, f"unreadable PID file: it names process "
                                        f"{record.name!r}, its file name says {expected_name!r}")
    return PidFileEntry(path, record)
