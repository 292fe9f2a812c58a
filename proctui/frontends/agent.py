"""The agent's door (``proctui mcp``, issue 43), without the MCP SDK: which tools an agent
is offered, each one's JSON schema, and what calling it does and answers.

The tools are made from the command table: every request with a ``tool`` name (start,
stop, restart, extend, reload, events, the link's logs page, request_decision, and kill,
abandon and down, which only an operator decides), their schemas from their fields by
the decoder's own rules (``protocol.decode.json_schema``: what the schema allows is what
the decoder takes), their descriptions from their docstrings; and the looks here, which
read the supervisor's pushed snapshots as ``proctui status``, ``why``, ``is-ready`` and
``timeline`` do (status, why, is_ready, decision, timeline).

Who may do what (``Policy``): looking is always allowed; what acts (start, stop,
restart, extend, reload, request_decision) is allowed on this machine and, over
``--host``, only with ``--allow act``; kill, abandon and down are never tools unless
``--allow`` names them: an agent asks for them with request_decision, and an operator
decides. A connection that may do nothing that acts is read-only, so the supervisor
refuses it too.

Everything an agent sends is hostile: arguments are parsed by the decoder (bounded,
never raising), a tool call is an answer or an error, never a crash; every answer is
bounded (pages of logs and events by count and bytes); nothing reads a file or runs a
shell; every call goes through the control socket, whose server runs apart from the
core's deadlines."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Callable, Collection
from concurrent.futures import Future
from dataclasses import fields
from typing import Any, ClassVar

from proctui.commands import WIRE, Request
from proctui.commands.api import Core
from proctui.commands.event_log import ReadEvents
from proctui.commands.journal_read import ReadJournal
from proctui.core.life.stop import Phase
from proctui.core.output.lines import Stream
from proctui.core.output.text import clean
from proctui.core.reply import AskReply, Done, EventsPage, Fault, JournalPage
from proctui.core.snapshot import CoreSnapshot
from proctui.frontends import status as words
from proctui.protocol.decode import MAX_NUMBER, fields_of, json_schema
from proctui.protocol.link import LINK, Tail
from proctui.protocol.pushes import Hello
from proctui.protocol.replies import TailPage
from proctui.records import dataclass

MAX_REPLY = 64 << 10  # bytes of one answer's text, at most
MAX_LINES = 500  # lines of output in one logs page
MAX_EVENTS = 200  # events in one page
MAX_WAIT = 60.0  # seconds a look may wait (is_ready, decision)
MAX_ARGUMENTS = 16 << 10  # bytes of one call's arguments, as JSON
ANSWER = 15.0  # seconds a request may take to be answered (a reload's own limit is 5)
CATCH_UP = 1.0  # seconds a reply waits for the push that shows what it did
JOURNAL_PAGES = 100  # pages of the journal read for a timeline (50,000 entries)
RECENT = 200  # lines of output, and journal entries, in a resource
ALLOWABLE = ("act", "kill", "abandon", "down")


# -- who may do what ----------------------------------------------------------------------


@dataclass(frozen=True)
class Policy:
    """What the door lets an agent do: ``allowed`` holds "act" (start, stop, restart,
    extend, reload, request_decision) and the decisions an operator handed over (kill,
    abandon, down)."""

    allowed: frozenset[str] = frozenset()

    @classmethod
    def of(cls, allow: Collection[str], remote: bool, read_only: bool) -> Policy:
        """On this machine an agent may act (and ask) unless ``read_only``; over
        ``--host`` (``remote``) it may only look unless ``allow`` says "act"."""
        if read_only:
            return cls(frozenset())
        return cls(frozenset(allow) | (frozenset() if remote else {"act"}))

    @property
    def read_only(self) -> bool:
        """Nothing that acts is allowed: the connection says so, the supervisor refuses."""
        return not self.allowed

    def offers(self, tool: type[Request[Any]] | type[Look]) -> bool:
        if issubclass(tool, Look) or not tool.acts:
            return True
        if tool.decides:
            return tool.tool in self.allowed
        return "act" in self.allowed

    def words(self) -> str:
        if self.read_only:
            return "read-only: it may look, never act"
        handed = sorted(self.allowed - {"act"})
        return ("it may act and ask" if "act" in self.allowed else "it may only look") + \
            (f"; allowed: {', '.join(handed)}" if handed else
             "; kill, abandon and down are an operator's (ask with request_decision)")


def parse_allow(text: str) -> frozenset[str] | str:
    """``--allow kill,abandon``: the names, or why the words are wrong."""
    names = frozenset(w.strip() for w in text.split(",") if w.strip())
    wrong = sorted(names - set(ALLOWABLE))
    if wrong:
        return f"--allow: {', '.join(map(repr, wrong))} is not one of {', '.join(ALLOWABLE)}"
    return names


# -- what a tool answers ------------------------------------------------------------------


@dataclass(frozen=True)
class Answer:
    """A tool's answer: its text (JSON of ``data`` when there is data), the data itself
    for clients that read structure, and whether it is an error."""

    text: str
    data: dict[str, Any] | None = None
    error: bool = False


def error(text: str) -> Answer:
    return Answer(clean(text, colour=False)[:MAX_REPLY], None, True)


def answer(data: dict[str, Any], is_error: bool = False) -> Answer:
    """``data``, and its JSON as the text, within MAX_REPLY bytes (the callers bound
    what they put in it; this is the last guard)."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    if len(text.encode()) > MAX_REPLY:
        return error("the answer was too long to give (a bug: every page is bounded)")
    return Answer(text, data, is_error)


