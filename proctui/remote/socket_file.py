"""The control socket's file in the run directory: bound through the locked directory
(no path component can be swapped under us), and removed at the end only while it is
still the one we bound, never a later supervisor's."""

from __future__ import annotations

import contextlib
import os
import socket
import stat
from typing import TYPE_CHECKING

from proctui.protocol.wire import SOCKET

if TYPE_CHECKING:
    from proctui.core.store.rundir import RunDir

Bound = tuple[socket.socket, tuple[int, int]]  # the listening socket, its (dev, inode)


def bind(run_dir: RunDir) -> Bound:
    """Listen on the run directory's control socket, replacing a dead supervisor's."""
    fd = run_dir.fd
    assert fd is not None, "the run directory must be open (and locked)"
    with contextlib.suppress(FileNotFoundError):
        os.unlink(SOCKET, dir_fd=fd)  # we hold the lock: whatever is there is stale
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
    try:
        # Through the held directory: no path component can be swapped under us, and
        # a long run directory cannot exceed the 108 bytes of a socket address.
        sock.bind(f"/proc/self/fd/{fd}/{SOCKET}")
        os.chmod(SOCKET, 0o600, dir_fd=fd)
        st = os.stat(SOCKET, dir_fd=fd, follow_symlinks=False)
        if not stat.S_ISSOCK(st.st_mode):
            raise OSError(f"{run_dir.path / SOCKET} was replaced")
        sock.listen(16)
        sock.setblocking(False)
    except OSError:
        sock.close()
        raise
    return sock, (st.st_dev, st.st_ino)


def unlink_ours(run_dir: RunDir, ino: tuple[int, int] | None) -> None:
    """Remove the socket if it is still the one we bound (not a later supervisor's)."""
    fd = run_dir.fd
    if fd is None or ino is None:
        return
    with contextlib.suppress(OSError):
        st = os.stat(SOCKET, dir_fd=fd, follow_symlinks=False)
        if (st.st_dev, st.st_ino) == ino:
            os.unlink(SOCKET, dir_fd=fd)
