"""The link's own requests, which the control socket's server answers itself, asking
nothing of the core: who is asking and on what terms, what it wants pushed, how far it
has read the pushes, is the supervisor answering, and a page of a process's scrollback.
The core's commands are the command table (``proctui.commands``); ``decode`` reads both."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal

from proctui.commands.base import Request
from proctui.core.reply import Done, Fault, done_from_wire, failed
from proctui.protocol.replies import TailPage, int_from_wire
from proctui.records import dataclass


@dataclass(frozen=True)
class Ping(Request[Done]):
    """Is the supervisor answering? (``down``, ``logs -f`` and consoles ask while idle.)"""

    op = "ping"


# SSH_CONNECTION's first two fields: the client's address (IPv4, IPv6 with a zone) and port.
# Compiled (and cached by re) at the first via with an address, not at every start.
_SSH_CLIENT = r"[0-9A-Za-z.:%_-]{1,64} [0-9]{1,5}"


@dataclass(frozen=True)
class Via(Request[Done]):
    """Who is asking, and on what terms: ``proctui stdio`` sends it first with the SSH
    client's address ("ADDR PORT", from SSH_CONNECTION), for the journal; a client that
    may only look (``attach --read-only``) sends ``read_only``. Both hold for the rest of
    the connection: a later ``via`` can neither change the address nor take read-only
    back."""

    op = "via"
    ssh: str | None = None
    read_only: bool = False

    def check(self) -> Done | None:
        if self.ssh is not None and not re.fullmatch(_SSH_CLIENT, self.ssh):
            return failed(Fault.BAD_VALUE, "via: ssh is not an address and a port")
        return None


@dataclass(frozen=True)
class Ack(Request[Done]):
    """A client that watches with ``acks`` has read every push up to the one that ended
    with ``{"t": "push", "k": K}``.

    Wire: {"op": "ack", "k": K}; a well-formed one is never answered (one comes with
    every push: over a slow link a reply to each would take its share of the bytes), a
    malformed one gets its fault."""

    op = "ack"
    k: int

    def check(self) -> Done | None:
        if self.k < 1:
            return failed(Fault.BAD_VALUE, f"ack: k {self.k} is not a push's number")
        return None


@dataclass(frozen=True)
class Greet(Request[Done]):
    """What the client is ("console", "down", "logs"): consoles are counted in the state,
    and a client that says what it is has subscribed (it is never closed for idleness)."""

    op = "hello"
    kind: str = ""


@dataclass(frozen=True)
class Watch(Request[Done]):
    """Stream output (``logs -f``, consoles): of every process ("all") or those named,
    ``replay`` lines back (None: the whole scrollback), or from line ``start[name]``."""

    op = "watch"
    output: Literal["all"] | list[str] | None = None
    replay: int | None = None
    start: dict[str, int] | None = None
    acks: bool = False  # it acknowledges each push ("ack"), which bounds what is on the way

    def check(self) -> Done | None:
        if self.replay is not None and self.replay < 0:
            return failed(Fault.BAD_VALUE, f"watch: replay {self.replay} is negative")
        return None


@dataclass(frozen=True)
class Tail(Request[TailPage]):
    """``logs NAME [-n LINES]``: one page of NAME's scrollback, from line ``start`` or,
    without it, from ``lines`` lines before the end (None: the oldest line kept)."""

    op = "tail"
    tool = "logs"
    tool_args = {"name": "the process (status lists them)",
                 "lines": "the last LINES lines (without start); default 100",
                 "start": "the line number to read from (a page's next, to read on)"}
    tool_defaults = {"lines": 100}
    tool_required = ("name",)
    name: str = ""
    lines: int | None = None
    start: int | None = None

    def check(self) -> Done | None:
        if (self.lines is not None and self.lines < 0) or \
                (self.start is not None and self.start < 0):
            return failed(Fault.BAD_VALUE, "tail: lines and start are counts of lines")
        return None

    def answer(self, d: Mapping[str, Any]) -> TailPage:
        lines, runs = d.get("lines"), d.get("runs")
        return TailPage(**done_from_wire(d).__dict__, first=int_from_wire(d.get("first")),
                        lines=[str(x) for x in lines] if isinstance(lines, list) else [],
                        runs=[r for r in runs if isinstance(r, list) and len(r) == 2
                              and all(isinstance(x, int) for x in r)]
                        if isinstance(runs, list) else [],
                        next=int_from_wire(d.get("next")), more=d.get("more") is True,
                        total=int_from_wire(d.get("total")))


LINK: dict[str, type[Request[Any]]] = {cls.op: cls for cls in (
    Ping, Via, Ack, Greet, Watch, Tail)}
