"""The command table: every control command once, with its request, its reply and the
faults it can answer with.

A command is a frozen dataclass. Its docstring opens with the CLI command's help and
goes on with the wire message; ``op`` is its name on the wire; its fields are the
message's keys. ``proctui.protocol.decode`` turns a client's JSON object into a request
(never raising: anything malformed is a ``Done`` with a fault code); ``encode_reply``
(``proctui.protocol.replies``) and ``Request.answer`` carry replies across. The server
dispatches the commands that act on
processes through ``CoreCommand.apply``, which names the ``Core`` method once; the remote
client builds the same requests (``RemoteCore.stop`` is ``Stop(name)``), and
``proctui.protocol.conformance`` makes the type checker prove that the supervisor, the
remote core and the test fake all implement ``Core``.

The table (op: request -> reply; faults besides UNKNOWN_COMMAND and BAD_REQUEST):

=============== ======================== ================ ===============================
op              request                  reply            faults
=============== ======================== ================ ===============================
stop            Stop(name)               Done             UNKNOWN_NAME, NOT_RUNNING, REFUSED
start           Start(name)              Done             UNKNOWN_NAME, REFUSED
restart         Restart(name)            Done             UNKNOWN_NAME, REFUSED
kill            Kill(name)               Done             UNKNOWN_NAME, NOT_RUNNING, REFUSED
abandon         Abandon(name)            Done             UNKNOWN_NAME, NOT_RUNNING, REFUSED
wait            Wait(name)               Done             UNKNOWN_NAME, NOT_RUNNING, REFUSED
adopt           Adopt(name)              Done             UNKNOWN_NAME, REFUSED
clear           Clear(name)              Done             UNKNOWN_NAME, REFUSED
extend          Extend(name, by)         Done             UNKNOWN_NAME, NOT_RUNNING, BAD_VALUE,
                                                          REFUSED
stop_all        StopAll(ordered)         Done             REFUSED
kill_all        KillAll()                Done             REFUSED
abandon_all     AbandonAll()             Done             REFUSED
set_interactive SetInteractive(on)       Done             REFUSED
usage           WantUsage(wanted)        Done             -
hello           Hello(kind)              Done             -
watch           Watch(output, replay,    Done             UNKNOWN_NAME
                start, acks)
ack             Ack(k)                   (none)           -
journal         Journal(start)           JournalPage      BAD_VALUE
tail            Tail(name, lines, start) TailPage         UNKNOWN_NAME, BAD_VALUE
ping            Ping()                   Done             -
via             Via(ssh, read_only)      Done             BAD_VALUE
reload          Reload()                 Done             BAD_VALUE, REFUSED
=============== ======================== ================ ===============================

A connection that said ``read_only`` is answered READ_ONLY for every core command.
"""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from proctui.config.spec import MAX_SECONDS
from proctui.core.api import Core
from proctui.core.life.outcome import Who
from proctui.core.life.stages import Why
from proctui.core.view import Reply
from proctui.protocol.replies import (
    Done,
    Fault,
    JournalPage,
    TailPage,
    done_from_wire,
    failed,
    int_from_wire,
)

__all__ = ["BY_NAME", "COMMANDS", "CORE_COMMANDS", "A", "Ack", "CoreCommand", "Done", "Fault",
           "JournalPage", "Named", "Ping", "Request", "Simple", "TailPage", "Via", "failed"]


from proctui.protocol.link import Ack, Ping, Via  # the link's own requests
from proctui.protocol.request import A, CoreCommand, Named, Request, Simple


@dataclass(frozen=True)
class Stop(Named):
    """Stop NAME...: the stop signal, then the countdown.

    Wire: {"op": "stop", "name": NAME}; NOT_RUNNING when it has no live group."""

    op = "stop"
    method = "stop"
    needs_running = True

    def apply(self, core: Core) -> Future[Reply]:
        return core.stop(self.name)


@dataclass(frozen=True)
class Start(Named):
    """Start NAME... again, once it has ended.

    Wire: {"op": "start", "name": NAME}; the core's ``start_process``."""

    op = "start"
    method = "start_process"

    def apply(self, core: Core) -> Future[Reply]:
        return core.start_process(self.name)


@dataclass(frozen=True)
class Restart(Named):
    """Restart NAME...

    Wire: {"op": "restart", "name": NAME}: stopped as ``stop`` does, then started."""

    op = "restart"
    method = "restart"

    def apply(self, core: Core) -> Future[Reply]:
        return core.restart(self.name)


@dataclass(frozen=True)
class Kill(Named):
    """Kill NAME... now: SIGKILL to its whole group (at a decision: kill).

    Wire: {"op": "kill", "name": NAME}; NOT_RUNNING when it has no live group."""

    op = "kill"
    method = "kill"
    needs_running = True

    def apply(self, core: Core) -> Future[Reply]:
        return core.kill(self.name)


@dataclass(frozen=True)
class Abandon(Named):
    """Abandon NAME...: leave it running, never signal it again.

    Wire: {"op": "abandon", "name": NAME}; NOT_RUNNING when it has no live group."""

    op = "abandon"
    method = "abandon"
    needs_running = True

    def apply(self, core: Core) -> Future[Reply]:
        return core.abandon(self.name)


@dataclass(frozen=True)
class Wait(Named):
    """Wait for NAME with no deadline (the console's w at a decision).

    Wire: {"op": "wait", "name": NAME}; the core's ``wait_without_deadline``."""

    op = "wait"
    method = "wait_without_deadline"
    needs_running = True

    def apply(self, core: Core) -> Future[Reply]:
        return core.wait_without_deadline(self.name)


