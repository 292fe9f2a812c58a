"""One connection to a running supervisor's control socket: requests of the command table
and their typed replies, with the views and state pushed meanwhile. Every wait is bounded:
a supervisor that stops answering (SIGSTOP, a debugger, a full backlog) is a
``NotAnswering`` naming its pid and since when, never a hang."""

from __future__ import annotations

import contextlib
import errno
import itertools
import math
import os
import re
import select
import socket
import struct
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from proctui import __version__
from proctui.commands.base import A, Request
from proctui.core.store.rundir import RunDirError, check_chain
from proctui.core.view import ProcessView
from proctui.protocol import pushes, wire
from proctui.protocol.link import Ack, Ping, Via
from proctui.protocol.pushes import Hello, State
from proctui.protocol.wire import SOCKET

GONE = "the supervisor has gone away"
# Seconds a client waits for the supervisor to connect or answer, and the most its
# server may stay silent while a client waits for events (it pings meanwhile).
ANSWER_TIMEOUT = 10.0
STOPPED_LOOK = 0.5  # seconds between two looks at whether a silent supervisor is stopped
MAX_MESSAGE = 64 << 20  # bytes in one message from the supervisor (a views of thousands)
LONGEST = 30  # times the wait for a message that keeps arriving, at most
_SECONDS = re.compile(r"[0-9]{1,4}(\.[0-9]{1,3})?")


def answer_timeout() -> float:
    """ANSWER_TIMEOUT, or PROCTUI_ANSWER_TIMEOUT seconds (0.1 to 3600) when set."""
    given = os.environ.get("PROCTUI_ANSWER_TIMEOUT", "")
    if _SECONDS.fullmatch(given) and 0.1 <= float(given) <= 3600:
        return float(given)
    return ANSWER_TIMEOUT


class NoSupervisor(Exception):
    """Nothing answers at that run directory; ``str()`` is a one-line message."""


class NotAnswering(NoSupervisor):
    """The supervisor is there (its socket accepted us) but says nothing: stopped
    (SIGSTOP, a debugger), or stuck."""

    def __init__(self, pid: int | None, since: float, local: bool = True,
                 where: str = "") -> None:
        self.pid = pid
        self.since = since
        who = f"the supervisor (pid {pid})" if pid else "the supervisor"
        if not local:
            who = f"{where}: {who}"
        when = time.strftime("%H:%M:%S", time.localtime(since))
        state = _state(pid) if local else None
        hint = f"it is stopped: kill -CONT {pid}" if state == "T" else \
            "it may be stopped or stuck"
        super().__init__(f"{who} is not answering (since {when}); {hint}")


def _state(pid: int | None) -> str | None:
    if not pid:
        return None
    from proctui.core.os.procfs import read_stat

    st = read_stat(pid)
    return None if st is None else st.state


class _Silent(Exception):
    """Nothing arrived within the time given."""


