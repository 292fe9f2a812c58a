"""Talking to a running supervisor through its control socket.

``Connection`` (connection.py) is the plain request-and-answer client of the control
commands. ``RemoteCore`` is the Core a console or the shutdown printer reads in-process,
mirrored over the socket by a reader thread: snapshots (views and state), output
buffers, and commands sent as the command table's requests; given a dial, it makes a
dropped link again (redial.py says when to try and when not)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import replace
from pathlib import Path
from typing import Any

from proctui.commands.api import reply_now
from proctui.commands.base import A, Request
from proctui.commands.usage import WantUsage
from proctui.core.output.lines import OutputBuffer
from proctui.core.output.reader import OutputReader
from proctui.core.reply import Done, Fault, failed
from proctui.core.snapshot import CoreSnapshot, Link
from proctui.protocol import pushes
from proctui.protocol.link import Greet, Watch
from proctui.protocol.replies import encode_reply
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


class RemoteReader(OutputReader):
    """The mirrored output buffers, and news of anything new; and a lock, held while a
    push is applied and by a reader that reads several buffers as one moment (down
    merges them in the order things happened)."""

    def __init__(self, buffers: dict[str, OutputBuffer], seq: Callable[[], int]) -> None:
        super().__init__(buffers, seq)
        self.lock = threading.Lock()


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
                 read_only: bool = False, ended: Callable[[], None] = lambda: None) -> None:
        self.conn = conn
        self._ended = ended  # told (on the reader thread) once this core ends for good
        self.dial = dial  # None: this connection is the only one
        self.read_only = read_only
        hello = conn.hello
        self.names: list[str] = conn.names
        self._views = dict(conn.views)
        # Twice the supervisor's scrollback: after a gap, the lines held before it and
        # its marker line age out behind the supervisor's, not at once (see receive).
        self._buffers = {name: OutputBuffer(2 * max(1, int(size))) for name, size in
                         zip(self.names, hello.scrollback, strict=False)}
        for name in self.names:
            self._buffers.setdefault(name, OutputBuffer())
        self.state = conn.state
        self.gone: str | None = None  # why the connection ended
        self.not_answering: NotAnswering | None = None  # ... when that was why
        self.dropped = 0  # lines that left the supervisor's scrollback before we saw them
        self.link: Reconnecting | None = None  # the link is down: since when, why
        self.links = 1  # links made so far (a console asks its questions anew on each)
        self._kind, self._output = kind, output
        self._wants_usage = False
        self._resumed: set[str] = set()  # panes whose first output after a new link is due
        self._busy: set[str] = set()  # processes whose output is still coming (no "q")
        self._staged: list[pushes.Out] = []  # the output of the push being read
        self._fresh: set[str] = set()  # views that came since the last state
        self._closing = threading.Event()
        self._backoff = Backoff()
        self._seq = 0
        self._futures: dict[int, tuple[Future[Any], Request[Any]]] = {}
        self._lock = threading.Lock()
        self.output = RemoteReader(self._buffers, lambda: self._seq)
        self._bell = self.output.bell
        self._snapshot: CoreSnapshot | None = None
        self._thread = threading.Thread(target=self._run, name="proctui-remote",
                                        daemon=True)
        self._thread.start()
        self._request(Greet(kind))
        if output:
            self._request(Watch("all", replay, acks=True))

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
        try:
            self._reading()
        finally:
            self._ended()  # however it ends: its owner must not wait on a dead link

    def _reading(self) -> None:
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
                    ended = self.state.all_ended or self.dial is None
                    return (GONE if ended else "the connection closed"), ended, None
                refused = self._apply(message)
                if refused is not None:
                    return f"the supervisor refused us: {refused}", True, None
        except NotAnswering as e:
            if self.dial is None:
                self.not_answering = e
            return str(e), False, conn.heard  # lost when it fell silent, not at the give-up
        except (OSError, ValueError, KeyError, TypeError) as e:
            return f"{GONE if self.dial is None else 'the connection failed'} ({e})", False, None
        finally:
            # A push the connection's end cut short: its lines are the supervisor's own,
            # numbered, and no less true for the missing mark.
            if self._staged:
                self._commit()
                self._changed()

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
        self._resumed, self._busy = set(self.names), set()  # (the new link's server: none)
        self._request(Greet(self._kind), internal=True)
        if self._output:
            self._request(Watch("all", start={
                name: buf.mark().total for name, buf in self._buffers.items()}, acks=True),
                internal=True)
        if self._wants_usage:
            self._request(WantUsage(True), internal=True)
        self.links += 1
        self._tell(None)

    def _tell(self, link: Reconnecting | None) -> None:
        self.link = link
        self._changed()

    def _end(self, why: str) -> None:
        with self._lock:
            self.gone = why
        self.link = None
        self._fail_pending(Fault.GONE if self.not_answering is None else
                           Fault.NOT_ANSWERING, why)
        self._changed()

    def _fail_pending(self, fault: Fault, why: str) -> None:
        with self._lock:
            pending, self._futures = self._futures, {}
        for future, _request in pending.values():
            if not future.done():
                future.set_result(failed(fault, why))

    def _apply(self, m: dict[str, Any]) -> str | None:
        """Take one message; a refusal's words when it was one (the link ends)."""
        push = pushes.decode(m)
        if isinstance(push, pushes.Out):
            # Applied with the rest of its push, at its end: a reader never sees one
            # process's lines of a push without another's.
            self._staged.append(push)
            return None
        elif isinstance(push, pushes.PushEnd):
            self._commit()
            self.conn.acknowledge(m)  # read up to here: it may send more (push.py)
        elif isinstance(push, pushes.Views):
            for view in push.views:
                self._views[view.name] = view
                self._fresh.add(view.name)
                if view.name not in self.names:  # a reload added it: shown from now on
                    self.names.append(view.name)
                    self._buffers.setdefault(view.name, OutputBuffer())
        elif isinstance(push, pushes.State):
            # A reload removed these since the last state (the list only grows): gone
            # from the views, unless a view of the same name came with this push (a
            # later reload added it again). They stayed on an attached console for ever.
            for name, _last in push.removed[len(self.state.removed):]:
                if name not in self._fresh:
                    self._views.pop(name, None)
                    if name in self.names:
                        self.names.remove(name)
            self._fresh = set()
            self.state = push
        elif isinstance(push, pushes.ReplyMessage):
            with self._lock:
                entry = self._futures.pop(push.id, None) if isinstance(push.id, int) else None
            if entry is not None:
                future, request = entry
                future.set_result(request.answer(m))
            return None
        elif isinstance(push, pushes.Refused):
            return push.error
        self._changed()
        return None

    def _commit(self) -> None:
        """The output of the push that just ended, into the mirrored buffers at once."""
        staged, self._staged = self._staged, []
        with self.output.lock:
            for push in staged:
                self._receive(push)

    def _receive(self, push: pushes.Out) -> None:
        buf = self._buffers.get(push.name)
        if buf is not None:
            missed = push.dropped
            lines = f"{missed} line{'s' if missed != 1 else ''}"
            note = (f"{lines} missed while the link was down (the supervisor no longer "
                    "holds them)" if push.name in self._resumed else
                    f"{lines} not shown: this console fell behind") if missed else None
            self._resumed.discard(push.name)
            buf.receive(push.first, list(push.lines), push.streams, push.output_total,
                        push.partial, push.cleared, gap=note, stamps=push.stamps)
            self.dropped += missed
            if push.quiet and self._busy == {push.name}:
                self._bell.rearm()  # the burst's end: heard now, not at a planned tick
            (self._busy.discard if push.quiet else self._busy.add)(push.name)

    @property
    def settled(self) -> bool:  # no output still coming, as the last pushes said
        return not self._busy

    def _changed(self) -> None:
        self._snapshot = None
        self._seq += 1
        self._bell.ring()

    # -- the three doors --------------------------------------------------------------

    def snapshot(self) -> CoreSnapshot:
        """The supervisor's latest views and state, and how the link stands (when it
        was last heard from moves without a push: a ping's answer)."""
        snap = self._snapshot
        heard = self.conn.heard
        if snap is not None and snap.link is not None and snap.link.heard != heard:
            snap = self._snapshot = replace(snap, link=replace(snap.link, heard=heard))
        if snap is None:
            views = self._views
            link = self.link
            pid = self.conn.hello.pid
            where = f"supervisor pid {pid}" + ("" if self.conn.local else
                                              f" on {self.conn.where}")
            snap = self.state.snapshot(tuple(views[n] for n in self.names if n in views),
                                       self._seq)
            snap = replace(snap, link=Link(
                where=where, pid=pid, local=self.conn.local,
                down_since=link.since if link is not None else None,
                down_why=link.why if link is not None else "",
                next_try=link.next_try if link is not None else None,
                tries=link.tries if link is not None else 0, gone=self.gone,
                not_answering=str(self.not_answering) if self.not_answering else None,
                links=self.links, read_only=self.read_only, settled=not self._busy,
                dropped=self.dropped, heard=heard,
                host="" if self.conn.local else self.conn.where,
                started=self.conn.hello.started or None))
            self._snapshot = snap
        return snap

    def send(self, request: Request[A]) -> Future[A]:
        """Send a request of the command table; its reply comes as the future's result.
        On a read-only link, a request that acts is refused here and never sent."""
        if self.read_only and request.acts:
            future: Future[A] = Future()
            future.set_result(request.answer(encode_reply(failed(Fault.READ_ONLY, READ_ONLY))))
            return future
        if isinstance(request, WantUsage):
            self._wants_usage = request.wanted  # (asked again on each new link)
        if isinstance(request, Watch) and request.output == "all" and request.acks:
            # Made without output (a fleet's box until its console opens): every pane
            # from now on, and on each new link from where it stands.
            if self._output:
                return reply_now(request, Done())  # (already watching)
            self._output = True
        return self._request(request)

    def _request(self, request: Request[A], internal: bool = False) -> Future[A]:
        """Send ``request``; its reply comes as the future's result (a failure when the
        link is down: only the reader thread's own requests go on a new link first)."""
        future: Future[A] = Future()
        with self._lock:
            why = self.gone or (RECONNECTING if self.link is not None and not internal
                                else None)
            if why is not None:
                future.set_result(request.answer(encode_reply(failed(Fault.GONE, why))))
                return future
            conn = self.conn
            number = conn.next_id()
            self._futures[number] = (future, request)
        try:
            conn.send(request, number)
        except OSError:
            with self._lock:
                self._futures.pop(number, None)
            future.set_result(request.answer(encode_reply(failed(Fault.GONE, GONE))))
        return future

    def close(self) -> None:
        """End the link and the reader thread (a dial under way: closed once it returns)."""
        self._closing.set()
        with self._lock:
            conn = self.conn
        conn.close()
        self._thread.join(2.0)
