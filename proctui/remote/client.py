"""Talking to a running supervisor through its control socket.

``Connection`` is the plain request-and-answer client the control commands use.
``RemoteCore`` is the same Core a console or the shutdown printer reads in-process,
mirrored over the socket by a reader thread: views, state and output buffers.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
import socket
import struct
import threading
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from proctui.core.doorbell import Doorbell
from proctui.core.lines import OutputBuffer
from proctui.core.outcome import Outcome, Who
from proctui.core.rundir import RunDirError, check_chain
from proctui.core.view import ProcessView, Reply
from proctui.remote import wire
from proctui.remote.wire import SOCKET

GONE = "the supervisor has gone away"


class NoSupervisor(Exception):
    """Nothing answers at that run directory; ``str()`` is a one-line message."""


class Connection:
    def __init__(self, sock: socket.socket, run_dir: Path) -> None:
        self.sock = sock
        self.run_dir = run_dir
        self._file = sock.makefile("rb")
        self._send_lock = threading.Lock()
        self._ids = itertools.count(1)
        self.hello: dict[str, Any] = {}
        self.views: dict[str, ProcessView] = {}
        self.state: dict[str, Any] = {}

    @classmethod
    def open(cls, run_dir: Path) -> Connection:
        """Connect and read the first snapshot (hello, every view, the state)."""
        conn = cls(_connect(run_dir), run_dir)
        try:
            conn._first()
        except (OSError, ValueError, KeyError, TypeError) as e:
            conn.close()
            raise NoSupervisor(f"{run_dir / SOCKET}: {e}") from None
        return conn

    def _first(self) -> None:
        while True:
            message = self.receive()
            if message is None:
                raise ValueError("the supervisor closed the connection")
            kind = message.get("t")
            if kind == "error":
                raise ValueError(str(message.get("error")))
            if kind == "hello":
                if message.get("v") != wire.VERSION:
                    raise ValueError(f"protocol version {message.get('v')}, this proctui "
                                     f"speaks {wire.VERSION}: use the same proctui version")
                self.hello = message
            elif kind == "views":
                for d in message["views"]:
                    view = wire.view_from_dict(d)
                    self.views[view.name] = view
            elif kind == "state":
                self.state = message
                return

    @property
    def names(self) -> list[str]:
        return list(self.hello.get("names", []))

    def ordered_views(self) -> list[ProcessView]:
        return [self.views[n] for n in self.names if n in self.views]

    def send(self, message: dict[str, Any]) -> int:
        """Send a command; returns its id."""
        number = next(self._ids)
        data = wire.dumps({**message, "id": number})
        with self._send_lock:
            self.sock.sendall(data)
        return number

    def receive(self) -> dict[str, Any] | None:
        """The next message (None: the supervisor closed the connection)."""
        line = self._file.readline()
        if not line or not line.endswith(b"\n"):
            return None
        return wire.loads(line)

    def request(self, message: dict[str, Any]) -> dict[str, Any]:
        """Send a command and wait for its answer, keeping what arrives meanwhile."""
        number = self.send(message)
        while True:
            got = self.receive()
            if got is None:
                raise NoSupervisor(GONE)
            kind = got.get("t")
            if kind == "reply" and got.get("id") == number:
                return got
            if kind == "views":
                for d in got["views"]:
                    view = wire.view_from_dict(d)
                    self.views[view.name] = view
            elif kind == "state":
                self.state = got

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            self._file.close()
        self.sock.close()


def _connect(run_dir: Path) -> socket.socket:
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
    try:
        sock.settimeout(10.0)
        sock.connect(f"/proc/self/fd/{fd}/{SOCKET}")
        sock.settimeout(None)
    except OSError as e:
        sock.close()
        if e.errno in (errno.ENOENT, errno.ECONNREFUSED):
            raise NoSupervisor(f"no supervisor is running with run directory {run_dir}") \
                from None
        raise NoSupervisor(f"{run_dir / SOCKET}: {e.strerror or e}") from None
    finally:
        os.close(fd)
    _pid, uid, _gid = struct.unpack("3i", sock.getsockopt(
        socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
    if uid not in (0, os.getuid()):
        sock.close()
        raise NoSupervisor(f"{run_dir / SOCKET}: served by uid {uid}, not by you or root")
    return sock


class RemoteCore:
    """The Core API over a connection: what an attached console and ``down`` read."""

    def __init__(self, conn: Connection, output: bool = True, replay: int | None = None,
                 kind: str = "console") -> None:
        self.conn = conn
        hello = conn.hello
        self.names: list[str] = conn.names
        self._views = dict(conn.views)
        self._buffers = {name: OutputBuffer(max(1, int(size))) for name, size in
                         zip(self.names, hello.get("scrollback", []), strict=False)}
        for name in self.names:
            self._buffers.setdefault(name, OutputBuffer())
        self.state: dict[str, Any] = conn.state
        self.crash: str | None = self.state.get("crash")
        self.gone: str | None = None  # why the connection ended
        self.dropped = 0  # lines that left the supervisor's scrollback before we saw them
        self._seq = 0
        self._futures: dict[int, tuple[Future[Any], bool]] = {}
        self._lock = threading.Lock()
        self._bell = Doorbell()
        self._thread = threading.Thread(target=self._read, name="proctui-remote",
                                        daemon=True)
        self._thread.start()
        self._send({"op": "hello", "kind": kind})
        if output:
            self._send({"op": "watch", "output": "all", "replay": replay})

    # -- the reader thread ----------------------------------------------------------------

    def _read(self) -> None:
        why = GONE
        try:
            while True:
                message = self.conn.receive()
                if message is None:
                    break
                self._apply(message)
                if message.get("t") == "error":
                    why = f"the supervisor refused us: {message.get('error')}"
                    break
        except (OSError, ValueError) as e:
            why = f"{GONE} ({e})"
        with self._lock:
            self.gone = why
            pending, self._futures = self._futures, {}
        for future, raw in pending.values():
            if not future.done():
                future.set_result({"ok": False, "text": why} if raw else Reply(False, why))
        self._seq += 1
        self._bell.ring()

    def _apply(self, m: dict[str, Any]) -> None:
        kind = m.get("t")
        if kind == "out":
            buf = self._buffers.get(m["n"])
            if buf is not None:
                streams = [s for s, count in m["s"] for _ in range(count)]
                buf.receive(m["f"], m["l"], streams, m["o"], m["p"], m["c"])
                self.dropped += m.get("d", 0)
        elif kind == "views":
            for d in m["views"]:
                view = wire.view_from_dict(d)
                self._views[view.name] = view
        elif kind == "state":
            self.state = m
            self.crash = m.get("crash")
        elif kind == "reply":
            with self._lock:
                entry = self._futures.pop(m.get("id", -1), None)
            if entry is not None:
                future, raw = entry
                future.set_result(m if raw else Reply(bool(m.get("ok")), str(m.get("text", ""))))
            return
        self._seq += 1
        self._bell.ring()

    # -- reading state --------------------------------------------------------------------

    def views(self) -> list[ProcessView]:
        views = self._views
        return [views[n] for n in self.names if n in views]

    def buffer(self, name: str) -> OutputBuffer:
        return self._buffers[name]

    def changes(self) -> int:
        self._bell.rearm()
        return self._seq

    def listen(self, callback: Callable[[], None]) -> None:
        self._bell.listen(callback)

    def all_ended(self) -> bool:
        return bool(self.state.get("all_ended"))

    def final(self) -> list[tuple[str, Outcome | None]]:
        final = self.state.get("final")
        if final is not None:
            return [(n, None if o is None else wire.outcome_from_dict(o)) for n, o in final]
        return [(v.name, v.outcome) for v in self.views()]

    def strays(self) -> list[int]:
        return list(self.state.get("strays", []))

    def journal(self) -> list[dict[str, object]]:
        reply = self._send({"op": "journal"}, raw=True).result(timeout=30)
        return list(reply.get("entries") or [])

    def exit_status(self) -> int:
        status = self.state.get("exit_status")
        return status if isinstance(status, int) else 1

    @property
    def shutting_down(self) -> bool:
        return bool(self.state.get("shutting_down"))

    # -- commands ---------------------------------------------------------------------

    def _send(self, message: dict[str, Any], raw: bool = False) -> Future[Any]:
        future: Future[Any] = Future()
        with self._lock:
            if self.gone is not None:
                future.set_result({"ok": False, "text": self.gone} if raw else
                                  Reply(False, self.gone))
                return future
            number = next(self.conn._ids)
            self._futures[number] = (future, raw)
        try:
            data = wire.dumps({**message, "id": number})
            with self.conn._send_lock:
                self.conn.sock.sendall(data)
        except OSError as e:
            with self._lock:
                self._futures.pop(number, None)
            future.set_result({"ok": False, "text": str(e)} if raw else Reply(False, GONE))
        return future

    def stop(self, name: str) -> Future[Reply]:
        return self._send({"op": "stop", "name": name})

    def stop_all(self, ordered: bool = True) -> Future[Reply]:
        return self._send({"op": "stop_all", "ordered": ordered})

    def kill(self, name: str) -> Future[Reply]:
        return self._send({"op": "kill", "name": name})

    def kill_all(self) -> Future[Reply]:
        return self._send({"op": "kill_all"})

    def abandon(self, name: str) -> Future[Reply]:
        return self._send({"op": "abandon", "name": name})

    def abandon_all(self) -> Future[Reply]:
        return self._send({"op": "abandon_all"})

    def wait_without_deadline(self, name: str) -> Future[Reply]:
        return self._send({"op": "wait", "name": name})

    def extend(self, name: str, by: float | None = None,
               who: Who = Who.OPERATOR) -> Future[Reply]:
        return self._send({"op": "extend", "name": name, "by": by})

    def restart(self, name: str) -> Future[Reply]:
        return self._send({"op": "restart", "name": name})

    def start_process(self, name: str) -> Future[Reply]:
        return self._send({"op": "start", "name": name})

    def adopt(self, name: str) -> Future[Reply]:
        return self._send({"op": "adopt", "name": name})

    def clear_output(self, name: str) -> Future[Reply]:
        return self._send({"op": "clear", "name": name})

    def set_interactive(self, interactive: bool) -> Future[Reply]:
        return self._send({"op": "set_interactive", "interactive": interactive})

    def want_usage(self, wanted: bool) -> Future[None]:
        return self._send({"op": "usage", "wanted": wanted})

    def close(self) -> None:
        self.conn.close()
        self._thread.join(2.0)