@dataclass(frozen=True)
class Adopt(Named):
    """Adopt NAME, a leftover of an earlier run, into this one (the console).

    Wire: {"op": "adopt", "name": NAME}."""

    op = "adopt"
    method = "adopt"

    def apply(self, core: Core) -> Future[Reply]:
        return core.adopt(self.name)


@dataclass(frozen=True)
class Clear(Named):
    """Clear NAME's scrollback (the console).

    Wire: {"op": "clear", "name": NAME}; the core's ``clear_output``."""

    op = "clear"
    method = "clear_output"
    journaled = False

    def apply(self, core: Core) -> Future[Reply]:
        return core.clear_output(self.name)


@dataclass(frozen=True)
class Extend(Named):
    """Move NAME's stop deadline SECONDS later (also: answer a decision with extend).

    Wire: {"op": "extend", "name": NAME, "by": SECONDS or null (its extend_step)};
    BAD_VALUE unless 0 < by <= MAX_SECONDS."""

    op = "extend"
    method = "extend"
    needs_running = True
    by: float | None = None

    def check(self) -> Done | None:
        if self.by is not None and not 0 < self.by <= MAX_SECONDS:
            return failed(Fault.BAD_VALUE, f"extend: {self.by!r} is not a number of seconds "
                                           f"(more than 0, at most {MAX_SECONDS:g})")
        return None

    def apply(self, core: Core) -> Future[Reply]:
        return core.extend(self.name, self.by, Who.OPERATOR)


@dataclass(frozen=True)
class StopAll(CoreCommand):
    """Stop everything (``down``; the console's S).

    Wire: {"op": "stop_all", "ordered": true, "why": "proctui down"}: in dependency
    order unless false; ``why`` is journaled (one of the shutdown reasons, else
    "operator")."""

    op = "stop_all"
    method = "stop_all"
    ordered: bool = True
    why: str = Why.OPERATOR.value

    def apply(self, core: Core) -> Future[Reply]:
        reasons = {w.value: w for w in Why}
        return core.stop_all(self.ordered, why=reasons.get(self.why, Why.OPERATOR))


@dataclass(frozen=True)
class KillAll(CoreCommand):
    """Kill everything still stopping (``down``, ctrl+c once).

    Wire: {"op": "kill_all"}."""

    op = "kill_all"
    method = "kill_all"

    def apply(self, core: Core) -> Future[Reply]:
        return core.kill_all()


@dataclass(frozen=True)
class AbandonAll(CoreCommand):
    """Abandon everything still stopping (``down``, ctrl+c twice).

    Wire: {"op": "abandon_all"}."""

    op = "abandon_all"
    method = "abandon_all"

    def apply(self, core: Core) -> Future[Reply]:
        return core.abandon_all()


@dataclass(frozen=True)
class SetInteractive(CoreCommand):
    """Say whether an operator is there to answer ``ask`` (``down`` says no: ask kills).

    Wire: {"op": "set_interactive", "interactive": BOOL}."""

    op = "set_interactive"
    method = "set_interactive"
    journaled = False
    interactive: bool = False

    def apply(self, core: Core) -> Future[Reply]:
        return core.set_interactive(self.interactive)


@dataclass(frozen=True)
class WantUsage(Simple):
    """Whether this client shows CPU and memory (the core samples only while one does).
    Per connection: the server counts it and takes it back when the client leaves."""

    op = "usage"
    method: ClassVar[str] = "want_usage"
    wanted: bool = False


@dataclass(frozen=True)
class Hello(Simple):
    """What the client is ("console", "down", "logs"): consoles are counted in the state,
    and a client that says what it is has subscribed (it is never closed for idleness)."""

    op = "hello"
    kind: str = ""


@dataclass(frozen=True)
class Watch(Simple):
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
class Journal(Request[JournalPage]):
    """One page of the journal from entry ``start`` (the client asks for the next)."""

    op = "journal"
    start: int = 0

    def check(self) -> Done | None:
        if self.start < 0:
            return failed(Fault.BAD_VALUE, f"journal: start {self.start} is negative")
        return None

    def answer(self, d: Mapping[str, Any]) -> JournalPage:
        entries = d.get("entries")
        return JournalPage(**done_from_wire(d).__dict__,
                           entries=[e for e in entries if isinstance(e, dict)]
                           if isinstance(entries, list) else [],
                           next=int_from_wire(d.get("next")), more=d.get("more") is True)


@dataclass(frozen=True)
class Tail(Request[TailPage]):
    """``logs NAME [-n LINES]``: one page of NAME's scrollback, from line ``start`` or,
    without it, from ``lines`` lines before the end (None: the oldest line kept)."""

    op = "tail"
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


@dataclass(frozen=True)
class Reload(Simple):
    """Read the config file again: start what was added, stop what was removed, restart
    what changed, leave the rest running.

    Wire: {"op": "reload"}; the reply's text has one line per change. BAD_VALUE (with the
    one-line error) when the file no longer parses, and nothing changes; REFUSED when
    the supervisor was started from commands, or everything is stopping."""

    op = "reload"


CORE_COMMANDS: tuple[type[CoreCommand], ...] = (
    Stop, Start, Restart, Kill, Abandon, Wait, Adopt, Clear, Extend, StopAll, KillAll,
    AbandonAll, SetInteractive)
_ALL: tuple[type[Request[Any]], ...] = (
    *CORE_COMMANDS, WantUsage, Hello, Watch, Journal, Tail, Ping, Via, Reload, Ack)
COMMANDS: dict[str, type[Request[Any]]] = {cls.op: cls for cls in _ALL}
# The CLI's process commands (proctui OP NAME...).
BY_NAME: dict[str, type[Named]] = {
    cls.op: cls for cls in CORE_COMMANDS if issubclass(cls, Named)}
