"""What a frontend may do with a core, local or remote: read its latest snapshot, send
it a request of the command table, read the processes' output. Nothing else crosses the
core's edge (tests/test_one_owner.py holds every frontend to it)."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, Protocol, TypeVar

from proctui.commands.base import Request
from proctui.core.output.lines import OutputBuffer
from proctui.core.reply import Done
from proctui.core.snapshot import CoreSnapshot

A = TypeVar("A", bound=Done)


class Reader(Protocol):
    """The processes' output, and news of anything new (output or a snapshot)."""

    def buffer(self, name: str) -> OutputBuffer: ...
    def changes(self) -> int: ...
    def listen(self, callback: Callable[[], None]) -> None: ...
    def unlisten(self, callback: Callable[[], None]) -> None: ...


class Core(Protocol):
    def snapshot(self) -> CoreSnapshot: ...
    def send(self, request: Request[A]) -> Future[A]: ...
    @property
    def output(self) -> Reader: ...


def reply_now(request: Request[Any], reply: Done) -> Future[Any]:
    """A reply that needs no core (refused at the door)."""
    future: Future[Any] = Future()
    future.set_result(reply)
    return future
