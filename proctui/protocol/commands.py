"""The command table: every control command once, with its request, its reply and the
faults it can answer with.

A command is a frozen dataclass. Its class docstring is the documentation of the wire
message and of the CLI command that sends it; ``op`` is its name on the wire; its fields
are the message's keys. ``decode`` turns a client's JSON object into a request (never
raising: anything malformed is a ``Failed`` with a fault code); ``encode_reply`` and
``Request.answer`` carry replies across. The server dispatches the commands that act on
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
                start)
journal         Journal(start)           JournalPage      BAD_VALUE
tail            Tail(name, lines, start) TailPage         UNKNOWN_NAME, BAD_VALUE
ping            Ping()                   Done             -
=============== ======================== ================ ===============================
"""

from __future__ import annotations

import math
import re
import types
from collections.abc import Mapping
from concurrent.futures import Future
from dataclasses import MISSING, dataclass, field, fields
from enum import Enum
from typing import (
    Any,
    ClassVar,
    Generic,
    Literal,
    TypeVar,
    Union,
    get_args,
    get_origin,
    get_type_hints,
)

from proctui.config.spec import MAX_SECONDS
from proctui.core.api import Core
from proctui.core.outcome import Who
from proctui.core.view import Reply

MAX_NAME = 256  # characters in a process name or a client's kind
MAX_NAMES = 4096  # names in one watch request
MAX_NUMBER = 1 << 53  # integers beyond a double's exact range are not line numbers


class Fault(Enum):
    """Why a command was not done, as a code a script can test (supervisord's Faults).
    The value is the code on the wire; ``words`` says it to a person."""

    UNKNOWN_COMMAND = 1
    BAD_REQUEST = 2
    BAD_VALUE = 3
    UNKNOWN_NAME = 10
    NOT_RUNNING = 11
    REFUSED = 20
    GONE = 30
    NOT_ANSWERING = 31

    @property
    def words(self) -> str:
        return _WORDS[self]


_WORDS = {
    Fault.UNKNOWN_COMMAND: "no such command",
    Fault.BAD_REQUEST: "the request is malformed",
    Fault.BAD_VALUE: "a value is out of range",
    Fault.UNKNOWN_NAME: "no process by that name",
    Fault.NOT_RUNNING: "the process is not running",
    Fault.REFUSED: "the supervisor refused",
    Fault.GONE: "the supervisor has gone away",
    Fault.NOT_ANSWERING: "the supervisor is not answering",
}


# -- replies ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Done:
    """Every reply: was it done, the words for the operator, and the fault when not."""

    ok: bool = True
    text: str = ""
    fault: Fault | None = None

    def wire(self) -> dict[str, Any]:
        return {}

    @property
    def reply(self) -> Reply:
        return Reply(self.ok, self.text)


def failed(fault: Fault, text: str = "") -> Done:
    return Done(False, text or fault.words, fault)


@dataclass(frozen=True)
class JournalPage(Done):
    """At most one page of the journal, from entry ``start``; ``next`` asks for the rest."""

    entries: list[dict[str, object]] = field(default_factory=list)
    next: int = 0
    more: bool = False

    def wire(self) -> dict[str, Any]:
        return {"entries": self.entries, "next": self.next, "more": self.more}


@dataclass(frozen=True)
class TailPage(Done):
    """At most one page of a process's scrollback: lines numbered from ``first``, their
    streams as runs ([stream, count], ...); ``next`` is where the following page begins
    (and, once ``more`` is false, where new output will begin)."""

    first: int = 0
    lines: list[str] = field(default_factory=list)
    runs: list[list[int]] = field(default_factory=list)
    next: int = 0
    more: bool = False
    total: int = 0  # lines the process had written when this page was read

    def wire(self) -> dict[str, Any]:
        return {"first": self.first, "lines": self.lines, "runs": self.runs,
                "next": self.next, "more": self.more, "total": self.total}

    @property
    def streams(self) -> list[int]:
        return [s for s, count in self.runs for _ in range(count)]


def encode_reply(answer: Done, number: object = None) -> dict[str, Any]:
    out: dict[str, Any] = {"t": "reply", "ok": answer.ok, "text": answer.text,
                           "fault": None if answer.fault is None else answer.fault.name,
                           **answer.wire()}
    if number is not None:
        out["id"] = number
    return out


