"""Talking to a running supervisor through its control socket.

``Connection`` (connection.py) is the plain request-and-answer client of the control
commands. ``RemoteCore`` is the Core a console or the shutdown printer reads in-process,
mirrored over the socket by a reader thread: views, state and output buffers; given a
dial, it makes a dropped link again (redial.py says when to try and when not)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
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
from proctui.remote.redial import (
    READ_ONLY,
    RECONNECTING,
    Backoff,
    Reconnecting,
    SupervisorEnded,
    local_dial,
    other_supervisor,
)

__all__ = ["ANSWER_TIMEOUT", "GONE", "READ_ONLY", "RECONNECTING", "Connection",
           "NoSupervisor", "NotAnswering", "Reconnecting", "RemoteCore", "SupervisorEnded",
           "answer_timeout", "local_dial"]


class RemoteCore:
    """The Core API over a connection: what an attached console and ``down`` read. Each
    command is the table's request (``stop`` is ``Stop(name)``); the replies come back on
    the reader thread, which also pings a quiet supervisor and gives up on a silent one.

    Given a ``dial`` (a new connection on each call), a link that drops is made again:
    ``link`` says since when it is down while the reader thread retries (redial.py), and
    a fresh snapshot and the output from where each pane stood follow. With
    ``read_only``, every command that would act is refused here and never sent."""

    def __init__(self, conn: Connection, output: bool = True, replay: int | None = None,
                 kind: str = "console", dial: Callable[[], Connection] | None = None,
                 read_only: bool = False) -> None:
        self.conn = conn
        self.dial = dial  # None: this connection is the only one
        self.read_only = read_only
        hello = conn.hello
        self.names: list[str] = conn.names
        self._views = dict(conn.views)
        # Twice the supervisor's scrollback: after a gap, the lines held before it and
        # its marker line age out behind the supervisor's, not at once (see receive).
        self._buffers = {name: OutputBuffer(2 * max(1, int(size))) for name, size in
                         zip(self.names, hello.get("scrollback", []), strict=False)}
        for name in self.names:
            self._buffers.setdefault(name, OutputBuffer())
        self.state: dict[str, Any] = conn.state
        self.crash: str | None = self.state.get("crash")
        self.gone: str | None = None  # why the connection ended
        self.not_answering: NotAnswering | None = None  # ... when that was why
        self.dropped = 0  # lines that left the supervisor's scrollback before we saw them
        self.link: Reconnecting | None = None  # the link is down: since when, why
        self.links = 1  # links made so far (a console asks its questions anew on each)
        self._kind, self._output = kind, output
        self._wants_usage = False
        self._resumed: set[str] = set()  # panes whose first output after a new link is due
        self._busy: set[str] = set()  # processes whose output is still coming (no "q")
        self._closing = threading.Event()
        self._backoff = Backoff()
        self._seq = 0
        self._futures: dict[int, tuple[Future[Any], commands.Request[Any]]] = {}
        self._lock = threading.Lock()
        self._bell = Doorbell()
        self._thread = threading.Thread(target=self._run, name="proctui-remote",
                                        daemon=True)
        self._thread.start()
        self._request(commands.Hello(kind))
        if output:
            self._request(commands.Watch("all", replay, acks=True))

    @classmethod
    def dialled(cls, dial: Callable[[], Connection], **kw: Any) -> RemoteCore:
        """Dial once now (raising as the dial does), and again whenever the link drops."""
        return cls(dial(), dial=dial, **kw)

    @classmethod
    def at(cls, run_dir: Path, **kw: Any) -> RemoteCore:
        """The supervisor of ``run_dir`` on this machine, reconnecting."""
        return cls.dialled(local_dial(run_dir), **kw)

    # -- the reader thread ----------------------------------------------------------------

    def _run(self) -> None:
        conn = self.conn
        while True:
            up = time.monotonic()
            why, final, lost = self._read(conn)
            if final or self.dial is None or self._closing.is_set():
                self._end(why)
                return
            self._backoff.link_lasted(time.monotonic() - up)
            conn.close()  # at once: a dial's child (ssh) must not outlive its link
            self._fail_pending(Fault.GONE, f"the link dropped before the supervisor "
                                           f"answered ({why}): it may or may not be done")
            found = self._redial(self.dial, why, lost)
            if found is None:
                return
            conn = found

    def _read(self, conn: Connection) -> tuple[str, bool, float | None]:
        """Events until this connection ends: why, whether that is final (the supervisor
        said goodbye or refused us) rather than a link that dropped, and when a link that
        fell silent was last heard."""
        try:
            while True:
                message = conn.event()
                if message is None:
                    # Its goodbye: the last state says everything ended, then it closes.
                    ended = self.all_ended() or self.dial is None
                    return (GONE if ended else "the connection closed"), ended, None
                self._apply(message)
                if message.get("t") == "error":
                    return f"the supervisor refused us: {message.get('error')}", True, None
        except NotAnswering as e:
            if self.dial is None:
                self.not_answering = e
            return str(e), False, conn.heard  # lost when it fell silent, not at the give-up
        except (OSError, ValueError, KeyError, TypeError) as e:
            return f"{GONE if self.dial is None else 'the connection failed'} ({e})", False, None

    def _redial(self, dial: Callable[[], Connection], why: str,
                since: float | None = None) -> Connection | None:
        """Dial until a link is made (None: closed, or the supervisor ended); lost ``since``."""
        since, tries = since or time.monotonic(), 0
        while True:
            delay = self._backoff.next()
            self._tell(Reconnecting(since, why, time.monotonic() + delay, tries))
            if self._closing.wait(delay):
                return None
            self._tell(Reconnecting(since, why, None, tries))
            tries += 1
            try:
                conn = dial()
            except SupervisorEnded as e:
                self._end(f"{GONE} ({e})")
                return None
            except Exception as e:  # a dial's failure, whatever it is, is tried again
                why = str(e) or type(e).__name__
                continue
            if self._closing.is_set():
                conn.close()
                return None
            other = other_supervisor(self.conn.hello, conn.hello)
            if other is not None:
                conn.close()
                self._end(other)
                return None
            self._adopt(conn)
            return conn

    def _adopt(self, conn: Connection) -> None:
        """A new link: its snapshot replaces ours, and each pane's output goes on from
        the line it had reached (the lines the supervisor no longer holds are counted)."""
        with self._lock:
            old, self.conn = self.conn, conn
        old.close()
        views = dict(self._views)
        views.update(conn.views)
        self._views = views
        self.state = conn.state
        self.crash = self.state.get("crash")
        self._resumed, self._busy = set(self.names), set()  # (the new link's server: none)
        self._request(commands.Hello(self._kind), internal=True)
        if self._output:
            self._request(commands.Watch("all", start={
                name: buf.mark().total for name, buf in self._buffers.items()}, acks=True),
                internal=True)
        if self._wants_usage:
            self._request(commands.WantUsage(True), internal=True)
        self.links += 1
        self._tell(None)

    def _tell(self, link: Reconnecting | None) -> None:
        self.link = link
        self._seq += 1
        self._bell.ring()

    def _end(self, why: str) -> None:
        with self._lock:
            self.gone = why
        self.link = None
        self._fail_pending(Fault.GONE if self.not_answering is None else
                           Fault.NOT_ANSWERING, why)
        self._seq += 1
        self._bell.ring()

    def _fail_pending(self, fault: Fault, why: str) -> None:
        with self._lock:
            pending, self._futures = self._futures, {}
        for future, _request in pending.values():
            if not future.done():
                future.set_result(commands.failed(fault, why))

    def _apply(self, m: dict[str, Any]) -> None:
        kind = m.get("t")
        if kind == "out":
            name = m["n"]
            buf = self._buffers.get(name)
            if buf is not None:
                streams = [s for s, count in m["s"] for _ in range(count)]
                missed = m.get("d", 0)
                lines = f"{missed} line{'s' if missed != 1 else ''}"
                note = (f"{lines} missed while the link was down (the supervisor no longer "
                        "holds them)" if name in self._resumed else
                        f"{lines} not shown: this console fell behind") if missed else None
                self._resumed.discard(name)
                buf.receive(m["f"], m["l"], streams, m["o"], m["p"], m["c"], gap=note)
                self.dropped += missed
                if m.get("q") and self._busy == {name}:
                    self._bell.rearm()  # the burst's end: heard now, not at a planned tick
                self._busy.discard(name) if m.get("q") else self._busy.add(name)
        elif self.conn.acknowledge(m):  # read up to here: it may send more (push.py)
            return
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

    @property
    def settled(self) -> bool:  # no output still coming, as the last pushes said
        return not self._busy

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
            page = self._request(commands.Journal(len(entries))).result(self.conn.timeout * 2)
            entries += page.entries
            if not page.more or not page.entries:
                return entries

    def exit_status(self) -> int:
        status = self.state.get("exit_status")
        return status if isinstance(status, int) else 1

    @property
    def shutting_down(self) -> bool:
        return bool(self.state.get("shutting_down"))

    @property
    def shutdown_why(self) -> str | None:
        why = self.state.get("shutdown_why")
        return why if isinstance(why, str) else None

    # -- commands ---------------------------------------------------------------------

    def _request(self, request: commands.Request[A], internal: bool = False) -> Future[A]:
        """Send ``request``; its reply comes as the future's result (a failure when the
        link is down: only the reader thread's own requests go on a new link first)."""
        future: Future[A] = Future()
        with self._lock:
            why = self.gone or (RECONNECTING if self.link is not None and not internal
                                else None)
            if why is not None:
                future.set_result(request.answer(
                    encode_reply(commands.failed(Fault.GONE, why))))
                return future
            conn = self.conn
            number = conn.next_id()
            self._futures[number] = (future, request)
        try:
            conn.send(request, number)
        except OSError:
            with self._lock:
                self._futures.pop(number, None)
            future.set_result(request.answer(encode_reply(commands.failed(Fault.GONE, GONE))))
        return future

    def _command(self, request: commands.CoreCommand) -> Future[Reply]:
        """A core command's reply as the Core API gives it (the control commands keep its
        fault: ``Connection.call``). Read-only: refused here, never sent."""
        future: Future[Reply] = Future()
        if self.read_only:
            future.set_result(Reply(False, READ_ONLY))
            return future
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
        self._wants_usage = wanted  # (asked again on each new link)
        future: Future[None] = Future()
        self._request(commands.WantUsage(wanted)).add_done_callback(
            lambda _done: future.set_result(None))
        return future

    def close(self) -> None:
        """End the link and the reader thread (a dial under way: closed once it returns)."""
        self._closing.set()
        with self._lock:
            conn = self.conn
        conn.close()
        self._thread.join(2.0)