# -- lines that are no message ---------------------------------------------------------

PARSE_ERROR = -32700  # JSON-RPC 2.0's codes
INVALID_REQUEST = -32600
MAX_UNREADABLE = 64 << 10  # characters of a refused line searched for its id, at most
MAX_ID = 256  # characters of a string id given back


@dataclass(frozen=True)
class Unreadable:
    """The JSON-RPC error that answers a line the SDK could not take as a message: the
    line's id where one can be found (None: JSON-RPC's null), its code and words."""

    id: int | str | None
    code: int
    message: str


def unreadable(text: str | None, given: object = None) -> Unreadable | None:
    """The answer to a line the SDK's parser refused, or None where JSON-RPC answers
    nothing (a notification, a response). ``text``: the line, where the parser could
    not read it as JSON; else ``given``, the value it read and refused as a message.
    The SDK drops such a line without a word, and its sender would wait for ever: text
    that is not JSON, a string holding a lone surrogate, arrays nested a few hundred
    deep, an object that is no message. Never raises."""
    code, why = INVALID_REQUEST, "Invalid Request: not a JSON-RPC 2.0 message"
    if text is not None:
        given, read, searched = None, False, len(text) <= MAX_UNREADABLE
        if searched:
            with contextlib.suppress(ValueError, RecursionError):
                given = json.loads(text)  # Python's parser takes what the SDK's refused
                read = True
        code = PARSE_ERROR
        if read:
            why = "Parse error: the message is JSON this server cannot read (a lone " \
                "surrogate in a string, or nesting too deep)"
        elif searched:
            why = "Parse error: the message is not JSON"
        else:
            why = f"Parse error: the message is over {MAX_UNREADABLE} characters and not " \
                "JSON this server can read"
    if isinstance(given, dict) and (
            ("method" in given and "id" not in given)  # a notification
            or ("method" not in given and ("result" in given or "error" in given))):
        return None
    return Unreadable(_id_of(given), code, why)


def _id_of(value: object) -> int | str | None:
    ident = value.get("id") if isinstance(value, dict) else None
    if isinstance(ident, bool) or not isinstance(ident, int | str):
        return None
    if isinstance(ident, str):
        return ident if len(ident) <= MAX_ID and clean(ident, colour=False) == ident \
            else None
    return ident if abs(ident) <= MAX_NUMBER else None


# -- the looks ----------------------------------------------------------------------------


class Look:
    """A tool that reads what the supervisor pushes (its snapshots), asking nothing of
    its core; its fields are its arguments, as a request's are."""

    tool: ClassVar[str] = ""
    tool_args: ClassVar[dict[str, str]] = {}
    tool_fixed: ClassVar[dict[str, object]] = {}
    tool_defaults: ClassVar[dict[str, object]] = {}
    tool_required: ClassVar[tuple[str, ...]] = ()
    acts: ClassVar[bool] = False
    decides: ClassVar[bool] = False

    def check(self) -> str | None:
        return None

    async def look(self, door: Door) -> Answer:
        raise NotImplementedError


