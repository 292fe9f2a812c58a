"""A fixed core for pictures: snapshots and screenshots must not depend on real pids,
uptimes or the time a test happens to take, so the views and the clock are frozen."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import replace
from typing import Any

from proctui.commands.base import A, Request
from proctui.core.life.outcome import Outcome, OutcomeKind
from proctui.core.life.stop import DeadlineAction, Phase
from proctui.core.output.lines import OutputBuffer, Stream
from proctui.core.snapshot import CoreSnapshot
from proctui.core.view import ProcessView, Usage

NOW = 10_000.0


def buffer(lines: Sequence[tuple[int, str]]) -> OutputBuffer:
    buf = OutputBuffer(1000)
    for stream, line in lines:
        buf.append(stream, [line])
    return buf


BUFFERS: dict[str, OutputBuffer] = {}


def view(name: str, phase: Phase, pid: int | None = 4121, buffer: OutputBuffer | None = None,
         **kw: object) -> ProcessView:
    """A fixed view; its output (the core keeps it apart from the view) goes to BUFFERS."""
    BUFFERS[name] = buffer or OutputBuffer(1000)
    action = DeadlineAction.KILL if kw.get("deadline") is not None else DeadlineAction.NONE
    if phase is Phase.KILLING and kw.get("deadline") is not None:
        action = DeadlineAction.GIVE_UP
    base = ProcessView(
        name=name, phase=phase, pid=pid, pgid=pid, cmd=f"./{name}", started_at=NOW - 125,
        ended_at=None, restarts=0, stop_requested_at=None, stop_signal="SIGTERM",
        kill_sent_at=None, deadline=None, deadline_action=action, extend_step=30.0,
        outcome=None, restart_at=None, leftover=False,
    )
    view = replace(base, **kw)  # type: ignore[arg-type]
    if view.deadline is not None and view.window_start is None:
        start = view.kill_sent_at if phase is Phase.KILLING else view.stop_requested_at
        view = replace(view, window_start=start)
    return view


def outcome(kind: OutcomeKind, text: str, pid: int = 4121) -> Outcome:
    return Outcome(kind=kind, text=text, pid=pid)


WEB_LINES = [
    (Stream.PROCTUI, "started (pid 4121): python -m http.server 8000"),
    (Stream.STDOUT, "Serving HTTP on 0.0.0.0 port 8000 ..."),
    (Stream.STDOUT, '127.0.0.1 - "GET / HTTP/1.1" \x1b[32m200\x1b[0m -'),
    (Stream.STDOUT, '127.0.0.1 - "GET /api/items HTTP/1.1" \x1b[32m200\x1b[0m -'),
    (Stream.STDERR, "warning: slow request took 1.2s [/bold]"),
    (Stream.STDOUT, '127.0.0.1 - "GET /missing HTTP/1.1" \x1b[33m404\x1b[0m -'),
]
WORKER_LINES = [
    (Stream.PROCTUI, "started (pid 4122): ./worker --queue jobs"),
    (Stream.STDOUT, "worker: picked job 17"),
    (Stream.STDOUT, "worker: picked job 18"),
    (Stream.PROCTUI, "SIGTERM sent to process group 4122; SIGKILL in 10s"),
    (Stream.STDOUT, "worker: ignoring SIGTERM, finishing job 18 first"),
]


def running() -> list[ProcessView]:
    return [
        view("web", Phase.RUNNING, 4121, buffer=buffer(WEB_LINES)),
        view("worker", Phase.RUNNING, 4122, buffer=buffer(WORKER_LINES[:3]), started_at=NOW - 61),
        view("crashy", Phase.BACKOFF, 4130, restarts=3, restart_at=NOW + 4,
             outcome=outcome(OutcomeKind.EXITED, "exited: exit code 3", 4130)),
        view("chatty", Phase.RUNNING, 4125, buffer=buffer([(Stream.STDOUT, "tick")] * 3),
             started_at=NOW - 7),
    ]


def stopping() -> list[ProcessView]:
    views = running()
    views[0] = view("web", Phase.ENDED, 4121, buffer=buffer(WEB_LINES), ended_at=NOW - 2,
                    outcome=outcome(OutcomeKind.STOPPED, "stopped after 0.3s: exit code 0"))
    views[1] = view("worker", Phase.STOPPING, 4122, buffer=buffer(WORKER_LINES),
                    stop_requested_at=NOW - 4.2, deadline=NOW + 5.8)
    views[2] = view("crashy", Phase.ENDED, 4130, restarts=3, ended_at=NOW - 3,
                    outcome=outcome(OutcomeKind.EXITED, "exited: exit code 3", 4130))
    views[3] = view("chatty", Phase.KILLING, 4125, stop_requested_at=NOW - 12,
                    kill_sent_at=NOW - 1.9, deadline=NOW + 3.1,
                    buffer=buffer([(Stream.STDOUT, "tick")] * 3))
    return views


def deciding() -> list[ProcessView]:
    views = stopping()
    views[1] = view("worker", Phase.DECIDING, 4122, buffer=buffer(WORKER_LINES),
                    stop_requested_at=NOW - 10.4, deadline=None)
    return views


def final() -> list[ProcessView]:
    return [
        view("web", Phase.ENDED, 4121, buffer=buffer(WEB_LINES), ended_at=NOW - 30,
             outcome=outcome(OutcomeKind.STOPPED, "stopped after 0.3s: exit code 0")),
        view("worker", Phase.ENDED, 4122, buffer=buffer(WORKER_LINES), ended_at=NOW - 20,
             outcome=outcome(OutcomeKind.KILLED, "killed with SIGKILL after 10s stop timeout")),
        view("crashy", Phase.ENDED, 4130, restarts=3, ended_at=NOW - 40,
             outcome=outcome(OutcomeKind.EXITED, "exited: exit code 3", 4130)),
        view("chatty", Phase.ENDED, 4125, ended_at=NOW - 25,
             outcome=outcome(OutcomeKind.ABANDONED, "abandoned after 12s: pid 4125 left running",
                             4125)),
    ]


def many(count: int) -> list[ProcessView]:
    return [view(f"worker-{i:02d}", Phase.RUNNING, 5000 + i, started_at=NOW - 60 - i,
                 buffer=buffer([(Stream.STDOUT, f"worker {i}: job {j}") for j in range(5)]))
            for i in range(count)]


class FakeReader:
    """The output of the fixed views (BUFFERS); ``changes()`` moves when a test changes
    the snapshot (FakeCore.show), and the listener hears of it then."""

    def __init__(self) -> None:
        self.news = 0
        self._listener: Callable[[], None] | None = None

    def buffer(self, name: str) -> OutputBuffer:
        return BUFFERS[name]

    def changes(self) -> int:
        return self.news

    def listen(self, callback: Callable[[], None]) -> None:
        self._listener = callback

    def unlisten(self, callback: Callable[[], None]) -> None:
        if self._listener == callback:
            self._listener = None

    def ring(self) -> None:
        self.news += 1
        if self._listener is not None:
            self._listener()


class FakeCore:
    """The Core protocol (proctui.commands.api) over fixed views: ``snapshot()`` is always
    the same one until a test shows another, ``send()`` records each request and answers
    it (done, each with its own kind of reply: a journal page with no entries; or with
    ``answers``, by op, what a test wants said), the output reader reads BUFFERS."""

    def __init__(self, views: Sequence[ProcessView], **snapshot: Any) -> None:
        self._snapshot = CoreSnapshot(views=tuple(views), **snapshot)
        self.requests: list[Request[Any]] = []
        self.answers: dict[str, dict[str, Any]] = {}  # op: the reply's wire form
        self.output = FakeReader()

    def snapshot(self) -> CoreSnapshot:
        return self._snapshot

    def show(self, **changes: Any) -> None:
        """The next snapshot: this one with ``changes``; the frontend hears of it."""
        self._snapshot = replace(self._snapshot, seq=self._snapshot.seq + 1, **changes)
        self.output.ring()

    def send(self, request: Request[A]) -> Future[A]:
        self.requests.append(request)
        future: Future[A] = Future()
        future.set_result(request.answer(self.answers.get(request.op, {"ok": True})))
        return future


USAGE = {4121: Usage(1.5, 34 << 20, 1), 4122: Usage(12.0, 120 << 20, 3),
         4125: Usage(0.4, 9 << 20, 2)}


def with_usage(views: list[ProcessView]) -> list[ProcessView]:
    """The views with fixed CPU and memory figures, by process group."""
    return [replace(v, usage=USAGE[v.pgid]) if v.pgid in USAGE else v for v in views]


def app(views: list[ProcessView], hint: tuple[str, ...] = ()):  # type: ignore[no-untyped-def]
    from proctui.frontends.console.app import ProctuiApp

    return ProctuiApp(FakeCore(with_usage(views)), clock=lambda: NOW, hint=hint)
