"""One supervisor per run directory even while the directory is gone.

The run directory's ``flock`` lives in a file of that directory: ``rm -rf RUN_DIR`` (what a
logout does to /run/user/UID) takes it away with the directory, and a ``proctui up`` that
came before the running supervisor had rebuilt it (within a quarter of a second) made the
directory anew, took a fresh lock, and started a second copy of every process. So each
supervisor also holds a name that no file removal touches: a Unix socket in Linux's
abstract namespace, named after the user and the directory's path, bound for the whole
run (and carried over when the directory is rebuilt).

The abstract namespace has no permissions: anybody can bind any name. A name is only
believed to be held when the holder is one of our own processes (``SO_PEERCRED`` of a
connection to it); a stranger's socket under our name, or one we cannot ask, leaves the
``flock`` alone in charge, as before: it can never keep a run from starting. Nothing is
ever accepted on the socket; the holder clears the connections that asked (``clear``).
"""

from __future__ import annotations

import contextlib
import errno
import os
import socket
import struct
import sys
from hashlib import sha1
from pathlib import Path

BACKLOG = 64


class NameHeld(Exception):
    """Another process of ours holds the name: ``pid`` is the supervisor's."""

    def __init__(self, pid: int) -> None:
        super().__init__(pid)
        self.pid = pid


def address(path: Path) -> bytes:
    digest = sha1(os.fsencode(str(path))).hexdigest()
    return f"\0proctui-run-dir/{os.getuid()}/{digest}".encode()


def take(path: Path) -> socket.socket | None:
    """Hold the name of the run directory at ``path``; None where there is no abstract
    namespace (or it is a stranger's). Raises NameHeld when one of our processes has it."""
    if not sys.platform.startswith("linux"):
        return None
    name = address(path)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(name)
        sock.listen(BACKLOG)
        sock.setblocking(False)
        return sock
    except OSError as e:
        sock.close()
        if e.errno != errno.EADDRINUSE:
            return None
    holder = _holder(name)
    if holder is not None:
        raise NameHeld(holder)
    return None


def holder(path: Path) -> int | None:
    """The pid of our process that holds the name of the run directory at ``path``."""
    return _holder(address(path)) if sys.platform.startswith("linux") else None


def _holder(name: bytes) -> int | None:
    """The pid of the process that holds ``name``, if it is one of ours."""
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.setblocking(False)
        probe.connect(name)
        pid, uid, _gid = struct.unpack("3i", probe.getsockopt(
            socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
    except OSError:
        return None  # not listening, a full queue: not a holder we can vouch for
    finally:
        probe.close()
    return pid if uid == os.getuid() and pid > 0 else None


def clear(sock: socket.socket | None) -> None:
    """Drop the connections that asked who holds the name (never more than a queue)."""
    if sock is None:
        return
    for _ in range(BACKLOG):
        try:
            conn, _ = sock.accept()
        except OSError:
            return
        with contextlib.suppress(OSError):
            conn.close()