@dataclass(frozen=True)
class Status(Look):
    """What every process is doing now: its state, pid, uptime, readiness, a stop's
    countdown or a decision waiting, how it ended; the supervisor's own state; and the
    requests for a decision asked of the operator, and what became of them (as proctui
    status --json gives them, schema 1)."""

    tool = "status"

    async def look(self, door: Door) -> Answer:
        snap = door.snapshot()
        data = words.status_of(door.hello, snap, snap.views, time.monotonic())
        link = snap.link
        if link is not None and link.down_since is not None:
            data["link"] = f"down for {time.monotonic() - link.down_since:.0f}s " \
                           f"({link.down_why}): reconnecting; this is how it was"
        return answer(_bounded(data))


@dataclass(frozen=True)
class WhyNot(Look):
    """Why NAME is not running, or not ready: waiting for a dependency, backoff after a
    failure, held, a stop's countdown, a decision waiting, or how it ended."""

    tool = "why"
    tool_args = {"name": "the process (status lists them)"}
    name: str

    async def look(self, door: Door) -> Answer:
        view = door.snapshot().view(self.name)
        if view is None:
            return error(door.unknown(self.name))
        return answer({"name": self.name, "why": words.why(view, time.monotonic())})


@dataclass(frozen=True)
class IsReady(Look):
    """Whether every process (or each of NAMES) is ready: it said so, or it runs and has
    no ready check. With WAIT, waits up to that many seconds for it (not for a process
    that has ended, which cannot become ready)."""

    tool = "is_ready"
    tool_args = {"names": "the processes (none: every one)",
                 "wait": f"seconds to wait for it, at most {MAX_WAIT:g} (0: answer now)"}
    names: list[str] | None = None
    wait: float = 0.0

    def check(self) -> str | None:
        return _wait_words(self.wait)

    async def look(self, door: Door) -> Answer:
        names = self.names or []
        for name in names:
            if door.snapshot().view(name) is None:
                return error(door.unknown(name))

        def chosen(snap: CoreSnapshot) -> list[Any]:
            return [v for v in snap.views if not names or v.name in names]

        def settled(snap: CoreSnapshot) -> bool:
            views = chosen(snap)
            return all(map(words.is_ready, views)) or any(
                v.phase is Phase.ENDED and not words.is_ready(v) for v in views)

        snap = await door.until(settled, self.wait)
        missing = words.not_ready(chosen(snap), time.monotonic())
        return answer({"ready": not missing, "not_ready": missing[:100],
                       "processes": [v.name for v in chosen(snap)][:1000]})


@dataclass(frozen=True)
class Decision(Look):
    """What became of your request for a decision ID (request_decision): waiting,
    granted, denied (and by whom), expired or moot. With WAIT, waits up to that many
    seconds for an operator's answer."""

    tool = "decision"
    tool_args = {"id": "the request's id (request_decision's reply)",
                 "wait": f"seconds to wait for an answer, at most {MAX_WAIT:g}"}
    id: int
    wait: float = 0.0

    def check(self) -> str | None:
        return _wait_words(self.wait)

    async def look(self, door: Door) -> Answer:
        def found(snap: CoreSnapshot) -> Any:
            return next((a for a in snap.asks if a.id == self.id), None)

        snap = await door.until(lambda s: (a := found(s)) is None or not a.waiting,
                                self.wait)
        ask = found(snap)
        if ask is None:
            return error(f"no request {self.id} is remembered (the supervisor keeps the "
                         "latest that ended; status lists them)")
        return answer({"ask": words.ask_json(ask, time.monotonic())})


@dataclass(frozen=True)
class Timeline(Look):
    """The run so far as a picture in text, from the supervisor's journal: one lane per
    process with its phases (started, ready, stopping, waiting for a decision, killed,
    left running), the deadlines as they moved, the signals sent, the decisions, and the
    commands and requests and who sent them."""

    tool = "timeline"
    tool_args = {"width": "columns of the picture, 40 to 200"}
    width: int = 100

    def check(self) -> str | None:
        if not 40 <= self.width <= 200:
            return "timeline: width is 40 to 200 columns"
        return None

    async def look(self, door: Door) -> Answer:
        from proctui.frontends import timeline as pictures

        builder = pictures.Builder()
        start = 0
        for _ in range(JOURNAL_PAGES):
            page = await door.send(ReadJournal(start))
            if not isinstance(page, JournalPage) or not page.ok:
                return error(f"timeline: {page.text or 'the journal could not be read'}")
            for entry in page.entries:
                builder.add(entry)
            if not page.more or page.next <= start:
                break
            start = page.next
        if builder.start > builder.end:
            return error("timeline: the journal has no entries yet")
        text = "\n".join(pictures.text(builder.picture(time.time()), self.width))
        if len(text.encode()) > MAX_REPLY:
            text = text.encode()[:MAX_REPLY - 100].decode("utf-8", "ignore") + \
                "\n(cut: the picture was longer than an answer may be)"
        return Answer(text)


