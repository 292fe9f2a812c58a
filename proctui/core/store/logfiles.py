"""Each process's output on disk, kept whether or not anyone watches: RUN_DIR/logs/NAME.log
holds the bytes exactly as the process wrote them, rotated by size (NAME.log.1 is the
newest older file, up to NAME.log.KEEP). Written by the core as each chunk is read, so
nothing that reached the pipe is missing from it, however far a frontend falls behind.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Callable

from proctui.core.store.rundir import RunDir, file_stem

DIRECTORY = "logs"
SUFFIX = ".log"
# No room, for now: a full disk or quota. The output that did not fit is lost, and the
# next chunk is tried again; any other error ends the file's writing.
NO_ROOM = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


def open_logs_dir(run_dir: RunDir) -> int:
    """The logs directory inside the run directory (made 0700), held open; raises OSError."""
    if run_dir.fd is None:
        raise OSError(errno.EBADF, "the run directory is not open")
    with contextlib.suppress(FileExistsError):
        os.mkdir(DIRECTORY, 0o700, dir_fd=run_dir.fd)
    fd = os.open(DIRECTORY, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC,
                 dir_fd=run_dir.fd)
    st = os.fstat(fd)
    if st.st_uid != os.getuid() or stat.S_IMODE(st.st_mode) & 0o022:
        os.close(fd)
        raise OSError(errno.EPERM, f"{run_dir.path / DIRECTORY} is not yours alone")
    return fd


def log_name(name: str) -> str:
    return file_stem(name) + SUFFIX


class LogFile:
    def __init__(self, dir_fd: int, name: str, max_size: int, keep: int,
                 on_error: Callable[[str], None] = lambda _text: None) -> None:
        self.dir_fd = dir_fd
        self.filename = log_name(name)
        self.max_size = max_size
        self.keep = keep
        self.on_error = on_error
        self.fd: int | None = None
        self.size = 0
        self.failed = False
        self.mid_line = False  # the file does not end with a newline
        self.lost = 0  # bytes not written for want of room since the last that were

    def write(self, data: bytes) -> None:
        if self.failed or not data:
            return
        view = memoryview(data)
        try:
            if self.fd is None:
                self._open()
            while view:
                view = view[self._put(view):]
        except OSError as e:
            if e.errno in NO_ROOM:
                if not self.lost:
                    self.on_error(f"output log {self.filename}: {e.strerror or e}; output "
                                  "is not kept on disk until there is room again")
                self.lost += len(view)
                return
            self.failed = True
            self.close()
            self.on_error(f"output log {self.filename}: {e.strerror or e}; no longer written")
            return
        if self.lost:
            self.on_error(f"output log {self.filename}: written again ({self.lost} bytes of "
                          "output were not kept)")
            self.lost = 0

    def _put(self, view: memoryview) -> int:
        """Write a piece of ``view``; returns how many bytes it took. A file rotates only
        at a line boundary: a line that began in it ends in it (going past max_size by at
        most the rest of that line), and a line that does not fit starts the next file.
        Only a line longer than max_size on its own is cut across files."""
        room = self.max_size - self.size
        take = len(view)
        if take > room:
            head = bytes(view[:max(room, 0)])
            cut = head.rfind(b"\n") + 1
            if cut:
                take = cut
            elif self.mid_line:  # finish the line begun here, if it ends soon enough
                end = bytes(view[:self.max_size]).find(b"\n") + 1
                take = end if end else max(room, 0)
            elif self.size > 0:
                take = 0  # at a boundary: this line starts the next file
            else:
                take = room  # one line longer than the whole limit: the only cut
            if take == 0:
                self._rotate()
                return 0
        written = os.write(self.fd, view[:take])  # type: ignore[arg-type]
        self.size += written
        if written:
            self.mid_line = view[written - 1] != 0x0A
        if self.size >= self.max_size and not self.mid_line:
            self._rotate()
        return written

    def _open(self) -> None:
        fd = os.open(self.filename, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW
                     | os.O_NONBLOCK | os.O_CLOEXEC, 0o600, dir_fd=self.dir_fd)
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            os.close(fd)
            raise OSError(errno.EINVAL, "not a regular file")
        os.set_blocking(fd, True)
        self.fd, self.size = fd, st.st_size

    def _rotate(self) -> None:
        self.close()
        d = self.dir_fd
        if self.keep == 0:
            os.unlink(self.filename, dir_fd=d)
        else:
            for i in range(self.keep - 1, 0, -1):
                with contextlib.suppress(FileNotFoundError):
                    os.replace(f"{self.filename}.{i}", f"{self.filename}.{i + 1}",
                               src_dir_fd=d, dst_dir_fd=d)
            os.replace(self.filename, f"{self.filename}.1", src_dir_fd=d, dst_dir_fd=d)
        self._open()

    def close(self) -> None:
        if self.fd is not None:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = None
