"""What every request is, whatever door it comes through (the console, the command line,
the control socket, ``--host``): a frozen dataclass with its ``op``, the fields of its
message, its reply, how it goes on the wire and, for a command, how the core carries it
out (``execute``, on the core's loop, given the engine: it posts events, never writes a
process's state). The commands themselves are one module each in this package; the
table (``proctui.commands``) is made from them, and everything else from the table."""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import Future
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from proctui.core.reply import Done, Fault, done_from_wire, failed

if TYPE_CHECKING:
    from proctui.core.engine import Engine

A = TypeVar("A", bound=Done)


@dataclass(frozen=True)
class Cli:
    """How a command is said on the command line: ``proctui OP ARGS``. ``args`` is its
    usage after the op ("NAME...", "NAME SIGNAL"); ``verb`` words its reply when it has
    none ("stop" says "stop web: done")."""

    args: str = "NAME..."
    verb: str = ""


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

    def event(self, engine: Engine) -> object:
        raise NotImplementedError

    def execute(self, engine: Engine) -> Done | None:
        if self.name not in engine.table:
            return failed(Fault.UNKNOWN_NAME, f"no process named {self.name!r}")
        engine.post(self.name, self.event(engine))
        return None


def left_running(engine: Engine, name: str) -> int | None:
    """A pid of the process's last run still alive (it was abandoned, or could not be
    killed): nothing starts beside it."""
    p = engine.table.get(name)
    run = p.run if p is not None else None
    if run is not None and run.outcome is not None and run.outcome.left_running \
            and run.pgid is not None and engine.os.group_alive(run.pgid):
        return run.pid
    return None
