"""``proctui ls`` and ``proctui clean``: this user's run directories in the default place
($XDG_RUNTIME_DIR/proctui, or /tmp/proctui-UID), live or stale.

Live means a supervisor holds the directory's lock (asked without waiting, so a stopped
one counts as live). Stale means nobody holds it. ``clean`` removes a stale directory only
while holding its lock itself (so no supervisor can take it meanwhile), never one that
still has PID files (a process left running: the next run there must find it), and
never through a symlink: every directory is opened relative to its parent, without
following links, and must be ours. A directory removed under us is simply not there.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import re
import stat
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TextIO

from proctui.core.output.text import clean as visible
from proctui.core.store.rundir import (
    PID_SUFFIX,
    RunDirError,
    check_chain,
    default_run_dir,
    read_head,
)

_OPEN_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
HEAD = 64 << 10  # bytes read from the start of a journal or supervisor.log
NEW = 60.0  # seconds: a directory without a lock file this young may be starting
MAX_DEPTH = 3  # levels of subdirectories clean descends (logs/ is the only one made)
MAX_ENTRIES = 100_000  # files clean removes from one run directory at most


@dataclass
class RunDirInfo:
    path: str
    state: str  # "live", "not answering", "stale"
    pid: int | None = None
    source: str | None = None
    started: float | None = None  # epoch seconds
    processes: int | None = None
    pid_files: int = 0  # PID files left: processes left running (clean keeps the dir)
    note: str = ""


def root() -> Path:
    return default_run_dir(Path("/")).parent


def _open_root() -> int | None:
    """The default place, held open, checked as a run directory's parent is; None when
    there is none. Raises RunDirError when it is not ours alone."""
    path = root()
    if not os.path.lexists(path):
        return None
    check_chain(Path(os.path.realpath(path)))
    try:
        return os.open(path, _OPEN_DIR)
    except FileNotFoundError:
        return None
    except OSError as e:
        raise RunDirError(f"{path}: {e.strerror or e}") from None


def _entries(root_fd: int) -> Iterator[tuple[str, int]]:
    """Each subdirectory that is ours (not a symlink), opened: (name, fd)."""
    uid = os.getuid()
    for name in sorted(os.listdir(root_fd)):
        try:
            st = os.lstat(name, dir_fd=root_fd)
            if not stat.S_ISDIR(st.st_mode) or st.st_uid != uid:
                continue
            fd = os.open(name, _OPEN_DIR, dir_fd=root_fd)
        except OSError:
            continue  # gone meanwhile, or not ours to open
        held = os.fstat(fd)
        if (held.st_dev, held.st_ino) != (st.st_dev, st.st_ino):
            os.close(fd)  # replaced between the look and the open
            continue
        yield name, fd


def _lock_fd(dir_fd: int) -> int | None:
    try:
        fd = os.open("lock", _READ, dir_fd=dir_fd)
    except OSError:
        return None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid():
        os.close(fd)
        return None
    return fd


def _held(lock_fd: int) -> bool:
    try:
        fcntl.flock(lock_fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True
    fcntl.flock(lock_fd, fcntl.LOCK_UN)
    return False


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and \
        0 < value < 1 << 31 else None


def _stale_info(info: RunDirInfo, dir_fd: int) -> None:
    """What a stale directory's files say about its last run: the journal's first entry
    (pid, processes, when) and supervisor.log's first line (the config)."""
    first = (read_head(dir_fd, "journal.jsonl", HEAD) or b"").split(b"\n", 1)[0]
    with contextlib.suppress(ValueError, UnicodeDecodeError, RecursionError):
        entry = json.loads(first)
        if isinstance(entry, dict) and entry.get("kind") == "begin":
            info.pid = _int(entry.get("pid"))
            wall = entry.get("wall")
            if isinstance(wall, (int, float)) and 0 < wall < 1e11:
                info.started = float(wall)
            names = entry.get("processes")
            if isinstance(names, list):
                info.processes = len(names)
    line = (read_head(dir_fd, "supervisor.log", HEAD) or b"").split(b"\n", 1)[0] \
        .decode(errors="replace")
    found = re.search(r" for (.{1,4096})$", line)
    if found and found.group(1) != "commands":
        info.source = found.group(1)


def _pid_files(dir_fd: int) -> int:
    try:
        return sum(n.endswith(PID_SUFFIX) for n in os.listdir(dir_fd))
    except OSError:
        return 0


def scan() -> list[RunDirInfo]:
    """Every run directory of ours in the default place, live or stale."""
    from proctui.remote.client import Connection, NoSupervisor, NotAnswering

    root_fd = _open_root()
    if root_fd is None:
        return []
    found = []
    try:
        for name, fd in _entries(root_fd):
            try:
                path = root() / name
                info = RunDirInfo(str(path), "stale", pid_files=_pid_files(fd))
                lock = _lock_fd(fd)
                held = lock is not None and _held(lock)
                if lock is not None:
                    os.close(lock)
                if not held:
                    _stale_info(info, fd)
                    if lock is None:
                        info.note = "no lock file"
                    found.append(info)
                    continue
                info.state = "live"
                try:
                    conn = Connection.open(path, timeout=3.0)
                except NotAnswering as e:
                    info.state, info.pid = "not answering", e.pid
                except NoSupervisor as e:
                    info.state, info.note = "not answering", str(e)
                else:
                    hello = conn.hello
                    conn.close()
                    info.pid = hello.pid
                    info.source = hello.source or None
                    info.started = hello.started or None
                    info.processes = len(hello.names)
                found.append(info)
            finally:
                os.close(fd)
    finally:
        os.close(root_fd)
    return found


