"""What every request is, whatever door it comes through (the console, the command line,
the control socket, ``--host``): a frozen dataclass with its ``op``, the fields of its
message, its reply, how it goes on the wire and, for a command, how the core carries it
out (``execute``, on the core's loop, given the engine: it posts events, never writes a
process's state). The commands themselves are one module each in this package; the
table (``proctui.commands``) is made from them, and everything else from the table."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from concurrent.futures import Future
from dataclasses import fields
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from proctui.core.reply import Done, Fault, done_from_wire, failed
from proctui.records import dataclass

if TYPE_CHECKING:
    from proctui.core.engine import Engine

A = TypeVar("A", bound=Done)


@dataclass(frozen=True)
class Cli:
    """How a command is said on the command line: ``proctui OP ARGS``. ``args`` is its
    usage after the op ("NAME...", "NAME SIGNAL", "" for none); ``verb`` words its reply
    when it has none ("stop" says "stop web: done")."""

    args: str = "NAME..."
    verb: str = ""


@dataclass(frozen=True)
class Said:
    """What the command line prints of a reply, and the exit status it gives."""

    out: tuple[str, ...] = ()
    err: tuple[str, ...] = ()
    status: int = 0


@dataclass(frozen=True)
class Request(Generic[A]):
    op: ClassVar[str]
    # Refused on a read-only connection (attach --read-only): it would change something.
    acts: ClassVar[bool] = False
    # Who sent it goes to the journal (uid, and the SSH client's address): an operator's
    # decision. Not for clearing a pane or saying whether anyone can answer.
    journaled: ClassVar[bool] = False
    cli: ClassVar[Cli | None] = None  # said on the command line, and how
    palette: ClassVar[str] = ""  # offered in the console's command palette, in these words
    # A client may send it over the control socket (False: a frontend says it only to
    # its own core in the same process).
    wire_op: ClassVar[bool] = True
    # Offered to agents as a tool of this name by ``proctui mcp`` (None: never), its
    # arguments and their JSON schema made from the fields, its description from the
    # docstring. ``decides``: only an operator decides it (kill, abandon, down): an agent
    # may only ask for it (``request_decision``) unless the server was started with
    # ``--allow`` naming the tool. ``tool_args``: what an agent is told of each
    # argument; ``tool_fixed``: fields the door sets itself (never the agent's);
    # ``tool_defaults``: an agent's defaults, where they differ from the wire's;
    # ``tool_required``: arguments an agent must give that the wire need not.
    tool: ClassVar[str | None] = None
    decides: ClassVar[bool] = False
    tool_args: ClassVar[dict[str, str]] = {}
    tool_fixed: ClassVar[dict[str, object]] = {}
    tool_defaults: ClassVar[dict[str, object]] = {}
    tool_required: ClassVar[tuple[str, ...]] = ()

    def check(self) -> Done | None:
        """A fault for values of the right type but out of range."""
        return None

    def answer(self, d: Mapping[str, Any]) -> A:
        """This request's reply from its wire form."""
        return done_from_wire(d)  # type: ignore[return-value]

    @classmethod
    def help(cls) -> str:
        """The first paragraph of the docstring: the CLI command's help."""
        return " ".join((cls.__doc__ or "").split("\n\n")[0].split())

    def wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {"op": self.op}
        for f in fields(self):
            out[f.name] = getattr(self, f.name)
        return out

    def execute(self, engine: Engine) -> A | Future[A] | None:
        """Carried out on the core's loop: the reply, or None for the step function's
        own answer to the events this posted."""
        raise NotImplementedError(f"{self.op} is not carried out by the core")

    # -- the command line -------------------------------------------------------------

    @classmethod
    def from_words(cls, words: tuple[str, ...]) -> list[Request[Any]] | str:
        """The requests ``proctui OP WORDS...`` makes, or why the words are wrong (said
        as ``proctui OP: error: ...``, exit status 2)."""
        if words:
            return f"{cls.op} takes no arguments"
        return [cls()]

    def said(self, reply: Done) -> Said:
        """The reply in the command line's words: its text, exit status 1 when not done."""
        words = reply.text or f"{self.cli.verb if self.cli else self.op}: done"
        return Said(out=tuple(words.splitlines()), status=0 if reply.ok else 1)

    @classmethod
    def palette_entries(cls) -> list[tuple[str, Callable[[str], Request[Any]]]]:
        """What the console's command palette offers of it: (words, the request for the
        selected process's name)."""
        if not cls.palette:
            return []
        return [(cls.palette, lambda _name: cls())]

    def journal_fields(self) -> dict[str, object]:
        """What the journal keeps of it beside op, name and who sent it: its arguments
        that are numbers or flags (an extend's seconds), never a client's words."""
        return {f.name: value for f in fields(self)
                if isinstance(value := getattr(self, f.name), int | float | bool)}


@dataclass(frozen=True)
class Command(Request[Done]):
    """A request the core carries out, which changes something."""

    acts: ClassVar[bool] = True
    journaled: ClassVar[bool] = True


@dataclass(frozen=True)
class Named(Command):
    """A command on one process (``proctui OP NAME...``): its ``event`` goes to the
    process, and the step function answers."""

    name: str
    cli: ClassVar[Cli | None] = Cli()
    tool_args: ClassVar[dict[str, str]] = {"name": "the process, by its name (status "
                                                   "lists them)"}

    def event(self, engine: Engine) -> object:
        raise NotImplementedError

    @classmethod
    def from_words(cls, words: tuple[str, ...]) -> list[Request[Any]] | str:
        if not words:
            return "give the name of a process (or several)"
        return [cls(name) for name in words]

    def said(self, reply: Done) -> Said:
        verb = self.cli.verb if self.cli and self.cli.verb else self.op
        return Said(out=(reply.text or f"{verb} {self.name}: done",),
                    status=0 if reply.ok else 1)

    @classmethod
    def palette_entries(cls) -> list[tuple[str, Callable[[str], Request[Any]]]]:
        if not cls.palette:
            return []
        return [(cls.palette, cls)]

    def execute(self, engine: Engine) -> Done | None:
        if self.name not in engine.table:
            return failed(Fault.UNKNOWN_NAME, f"no process named {self.name!r}")
        engine.post(self.name, self.event(engine))
        return None

