"""Talking to a running supervisor through its control socket.

``Connection`` (in connection.py) is the plain request-and-answer client the control
commands use. ``RemoteCore`` is the same Core a console or the shutdown printer reads
in-process, mirrored over the socket by a reader thread: views, state and output buffers.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from proctui.core.doorbell import Doorbell
from proctui.core.life.outcome import Outcome, Who
from proctui.core.life.stages import Why
from proctui.core.output.lines import OutputBuffer
from proctui.core.view import ProcessView, Reply
from proctui.protocol import commands, wire
from proctui.protocol.commands import A
from proctui.protocol.replies import Fault, encode_reply
from proctui.remote.connection import (
    ANSWER_TIMEOUT,
    GONE,
    Connection,
    NoSupervisor,
    NotAnswering,
    answer_timeout,
)

__all__ = ["ANSWER_TIMEOUT", "GONE", "Connection", "NoSupervisor", "NotAnswering",
           "RemoteCore", "answer_timeout"]


class RemoteCore:
    """The Core API over a connection: what an attached console and ``down`` read. Each
    command is the table's request (``stop`` is ``Stop(name)``); the replies come back on
    the reader thread, which also pings a quiet supervisor and gives up on a silent one."""

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
        self.not_answering: NotAnswering | None = None  # ... when that was why
        self.dropped = 0  # lines that left the supervisor's scrollback before we saw them
        self._seq = 0
        self._futures: dict[int, tuple[Future[Any], commands.Request[Any]]] = {}
        self._lock = threading.Lock()
        self._bell = Doorbell()
        self._thread = threading.Thread(target=self._read, name="proctui-remote",
                                        daemon=True)
        self._thread.start()
        self._request(commands.Hello(kind))
        if output:
            self._request(commands.Watch("all", replay))

    # -- the reader thread ----------------------------------------------------------------

    def _read(self) -> None:
        why = GONE
        try:
            while True:
                message = self.conn.event()
                if message is None:
                    break
                self._apply(message)
                if message.get("t") == "error":
                    why = f"the supervisor refused us: {message.get('error')}"
                    break
        except NotAnswering as e:
            self.not_answering = e
            why = str(e)
        except (OSError, ValueError, KeyError, TypeError) as e:
            why = f"{GONE} ({e})"
        with self._lock:
            self.gone = why
            pending, self._futures = self._futures, {}
        fault = Fault.GONE if self.not_answering is None else Fault.NOT_ANSWERING
        for future, _request in pending.values():
            if not future.done():
                future.set_result(commands.failed(fault, why))
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
                future, request = entry
                future.set_result(request.answer(m))
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
        """Every entry, a page at a time (a page is bounded on the server)."""
        entries: list[dict[str, object]] = []
        while True:
            page = self._request(commands.Journal(len(entries))).result(
                timeout=self.conn.timeout * 2)
            entries += page.entries
            if not page.more or not page.entries:
                return entries

    def exit_status(self) -> int:
        status = self.state.get("exit_status")
        return status if isinstance(status, int) else 1

    @property
    def shutting_down(self) -> bool:
        return bool(self.state.get("shutting_down"))

    # -- commands ---------------------------------------------------------------------

    def _request(self, request: commands.Request[A]) -> Future[A]:
        future: Future[A] = Future()
        with self._lock:
            if self.gone is not None:
                future.set_result(request.answer(
                    encode_reply(commands.failed(Fault.GONE, self.gone))))
                return future
            number = next(self.conn._ids)
            self._futures[number] = (future, request)
        try:
            data = wire.dumps({**request.wire(), "id": number})
            with self.conn._send_lock:
                self.conn.sock.sendall(data)
        except OSError:
            with self._lock:
                self._futures.pop(number, None)
            future.set_result(request.answer(encode_reply(commands.failed(Fault.GONE, GONE))))
        return future

    def _command(self, request: commands.CoreCommand) -> Future[Reply]:
        """A core command's reply as the Core API gives it (its fault stays on the wire
        for the control commands, which use ``Connection.call``)."""
        future: Future[Reply] = Future()
        self._request(request).add_done_callback(
            lambda done: future.set_result(done.result().reply))
        return future

    def stop(self, name: str) -> Future[Reply]:
        return self._command(commands.Stop(name))

    def stop_all(self, ordered: bool = True, why: Why = Why.OPERATOR) -> Future[Reply]:
        return self._command(commands.StopAll(ordered, why.value))

    def kill(self, name: str) -> Future[Reply]:
        return self._command(commands.Kill(name))

    def kill_all(self) -> Future[Reply]:
        return self._command(commands.KillAll())

    def abandon(self, name: str) -> Future[Reply]:
        return self._command(commands.Abandon(name))

    def abandon_all(self) -> Future[Reply]:
        return self._command(commands.AbandonAll())

    def wait_without_deadline(self, name: str) -> Future[Reply]:
        return self._command(commands.Wait(name))

    def extend(self, name: str, by: float | None = None,
               who: Who = Who.OPERATOR) -> Future[Reply]:
        return self._command(commands.Extend(name, by))

    def restart(self, name: str) -> Future[Reply]:
        return self._command(commands.Restart(name))

    def start_process(self, name: str) -> Future[Reply]:
        return self._command(commands.Start(name))

    def adopt(self, name: str) -> Future[Reply]:
        return self._command(commands.Adopt(name))

    def clear_output(self, name: str) -> Future[Reply]:
        return self._command(commands.Clear(name))

    def set_interactive(self, interactive: bool) -> Future[Reply]:
        return self._command(commands.SetInteractive(interactive))

    def want_usage(self, wanted: bool) -> Future[None]:
        future: Future[None] = Future()
        self._request(commands.WantUsage(wanted)).add_done_callback(
            lambda _done: future.set_result(None))
        return future

    def close(self) -> None:
        self.conn.close()
        self._thread.join(2.0)
