"""What every control request is: a frozen dataclass with its ``op``, the fields of its
message, how it goes on the wire, and the reply type it expects. The commands themselves
are the table in ``commands.py``."""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import Future
from dataclasses import dataclass, fields
from typing import Any, ClassVar, Generic, TypeVar

from proctui.core.api import Core
from proctui.core.view import Reply
from proctui.protocol.replies import (
    Done,
    done_from_wire,
)

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
class Simple(Request[Done]):
    """A command whose reply is only done or not, with words."""

    def answer(self, d: Mapping[str, Any]) -> Done:
        return done_from_wire(d)


@dataclass(frozen=True)
class CoreCommand(Simple):
    """A command the core carries out; ``method`` is its name in the ``Core`` API."""

    method: ClassVar[str]
    # Who sent it goes to the journal (uid, and the SSH client's address): an operator's
    # decision. Not for clearing a pane or saying whether anyone can answer.
    journaled: ClassVar[bool] = True

    def apply(self, core: Core) -> Future[Reply]:
        raise NotImplementedError

    def journal_fields(self) -> dict[str, object]:
        """What the journal keeps of it beside op, name and who sent it: its arguments
        that are numbers or flags (an extend's seconds), never a client's words."""
        from dataclasses import fields

        return {f.name: value for f in fields(self)
                if isinstance(value := getattr(self, f.name), int | float | bool)}


@dataclass(frozen=True)
class Named(CoreCommand):
    """A command on one process (``proctui OP NAME...``)."""

    name: str
    # The core refuses these for a process that has no live group: NOT_RUNNING then.
    needs_running: ClassVar[bool] = False
