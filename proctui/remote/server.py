"""The control socket: RUN_DIR/control.sock, served by every proctui that supervises.

Consoles attach through it, and ``proctui status|stop|kill|logs|down ...`` talk to it. It
runs on a thread and an event loop of its own: a client that stalls, floods or lies can
cost its own connection, never a deadline of the core.

Each client gets the hello, every view and the state at once, then, whenever something
changed (at most PUSH_HZ times a second), the views that changed, the state if it
changed, and the output it asked for. Nothing is queued per client: each push is read
fresh from the core's snapshots and buffers, so a client that fell behind is brought up
to date by its next push, and the lines that left the scrollback meanwhile are counted
as dropped. A push waits while the client's unread bytes exceed HIGH_WATER.

A slot is never held by a client that does nothing: a request must arrive whole within
REQUEST_WINDOW seconds of its first byte, a client that subscribed to nothing is closed
after IDLE_LIMIT seconds of silence, and when all MAX_CLIENTS slots are taken the
longest-idle client makes room for the newcomer (it may be the owner's ``down``).

Only the same user (or root) may connect: the directory is 0700, the socket 0600, and
the peer's credentials are checked; anyone else is refused and the refusal logged. A
line that is not JSON, longer than MAX_LINE or cut off by a closed socket drops that
client.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import stat
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from proctui import __version__
from proctui.core.rundir import RunDir
from proctui.core.supervisor import Supervisor
from proctui.protocol import commands, wire
from proctui.protocol.commands import Done, Fault, JournalPage, TailPage
from proctui.remote import heal

SOCKET = wire.SOCKET
PUSH_HZ = 20
HIGH_WATER = 256 << 10  # bytes a client may leave unread before pushes wait for it
BATCH = 256 << 10  # bytes of output in one push (more follow at once)
MAX_CLIENTS = 64
PAGE_BYTES = 256 << 10  # about the most one reply holds (tail, journal: the client pages)
SLICE = 1000  # lines or entries read between two yields to the core's thread
MAX_QUEUED = HIGH_WATER + 2 * PAGE_BYTES + (1 << 20)  # bytes unread: more drops a client
DRAIN_LIMIT = 60.0  # seconds a client may leave its reply unread before it is dropped
REQUEST_WINDOW = 5.0  # seconds for a request to arrive whole, once its first byte has
REFUSAL_NOTICE_EVERY = 60.0  # seconds between two notices of refusals from one uid
IDLE_LIMIT = 60.0  # seconds a client that subscribed to nothing may stay silent


@dataclass(eq=False)
class Client:
    writer: asyncio.StreamWriter
    pid: int
    news: asyncio.Event = field(default_factory=asyncio.Event)
    seen: dict[str, int] = field(default_factory=dict)  # view seq sent, by name
    sent: dict[str, int] = field(default_factory=dict)  # next line number to send
    partial: dict[str, str] = field(default_factory=dict)
    cleared: dict[str, int] = field(default_factory=dict)
    state: dict[str, Any] | None = None
    wants_usage: bool = False
    kind: str = ""  # what it said it is: "console", "down", "logs", ...
    active: float = field(default_factory=time.monotonic)  # its last whole request
    journal: list[dict[str, object]] | None = None  # the journal it is paging through
    stalled: float | None = None  # since when its news waits for it to read
    opened: float = field(default_factory=time.monotonic)

    @property
    def subscribed(self) -> bool:
        """Waits for news (a console, down, logs -f): silence is its normal state."""
        return bool(self.kind or self.sent or self.wants_usage)


class Server:
    def __init__(self, core: Supervisor, run_dir: RunDir, *, source: str = "",
                 say: Callable[[str], object] | None = None) -> None:
        self.core = core
        self.run_dir = run_dir
        self.source = source
        self.say = say or core.notice
        self.path = run_dir.path / SOCKET
        self.clients: set[Client] = set()
        self.started_wall = time.time()
        self._sock: socket.socket | None = None
        self._ino: tuple[int, int] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._servers: list[asyncio.Server] = []
        self._refusals: dict[int, tuple[float, int]] = {}  # uid: (last said, not said since)
        self.healer = heal.Healer(run_dir, self.say)

    # -- life -----------------------------------------------------------------------------

    def start(self) -> None:
        """Bind the socket (replacing a dead supervisor's) and serve it from a thread.
        Raises OSError when the socket cannot be made."""
        self._sock = self._bind()
        self._thread = threading.Thread(target=self._main, name="proctui-control",
                                        daemon=True)
        self._thread.start()
        self._ready.wait(5.0)

    def _bind(self) -> socket.socket:
        fd = self.run_dir.fd
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
                raise OSError(f"{self.path} was replaced")
            self._ino = (st.st_dev, st.st_ino)
            sock.listen(16)
            sock.setblocking(False)
        except OSError:
            sock.close()
            raise
        return sock

    def _main(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self._serve())
        except Exception:  # never take the supervisor down with us
            pass
        finally:
            self._ready.set()
            with contextlib.suppress(Exception):
                loop.close()

    async def _serve(self) -> None:
        assert self._sock is not None
        self._stopped = asyncio.Event()
        self._servers = [await asyncio.start_unix_server(self._client, sock=self._sock,
                                                         limit=wire.MAX_LINE)]
        loop = asyncio.get_running_loop()
        self.core.listen(lambda: _call_soon(loop, self._changed))
        healing = asyncio.create_task(self._healing())
        self._ready.set()
        await self._stopped.wait()
        healing.cancel()
        for server in self._servers:
            server.close()
        # The last news (everything has ended, the exit status) reaches every client
        # that still reads, within a bound; then every connection ends.
        flushes = [asyncio.create_task(self._flush(c)) for c in list(self.clients)]
        if flushes:
            await asyncio.wait(flushes, timeout=2.0)
        others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in others:
            task.cancel()
        await asyncio.gather(*others, return_exceptions=True)

    async def _healing(self) -> None:
        """The run directory removed under us (a logout's rm -rf /run/user/UID): made
        again, with the socket bound there anew, so that status finds us and the next up
        finds the lock held instead of starting a second copy."""
        while True:
            await asyncio.sleep(heal.HEAL_EVERY)
            try:
                if not self.healer.check():
                    continue
                sock = self._bind()
                self._servers.append(await asyncio.start_unix_server(
                    self._client, sock=sock, limit=wire.MAX_LINE))
                for old in self._servers[:-1]:
                    old.close()  # (its socket's path is gone: nobody can reach it)
                self._servers[:-1] = []
            except Exception as e:  # never take the supervisor down with us
                self.say(f"control socket: could not rebuild it: {e}")

    def close(self) -> None:
        """Tell the clients what is final, stop serving, and remove the socket."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            _call_soon(loop, lambda: self._stopped.set())
        if self._thread is not None:
            self._thread.join(3.0)
        self.healer.close()
        fd = self.run_dir.fd
        if fd is not None and self._ino is not None:
            with contextlib.suppress(OSError):
                st = os.stat(SOCKET, dir_fd=fd, follow_symlinks=False)
                if (st.st_dev, st.st_ino) == self._ino:
                    os.unlink(SOCKET, dir_fd=fd)

    # -- news from the core -------------------------------------------------------------

    def _changed(self) -> None:
        self.core.changes()  # re-arms the listener
        for c in self.clients:
            c.news.set()

    async def _flush(self, c: Client) -> None:
        with contextlib.suppress(Exception):
            await self._push(c)
            await c.writer.drain()

    # -- one client -----------------------------------------------------------------------

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        sock = writer.get_extra_info("socket")
        pid, uid, _gid = struct.unpack("3i", sock.getsockopt(
            socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
        if uid not in (0, os.getuid()):
            self._refused(uid, pid)
            await _refuse(writer, "refused: not the supervisor's user", reader)
            return
        if len(self.clients) >= MAX_CLIENTS:
            self._make_room()
        writer.transport.set_write_buffer_limits(high=HIGH_WATER)
        c = Client(writer, pid)
        self.clients.add(c)
        pusher = asyncio.create_task(self._pushing(c))
        try:
            writer.write(wire.dumps(self._hello()))
            await self._push(c)
            await self._reading(c, reader)
        except (ConnectionError, OSError, asyncio.IncompleteReadError,
                asyncio.CancelledError):  # (cancelled: the server is closing)
            pass
        finally:
            pusher.cancel()
            self.clients.discard(c)
            if c.wants_usage:
                self.core.want_usage(False)
            writer.close()

    def _refused(self, uid: int, pid: int) -> None:
        """Say it, once a REFUSAL_NOTICE_EVERY per uid: 17,000 refused connections once
        wrote 1.7 MB of the same line to supervisor.log."""
        now = time.monotonic()
        last, hidden = self._refusals.get(uid, (-REFUSAL_NOTICE_EVERY, 0))
        if now - last < REFUSAL_NOTICE_EVERY:
            self._refusals[uid] = (last, hidden + 1)
            return
        if len(self._refusals) > 1024:
            self._refusals.clear()
        self._refusals[uid] = (now, 0)
        more = f" ({hidden} more from that uid since the last notice)" if hidden else ""
        self.say(f"refused a control connection from uid {uid} (pid {pid}): only "
                 f"uid {os.getuid()} and root may connect{more}")

    def _hello(self) -> dict[str, Any]:
        views = self.core.views()
        return {"t": "hello", "v": wire.VERSION, "version": __version__, "pid": os.getpid(),
                "source": self.source, "run_dir": str(self.run_dir.path),
                "started": self.started_wall,
                "names": [v.name for v in views],
                "scrollback": [self.core.buffer(v.name).capacity for v in views]}

    def _make_room(self) -> None:
        """The newcomer always gets a slot (it may be the owner's ``down``). The one that
        goes: a client subscribed to nothing (the longest silent first), else one that
        leaves its news unread (the longest stalled first), else the newest reader, so
        that a burst of newcomers cannot push out the console that was there first."""
        victim = min(self.clients, key=_expendable)
        self.clients.discard(victim)
        with contextlib.suppress(Exception):
            victim.writer.write(wire.dumps({"t": "error", "error": (
                f"closed to make room: {MAX_CLIENTS} clients at once, and this one was "
                "the longest idle")}))
            victim.writer.transport.abort()

    async def _reading(self, c: Client, reader: asyncio.StreamReader) -> None:
        """Requests, one a line. A request must arrive whole within REQUEST_WINDOW of its
        first byte, and a client that has not subscribed to news is closed after
        IDLE_LIMIT of silence: a trickle of bytes or an idle socket cannot hold a slot."""
        buf = bytearray()
        began = time.monotonic()
        while True:
            end = buf.find(b"\n")
            while end < 0:
                if len(buf) > wire.MAX_LINE:
                    await _refuse(c.writer, "message too long", reader)
                    return
                now = time.monotonic()
                if buf:
                    wait: float | None = began + REQUEST_WINDOW - now
                    why = f"closed: a request must arrive whole within {REQUEST_WINDOW:g}s"
                elif c.subscribed:
                    wait, why = None, ""
                else:
                    wait = c.active + IDLE_LIMIT - now
                    why = f"closed: idle for {IDLE_LIMIT:g}s"
                try:
                    if wait is not None and wait <= 0:
                        raise TimeoutError
                    chunk = await asyncio.wait_for(reader.read(1 << 16), wait)
                except TimeoutError:
                    await _refuse(c.writer, why, reader)
                    return
                if not chunk:
                    return  # closed (in the middle of a message, perhaps: nothing done)
                if not buf:
                    began = time.monotonic()
                scan = len(buf)
                buf += chunk
                end = buf.find(b"\n", scan)
            line = bytes(buf[:end + 1])
            del buf[:end + 1]
            began = c.active = time.monotonic()
            try:
                message = wire.loads(line)
            except (ValueError, RecursionError):
                await _refuse(c.writer, "not a JSON object", reader)
                return
            answer = await self._command(c, message)
            c.writer.write(wire.dumps(commands.encode_reply(answer, _id(message))))
            if c.writer.transport.get_write_buffer_size() > MAX_QUEUED:
                return  # asks and never reads: its bytes are not ours to hold
            try:  # a client that sends but never reads waits here, for a while
                await asyncio.wait_for(c.writer.drain(), DRAIN_LIMIT)
            except TimeoutError:
                return

    async def _pushing(self, c: Client) -> None:
        with contextlib.suppress(ConnectionError, OSError):
            while True:
                await c.news.wait()
                c.news.clear()
                await self._push(c)
                c.stalled = time.monotonic()
                await c.writer.drain()  # a stalled client waits here, alone
                c.stalled = None
                await asyncio.sleep(1 / PUSH_HZ)

    async def _push(self, c: Client) -> None:
        """Everything that changed since this client's last push."""
        core, w = self.core, c.writer
        changed = [v for v in core.views() if c.seen.get(v.name) != v.seq]
        if changed:
            for v in changed:
                c.seen[v.name] = v.seq
            w.write(wire.dumps({"t": "views", "views": [wire.view_to_dict(v)
                                                         for v in changed]}))
        state = self._state()
        if state != c.state:
            c.state = state
            w.write(wire.dumps({"t": "state", **state}))
        size = 0
        for name, start in c.sent.items():
            buf = core.buffer(name)
            if (buf.total == start and buf.partial == c.partial[name]
                    and buf.cleared_before == c.cleared[name]):
                continue
            # From the oldest line still held, if this client fell that far behind.
            got = buf.read(max(start, buf.first), 5000)
            c.sent[name] = got.first + len(got.lines)
            c.partial[name] = got.partial
            c.cleared[name] = buf.cleared_before
            data = wire.dumps({"t": "out", "n": name, "f": got.first, "l": got.lines,
                               "s": _runs(got.streams), "d": max(0, got.first - start),
                               "o": buf.output_total, "p": got.partial,
                               "c": buf.cleared_before})
            w.write(data)
            size += len(data)
            if c.sent[name] < buf.total or size >= BATCH:
                c.news.set()  # more to send: the next push comes straight after this one
                if size >= BATCH:
                    break

    def _state(self) -> dict[str, Any]:
        core = self.core
        ended = core.all_ended()
        state: dict[str, Any] = {
            "all_ended": ended, "exit_status": core.exit_status() if ended else None,
            "strays": core.strays(), "crash": core.crash,
            "shutting_down": core.shutting_down, "interactive": core.interactive,
            "consoles": sum(c.kind == "console" for c in self.clients)}
        if ended:
            state["final"] = [[n, None if o is None else wire.outcome_to_dict(o)]
                              for n, o in core.final()]
        return state

    # -- commands ---------------------------------------------------------------------

    async def _command(self, c: Client, m: dict[str, Any]) -> Done:
        request = commands.decode(m)
        if isinstance(request, Done):
            return request
        try:
            return await self._dispatch(c, request)
        except Exception as e:  # a command the core refused outright
            return commands.failed(Fault.REFUSED, str(e).strip("'\""))

    async def _dispatch(self, c: Client, request: commands.Request[Any]) -> Done:
        """One place that carries out a decoded request: the core's commands through the
        table, the connection's own here."""
        core = self.core
        if isinstance(request, commands.Named) and request.name not in c.seen:
            return commands.failed(Fault.UNKNOWN_NAME, f"no process named {request.name!r}")
        if isinstance(request, commands.CoreCommand):
            reply = await asyncio.wrap_future(request.apply(core))
            if reply.ok:
                return Done(True, reply.text)
            fault = Fault.REFUSED
            if isinstance(request, commands.Named) and request.needs_running and \
                    not self._alive(request.name):
                fault = Fault.NOT_RUNNING
            return Done(False, reply.text, fault)
        if isinstance(request, commands.WantUsage):
            if request.wanted != c.wants_usage:
                c.wants_usage = request.wanted
                core.want_usage(request.wanted)
            return Done()
        if isinstance(request, commands.Hello):
            c.kind = request.kind[:32]
            self._changed()  # everyone's state now counts it
            return Done()
        if isinstance(request, commands.Watch):
            return self._watch(c, request)
        if isinstance(request, commands.Journal):
            return await self._journal(c, request)
        if isinstance(request, commands.Tail):
            return await self._tail(c, request)
        if isinstance(request, commands.Ping):
            return Done()
        return commands.failed(Fault.UNKNOWN_COMMAND, f"unknown command {request.op!r}")

    def _alive(self, name: str) -> bool:
        return any(v.name == name and v.alive for v in self.core.views())

    async def _journal(self, c: Client, request: commands.Journal) -> JournalPage:
        """At most PAGE_BYTES of entries (measured as sent), measured a slice at a time so
        that the core's thread gets the GIL between slices. The first page takes the
        journal as it is; the following pages read that same list (copying the whole
        journal for every page would make paging quadratic)."""
        if request.start == 0 or c.journal is None:
            c.journal = self.core.journal()
        entries = c.journal
        page: list[dict[str, object]] = []
        size, at = 0, request.start
        while at < len(entries) and size < PAGE_BYTES:
            for entry in entries[at:at + SLICE]:
                size += len(json.dumps(entry, ensure_ascii=False, default=str))
                page.append(entry)
                at += 1
                if size >= PAGE_BYTES:
                    break
            await asyncio.sleep(0)
        if at >= len(entries):
            c.journal = None
        return JournalPage(entries=page, next=at, more=at < len(entries))

    async def _tail(self, c: Client, request: commands.Tail) -> Done:
        """One page of scrollback: at most PAGE_BYTES of lines, read a slice at a time.
        Twenty clients asking for an 80 MB scrollback each once made 1.7 GB of replies."""
        if request.name not in c.seen:
            return commands.failed(Fault.UNKNOWN_NAME, f"no process named {request.name!r}")
        buf = self.core.buffer(request.name)
        if request.start is not None:
            start = request.start
        elif request.lines is not None:
            start = max(0, buf.total - request.lines)
        else:
            start = 0
        first: int | None = None
        lines: list[str] = []
        streams: list[int] = []
        size = 0
        at = start
        while size < PAGE_BYTES:
            got = buf.read(at, SLICE)
            if first is None:
                first = got.first
            elif got.first != at:
                break  # the scrollback moved past us meanwhile: the next page says so
            for line, stream in zip(got.lines, got.streams, strict=False):
                lines.append(line)
                streams.append(stream)
                size += len(line) + 4
                if size >= PAGE_BYTES:
                    break
            at = (first if first is not None else start) + len(lines)
            if not got.lines or at >= buf.total:
                break
            await asyncio.sleep(0)
        begin = start if first is None else first
        end = begin + len(lines)
        return TailPage(first=begin, lines=lines, runs=_runs(streams), next=end,
                        more=end < buf.total, total=buf.total)

    def _watch(self, c: Client, request: commands.Watch) -> Done:
        """Stream output: of every process ("all") or those named, starting ``replay``
        lines back (default: the whole scrollback), or at line ``start`` (by name)."""
        output = request.output
        names = list(c.seen) if output == "all" else [n for n in output or () if n in c.seen]
        for name in names:
            buf = self.core.buffer(name)
            start = buf.first
            if request.replay is not None:
                start = max(start, buf.total - request.replay)
            if request.start is not None and name in request.start:
                # (beyond the end, it would be sent an empty message on every change)
                start = min(max(0, request.start[name]), buf.total)
            c.sent[name], c.partial[name], c.cleared[name] = start, "\0", -1
        c.news.set()
        return Done()


def _expendable(c: Client) -> tuple[int, float]:
    """Who makes room first: the smallest."""
    if not c.subscribed:
        return 0, c.active
    if c.stalled is not None:
        return 1, c.stalled
    return 2, -c.opened


def _runs(streams: list[int]) -> list[list[int]]:
    """[1, 1, 1, 2] as [[1, 3], [2, 1]]: most output is long runs of one stream."""
    out: list[list[int]] = []
    for s in streams:
        if out and out[-1][0] == s:
            out[-1][1] += 1
        else:
            out.append([s, 1])
    return out


async def _refuse(writer: asyncio.StreamWriter, why: str,
                  reader: asyncio.StreamReader | None = None) -> None:
    """Say why, then close. Unread input at close would reset the connection and could
    lose the reason: so first let the peer see our end, discarding what it still sends
    (for a second at most)."""
    with contextlib.suppress(Exception):
        writer.write(wire.dumps({"t": "error", "error": why}))
        await asyncio.wait_for(writer.drain(), 1.0)
        if reader is not None and writer.can_write_eof():
            writer.write_eof()
            async with asyncio.timeout(1.0):
                while await reader.read(1 << 16):
                    pass
    writer.close()


def _id(message: dict[str, Any]) -> int | str | None:
    """The request's id, echoed in its reply: a number or a short string, nothing else
    (a client's lone surrogate or megabyte id must not break our reply)."""
    number = message.get("id")
    if isinstance(number, int) and not isinstance(number, bool) and abs(number) < 1 << 53:
        return number
    if isinstance(number, str) and len(number) <= 64:
        return number  # (a lone surrogate goes back as the same JSON escape: see dumps)
    return None


def _call_soon(loop: asyncio.AbstractEventLoop, fn: Callable[[], object]) -> None:
    with contextlib.suppress(RuntimeError):  # the loop is closed: nobody to tell
        loop.call_soon_threadsafe(fn)


def serve(core: Supervisor, run_dir: RunDir | None, source: str = "") -> \
        tuple[Server | None, str | None]:
    """Serve ``core`` on the run directory's control socket: the server, or why not."""
    if run_dir is None or run_dir.fd is None:
        return None, None
    server = Server(core, run_dir, source=source)
    try:
        server.start()
    except OSError as e:
        error = f"control socket {server.path}: {e.strerror or e}"
        core.notice(f"{error}; proctui attach, status and down cannot reach this run")
        return None, error
    return server, None
