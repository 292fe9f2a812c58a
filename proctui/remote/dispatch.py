"""Carrying out a client's request: decoded by the command table (``protocol.decode``),
the core's commands sent to the core as any frontend sends them (with who sent it, for
the journal), the link's own (hello, watch, ack, ping, via, tail) answered here. Every
refusal is a fault code with words."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from proctui.commands.base import Named, Request
from proctui.commands.usage import WantUsage
from proctui.core.reply import Done, Fault, failed
from proctui.core.supervisor import Supervisor
from proctui.protocol import link
from proctui.protocol.decode import decode
from proctui.remote import pages
from proctui.remote.slots import Client
from proctui.remote.window import Window


class Dispatch:
    def __init__(self, core: Supervisor, changed: Callable[[], None]) -> None:
        self.core = core
        self.changed = changed  # (a client's kind changes everyone's state)

    async def __call__(self, c: Client, m: dict[str, Any]) -> Done | None:
        """The reply to ``m``; None for an acknowledgement, which is never answered."""
        request = decode(m)
        if isinstance(request, Done):
            return request
        try:
            return await self._dispatch(c, request)
        except Exception as e:  # a command the core refused outright
            return failed(Fault.REFUSED, str(e).strip("'\""))

    async def _dispatch(self, c: Client, request: Request[Any]) -> Done | None:
        """The link's own requests here; everything else goes to the core."""
        if isinstance(request, link.Ack):
            if c.window is not None:
                c.window.acked(request.k)
            return None
        if isinstance(request, link.Ping):
            return Done()
        if isinstance(request, link.Greet):
            # An agent's door stays one for the life of its connection: a second hello
            # saying "console" made its answer an operator's (an agent may ask, never
            # answer), as read-only stays read-only below.
            if c.kind != "mcp":
                c.kind = request.kind[:32]
            self.changed()  # everyone's state now counts it
            return Done()
        if isinstance(request, link.Via):
            c.ssh = c.ssh or request.ssh  # the first word holds: proctui stdio's
            c.read_only = c.read_only or request.read_only
            return Done()
        if isinstance(request, link.Watch):
            return self._watch(c, request)
        if isinstance(request, link.Tail):
            if request.name not in c.seen:
                return failed(Fault.UNKNOWN_NAME, f"no process named {request.name!r}")
            return await pages.tail_page(self.core.output.buffer(request.name), request)
        if isinstance(request, Named) and request.name not in c.seen:
            return failed(Fault.UNKNOWN_NAME, f"no process named {request.name!r}")
        if c.read_only and request.acts:
            return failed(Fault.READ_ONLY, f"{request.op}: {Fault.READ_ONLY.words}")
        if isinstance(request, WantUsage):
            # Per connection: counted once, and taken back when the client leaves.
            if request.wanted == c.wants_usage:
                return Done()
            c.wants_usage = request.wanted
        reply: Done = await asyncio.wrap_future(self.core.send(request, who=who(c)))
        return reply

    def _watch(self, c: Client, request: link.Watch) -> Done:
        """Stream output: of every process ("all") or those named, starting ``replay``
        lines back (default: the whole scrollback), or at line ``start`` (by name)."""
        output = request.output
        c.watch_all = output == "all"
        names = list(c.seen) if output == "all" else [n for n in output or () if n in c.seen]
        for name in names:
            mark = self.core.output.buffer(name).mark()
            start = mark.first
            if request.replay is not None:
                start = max(start, mark.total - request.replay)
            if request.start is not None and name in request.start:
                # (beyond the end, it would be sent an empty message on every change)
                start = min(max(0, request.start[name]), mark.total)
            c.follow(name, start)
        if not request.acks:
            if c.window is not None:  # said again without: it no longer acknowledges
                c.window.room.set()  # (a push waiting for room goes on)
            c.window = None
        elif c.window is None:
            c.window = Window()
        c.news.set()
        return Done()


def who(c: Client) -> dict[str, object]:
    """Who sent a command, for the journal: the uid the kernel vouches for, the client's
    pid (on this machine: the proctui stdio helper when it came over SSH), the SSH
    client's address, and what the client said it is (an agent's door says "mcp")."""
    out: dict[str, object] = {"uid": c.uid, "pid": c.pid}
    if c.ssh is not None:
        out["ssh"] = c.ssh
    if c.kind:
        out["client"] = c.kind  # what it said it is ("console", "mcp"): not vouched for
    return out


def reply_id(message: dict[str, Any]) -> int | str | None:
    """The request's id, echoed in its reply: a number or a short string, nothing else
    (a client's lone surrogate or megabyte id must not break our reply)."""
    number = message.get("id")
    if isinstance(number, int) and not isinstance(number, bool) and abs(number) < 1 << 53:
        return number
    if isinstance(number, str) and len(number) <= 64:
        return number  # (a lone surrogate goes back as the same JSON escape: see dumps)
    return None
