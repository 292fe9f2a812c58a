"""What a supervisor tells its clients without being asked, as typed messages with one
decoder: the hello (who it is), views (processes that changed), the state (everything
else a snapshot holds), output, the mark that ends a push, and a refusal. Every client
(the console, ``down``, ``events``, ``status``, the remote core) reads them through
``decode`` and nothing else: what a hostile or older supervisor sends becomes a typed
value with sane defaults, or None, never an exception."""

from __future__ import annotations

from dataclasses import field
from typing import Any

from proctui.config.spec import MAX_SCROLLBACK
from proctui.core.life.asks import Ask
from proctui.core.life.outcome import Outcome
from proctui.core.snapshot import CoreSnapshot
from proctui.core.view import ProcessView
from proctui.protocol import wire
from proctui.records import dataclass

MAX_SHOWN = 1000  # characters of a trouble or a crash kept from the wire
MAX_ASKS = 64  # agents' requests kept from one state (a supervisor keeps 8 + 16)


@dataclass(frozen=True)
class Hello:
    v: int = 0
    version: str = ""
    pid: int | None = None
    boot: str = ""
    source: str = ""
    run_dir: str = ""
    started: float = 0.0  # wall clock
    console: bool = False  # the supervisor's own console (proctui run, not up)
    names: tuple[str, ...] = ()
    scrollback: tuple[int, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"t": "hello", "v": self.v, "version": self.version, "pid": self.pid,
                "boot": self.boot, "source": self.source, "run_dir": self.run_dir,
                "started": self.started, "console": self.console,
                "names": list(self.names), "scrollback": list(self.scrollback)}


@dataclass(frozen=True)
class Views:
    views: tuple[ProcessView, ...] = ()


@dataclass(frozen=True)
class State:
    """A snapshot but for its views, and how many consoles are attached."""

    all_ended: bool = False
    launched: bool = False
    shutting_down: bool = False
    shutdown_why: str | None = None
    abandoned_all: bool = False
    interactive: bool = True
    crash: str | None = None
    troubles: tuple[str, ...] = ()
    strays: tuple[int, ...] = ()
    removed: tuple[tuple[str, Outcome | None], ...] = ()
    journal_seq: int = 0
    worst: int = 0
    consoles: int = 0
    asks: tuple[Ask, ...] = ()  # agents' requests for a decision (waiting, lately ended)

    @classmethod
    def of(cls, s: CoreSnapshot, consoles: int) -> State:
        return cls(all_ended=s.all_ended, launched=s.launched, shutting_down=s.shutting_down,
                   shutdown_why=s.shutdown_why, abandoned_all=s.abandoned_all,
                   interactive=s.interactive, crash=s.crash, troubles=s.troubles,
                   strays=s.strays, removed=s.removed, journal_seq=s.journal_seq,
                   worst=s.worst, consoles=consoles, asks=s.asks)

    def snapshot(self, views: tuple[ProcessView, ...], seq: int) -> CoreSnapshot:
        return CoreSnapshot(seq=seq, views=views, all_ended=self.all_ended,
                            launched=self.launched, shutting_down=self.shutting_down,
                            shutdown_why=self.shutdown_why, abandoned_all=self.abandoned_all,
                            interactive=self.interactive, crash=self.crash,
                            troubles=self.troubles, strays=self.strays, removed=self.removed,
                            journal_seq=self.journal_seq, worst=self.worst,
                            consoles=self.consoles, asks=self.asks)

    @property
    def exit_status(self) -> int:
        return max(self.worst, 1) if self.crash else self.worst

    def to_dict(self) -> dict[str, Any]:
        return {"t": "state", "all_ended": self.all_ended, "launched": self.launched,
                "shutting_down": self.shutting_down, "shutdown_why": self.shutdown_why,
                "abandoned_all": self.abandoned_all, "interactive": self.interactive,
                "crash": self.crash, "troubles": list(self.troubles),
                "strays": list(self.strays),
                "removed": [[n, None if o is None else wire.outcome_to_dict(o)]
                            for n, o in self.removed],
                "journal_seq": self.journal_seq, "worst": self.worst,
                "exit_status": self.exit_status if self.all_ended else None,
                "consoles": self.consoles,
                "asks": [wire.ask_to_dict(a) for a in self.asks]}


@dataclass(frozen=True)
class Out:
    """Output of one process: lines from ``first``, their streams as runs ([stream,
    count], ...), lines not shown before them (``dropped``), its output lines in all,
    the partial line after them, where its pane was cleared, and whether it has gone
    quiet with the client holding all of it (``quiet``)."""

    name: str
    first: int
    lines: tuple[str, ...] = ()
    runs: tuple[tuple[int, int], ...] = ()
    dropped: int = 0
    output_total: int = 0
    partial: str = ""
    cleared: int = 0
    quiet: bool = False
    # (index into lines, order) where each of the supervisor's appends begins: the order
    # of everything every process appended (OutputSlice.stamps).
    stamps: tuple[tuple[int, int], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"t": "out", "n": self.name, "f": self.first, "l": list(self.lines),
                "s": [list(r) for r in self.runs], "d": self.dropped,
                "o": self.output_total, "p": self.partial, "c": self.cleared,
                "q": self.quiet, "st": [list(x) for x in self.stamps]}

    @property
    def streams(self) -> list[int]:
        return [s for s, count in self.runs for _ in range(count)]