def _fault(d: Mapping[str, Any]) -> Fault | None:
    name = d.get("fault")
    if not isinstance(name, str):
        return None if d.get("ok") else Fault.REFUSED
    return Fault.__members__.get(name, Fault.REFUSED)


def _done(d: Mapping[str, Any]) -> Done:
    return Done(bool(d.get("ok")), str(d.get("text") or ""), _fault(d))


def _int(value: object, default: int = 0) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


# -- requests -----------------------------------------------------------------------------

A = TypeVar("A", bound=Done)


@dataclass(frozen=True)
class Request(Generic[A]):
    op: ClassVar[str]

    def check(self) -> Done | None:
        """A fault for values of the right type but out of range."""
        return None

    def answer(self, d: Mapping[str, Any]) -> A:
        """This command's reply from its wire form."""
        raise NotImplementedError

    @classmethod
    def help(cls) -> str:
        """The first paragraph of the docstring: the CLI command's help."""
        return " ".join((cls.__doc__ or "").split("\n\n")[0].split())

    def wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {"op": self.op}
        for f in fields(self):
            out[f.name] = getattr(self, f.name)
        return out


@dataclass(frozen=True)
class CoreCommand(Request[Done]):
    """A command the core carries out; ``method`` is its name in the ``Core`` API."""

    method: ClassVar[str]

    def apply(self, core: Core) -> Future[Reply]:
        raise NotImplementedError

    def answer(self, d: Mapping[str, Any]) -> Done:
        return _done(d)


