"""An agent's request for a decision that only an operator takes: kill a process, abandon
it, or stop everything (``down``). An agent (through ``proctui mcp``) may only *ask*: the
request waits, shown in every attached console as a question with the agent's reason,
until an operator grants or denies it, it lapses (``LIFETIME``), or it no longer means
anything (the run it was about ended; everything began to stop). Nothing here acts: a
grant is carried out by the engine as the operator's own command.

The requests are one frozen value (``Asks``), kept in the world and changed only by
``asks_step``, a pure function of the value and an event (the time is in the event). It
is bounded however fast an agent asks: at most ``MAX_WAITING`` wait at once, the same
request while one waits is that one, one the operator denied cannot be asked again for
``REASK_AFTER`` seconds, and only the latest ``KEPT`` that ended are remembered."""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from dataclasses import replace

from proctui.core.output.text import clean
from proctui.core.reply import AskReply, Done, Fault, failed
from proctui.records import dataclass

CHOICES = ("kill", "abandon", "down")
LIFETIME = 300.0  # seconds a request waits for an operator, then lapses
MAX_WAITING = 8  # requests waiting at once; more are refused until one is answered
KEPT = 16  # ended requests remembered, for the agent to read what became of its own
REASK_AFTER = 30.0  # seconds before a denied request may be asked again
MAX_WHY = 256  # characters of a reason kept (the control socket bounds strings so too)

# What became of a request.
WAITING, GRANTED, DENIED, EXPIRED, MOOT = "waiting", "granted", "denied", "expired", "moot"
STATES = (WAITING, GRANTED, DENIED, EXPIRED, MOOT)


@dataclass(frozen=True, slots=True)
class Ask:
    """One request, as every console and the agent see it. Times are monotonic."""

    id: int
    choice: str  # "kill" | "abandon" | "down"
    name: str  # the process ("" for down)
    why: str  # the agent's reason, plain text on one line
    asker: str  # who asked, in words ("an agent through proctui mcp (uid 1000, pid 42)")
    asked_at: float
    expires_at: float
    state: str = WAITING
    answered_at: float | None = None
    answer: str = ""  # what became of it, in words ("granted by ...", "web ended ...")
    pid: int | None = None  # the process's pid when it was asked
    run: int = 0  # the run it is about: once that run has ended, it means nothing

    @property
    def waiting(self) -> bool:
        return self.state == WAITING

    @property
    def what(self) -> str:
        """What it asks, in words: "kill web", "stop everything"."""
        return what(self.choice, self.name)


def what(choice: str, name: str) -> str:
    """A request's words: "kill web", "stop everything and end the supervisor"."""
    if choice == "down":
        return "stop everything and end the supervisor"
    return f"{choice} {name}"


@dataclass(frozen=True, slots=True)
class Asks:
    waiting: tuple[Ask, ...] = ()  # oldest first
    ended: tuple[Ask, ...] = ()  # the latest KEPT that ended, oldest first
    next_id: int = 1
    denied: tuple[tuple[str, str, float], ...] = ()  # (choice, name, when) of late denials

    def all(self) -> tuple[Ask, ...]:
        """Every request remembered, in the order they were asked."""
        return tuple(sorted((*self.ended, *self.waiting), key=lambda a: a.id))


# -- what the requests hear -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Asked:
    """An agent asks (checked already: the process runs, ``why`` is plain)."""

    choice: str
    name: str
    why: str
    asker: str
    now: float
    pid: int | None = None
    run: int = 0


@dataclass(frozen=True, slots=True)
class Answered:
    """An operator granted or denied request ``id``."""

    id: int
    grant: bool
    by: str  # who, in words
    now: float


@dataclass(frozen=True, slots=True)
class Expired:
    id: int
    now: float


@dataclass(frozen=True, slots=True)
class Moot:
    """Request ``id`` no longer means anything (``why``: the process ended meanwhile...)."""

    id: int
    why: str
    now: float


@dataclass(frozen=True, slots=True)
class Stopping:
    """Everything began to stop: a request to stop everything has nothing left to ask."""

    why: str
    now: float


AskEvent = Asked | Answered | Expired | Moot | Stopping


@dataclass(frozen=True, slots=True)
class Said:
    """What the engine is to do for an event: answer the command that brought it
    (``reply``), journal and say the request made (``new``) and those that ended
    (``ended``), and carry out a grant (``granted``, one of ``ended``)."""

    reply: Done | None = None
    new: Ask | None = None
    ended: tuple[Ask, ...] = ()
    granted: Ask | None = None


def asks_step(asks: Asks, e: AskEvent, *, shutting_down: bool = False) -> tuple[Asks, Said]:
    if isinstance(e, Asked):
        return _asked(asks, e, shutting_down)
    if isinstance(e, Answered):
        found = _find(asks, e.id)
        if found is None or not found.waiting:
            return asks, Said(reply=failed(Fault.REFUSED, _not_waiting(e.id, found)))
        state = GRANTED if e.grant else DENIED
        words = f"{state} by {e.by}"
        asks, ended = _end(asks, found, state, words, e.now)
        if not e.grant:
            recent = tuple(d for d in asks.denied if e.now - d[2] < REASK_AFTER)
            asks = replace(asks, denied=(*recent, (found.choice, found.name, e.now))[-MAX_WAITING:])
        return asks, Said(reply=AskReply(True, f"request {found.id} ({found.what}): {words}",
                                         ask=ask_dict(ended)),
                          ended=(ended,), granted=ended if e.grant else None)
    if isinstance(e, Expired):
        return _ends_unanswered(asks, e.id, EXPIRED,
                                f"lapsed: nobody answered within {LIFETIME:g}s", e.now)
    if isinstance(e, Moot):
        return _ends_unanswered(asks, e.id, MOOT, f"moot: {e.why}", e.now)
    if isinstance(e, Stopping):
        out = []
        for a in asks.waiting:
            if a.choice == "down":
                asks, ended = _end(asks, a, MOOT, f"moot: everything is already stopping "
                                                  f"({e.why})", e.now)
                out.append(ended)
        return asks, Said(ended=tuple(out))
    raise TypeError(f"unknown request event {e!r}")