@dataclass(frozen=True)
class PushEnd:
    """Everything before this mark was one push (number ``k``): a client that watches
    with acknowledgements says it has read it."""

    k: int


@dataclass(frozen=True)
class Refused:
    error: str


@dataclass(frozen=True)
class ReplyMessage:
    """A reply to request ``id`` (a number or a short string, as the client sent it;
    None for anything else, which answers no request)."""

    id: int | str | None
    body: dict[str, Any] = field(default_factory=dict)


Push = Hello | Views | State | Out | PushEnd | Refused | ReplyMessage


def decode(d: dict[str, Any]) -> Push | None:
    """The typed message ``d`` holds, or None when it is none of them (ignored)."""
    kind = d.get("t")
    try:
        if kind == "views":
            return _views(d)
        if kind == "state":
            return _state(d)
        if kind == "out":
            return _out(d)
        if kind == "push":
            k = d.get("k")
            return PushEnd(k) if wire.whole(k) else None
        if kind == "reply":
            number = d.get("id")
            return ReplyMessage(number if wire.whole(number) or isinstance(number, str)
                                else None, d)
        if kind == "hello":
            return _hello(d)
        if kind == "error":
            return Refused(_text(d.get("error"), "refused"))
    except (KeyError, TypeError, ValueError, AttributeError, ArithmeticError):
        return None
    return None


def _hello(d: dict[str, Any]) -> Hello:
    names = tuple(str(n) for n in _list(d.get("names")))
    sizes = tuple(min(x, MAX_SCROLLBACK) if wire.whole(x) and x > 0 else 1
                  for x in _list(d.get("scrollback")))
    started, pid = d.get("started"), d.get("pid")
    return Hello(v=_whole(d.get("v")), version=_text(d.get("version")),
                 pid=pid if wire.whole(pid) else None, boot=_text(d.get("boot")),
                 source=_text(d.get("source")), run_dir=_text(d.get("run_dir")),
                 started=float(started) if wire.finite(started) else 0.0,
                 console=d.get("console") is True, names=names, scrollback=sizes)


def _views(d: dict[str, Any]) -> Views:
    out = []
    for item in _list(d.get("views")):
        if isinstance(item, dict):
            try:
                out.append(wire.view_from_dict(item))
            except ValueError:
                continue  # one view it cannot read costs that view, not the others
    return Views(tuple(out))


def _state(d: dict[str, Any]) -> State:
    removed = []
    for item in _list(d.get("removed")):
        if isinstance(item, list) and len(item) == 2 and isinstance(item[0], str):
            outcome = None
            if isinstance(item[1], dict):
                try:
                    outcome = wire.outcome_from_dict(item[1])
                except ValueError:
                    outcome = None
            removed.append((item[0], outcome))
    crash = d.get("crash")
    why = d.get("shutdown_why")
    worst = d.get("worst")
    return State(
        all_ended=d.get("all_ended") is True, launched=d.get("launched") is True,
        shutting_down=d.get("shutting_down") is True,
        shutdown_why=why[:MAX_SHOWN] if isinstance(why, str) else None,
        abandoned_all=d.get("abandoned_all") is True,
        interactive=d.get("interactive") is not False,
        crash=crash[:MAX_SHOWN] if isinstance(crash, str) else None,
        troubles=tuple(t[:MAX_SHOWN] for t in _list(d.get("troubles"))[:10]
                       if isinstance(t, str)),
        strays=tuple(p for p in _list(d.get("strays")) if wire.whole(p)),
        removed=tuple(removed),
        journal_seq=_whole(d.get("journal_seq")),
        worst=worst if wire.whole(worst) and worst in (0, 1, 3) else
        (1 if worst is not None else 0),
        consoles=_whole(d.get("consoles")),
        asks=tuple(a for a in map(wire.ask_from_dict, _list(d.get("asks"))[:MAX_ASKS])
                   if a is not None))


def _out(d: dict[str, Any]) -> Out | None:
    name, first, partial = d.get("n"), d.get("f"), d.get("p")
    if not isinstance(name, str) or not wire.whole(first):
        return None
    lines = tuple(str(x) for x in _list(d.get("l")))
    runs = tuple((int(r[0]), int(r[1])) for r in _list(d.get("s"))
                 if isinstance(r, list) and len(r) == 2 and all(wire.whole(x) for x in r))
    stamps = tuple((int(x[0]), int(x[1])) for x in _list(d.get("st"))
                   if isinstance(x, list) and len(x) == 2 and all(wire.whole(y) for y in x))
    return Out(name=name, first=first, lines=lines, runs=runs, stamps=stamps,
               dropped=_whole(d.get("d")), output_total=_whole(d.get("o")),
               partial=partial if isinstance(partial, str) else "",
               cleared=_whole(d.get("c")), quiet=d.get("q") is True)


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _text(value: object, default: str = "") -> str:
    return value[:MAX_SHOWN] if isinstance(value, str) else default


def _whole(value: object) -> int:
    return value if wire.whole(value) else 0