@dataclass(frozen=True)
class Named(CoreCommand):
    """A command on one process (``proctui OP NAME...``)."""

    name: str
    # The core refuses these for a process that has no live group: NOT_RUNNING then.
    needs_running: ClassVar[bool] = False


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

    Wire: {"op": "stop_all", "ordered": true}: in dependency order unless false."""

    op = "stop_all"
    method = "stop_all"
    ordered: bool = True

    def apply(self, core: Core) -> Future[Reply]:
        return core.stop_all(self.ordered)


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
    interactive: bool = False

    def apply(self, core: Core) -> Future[Reply]:
        return core.set_interactive(self.interactive)


@dataclass(frozen=True)
class WantUsage(Request[Done]):
    """Whether this client shows CPU and memory (the core samples only while one does).
    Per connection: the server counts it and takes it back when the client leaves."""

    op = "usage"
    method: ClassVar[str] = "want_usage"
    wanted: bool = False

    def answer(self, d: Mapping[str, Any]) -> Done:
        return _done(d)


@dataclass(frozen=True)
class Hello(Request[Done]):
    """What the client is ("console", "down", "logs"): consoles are counted in the state,
    and a client that says what it is has subscribed (it is never closed for idleness)."""

    op = "hello"
    kind: str = ""

    def answer(self, d: Mapping[str, Any]) -> Done:
        return _done(d)


@dataclass(frozen=True)
class Watch(Request[Done]):
    """Stream output (``logs -f``, consoles): of every process ("all") or those named,
    ``replay`` lines back (None: the whole scrollback), or from line ``start[name]``."""

    op = "watch"
    output: Literal["all"] | list[str] | None = None
    replay: int | None = None
    start: dict[str, int] | None = None

    def check(self) -> Done | None:
        if self.replay is not None and self.replay < 0:
            return failed(Fault.BAD_VALUE, f"watch: replay {self.replay} is negative")
        return None

    def answer(self, d: Mapping[str, Any]) -> Done:
        return _done(d)


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
        return JournalPage(**_done(d).__dict__,
                           entries=[e for e in entries if isinstance(e, dict)]
                           if isinstance(entries, list) else [],
                           next=_int(d.get("next")), more=d.get("more") is True)


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
        return TailPage(**_done(d).__dict__, first=_int(d.get("first")),
                        lines=[str(x) for x in lines] if isinstance(lines, list) else [],
                        runs=[r for r in runs if isinstance(r, list) and len(r) == 2
                              and all(isinstance(x, int) for x in r)]
                        if isinstance(runs, list) else [],
                        next=_int(d.get("next")), more=d.get("more") is True,
                        total=_int(d.get("total")))


@dataclass(frozen=True)
class Ping(Request[Done]):
    """Is the supervisor answering? (``down``, ``logs -f`` and consoles ask while idle.)"""

    op = "ping"

    def answer(self, d: Mapping[str, Any]) -> Done:
        return _done(d)


CORE_COMMANDS: tuple[type[CoreCommand], ...] = (
    Stop, Start, Restart, Kill, Abandon, Wait, Adopt, Clear, Extend, StopAll, KillAll,
    AbandonAll, SetInteractive)
_ALL: tuple[type[Request[Any]], ...] = (
    *CORE_COMMANDS, WantUsage, Hello, Watch, Journal, Tail, Ping)
COMMANDS: dict[str, type[Request[Any]]] = {cls.op: cls for cls in _ALL}
# The CLI's process commands (proctui OP NAME...).
BY_NAME: dict[str, type[Named]] = {
    cls.op: cls for cls in CORE_COMMANDS if issubclass(cls, Named)}


# -- decoding a client's request ----------------------------------------------------------

_ASCII_WORD = re.compile(r"[a-z_]{1,32}")


class _Bad(Exception):
    pass


def decode(message: Mapping[str, Any]) -> Request[Any] | Done:
    """The request a client's message holds, or the fault that says why it holds none.
    Never raises: every byte from a client is hostile."""
    op = message.get("op")
    if not isinstance(op, str) or not _ASCII_WORD.fullmatch(op):
        return failed(Fault.UNKNOWN_COMMAND, f"unknown command {str(op)[:40]!r}")
    cls = COMMANDS.get(op)
    if cls is None:
        return failed(Fault.UNKNOWN_COMMAND, f"unknown command {op!r}")
    hints = _hints(cls)
    values: dict[str, Any] = {}
    for f in fields(cls):
        if f.name not in message:
            if f.default is MISSING and f.default_factory is MISSING:
                return failed(Fault.BAD_REQUEST, f"{op}: {f.name} is missing")
            continue
        try:
            values[f.name] = _value(message[f.name], hints[f.name])
        except _Bad:
            return failed(Fault.BAD_REQUEST if not _is_number(message[f.name]) else
                          Fault.BAD_VALUE,
                          f"{op}: {f.name} is not {_describe(hints[f.name])}")
    request = cls(**values)
    return request.check() or request


_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    hints = _HINTS.get(cls)
    if hints is None:
        hints = _HINTS[cls] = get_type_hints(cls)
    return hints


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _value(value: object, hint: Any) -> object:
    """``value`` if it is of type ``hint`` (and within bounds), else _Bad."""
    origin = get_origin(hint)
    if origin in (Union, types.UnionType):
        for option in get_args(hint):
            try:
                return _value(value, option)
            except _Bad:
                continue
        raise _Bad
    if origin is Literal:
        if value in get_args(hint) and type(value) is str:
            return value
        raise _Bad
    if hint is type(None):
        if value is None:
            return None
        raise _Bad
    if hint is bool:
        if isinstance(value, bool):
            return value
        raise _Bad
    if hint is int:
        if isinstance(value, int) and not isinstance(value, bool) and \
                abs(value) <= MAX_NUMBER:
            return value
        raise _Bad
    if hint is float:
        if _is_number(value) and math.isfinite(float(value)):  # type: ignore[arg-type]
            return float(value)  # type: ignore[arg-type]
        raise _Bad
    if hint is str:
        if isinstance(value, str) and len(value) <= MAX_NAME:
            return value
        raise _Bad
    if origin is list:
        (item,) = get_args(hint)
        if isinstance(value, list) and len(value) <= MAX_NAMES:
            return [_value(v, item) for v in value]
        raise _Bad
    if origin is dict:
        key, item = get_args(hint)
        if isinstance(value, dict) and len(value) <= MAX_NAMES:
            return {_value(k, key): _value(v, item) for k, v in value.items()}
        raise _Bad
    raise _Bad


def _describe(hint: Any) -> str:
    origin = get_origin(hint)
    if origin in (Union, types.UnionType):
        return " or ".join(_describe(h) for h in get_args(hint))
    if origin is Literal:
        return " or ".join(repr(a) for a in get_args(hint))
    if origin is list:
        return "a list of names"
    if origin is dict:
        return "a map of names to line numbers"
    return {bool: "true or false", int: "a whole number", float: "a number of seconds",
            str: f"a string of at most {MAX_NAME} characters",
            type(None): "null"}.get(hint, "valid")
