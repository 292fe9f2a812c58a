"""A fixed core for pictures: snapshots and screenshots must not depend on real pids,
uptimes or the time a test happens to take, so the views and the clock are frozen."""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable
from dataclasses import replace

from proctui.core.life.outcome import Outcome, OutcomeKind, Who
from proctui.core.life.stages import Why
from proctui.core.life.stop import DeadlineAction, Phase
from proctui.core.output.lines import OutputBuffer, Stream
from proctui.core.view import ProcessView, Reply, Usage

NOW = 10_000.0


def _done(value: object) -> concurrent.futures.Future:  # type: ignore[type-arg]
    future: concurrent.futures.Future = concurrent.futures.Future()  # type: ignore[type-arg]
    future.set_result(value)
    return future


def buffer(lines: list[tuple[int, str]]) -> OutputBuffer:
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


class FakeCore:
    """Implements the console's Core protocol with fixed views, and records the commands
    it is sent. A method the protocol does not name does not exist here either."""

    crash: str | None = None

    def __init__(self, views: list[ProcessView]) -> None:
        self._views = views
        self.commands: list[tuple[str, tuple[object, ...]]] = []

    def views(self) -> list[ProcessView]:
        return self._views

    def buffer(self, name: str) -> OutputBuffer:
        return BUFFERS[name]

    def changes(self) -> int:
        return 0

    def listen(self, callback: Callable[[], None]) -> None:
        pass  # fixed views: nothing ever changes

    def all_ended(self) -> bool:
        return False

    def final(self) -> list[tuple[str, Outcome | None]]:
        return [(v.name, v.outcome) for v in self._views]

    def strays(self) -> list[int]:
        return []

    def journal(self) -> list[dict[str, object]]:
        return []

    def exit_status(self) -> int:
        return 0

    @property
    def shutting_down(self) -> bool:  # (found missing by the type checker's conformance)
        return False

    @property
    def shutdown_why(self) -> str | None:
        return None

    def _record(self, name: str, *args: object) -> concurrent.futures.Future[Reply]:
        self.commands.append((name, args))
        return _done(Reply(True))

    def stop(self, name: str) -> concurrent.futures.Future[Reply]:
        return self._record("stop", name)

    def stop_all(self, ordered: bool = True,
                 why: Why = Why.OPERATOR) -> concurrent.futures.Future[Reply]:
        return self._record("stop_all", ordered)

    def kill(self, name: str) -> concurrent.futures.Future[Reply]:
        return self._record("kill", name)

    def kill_all(self) -> concurrent.futures.Future[Reply]:
        return self._record("kill_all")

    def abandon(self, name: str) -> concurrent.futures.Future[Reply]:
        return self._record("abandon", name)

    def abandon_all(self) -> concurrent.futures.Future[Reply]:
        return self._record("abandon_all")

    def wait_without_deadline(self, name: str) -> concurrent.futures.Future[Reply]:
        return self._record("wait_without_deadline", name)

    def extend(self, name: str, by: float | None = None,
               who: Who = Who.OPERATOR) -> concurrent.futures.Future[Reply]:
        return self._record("extend", name, by)

    def restart(self, name: str) -> concurrent.futures.Future[Reply]:
        return self._record("restart", name)

    def start_process(self, name: str) -> concurrent.futures.Future[Reply]:
        return self._record("start_process", name)

    def adopt(self, name: str) -> concurrent.futures.Future[Reply]:
        return self._record("adopt", name)

    def clear_output(self, name: str) -> concurrent.futures.Future[Reply]:
        return self._record("clear_output", name)

    def set_interactive(self, interactive: bool) -> concurrent.futures.Future[Reply]:
        return self._record("set_interactive", interactive)

    def want_usage(self, wanted: bool) -> concurrent.futures.Future[None]:
        self.commands.append(("want_usage", (wanted,)))
        return _done(None)


def usage(pgids) -> dict[int, Usage]:  # type: ignore[no-untyped-def]
    table = {4121: Usage(1.5, 34 << 20, 1), 4122: Usage(12.0, 120 << 20, 3),
             4125: Usage(0.4, 9 << 20, 2)}
    return {p: table[p] for p in pgids if p in table}


def app(views: list[ProcessView], hint: tuple[str, ...] = ()):  # type: ignore[no-untyped-def]
    from proctui.frontends.console.app import ProctuiApp

    return ProctuiApp(FakeCore(views), clock=lambda: NOW, usage=usage, hint=hint)