class Connection:
    """One connection: requests and their typed replies, and the pushed views and state
    kept meanwhile. Every wait is bounded: a supervisor that stops answering is a
    ``NotAnswering`` after ``timeout`` seconds, never a hang."""

    def __init__(self, sock: socket.socket, run_dir: Path | None = None,
                 pid: int | None = None, timeout: float | None = None, *,
                 where: str = "", local: bool = True) -> None:
        self.sock = sock
        self.run_dir = run_dir
        self.where = where or (str(run_dir / SOCKET) if run_dir is not None else "")
        # On this machine: the supervisor's pid is one of ours to look up in /proc.
        self.local = local
        self.pid = pid  # the server's, from the socket's peer credentials
        self.timeout = answer_timeout() if timeout is None else timeout
        self._buf = bytearray()
        self._scanned = 0
        self._send_lock = threading.Lock()
        self._ids = itertools.count(1)
        self.heard = time.monotonic()  # when the supervisor last said anything
        self.heard_wall = time.time()
        self.hello = Hello()
        self.views: dict[str, ProcessView] = {}
        self.state = State()
        # Seconds from the supervisor's monotonic clock to ours (None: the same clock).
        self.offset: float | None = None
        self.on_close: Callable[[], None] | None = None  # ends what carries the link

    @classmethod
    def open(cls, run_dir: Path, timeout: float | None = None,
             read_only: bool = False) -> Connection:
        """Connect and read the first snapshot (hello, every view, the state)."""
        wait = answer_timeout() if timeout is None else timeout
        sock, pid = connect_socket(run_dir, wait)
        return cls.over(cls(sock, run_dir, pid, wait), read_only)

    @staticmethod
    def over(conn: Connection, read_only: bool = False) -> Connection:
        """``conn``, already connected (to the socket, or to ``proctui stdio`` over SSH),
        once its first snapshot is read; closed, and NoSupervisor, when there is none.
        A read-only client says so before anything else."""
        try:
            if read_only:
                conn.sock.sendall(wire.dumps(Via(read_only=True).wire()))
            conn._first()
        except _Silent:
            conn.close()
            raise conn.not_answering() from None
        except NoSupervisor:
            conn.close()
            raise
        except (OSError, ValueError, KeyError, TypeError) as e:
            conn.close()
            raise NoSupervisor(f"{conn.where}: {e}") from None
        return conn

    def _first(self) -> None:
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                # In slices: a supervisor we can see is stopped (SIGSTOP) will not
                # answer, and is said at once; the screen of an attach stayed blank for
                # the whole timeout (10 s).
                message = self._until(min(deadline, time.monotonic() + STOPPED_LOOK))
            except _Silent:
                if time.monotonic() >= deadline or \
                        (self.local and _state(self.pid) == "T"):
                    raise
                continue
            if message is None:
                raise ValueError("the supervisor closed the connection")
            push = pushes.decode(message)
            if isinstance(push, pushes.Refused):
                raise ValueError(push.error)
            if isinstance(push, Hello):
                if push.v != wire.VERSION:
                    raise NoSupervisor(
                        f"the supervisor (pid {push.pid}, proctui {push.version or '?'}) "
                        f"speaks control protocol {push.v}, this proctui ({__version__}) "
                        f"speaks {wire.VERSION}: use the same proctui version as the "
                        "supervisor")
                self.hello = push
                if not push.boot or push.boot != wire.boot_id():  # another machine's clock
                    offset = self._offset(message, math.inf)
                    self.offset = offset if math.isfinite(offset) else None
            elif self.keep(push) and isinstance(push, State):
                return  # the first snapshot is whole: hello, every view, the state

    def keep(self, push: pushes.Push | None) -> bool:
        """Keep what a push says of views and state; True when it was one of them."""
        if isinstance(push, pushes.Views):
            for view in push.views:
                self.views[view.name] = view
            return True
        if isinstance(push, State):
            self.state = push
            return True
        return False

    @property
    def names(self) -> list[str]:
        return list(self.hello.names)

    def ordered_views(self) -> list[ProcessView]:
        return [self.views[n] for n in self.names if n in self.views]

    def send(self, request: Request[Any], number: int | None = None) -> int:
        """Send a request (as ``number``, taken from ``next_id``; else the next); returns
        its id."""
        number = self.next_id() if number is None else number
        data = wire.dumps({**request.wire(), "id": number})
        with self._send_lock:
            self.sock.sendall(data)
        return number

    def next_id(self) -> int:
        return next(self._ids)

    def acknowledge(self, message: dict[str, Any]) -> bool:
        """Is ``message`` the mark that ends a push (to a client that watches with
        ``acks``)? Then it is acknowledged: everything before it has been read."""
        if message.get("t") != "push":
            return False
        with contextlib.suppress(OSError, ValueError, TypeError, KeyError):
            self.send(Ack(int(message["k"])))  # (a failed link: its reader hears)
        return True

    def not_answering(self) -> NotAnswering:
        pid = self.pid or self.hello.pid
        return NotAnswering(pid, self.heard_wall, self.local, self.where)

    def receive(self, timeout: float | None = None) -> dict[str, Any] | None:
        """The next message (None: the supervisor closed the connection). Waits at most
        ``timeout`` seconds (None: this connection's timeout), then NotAnswering."""
        wait = self.timeout if timeout is None else timeout
        try:
            return self._until(time.monotonic() + wait)
        except _Silent:
            raise self.not_answering() from None

    def event(self) -> dict[str, Any] | None:
        """The next message for a client that waits on events for as long as they take
        (``down``, ``logs -f``, a console): pings while all is quiet, so a supervisor that
        stopped answering is a NotAnswering within this connection's timeout."""
        every = self.ping_every
        while True:
            try:
                return self._until(time.monotonic() + every)
            except _Silent:
                if time.monotonic() - self.heard >= self.timeout:
                    raise self.not_answering() from None
                try:
                    self.send(Ping())
                except (BrokenPipeError, ConnectionResetError):
                    # It closed its end (its goodbye, between our look and our ping):
                    # the connection has ended, as a read of EOF says.
                    return None
            except ConnectionResetError:
                # Closed with something of ours unread (a ping on its way as it said
                # goodbye): ended too. Whether everything had ended, its last state says.
                return None

    @property
    def ping_every(self) -> float:
        """Seconds of quiet after which a client waiting on events pings the supervisor."""
        return max(0.05, self.timeout / 4)

    def _until(self, deadline: float) -> dict[str, Any] | None:
        line = self._line(deadline)
        if line is None:
            return None
        message = wire.loads(line)
        if self.offset is not None and message.get("t") in ("views", "state"):
            offset = self.offset = self._offset(message, self.offset)
            views = message.get("views")
            if isinstance(views, list):
                for view in views:
                    if isinstance(view, dict):
                        wire.shift_times(view, offset)
            wire.shift_ask_times(message, offset)
        return message

    @staticmethod
    def _offset(message: dict[str, Any], best: float) -> float:
        """The supervisor's clock to ours, from its ``now`` as this message arrives. Each
        message arrives late by the link's delay, which only adds to the difference: the
        smallest seen is the closest to the truth (a countdown shows at most the link's
        least delay too long)."""
        now = message.pop("now", None)
        if not wire.finite(now):
            return best
        return min(best, time.monotonic() - now)

    def _line(self, deadline: float) -> bytes | None:
        """The next line, waiting until ``deadline``, and after each piece of it that
        arrives as long again (up to LONGEST times): a long answer on a slow link is a
        supervisor answering, not silence (a 256 KiB page of ``logs`` takes 13 s at 20
        KB/s, and was taken for a supervisor that stopped)."""
        span = deadline - time.monotonic()
        latest = time.monotonic() + LONGEST * span
        while True:
            end = self._buf.find(b"\n", self._scanned)
            if end >= 0:
                line = bytes(self._buf[:end + 1])
                del self._buf[:end + 1]
                self._scanned = 0
                return line
            self._scanned = len(self._buf)
            if len(self._buf) > MAX_MESSAGE:
                raise ValueError("a message from the supervisor is too long")
            left = deadline - time.monotonic()
            # poll, not a socket timeout: another thread may be sending on this socket.
            if left <= 0 or not select.select([self.sock], [], [], left)[0]:
                raise _Silent
            chunk = self.sock.recv(1 << 18)
            if not chunk:
                return None  # closed (a half-sent last message counts as closed)
            self._buf += chunk
            self.heard = time.monotonic()
            self.heard_wall = time.time()
            deadline = min(max(deadline, self.heard + span), latest)

    def call(self, request: Request[A]) -> A:
        """Send a request and wait (at most this connection's timeout) for its reply,
        keeping the views and state that arrive meanwhile."""
        number = self.send(request)
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                got = self._until(deadline)
            except _Silent:
                raise self.not_answering() from None
            if got is None:
                raise NoSupervisor(GONE)
            push = pushes.decode(got)
            if isinstance(push, pushes.ReplyMessage) and push.id == number:
                return request.answer(got)
            if isinstance(push, pushes.Refused):
                raise NoSupervisor(f"the supervisor refused us: {push.error}")
            self.keep(push)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()
        end, self.on_close = self.on_close, None
        if end is not None:
            end()