def list_all(as_json: bool, out: TextIO) -> int:
    try:
        found = scan()
    except RunDirError as e:
        out.flush()
        os.write(2, f"proctui: error: {e}\n".encode())
        return 2
    if as_json:
        out.write(json.dumps({"schema": 1, "root": str(root()),
                              "run_dirs": [asdict(i) for i in found]}, indent=2) + "\n")
        return 0
    if not found:
        out.write(f"no run directories in {root()}\n")
        return 0
    rows = [("RUN DIR", "STATE", "PID", "STARTED", "PROCS", "CONFIG")]
    for i in found:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(i.started)) \
            if i.started else "-"
        config = i.source or "-"
        if i.pid_files and i.state == "stale":
            config += f" ({i.pid_files} PID file{'s' if i.pid_files > 1 else ''} left)"
        rows.append((i.path, i.state, str(i.pid or "-"), when,
                     "-" if i.processes is None else str(i.processes), config))
    widths = [max(len(r[c]) for r in rows) for c in range(5)]
    for row in rows:
        out.write(visible("  ".join(cell.ljust(widths[c]) for c, cell in
                                    enumerate(row[:5])) + "  " + row[5]).rstrip() + "\n")
    stale = sum(i.state == "stale" for i in found)
    if stale:
        out.write(f"{stale} stale: proctui clean removes them (proctui clean --dry-run "
                  "says which)\n")
    return 0


# -- clean ------------------------------------------------------------------------------


def clean(dry_run: bool, out: TextIO) -> int:
    """Remove every stale run directory that can go; say what was removed and what was
    kept, and why."""
    try:
        root_fd = _open_root()
    except RunDirError as e:
        os.write(2, f"proctui: error: {e}\n".encode())
        return 2
    if root_fd is None:
        out.write(f"nothing to clean: no run directories in {root()}\n")
        return 0
    removed = kept = 0
    try:
        for name, fd in _entries(root_fd):
            path = root() / name
            try:
                why = _remove(root_fd, name, fd, dry_run)
            finally:
                os.close(fd)
            if why is None:
                removed += 1
                out.write(visible(f"{'would remove' if dry_run else 'removed'} {path}") + "\n")
            elif why:
                kept += 1
                out.write(visible(f"kept {path}: {why}") + "\n")
    finally:
        os.close(root_fd)
    verb = "would be removed" if dry_run else "removed"
    out.write(f"{removed} stale run director{'y' if removed == 1 else 'ies'} {verb}"
              f"{f', {kept} kept' if kept else ''}\n")
    return 0


def _remove(root_fd: int, name: str, fd: int, dry_run: bool) -> str | None:
    """Remove one run directory if it is stale: None when removed (or would be), else
    why not ("" for a live one, which is not worth a line)."""
    lock = _lock_fd(fd)
    if lock is None:
        try:
            young = time.time() - os.fstat(fd).st_mtime < NEW
        except OSError:
            return "gone meanwhile"
        if young:
            return "no lock file yet (a supervisor may be starting)"
    try:
        if lock is not None:
            try:
                # Held by us while we remove: a supervisor starting now is refused.
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                return ""  # live
        if _pid_files(fd):
            return ("it holds PID files of processes left running (the next proctui run "
                    "there stops them)")
        if dry_run:
            return None
        try:
            _empty(fd, 0)
            os.rmdir(name, dir_fd=root_fd)
        except OSError as e:
            if e.errno == errno.ENOENT:
                return None  # someone else removed it
            return f"could not remove it: {e.strerror or e}"
        return None
    finally:
        if lock is not None:
            os.close(lock)


def _empty(dir_fd: int, depth: int) -> None:
    """Remove everything in the directory (the lock file last), never following a
    symlink: a link is removed, not what it points to."""
    names = sorted(os.listdir(dir_fd), key=lambda n: n == "lock")[:MAX_ENTRIES]
    for entry in names:
        try:
            st = os.lstat(entry, dir_fd=dir_fd)
        except FileNotFoundError:
            continue
        if stat.S_ISDIR(st.st_mode):
            if depth >= MAX_DEPTH:
                raise OSError(errno.ENOTEMPTY, f"{entry}: nested too deep")
            sub = os.open(entry, _OPEN_DIR, dir_fd=dir_fd)
            try:
                _empty(sub, depth + 1)
            finally:
                os.close(sub)
            os.rmdir(entry, dir_fd=dir_fd)
        else:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(entry, dir_fd=dir_fd)


def held(lock: Path) -> bool:
    """Does a supervisor hold this run directory's lock? Asked without waiting on it: a
    stopped supervisor is found here at once, and its client says it is not answering."""
    import fcntl

    try:
        fd = os.open(lock, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False  # no lock file: nothing ever ran here, or it is gone
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)
    return False
