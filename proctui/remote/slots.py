"""Who holds a connection to the control socket, and for how long: nothing a client does
may hold a slot it does not use. A request must arrive whole within REQUEST_WINDOW
seconds of its first byte; a client subscribed to nothing is closed after IDLE_LIMIT of
silence (64 clients trickling a byte a second once held every slot, and the owner's
status, stop and down were refused); and when all MAX_CLIENTS slots are taken the most
expendable client makes room for the newcomer instead of the newcomer being refused."""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from proctui.protocol import wire

if TYPE_CHECKING:
    from proctui.core.output.lines import Mark
    from proctui.remote.window import Window

MAX_CLIENTS = 64
REQUEST_WINDOW = 5.0  # seconds for a request to arrive whole, once its first byte has
IDLE_LIMIT = 60.0  # seconds a client that subscribed to nothing may stay silent


@dataclass(eq=False)
class Client:
    writer: asyncio.StreamWriter
    pid: int
    uid: int = -1  # from the socket's peer credentials
    ssh: str | None = None  # the SSH client ("ADDR PORT") when it came through proctui stdio
    read_only: bool = False  # it may look, never act
    news: asyncio.Event = field(default_factory=asyncio.Event)
    seen: dict[str, int] = field(default_factory=dict)  # view seq sent, by name
    sent: dict[str, int] = field(default_factory=dict)  # next line number to send
    partial: dict[str, str] = field(default_factory=dict)
    cleared: dict[str, int] = field(default_factory=dict)
    busy: set[str] = field(default_factory=set)  # output last pushed still coming ("q")
    state: object = None  # the last State pushed to it
    wants_usage: bool = False
    kind: str = ""  # what it said it is: "console", "down", "logs", ...
    active: float = field(default_factory=time.monotonic)  # its last whole request
    stalled: float | None = None  # since when its news waits for it to read
    opened: float = field(default_factory=time.monotonic)
    window: Window | None = None  # the pushes on the way, when it acknowledges them
    turn: int = 0  # whose output the next push begins with (push.output)
    # An events reader: the journal number its pages have reached, and a bell each time
    # it gets one (its goodbye waits for the last page: server._flush).
    events_read: int = -1
    watch_all: bool = False  # asked for every process's output: one a reload adds too
    paged: asyncio.Event = field(default_factory=asyncio.Event)

    def follow(self, name: str, start: int) -> None:
        """Send ``name``'s output from line ``start`` on (its partial line and clear
        mark sent again with the next push)."""
        self.sent[name], self.partial[name], self.cleared[name] = start, "\0", -1

    def has_all(self, name: str, mark: Mark) -> bool:
        """Was it sent all of ``name``'s output up to ``mark`` (its buffer's Mark)?"""
        return (mark.total == self.sent.get(name) and mark.partial == self.partial.get(name)
                and mark.cleared_before == self.cleared.get(name))

    @property
    def subscribed(self) -> bool:
        """Waits for news (a console, down, logs -f): silence is its normal state."""
        return bool(self.kind or self.sent or self.wants_usage)


def expendable(c: Client) -> tuple[int, float]:
    """Who makes room first (the smallest): a client subscribed to nothing, the longest
    silent first; else one whose news waits unread, the longest stalled first; else the
    newest reader, so that a burst of newcomers cannot push out the console that was
    there first."""
    if not c.subscribed:
        return 0, c.active
    if c.stalled is not None:
        return 1, c.stalled
    return 2, -c.opened


class Requests:
    """A client's requests, one a line, within the limits above."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self.reader = reader
        self.buf = bytearray()
        self.began = time.monotonic()  # when the request being read began to arrive

    async def next(self, c: Client) -> bytes | str | None:
        """The next whole line; a str says why the client is to be closed; None: it
        closed the connection."""
        buf = self.buf
        end = buf.find(b"\n")
        while end < 0:
            if len(buf) > wire.MAX_LINE:
                return "message too long"
            now = time.monotonic()
            if buf:
                wait: float | None = self.began + REQUEST_WINDOW - now
                why = f"closed: a request must arrive whole within {REQUEST_WINDOW:g}s"
            elif c.subscribed:
                wait, why = None, ""
            else:
                wait = c.active + IDLE_LIMIT - now
                why = f"closed: idle for {IDLE_LIMIT:g}s"
            try:
                if wait is not None and wait <= 0:
                    raise TimeoutError
                chunk = await asyncio.wait_for(self.reader.read(1 << 16), wait)
            except TimeoutError:
                return why
            if not chunk:
                return None
            if not buf:
                self.began = time.monotonic()
            scan = len(buf)
            buf += chunk
            end = buf.find(b"\n", scan)
        # Here too, not only while the line is arriving: the read that brings its end
        # may bring up to a whole chunk past the bound (a line of MAX_LINE and a little
        # more, sent at once, was answered), and a line may already wait in the buffer.
        if end > wire.MAX_LINE:
            return "message too long"
        line = bytes(buf[:end + 1])
        del buf[:end + 1]
        self.began = c.active = time.monotonic()
        return line


async def refuse(writer: asyncio.StreamWriter, why: str,
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