LOOKS: tuple[type[Look], ...] = (Status, WhyNot, IsReady, Decision, Timeline)


def _wait_words(wait: float) -> str | None:
    if not 0 <= wait <= MAX_WAIT:
        return f"wait is 0 to {MAX_WAIT:g} seconds"
    return None


def _bounded(data: dict[str, Any]) -> dict[str, Any]:
    """A status of more processes than an answer holds: the first ones, counted."""
    processes = data["processes"]
    while len(json.dumps(data).encode()) > MAX_REPLY - 200 and processes:
        keep = max(0, len(processes) * 3 // 4)
        data["processes_not_shown"] = data.get("processes_not_shown", 0) + \
            len(processes) - keep
        processes = data["processes"] = processes[:keep]
    return data


# -- the tools ----------------------------------------------------------------------------


Tool = type[Request[Any]] | type[Look]


def every_tool() -> dict[str, Tool]:
    """Every tool there is, by name: the command table's (and the link's logs page) that
    have a tool name, and the looks."""
    found: dict[str, Tool] = {}
    for cls in (*WIRE.values(), *LINK.values()):
        if cls.tool is not None:
            found[cls.tool] = cls
    for look in LOOKS:
        found[look.tool] = look
    return found


def description(tool: Tool) -> str:
    """What an agent is told of a tool: its docstring, whole, in one paragraph each."""
    doc = tool.__doc__ or ""
    return "\n\n".join(" ".join(part.split()) for part in doc.split("\n\n") if part.strip())


def schema(tool: Tool) -> dict[str, Any]:
    made = json_schema(tool, tool.tool_args, tool.tool_fixed)
    for name, value in tool.tool_defaults.items():
        made["properties"][name]["default"] = value
    for name in tool.tool_required:
        made["properties"][name].pop("default", None)
        made["required"] = [*made.get("required", ()), name]
    return made


def parse(tool: Tool, name: str, arguments: object) -> Request[Any] | Look | str:
    """The request (or look) an agent's arguments make, or why they make none. Never
    raises: every byte an agent sends is hostile."""
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        return f"{name}: the arguments are not an object"
    try:
        size = len(json.dumps(arguments, allow_nan=False))
    except (ValueError, TypeError, RecursionError):
        return f"{name}: the arguments are not plain JSON"
    if size > MAX_ARGUMENTS:
        return f"{name}: the arguments are longer than {MAX_ARGUMENTS} bytes"
    known = {f.name for f in fields(tool)} - set(tool.tool_fixed)  # type: ignore[arg-type]
    unknown = sorted(k for k in arguments if k not in known)
    missing = [k for k in tool.tool_required if k not in arguments]
    if missing:
        return f"{name}: {missing[0]} is missing"
    if unknown:
        return f"{name}: no argument {unknown[0][:40]!r} (it takes {', '.join(sorted(known))})" \
            if known else f"{name}: it takes no arguments"
    values = fields_of(tool, {**tool.tool_defaults, **arguments, **tool.tool_fixed}, name)
    if isinstance(values, Done):
        return values.text
    try:
        made = tool(**values)
    except (TypeError, ValueError) as e:  # (never: fields_of checked every value)
        return f"{name}: {e}"
    if isinstance(made, Look):
        return made.check() or made
    fault = made.check()
    return fault.text if fault is not None else made


class Door:
    """The supervisor an agent talks to, through a core (``RemoteCore``: the control
    socket here, or ``proctui stdio`` over ssh) made again by ``connect`` when the last
    one has ended (a supervisor started again later is found)."""

    def __init__(self, connect: Callable[[], tuple[Core, Hello]], policy: Policy) -> None:
        self._connect = connect
        self.policy = policy
        self.core: Core | None = None
        self.hello = Hello()
        self.tools = {name: tool for name, tool in every_tool().items()
                      if policy.offers(tool)}
        self._news: list[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = []

    # -- the link ---------------------------------------------------------------------

    def ensure(self) -> Core:
        """The core, made (again) when there is none or the last has ended; raises the
        dial's error (NoSupervisor: no supervisor is running) when it cannot be."""
        core = self.core
        if core is not None:
            link = core.snapshot().link
            if link is None or link.gone is None:
                return core
            self.close()
        core, self.hello = self._connect()
        core.output.listen(self._rang)
        self.core = core
        return core

    def snapshot(self) -> CoreSnapshot:
        return self.ensure().snapshot()

    def close(self) -> None:
        core, self.core = self.core, None
        if core is not None:
            core.output.unlisten(self._rang)
            closing = getattr(core, "close", None)
            if callable(closing):
                closing()

    def _rang(self) -> None:
        """News from the supervisor (on the core's reader thread): wake every waiter."""
        for loop, event in list(self._news):
            try:
                loop.call_soon_threadsafe(event.set)
            except RuntimeError:  # (its loop has closed)
                continue

    async def until(self, done: Callable[[CoreSnapshot], bool], wait: float) -> CoreSnapshot:
        """The latest snapshot once ``done`` holds for it, or after ``wait`` seconds."""
        core = self.ensure()
        deadline = time.monotonic() + max(0.0, min(wait, MAX_WAIT))
        news = asyncio.Event()
        waiter = (asyncio.get_running_loop(), news)
        self._news.append(waiter)
        try:
            while True:
                core.output.changes()  # (rearms the bell: the next change rings again)
                snap = core.snapshot()
                left = deadline - time.monotonic()
                if done(snap) or left <= 0 or (snap.link is not None and
                                               snap.link.gone is not None):
                    return snap
                news.clear()
                with contextlib.suppress(TimeoutError):  # (a look at least each second)
                    await asyncio.wait_for(news.wait(), min(left, 1.0))
        finally:
            self._news.remove(waiter)

    async def send(self, request: Request[Any]) -> Done:
        """The reply to ``request``; once what it did shows in the snapshots (the reply
        can come before the push that shows it: a status right after a stop read
        "running"), waiting at most CATCH_UP seconds for that."""
        core = self.ensure()
        before = core.snapshot()
        future: Future[Any] = core.send(request)
        try:
            reply = await asyncio.wait_for(asyncio.wrap_future(future), ANSWER)
        except TimeoutError:
            return Done(False, f"the supervisor did not answer within {ANSWER:g}s",
                        Fault.NOT_ANSWERING)
        if not isinstance(reply, Done):
            return Done(False, "no answer")
        if request.acts and reply.ok:
            await self.until(lambda now: _shows(request, reply, before, now), CATCH_UP)
        return reply

    def unknown(self, name: str) -> str:
        names = self.snapshot().names
        shown = ", ".join(names[:12]) + (", ..." if len(names) > 12 else "")
        return f"no process named {name[:80]!r} (there are: {shown or 'none'})"

    # -- a call -----------------------------------------------------------------------

    async def call(self, name: str, arguments: object) -> Answer:
        """What the tool ``name`` answers to ``arguments``: never raises."""
        try:
            return await self._call(name, arguments)
        except Exception as e:  # a tool's error, never the server's end
            from proctui.remote.client import NoSupervisor, NotAnswering

            if isinstance(e, NoSupervisor | NotAnswering):
                return error(str(e))
            return error(f"{name}: it failed: {type(e).__name__}: {e}")

    async def _call(self, name: str, arguments: object) -> Answer:
        tool = self.tools.get(name) if isinstance(name, str) else None
        if tool is None:
            return error(self._not_offered(name))
        made = parse(tool, name, arguments)
        if isinstance(made, str):
            return error(made)
        if isinstance(made, Look):
            return await made.look(self)
        if isinstance(made, Tail) and self.snapshot().view(made.name) is None:
            return error(self.unknown(made.name))
        reply = await self.send(made)
        return shaped(made, reply)

    def _not_offered(self, name: object) -> str:
        shown = repr(name[:40]) if isinstance(name, str) else "that"
        tool = every_tool().get(name) if isinstance(name, str) else None
        # Each hint true of this door: a read-only one offers no request_decision, and
        # takes no --allow (the two are refused together).
        if tool is not None and self.policy.read_only:
            return (f"{name} is not a tool here: this door is {self.policy.words()} "
                    "(over --host a door acts only with --allow act; one started with "
                    "--read-only never does)")
        if tool is not None and tool.decides:
            ask = (f"Ask for it with request_decision (choice {name!r}, and why); "
                   if "act" in self.policy.allowed else "")
            return (f"{name} is not a tool here: only an operator decides it. {ask}"
                    f"whoever runs proctui mcp may hand it over with --allow {name}")
        if tool is not None:
            return (f"{name} is not a tool here: this door is {self.policy.words()} "
                    "(over --host it acts only with --allow act)")
        return f"no tool {shown} (tools/list lists them)"

    # -- resources ----------------------------------------------------------------------

    async def recent_output(self, name: str) -> str:
        """The last RECENT lines of a process's output, as text."""
        if self.snapshot().view(name) is None:
            raise LookupError(self.unknown(name))
        page = await self.send(Tail(name, lines=RECENT))
        if not isinstance(page, TailPage) or not page.ok:
            raise LookupError(page.text or "its output could not be read")
        return "\n".join(_lines(page, RECENT)[0])

    async def recent_journal(self) -> str:
        """The latest RECENT entries that tell what happened, one JSON object a line."""
        since = max(0, self.snapshot().journal_seq - RECENT)
        page = await self.send(ReadEvents(since))
        if not isinstance(page, EventsPage) or not page.ok:
            raise LookupError(page.text or "the journal could not be read")
        return "\n".join(_events(page)[0])


def _shows(request: Request[Any], reply: Done, before: CoreSnapshot,
           now: CoreSnapshot) -> bool:
    """Does ``now`` show what ``request`` did (``reply``), since ``before``?"""
    if isinstance(reply, AskReply):
        number = reply.ask.get("id")
        return any(a.id == number for a in now.asks)
    name = getattr(request, "name", None)
    if isinstance(name, str) and name:
        was, view = before.view(name), now.view(name)
        return was is None or view is None or view.seq != was.seq
    return now.seq != before.seq


def shaped(request: Request[Any], reply: Done) -> Answer:
    """A request's reply as a tool answers it: its words and its fault, and what its kind
    of reply adds, within an answer's bounds."""
    base: dict[str, Any] = {"ok": reply.ok, "text": reply.text[:4096],
                            "fault": reply.fault.name if reply.fault else None}
    if isinstance(reply, TailPage) and reply.ok:
        lines, cut = _lines(reply, MAX_LINES)
        end = reply.first + len(lines)
        base.update(name=getattr(request, "name", ""), first=reply.first, lines=lines,
                    next=end, more=reply.more or cut, total=reply.total)
    elif isinstance(reply, EventsPage) and reply.ok:
        events, last = _events(reply)
        base.update(events=[json.loads(e) for e in events],
                    next=last if last is not None else reply.next, lost=reply.lost)
    elif isinstance(reply, AskReply):
        base["ask"] = {k: v for k, v in reply.ask.items()
                       if k not in ("asked_at", "expires_at", "answered_at", "run")}
    return answer(base, is_error=not reply.ok)


def _lines(page: TailPage, most: int) -> tuple[list[str], bool]:
    """A page's lines as text (colours and escapes taken out, proctui's own marked), at
    most ``most`` of them within half an answer's bytes; and whether some were left."""
    out: list[str] = []
    size = 0
    for line, stream in zip(page.lines, page.streams, strict=False):
        text = clean(line, colour=False)[:MAX_REPLY // 8]
        if stream == Stream.PROCTUI:
            text = f"── {text}"
        # Measured as it will be sent: a line of quotes and backslashes is twice as long
        # in JSON, and must not make the page longer than an answer may be.
        size += len(json.dumps(text, ensure_ascii=False).encode()) + 1
        if len(out) >= most or (out and size > MAX_REPLY // 2):
            return out, True
        out.append(text)
    return out, False


def _events(page: EventsPage) -> tuple[list[str], int | None]:
    """A page's events as JSON lines, at most MAX_EVENTS within half an answer's bytes,
    and the sequence number of the last one given."""
    out: list[str] = []
    size, last = 0, None
    for e in page.events[:MAX_EVENTS]:
        text = json.dumps(e, ensure_ascii=False, separators=(",", ":"), default=str)
        size += len(text.encode()) + 2
        if out and size > MAX_REPLY // 2:
            break
        out.append(text)
        seq = e.get("seq")
        last = seq if isinstance(seq, int) and not isinstance(seq, bool) else last
    return out, last
