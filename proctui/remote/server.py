"""The control socket: RUN_DIR/control.sock, served by every proctui that supervises.

Consoles attach through it, and ``proctui status|stop|kill|logs|down ...`` talk to it. It
runs on a thread and an event loop of its own: a client that stalls, floods or lies can
cost its own connection, never a deadline of the core.

Each client gets the hello, every view and the state at once, then, whenever something
changed (at most PUSH_HZ times a second), the views that changed, the state if it
changed, and the output it asked for. Nothing is queued per client: each push is read
fresh from the core's snapshots and buffers, so a client that fell behind is brought up
to date by its next push, and the lines that left the scrollback meanwhile are counted
as dropped (one that fell behind the scrollback gets the newest lines at once, not the
oldest still held). A push waits while the client's unread bytes exceed HIGH_WATER,
and, for a client that acknowledges its pushes (over SSH), while two are on the way
(push.py).

Requests are decoded by the command table and carried out by dispatch.py; slots.py
keeps a client that does nothing from holding a slot, pages.py bounds every reply, and
heal.py makes the run directory again if it is removed.

Only the same user (or root) may connect: the directory is 0700, the socket 0600, and
the peer's credentials are checked; anyone else is refused and the refusal logged. A
line that is not JSON, longer than MAX_LINE or cut off by a closed socket drops that
client.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import struct
import threading
import time
from collections.abc import Callable
from typing import Any

from proctui import __version__
from proctui.commands.notice import Notice
from proctui.commands.store_rebuilt import StoreRebuilt
from proctui.commands.usage import WantUsage
from proctui.core.reply import EventsPage
from proctui.core.store import namelock
from proctui.core.store.rundir import RunDir
from proctui.core.supervisor import Supervisor
from proctui.protocol import wire
from proctui.protocol.pushes import Hello, State
from proctui.protocol.replies import encode_reply
from proctui.remote import dispatch, heal, pages, push, slots, window
from proctui.remote.slots import Client
from proctui.remote.socket_file import Bound, bind, unlink_ours

SOCKET = wire.SOCKET
PUSH_HZ = 20
HIGH_WATER = pages.HIGH_WATER
BATCH = window.BATCH
QUIET_AFTER = push.QUIET_AFTER
LAST_PUSHES = 20  # at the close, at most (an abandoned process may write on)
LAST_PUSHING = 1.0  # seconds the close pushes to one client, at most
ACKS_AT_CLOSE = 0.5  # seconds the close then waits for a client's acknowledgements
MAX_CLIENTS = slots.MAX_CLIENTS
REFUSAL_NOTICE_EVERY = 60.0  # seconds between two notices of refusals from one uid


class Server:
    def __init__(self, core: Supervisor, run_dir: RunDir, *, source: str = "",
                 say: Callable[[str], object] | None = None,
                 started_wall: float | None = None, own_console: bool = False) -> None:
        self.core = core
        self.own_console = own_console  # the supervisor's own console (run, not up)
        self.run_dir = run_dir
        self.source = source
        self.say = say or (lambda text: core.send(Notice(text)))
        self.path = run_dir.path / SOCKET
        self.clients: set[Client] = set()
        self.started_wall = started_wall or time.time()  # what status says as uptime
        self.boot = wire.boot_id()  # a client with the same one shares our clock
        self._sock: socket.socket | None = None
        self._ino: tuple[int, int] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._failed: OSError | None = None  # why it could not start serving
        self._servers: list[asyncio.Server] = []
        self._refusals: dict[int, tuple[float, int]] = {}  # uid: (last said, not said since)
        self._closing = False
        self.healer = heal.Healer(run_dir, self.say)
        self.dispatch = dispatch.Dispatch(core, lambda: self._changed())

    # -- life -----------------------------------------------------------------------------

    def start(self, bound: Bound | None = None) -> None:
        """Serve the socket (``bound`` already, or bound here, replacing a dead
        supervisor's) from a thread. Raises OSError when the socket cannot be made."""
        self._sock, self._ino = bound or bind(self.run_dir)
        self._thread = threading.Thread(target=self._main, name="proctui-control",
                                        daemon=True)
        self._thread.start()
        self._ready.wait(5.0)
        if self._failed is not None:
            raise self._failed

    def _main(self) -> None:
        try:
            loop: asyncio.AbstractEventLoop = _WholeLoop()
        except OSError as e:
            self._failed = OSError(e.errno, e.strerror)  # not its traceback: no half loop
            self._ready.set()
            return
        self._loop = loop
        try:
            loop.run_until_complete(self._serve())
        except Exception as e:  # never take the supervisor down with us
            if not self._ready.is_set():
                self._failed = e if isinstance(e, OSError) else OSError(str(e))
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
        self.core.output.listen(lambda: _call_soon(loop, self._changed))
        healing = asyncio.create_task(self._healing())
        self._ready.set()
        await self._stopped.wait()
        self._closing = True  # the pushers stop: the flushes below push the last
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
        finds the lock held instead of starting a second copy. Looked at when inotify
        says something changed there (heal.py), not on a timer while nothing does."""
        loop = asyncio.get_running_loop()
        wake = asyncio.Event()
        watch = heal.Watch()
        pace = heal.Pace(loop.time())
        if watch.fd is not None:
            def woken() -> None:
                watch.drain()
                pace.seen(loop.time())
                wake.set()

            loop.add_reader(watch.fd, woken)
        watching = watch.arm(self.run_dir.path)
        pace.seen(loop.time())  # one look soon: a change between the Healer's copy and arm()
        names = self._clear_names(loop, None)
        try:
            while True:
                delay = pace.due(watching, self.healer.broken) - loop.time()
                if delay > 0:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(wake.wait(), delay)
                    wake.clear()
                    continue  # (a change seen, so due anew; or timed out: due now)
                pace.looked(loop.time())
                try:
                    if not self.healer.check():
                        if self.healer.broken or not watching:
                            watching = watch.arm(self.run_dir.path)
                        continue
                    watching = watch.arm(self.run_dir.path)
                    names = self._clear_names(loop, names)
                    self.core.send(StoreRebuilt())  # the journal and the output logs follow
                    sock, self._ino = bind(self.run_dir)
                    self._servers.append(await asyncio.start_unix_server(
                        self._client, sock=sock, limit=wire.MAX_LINE))
                    for old in self._servers[:-1]:
                        old.close()  # (its socket's path is gone: nobody can reach it)
                    self._servers[:-1] = []
                except Exception as e:  # never take the supervisor down with us
                    self.say(f"control socket: could not rebuild it: {e}")
        finally:
            if watch.fd is not None:
                loop.remove_reader(watch.fd)
            self._clear_names(loop, names, stop=True)
            watch.close()

    def _clear_names(self, loop: asyncio.AbstractEventLoop, was: socket.socket | None,
                     stop: bool = False) -> socket.socket | None:
        """Whoever asks who holds the run directory's name (namelock.py) is let go as
        they ask, not by a timer: a full queue would vouch for nobody."""
        if was is not None:
            with contextlib.suppress(Exception):  # (closed by now, at the very end)
                loop.remove_reader(was)
        name = None if stop else self.run_dir.name_lock
        if name is not None:
            loop.add_reader(name, namelock.clear, name)
        return name

    def close(self) -> None:
        """Tell the clients what is final, stop serving, and remove the socket."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            _call_soon(loop, lambda: self._stopped.set())
        if self._thread is not None:
            self._thread.join(3.0)
        self.healer.close()
        unlink_ours(self.run_dir, self._ino)

    # -- news from the core -------------------------------------------------------------

    def _changed(self) -> None:
        if not self.clients:
            # Nobody to tell: the bell is left rung (re-armed when a client comes), so a
            # flood's every chunk does not wake this thread, nor the console beside it.
            return
        self.core.output.changes()  # re-arms the listener
        for c in self.clients:
            c.news.set()

    async def _flush(self, c: Client) -> None:
        """The last news before the connection ends, with the output the client has not
        had (on a slow link, what it carries in a moment: the rest would hold up its
        goodbye), written out whole, and its acknowledgements read, before the
        connection closes."""
        with contextlib.suppress(Exception):
            c.writer.transport.set_write_buffer_limits(high=0)  # drain: until all is out
            until, pushes = time.monotonic() + LAST_PUSHING, 0
            while True:
                pushes += 1
                last = time.monotonic() >= until or pushes == LAST_PUSHES
                if c.window is not None and not last:
                    with contextlib.suppress(TimeoutError):  # paced by the link, as ever
                        await asyncio.wait_for(c.window.room.wait(), until - time.monotonic())
                    last = not c.window.room.is_set()
                # The last one: the newest lines of whatever it is still behind on.
                await self._push(c, far=0.0 if last else LAST_PUSHING / 2)
                await c.writer.drain()
                if last or push.caught_up(c, self.core.output.buffer):
                    break
            if c.kind == "events":
                # It asks for the pages the last state announced: closing first lost the
                # last outcomes over --host (no journal file there to read them from).
                # Bounded, as every flush is, by the goodbye's own limit.
                announced = self.core.snapshot().journal_seq
                while c.events_read < announced:
                    c.paged.clear()
                    await c.paged.wait()
            if c.window is not None:
                # A socket closed with unread bytes resets the client's end, and it took
                # the reset for a link that failed (not the goodbye) and dialled again.
                await asyncio.wait_for(c.window.idle.wait(), ACKS_AT_CLOSE)

    # -- one client -----------------------------------------------------------------------

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        sock = writer.get_extra_info("socket")
        pid, uid, _gid = struct.unpack("3i", sock.getsockopt(
            socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
        if uid not in (0, os.getuid()):
            self._refused(uid, pid)
            await slots.refuse(writer, "refused: not the supervisor's user", reader)
            return
        if len(self.clients) >= slots.MAX_CLIENTS:
            self._make_room()
        writer.transport.set_write_buffer_limits(high=HIGH_WATER)
        c = Client(writer, pid, uid)
        self.clients.add(c)
        self.core.output.changes()  # the bell may have been left rung while nobody was here
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
                self.core.send(WantUsage(False))
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
        views = self.core.snapshot().views
        hello = Hello(v=wire.VERSION, version=__version__, pid=os.getpid(), boot=self.boot,
                      source=self.source, run_dir=str(self.run_dir.path),
                      started=self.started_wall, console=self.own_console,
                      names=tuple(v.name for v in views),
                      scrollback=tuple(self.core.output.buffer(v.name).capacity
                                       for v in views))
        return {**hello.to_dict(), "now": time.monotonic()}

    def _make_room(self) -> None:
        """The newcomer always gets a slot (it may be the owner's ``down``)."""
        victim = min(self.clients, key=slots.expendable)
        self.clients.discard(victim)
        with contextlib.suppress(Exception):
            victim.writer.write(wire.dumps({"t": "error", "error": (
                f"closed to make room: {slots.MAX_CLIENTS} clients at once, and this one "
                "was the most expendable")}))
            victim.writer.transport.abort()

    async def _reading(self, c: Client, reader: asyncio.StreamReader) -> None:
        """Requests, one a line, each answered in turn (slots.Requests bounds how they
        arrive); a client that asks and never reads its replies is dropped."""
        requests = slots.Requests(reader)
        while True:
            got = await requests.next(c)
            if got is None:
                return  # closed (in the middle of a message, perhaps: nothing done)
            if isinstance(got, str):
                await slots.refuse(c.writer, got, reader)
                return
            try:
                message = wire.loads(got)
            except (ValueError, RecursionError):
                await slots.refuse(c.writer, "not a JSON object", reader)
                return
            answer = await self.dispatch(c, message)
            if answer is None:  # an acknowledgement: nothing to answer, nothing to wait for
                await asyncio.sleep(0)  # (a flood of them must let the other clients in)
                continue
            c.writer.write(wire.dumps(encode_reply(answer, dispatch.reply_id(message))))
            if isinstance(answer, EventsPage) and answer.ok:
                c.events_read = max(c.events_read, answer.next)
                c.paged.set()
            if c.writer.transport.get_write_buffer_size() > pages.MAX_QUEUED:
                return  # asks and never reads: its bytes are not ours to hold
            try:  # a client that sends but never reads waits here, for a while
                await asyncio.wait_for(c.writer.drain(), pages.DRAIN_LIMIT)
            except TimeoutError:
                return

    async def _pushing(self, c: Client) -> None:
        with contextlib.suppress(ConnectionError, OSError):
            while True:
                await c.news.wait()
                if self._closing:
                    return  # the flush pushes the last
                if c.window is not None and not c.window.room.is_set():
                    c.stalled = time.monotonic()  # (one that never acknowledges: here)
                    await c.window.room.wait()
                c.news.clear()
                await self._push(c)
                c.stalled = time.monotonic()
                await c.writer.drain()  # a stalled client waits here, alone
                c.stalled = None
                await self._pause(c)

    async def _pause(self, c: Client) -> None:
        """1 / PUSH_HZ between two pushes. But when this client has every line of the
        processes whose burst it waits to hear the end of, the push that says so comes
        once they have been quiet QUIET_AFTER, not a whole gap later (the end of a flood
        reached an attached console up to 50 ms after the local one drew it). Only that
        "q" comes early, never lines: a trickle of output waits for the gap's end."""
        until = time.monotonic() + 1 / PUSH_HZ
        bufs = {name: self.core.output.buffer(name) for name in c.busy}

        def sent_all() -> bool:
            return all(c.has_all(name, buf.mark()) for name, buf in bufs.items())

        def quiet_at() -> float:  # when the last of them has had no output for QUIET_AFTER
            return max(buf.appended_at for buf in bufs.values()) + QUIET_AFTER

        if bufs and sent_all() and quiet_at() < until:
            await asyncio.sleep(max(0.0, quiet_at() - time.monotonic()))
            # (output that came meanwhile waits for the gap's end)
            if sent_all() and time.monotonic() >= quiet_at() and \
                    (c.window is None or c.window.room.is_set()):
                await self._push(c)
        await asyncio.sleep(max(0.0, until - time.monotonic()))

    async def _push(self, c: Client, far: float = window.CATCH_UP) -> None:
        """Everything that changed since this client's last push (output more than
        ``far`` seconds of its link behind: the newest lines, see push.output)."""
        core, w, window = self.core, c.writer, c.window
        written = 0

        def write(data: bytes) -> None:
            nonlocal written
            w.write(data)
            written += len(data)

        snapshot = core.snapshot()  # one moment: views and state never mix two
        changed = [v for v in snapshot.views if c.seen.get(v.name) != v.seq]
        if changed:
            for v in changed:
                if v.name not in c.seen and c.watch_all and v.name not in c.sent:
                    # A reload added it: its output follows, from the start.
                    c.follow(v.name, core.output.buffer(v.name).mark().first)
                c.seen[v.name] = v.seq
            write(wire.dumps({"t": "views", "now": time.monotonic(),
                              "views": [wire.view_to_dict(v) for v in changed]}))
        state = State.of(snapshot, sum(x.kind == "console" for x in self.clients))
        if state != c.state:
            c.state = state
            write(wire.dumps({**state.to_dict(), "now": time.monotonic()}))
        push.output(c, core.output.buffer, BATCH if window is None else window.budget, write,
                    far=None if window is None else window.far(far))
        if c.busy:
            c.news.set()  # a push to come, even with no news: to say when output stopped
        if window is not None and written:
            w.write(wire.dumps({"t": "push", "k": window.pushed(written)}))


def _call_soon(loop: asyncio.AbstractEventLoop, fn: Callable[[], object]) -> None:
    with contextlib.suppress(RuntimeError):  # the loop is closed: nobody to tell
        loop.call_soon_threadsafe(fn)


class _WholeLoop(asyncio.SelectorEventLoop):
    """asyncio's loop, made whole or not at all: OSError at the descriptor limit (its
    epoll or its self-pipe cannot be made), said in one line by the caller. Made half-way,
    its ``__del__`` printed a traceback as it tried to close a self-pipe it never had.
    Marked closed instead: a process-wide hook that hid that one traceback raced between
    threads and hid other loops' too."""

    def __init__(self) -> None:
        try:
            super().__init__()
        except OSError:
            self._closed = True  # nothing of it to close: its __del__ leaves it be
            selector = getattr(self, "_selector", None)
            if selector is not None:
                selector.close()
            raise