def _lock_holder(dir_fd: int) -> int | None:
    """The pid the lock file names (the supervisor writes its own there)."""
    try:
        fd = os.open("lock", os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                     dir_fd=dir_fd)
    except OSError:
        return None
    try:
        text = os.read(fd, 32).decode("ascii", "replace").strip()
    except OSError:
        return None
    finally:
        os.close(fd)
    return int(text) if re.fullmatch(r"[0-9]{1,9}", text) else None


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def connect_socket(run_dir: Path, timeout: float) -> tuple[socket.socket, int]:
    """A connection to the supervisor of ``run_dir``, which must be ours (or root's)."""
    if not os.path.isdir(run_dir):
        raise NoSupervisor(f"no supervisor is running (no run directory {run_dir})")
    try:
        check_chain(Path(os.path.realpath(run_dir)))
    except RunDirError as e:
        raise NoSupervisor(str(e)) from None
    try:
        fd = os.open(run_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as e:
        raise NoSupervisor(f"run directory {run_dir}: {e.strerror or e}") from None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
    since, deadline = time.time(), time.monotonic() + timeout
    try:
        sock.settimeout(timeout)
        while True:
            try:
                sock.connect(f"/proc/self/fd/{fd}/{SOCKET}")
                break
            except BlockingIOError:
                # Its listen backlog is full: nobody has accepted for a while. It may
                # drain; retry until the timeout, then say who is not answering.
                if time.monotonic() >= deadline:
                    raise TimeoutError from None
                time.sleep(0.05)
        sock.settimeout(None)
    except OSError as e:
        sock.close()
        if isinstance(e, TimeoutError):
            raise NotAnswering(_lock_holder(fd), since) from None
        if e.errno in (errno.ENOENT, errno.ECONNREFUSED):
            raise NoSupervisor(f"no supervisor is running with run directory {run_dir}") \
                from None
        raise NoSupervisor(f"{run_dir / SOCKET}: {e.strerror or e}") from None
    finally:
        os.close(fd)
    pid, uid, _gid = struct.unpack("3i", sock.getsockopt(
        socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
    if uid not in (0, os.getuid()):
        sock.close()
        raise NoSupervisor(f"{run_dir / SOCKET}: served by uid {uid}, not by you or root")
    return sock, pid