def _asked(asks: Asks, e: Asked, shutting_down: bool) -> tuple[Asks, Said]:
    if e.choice not in CHOICES:
        return asks, Said(reply=failed(Fault.BAD_VALUE, f"request_decision: choice "
                                                        f"{e.choice!r} is not kill, abandon "
                                                        "or down"))
    if e.choice == "down" and shutting_down:
        return asks, Said(reply=failed(Fault.REFUSED, "request_decision: everything is "
                                                      "already stopping"))
    for a in asks.waiting:
        if a.choice == e.choice and a.name == e.name:
            return asks, Said(reply=AskReply(True, f"request {a.id} ({a.what}) already waits "
                                                   "for an operator", ask=ask_dict(a)))
    for choice, name, when in asks.denied:
        if choice == e.choice and name == e.name and e.now - when < REASK_AFTER:
            return asks, Said(reply=failed(Fault.REFUSED, (
                f"request_decision: an operator denied {what(choice, name)} "
                f"{e.now - when:.0f}s ago; ask "
                f"again after {REASK_AFTER:g}s, with a reason that has changed")))
    if len(asks.waiting) >= MAX_WAITING:
        return asks, Said(reply=failed(Fault.REFUSED, (
            f"request_decision: {MAX_WAITING} requests already wait for an operator: ask "
            "again once one is answered")))
    ask = Ask(id=asks.next_id, choice=e.choice, name=e.name, why=e.why, asker=e.asker,
              asked_at=e.now, expires_at=e.now + LIFETIME, pid=e.pid, run=e.run)
    asks = replace(asks, waiting=(*asks.waiting, ask), next_id=asks.next_id + 1)
    return asks, Said(reply=AskReply(True, f"request {ask.id} ({ask.what}) waits for an "
                                           f"operator (it lapses in {LIFETIME:g}s)",
                                     ask=ask_dict(ask)), new=ask)


def _find(asks: Asks, number: int) -> Ask | None:
    for a in (*asks.waiting, *asks.ended):
        if a.id == number:
            return a
    return None


def _not_waiting(number: int, found: Ask | None) -> str:
    if found is None:
        return f"no request {number} (it may have ended long ago)"
    return f"request {number} ({found.what}) no longer waits: {found.answer}"


def _ends_unanswered(asks: Asks, number: int, state: str, words: str,
                     now: float) -> tuple[Asks, Said]:
    """Request ``number`` lapsed or went moot, if it still waits (an answer may have come
    first: then nothing)."""
    found = _find(asks, number)
    if found is None or not found.waiting:
        return asks, Said()
    asks, ended = _end(asks, found, state, words, now)
    return asks, Said(ended=(ended,))


def _end(asks: Asks, ask: Ask, state: str, words: str, now: float) -> tuple[Asks, Ask]:
    ended = replace(ask, state=state, answered_at=now, answer=words)
    return replace(asks, waiting=tuple(a for a in asks.waiting if a.id != ask.id),
                 ended=(*asks.ended, ended)[-KEPT:]), ended


# -- words --------------------------------------------------------------------------------


def plain(text: str, limit: int = MAX_WHY) -> str:
    """A client's words as one plain line: escape sequences dropped whole, whitespace
    (newlines too) made single spaces, every other control, format (bidi) and
    unassigned character dropped, cut to ``limit``."""
    text = " ".join(clean(text, colour=False).split()) if "\x1b" in text or "\x9b" in text \
        else " ".join(text.split())
    if not text.isascii() or not text.isprintable():
        text = " ".join("".join(c for c in text if not unicodedata.category(c).startswith("C"))
                        .split())
    return text[:limit]


# Who sent a request, by what the client said it is ("" for a plain control command).
ASKERS = {"mcp": "an agent through proctui mcp", "console": "an attached console",
          "": "a control command"}
ANSWERERS = {"console": "the operator at an attached console",
             "": "the operator with proctui answer"}


def who_words(who: Mapping[str, object] | None, answering: bool = False) -> str:
    """Who sent a command, in words, from what the control socket vouches for (the uid
    and pid from the socket, the SSH client's address) and what the client said it is;
    None: the supervisor's own console, which is no client of the socket."""
    if who is None:
        return "the operator at this supervisor's own console" if answering else \
            "this supervisor's own console"
    client = who.get("client")
    kind = client if isinstance(client, str) else ""
    said = (ANSWERERS if answering else ASKERS).get(kind) or \
        ASKERS.get(kind, f"a {plain(kind, 32)} client")
    parts = [f"{key} {who[key]}" for key in ("uid", "pid") if isinstance(who.get(key), int)]
    ssh = who.get("ssh")
    if isinstance(ssh, str) and len(ssh.split()) == 2:
        address, port = ssh.split()
        parts.append(f"ssh {address} port {port}")
    return f"{said} ({', '.join(parts)})" if parts else said


def ask_dict(a: Ask) -> dict[str, object]:
    """A request as plain JSON values (its wire form, and what an agent reads)."""
    return {"id": a.id, "choice": a.choice, "name": a.name, "why": a.why, "asker": a.asker,
            "asked_at": a.asked_at, "expires_at": a.expires_at, "state": a.state,
            "answered_at": a.answered_at, "answer": a.answer, "pid": a.pid, "run": a.run}
