"""``proctui stdio``: the box's end of a link over SSH. ``ssh -T box proctui stdio``
connects this helper to the supervisor's control socket, as ``attach`` and ``status``
find it, and pumps bytes both ways between the socket and stdin/stdout (as ``docker
system dial-stdio`` does), so nothing on the box listens on the network.

It first tells the supervisor who is asking (a ``via`` request with the SSH client's
address, for the journal). It never outlives its link: it ends on EOF from either side,
on a write to a side that is gone, and on SIGHUP, SIGPIPE and SIGTERM (whatever its
parent had them set to). Each direction holds at most HOLD bytes: past that, the side
that sends is not read until the other has taken some."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import select
import signal
import socket
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from proctui.protocol import wire
from proctui.protocol.link import Via
from proctui.remote.connection import answer_timeout, connect_socket

CHUNK = 1 << 16  # bytes read at once
HOLD = 1 << 18  # bytes held in each direction
GRACE = 2.0  # seconds to pass on what is left once one side has ended


def ssh_client(environ: Mapping[str, str]) -> str | None:
    """The SSH client's "ADDR PORT" (SSH_CONNECTION's first two fields), or None."""
    parts = environ.get("SSH_CONNECTION", "").split()
    if len(parts) < 2:
        return None
    via = Via(ssh=f"{parts[0][:64]} {parts[1][:5]}")
    return via.ssh if via.check() is None else None


def serve(where: Callable[[], Path], fd_in: int = 0, fd_out: int = 1) -> int:
    """Connect to the supervisor ``where()`` names and pump until either side ends.
    Raises NoSupervisor (one line) when there is none to connect to."""
    for sig in (signal.SIGHUP, signal.SIGPIPE, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)  # (an ignored SIGHUP is inherited from nohup)
    sock, _pid = connect_socket(where(), answer_timeout())
    first = wire.dumps(Via(ssh=ssh_client(os.environ)).wire())
    try:
        return pump(sock, fd_in, fd_out, first)
    finally:
        sock.close()


def pump(sock: socket.socket, fd_in: int, fd_out: int, first: bytes = b"") -> int:
    """Bytes from ``fd_in`` to ``sock`` (``first`` before them) and from ``sock`` to
    ``fd_out``, until one side ends; then what is left goes on for GRACE seconds."""
    flags = {fd: fcntl.fcntl(fd, fcntl.F_GETFL) for fd in {fd_in, fd_out}}
    for fd, flag in flags.items():
        fcntl.fcntl(fd, fcntl.F_SETFL, flag | os.O_NONBLOCK)
    sock.setblocking(False)
    try:
        return _Pump(sock, fd_in, fd_out, first).run()
    finally:
        for fd, flag in flags.items():  # (a terminal shared with a shell gets it back)
            with contextlib.suppress(OSError):
                fcntl.fcntl(fd, fcntl.F_SETFL, flag)


class _Pump:
    def __init__(self, sock: socket.socket, fd_in: int, fd_out: int, first: bytes) -> None:
        self.sock, self.fd_in, self.fd_out = sock, fd_in, fd_out
        self.up = bytearray(first)  # to the supervisor
        self.down = bytearray()  # to the client
        self.reading_in = True
        self.reading_sock = True
        self.shut = False  # the supervisor was told the client has said all
        self.until: float | None = None  # once a side has ended: when we stop regardless

    def run(self) -> int:
        while True:
            if self.until is not None and (
                    (not self.reading_sock and not self.down) or time.monotonic() >= self.until):
                return 0
            poller = select.poll()  # afresh: what is watched changes with what is held
            wanted = self._register(poller)
            left = None if self.until is None else max(0, self.until - time.monotonic())
            try:
                ready = poller.poll(None if left is None else int(left * 1000) + 1)
            except InterruptedError:
                continue
            events: dict[int, int] = {}
            for fd, ev in ready:
                events[fd] = events.get(fd, 0) | ev
            try:
                if not self._step(events, wanted):
                    return 0
            except OSError as e:
                if e.errno in (errno.EAGAIN, errno.EINTR):
                    continue
                return 0  # a side is gone (EPIPE, ECONNRESET, EBADF): so is the link

    def _register(self, poller: select.poll) -> dict[int, int]:
        wanted: dict[int, int] = {}

        def want(fd: int, mask: int) -> None:
            wanted[fd] = wanted.get(fd, 0) | mask

        sock = self.sock.fileno()
        if self.reading_in and len(self.up) < HOLD:
            want(self.fd_in, select.POLLIN)
        if self.reading_sock and len(self.down) < HOLD:
            want(sock, select.POLLIN)
        if self.up:
            want(sock, select.POLLOUT)
        # Always watched: a client that went away is an error or hangup on its side even
        # when there is nothing to write to it.
        want(self.fd_out, select.POLLOUT if self.down else 0)
        for fd, mask in wanted.items():
            poller.register(fd, mask)
        return wanted

    def _step(self, events: dict[int, int], wanted: dict[int, int]) -> bool:
        """One round of reads and writes; False: the link has ended."""
        sock = self.sock.fileno()
        bad = select.POLLERR | select.POLLHUP | select.POLLNVAL
        if events.get(self.fd_in, 0) & (select.POLLIN | bad) and \
                wanted.get(self.fd_in, 0) & select.POLLIN:
            data = os.read(self.fd_in, CHUNK)
            if data:
                self.up += data
            else:  # the client has said all it will (the supervisor hears it once sent)
                self.reading_in = False
                self._ending()
        if events.get(sock, 0) & (select.POLLIN | bad) and wanted.get(sock, 0) & select.POLLIN:
            data = self.sock.recv(CHUNK)
            if data:
                self.down += data
            else:
                self.reading_sock = False
                self._ending()
        if self.up and events.get(sock, 0) & select.POLLOUT and self.reading_sock:
            del self.up[:self.sock.send(self.up[:CHUNK])]
        if not self.reading_in and not self.up and not self.shut:
            self.shut = True
            with contextlib.suppress(OSError):
                self.sock.shutdown(socket.SHUT_WR)
        out = events.get(self.fd_out, 0)
        if self.down and out & select.POLLOUT:
            del self.down[:os.write(self.fd_out, self.down[:CHUNK])]
        elif out & bad and self.fd_out != self.fd_in:
            return False  # the client end is gone: nobody will read what is left
        return bool(self.reading_in or self.up or self.reading_sock or self.down)

    def _ending(self) -> None:
        if self.until is None:
            self.until = time.monotonic() + GRACE
