"""Carrying out a client's request: decoded by the command table, the core's commands
through ``CoreCommand.apply`` (the one place that names the Core method), the
connection's own (hello, usage, watch, journal, tail, ping, ack) here. Every refusal is a
fault code with words."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

from proctui.config import ConfigError, ProcessSpec
from proctui.core.supervisor import Supervisor
from proctui.protocol import commands
from proctui.protocol.commands import Done, Fault, JournalPage, failed
from proctui.protocol.decode import decode
from proctui.remote import pages
from proctui.remote.push import Window
from proctui.remote.slots import Client

# Reads the config the supervisor was started from, again (raises ConfigError).
Loader = Callable[[], Sequence[ProcessSpec]]


class Dispatch:
    def __init__(self, core: Supervisor, changed: Callable[[], None],
                 reload_from: Loader | None = None) -> None:
        self.core = core
        self.changed = changed  # (a client's kind changes everyone's state)
        self.reload_from = reload_from

    async def __call__(self, c: Client, m: dict[str, Any]) -> Done | None:
        """The reply to ``m``; None for an acknowledgement, which is never answered."""
        request = decode(m)
        if isinstance(request, Done):
            return request
        try:
            return await self._dispatch(c, request)
        except Exception as e:  # a command the core refused outright
            return failed(Fault.REFUSED, str(e).strip("'\""))

    async def _dispatch(self, c: Client, request: commands.Request[Any]) -> Done | None:
        """One place that carries out a decoded request: the core's commands through the
        table, the connection's own here."""
        core = self.core
        if isinstance(request, commands.Named) and request.name not in c.seen:
            return failed(Fault.UNKNOWN_NAME, f"no process named {request.name!r}")
        # Everything that acts: the core's commands, and reload (it stops, starts and
        # restarts processes).
        if c.read_only and isinstance(request, (commands.CoreCommand, commands.Reload)):
            return failed(Fault.READ_ONLY, f"{request.op}: {Fault.READ_ONLY.words}")
        if isinstance(request, commands.CoreCommand):
            if request.journaled:
                core.journal_command(getattr(request, "name", None), op=request.op,
                                     **request.journal_fields(), **who(c))
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
            self.changed()  # everyone's state now counts it
            return Done()
        if isinstance(request, commands.Watch):
            return self._watch(c, request)
        if isinstance(request, commands.Journal):
            return await self._journal(c, request)
        if isinstance(request, commands.Tail):
            return await self._tail(c, request)
        if isinstance(request, commands.Ack):
            if c.window is not None:
                c.window.acked(request.k)
            return None
        if isinstance(request, commands.Ping):
            return Done()
        if isinstance(request, commands.Via):
            c.ssh = c.ssh or request.ssh  # the first word holds: proctui stdio's
            c.read_only = c.read_only or request.read_only
            return Done()
        if isinstance(request, commands.Reload):
            core.journal_command(None, op=request.op, **who(c))
            return await self._reload()
        return failed(Fault.UNKNOWN_COMMAND, f"unknown command {request.op!r}")

    async def _reload(self) -> Done:
        """Read the config again, here (a file of at most 4 MB, off the core's loop);
        a config that no longer parses changes nothing."""
        if self.reload_from is None:
            return failed(Fault.REFUSED, "reload: this supervisor was started from "
                                         "commands, not from a file: nothing to read again")
        try:
            specs = await asyncio.to_thread(self.reload_from)
        except ConfigError as e:
            return failed(Fault.BAD_VALUE, str(e))
        carried = await asyncio.wrap_future(self.core.reload(specs))
        reply = await asyncio.wrap_future(carried)
        return Done(reply.ok, reply.text, None if reply.ok else Fault.REFUSED)

    def _alive(self, name: str) -> bool:
        return any(v.name == name and v.alive for v in self.core.views())

    async def _journal(self, c: Client, request: commands.Journal) -> JournalPage:
        # The first page takes the journal as it is; the following pages read that same
        # list (copying the whole journal for every page would make paging quadratic).
        if request.start == 0 or c.journal is None:
            c.journal = self.core.journal()
        page = await pages.journal_page(c.journal, request.start)
        if not page.more:
            c.journal = None
        return page

    async def _tail(self, c: Client, request: commands.Tail) -> Done:
        if request.name not in c.seen:
            return failed(Fault.UNKNOWN_NAME, f"no process named {request.name!r}")
        return await pages.tail_page(self.core.buffer(request.name), request)

    def _watch(self, c: Client, request: commands.Watch) -> Done:
        """Stream output: of every process ("all") or those named, starting ``replay``
        lines back (default: the whole scrollback), or at line ``start`` (by name)."""
        output = request.output
        names = list(c.seen) if output == "all" else [n for n in output or () if n in c.seen]
        for name in names:
            mark = self.core.buffer(name).mark()
            start = mark.first
            if request.replay is not None:
                start = max(start, mark.total - request.replay)
            if request.start is not None and name in request.start:
                # (beyond the end, it would be sent an empty message on every change)
                start = min(max(0, request.start[name]), mark.total)
            c.sent[name], c.partial[name], c.cleared[name] = start, "\0", -1
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
    pid (on this machine: the proctui stdio helper when it came over SSH) and the SSH
    client's address."""
    out: dict[str, object] = {"uid": c.uid, "pid": c.pid}
    if c.ssh is not None:
        out["ssh"] = c.ssh
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
