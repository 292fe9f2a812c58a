"""``proctui events``: what changes in a running supervisor, one line per change, for
scripts that watch (``--json``) and for people (text).

Built on the views and the state the supervisor pushes (at most 20 times a second): each
push is compared with the one before, so nothing is polled. A state that lasted less than
a push can be skipped; a restart is never lost (``restarts`` carries the count), nor an
outcome (each run's end is a new ``ended_at``). The JSON schema (``"schema": 1``) is
documented in the README; fields are only ever added within one schema number.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import socket
import threading
import time
from collections.abc import Sequence
from typing import Any, TextIO

from proctui.core.life.stop import Phase
from proctui.core.output.text import clean
from proctui.core.view import ProcessView
from proctui.frontends.answers import outcome_json, state
from proctui.protocol.commands import Hello
from proctui.remote.client import Connection

SCHEMA = 1
KINDS = ("hello", "state", "started", "restart", "ready", "outcome", "decision-pending",
         "decision-answered", "shutdown-begun", "shutdown-ended", "end")


def _event(kind: str, name: str | None = None, **fields: Any) -> dict[str, Any]:
    return {"schema": SCHEMA, "event": kind, "time": round(time.time(), 3), "name": name,
            **fields}


def process_changes(old: ProcessView | None, new: ProcessView,
                    now: float) -> list[dict[str, Any]]:
    """What changed in one process between two pushes, in the order it happened."""
    from proctui.frontends.control import detail

    out: list[dict[str, Any]] = []
    name = new.name
    if old is None:
        return out
    if new.pid is not None and new.pid != old.pid:
        out.append(_event("started", name, pid=new.pid, restarts=new.restarts))
    if new.restarts > old.restarts:
        out.append(_event("restart", name, restarts=new.restarts, pid=new.pid))
    if new.ready_at is not None and (old.ready_at != new.ready_at):
        after = new.ready_at - new.started_at if new.started_at is not None else None
        out.append(_event("ready", name, pid=new.pid,
                          after_s=round(after, 3) if after is not None else None))
    if new.phase is Phase.DECIDING and old.phase is not Phase.DECIDING:
        since = now - new.decision_since if new.decision_since is not None else 0.0
        out.append(_event("decision-pending", name, pid=new.pid,
                          choices="kill|extend|abandon|wait",
                          since_s=round(max(0.0, since), 3)))
    if old.phase is Phase.DECIDING and new.phase is not Phase.DECIDING:
        out.append(_event("decision-answered", name, pid=new.pid, then=state(new)))
    if new.outcome is not None and (new.outcome, new.ended_at) != (old.outcome, old.ended_at):
        out.append(_event("outcome", name, pid=new.outcome.pid,
                          outcome=outcome_json(new.outcome), restarts=new.restarts))
    before, after_state = state(old), state(new)
    if before != after_state:
        out.append(_event("state", name, state=after_state, previous=before, pid=new.pid,
                          detail=detail(new, now)))
    return out


def state_changes(old: dict[str, Any], new: dict[str, Any],
                  said: set[str]) -> list[dict[str, Any]]:
    """The shutdown's beginning (once its reason is known) and its end. ``said`` holds
    what was already said, so each is said once."""
    out = []
    if new.get("shutting_down") and "begun" not in said and (
            new.get("shutdown_why") or new.get("all_ended")):
        said.add("begun")
        out.append(_event("shutdown-begun", why=new.get("shutdown_why")))
    if new.get("all_ended") and not old.get("all_ended") and new.get("shutting_down") \
            and "ended" not in said:
        said.add("ended")
        out.append(_event("shutdown-ended", exit_status=new.get("exit_status")))
    return out


def hello(conn: Connection, names: Sequence[str]) -> dict[str, Any]:
    h, st = conn.hello, conn.state
    return _event("hello", supervisor={
        "pid": h.get("pid"), "version": h.get("version"), "source": h.get("source"),
        "run_dir": h.get("run_dir"), "started": h.get("started"),
        "shutting_down": bool(st.get("shutting_down")),
        "shutdown_why": st.get("shutdown_why")},
        processes=[{"name": v.name, "state": state(v), "pid": v.pid, "restarts": v.restarts}
                   for v in conn.ordered_views() if not names or v.name in names])


def text(event: dict[str, Any]) -> str:
    """One event in words: ``12:03:04 web: running -> ended (exited: exit code 3)``."""
    when = time.strftime("%H:%M:%S", time.localtime(event["time"]))
    kind, name = event["event"], event.get("name")
    if kind == "hello":
        sup = event["supervisor"]
        rows = ", ".join(f"{p['name']} {p['state']}" for p in event["processes"])
        words = f"supervisor pid {sup['pid']} ({sup['source'] or 'commands'}): {rows}"
    elif kind == "state":
        words = f"{event['previous']} -> {event['state']}: {event['detail']}"
    elif kind == "started":
        words = f"started, pid {event['pid']}"
    elif kind == "restart":
        words = f"restarted (restarts: {event['restarts']})"
    elif kind == "ready":
        after = event.get("after_s")
        words = "ready" + (f" after {after:.1f}s" if isinstance(after, float) else "")
    elif kind == "outcome":
        words = event["outcome"]["text"]
    elif kind == "decision-pending":
        words = "stop timeout reached: waiting for a decision (proctui kill|extend|" \
                f"abandon {name})"
    elif kind == "decision-answered":
        words = f"decision taken: now {event['then']}"
    elif kind == "shutdown-begun":
        words = f"stopping everything ({event['why'] or 'reason unknown'})"
    elif kind == "shutdown-ended":
        words = f"everything has ended (exit status {event['exit_status']})"
    else:
        words = "the supervisor has ended"
    return clean(f"{when} {name + ': ' if name else ''}{words}")


def _watch_reader(out: TextIO, conn: Connection) -> None:
    """``proctui events | head -1``: the reader goes away while nothing changes, and
    nothing would be written to find out for hours. A thread sleeps in poll() on our
    stdout until it errs (the reader closed the pipe), then ends the connection, so the
    stream ends as if the supervisor had (its last writes go to /dev/null)."""
    try:
        fd = out.fileno()
    except (AttributeError, OSError, ValueError):
        return

    def watch() -> None:
        poller = select.poll()
        try:
            poller.register(fd, 0)  # only errors and hang-ups wake us
            poller.poll()
        except (OSError, ValueError):
            return
        with contextlib.suppress(OSError):
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, fd)
            os.close(null)
        with contextlib.suppress(OSError):
            conn.sock.shutdown(socket.SHUT_RDWR)

    threading.Thread(target=watch, name="proctui-events-reader", daemon=True).start()


def stream(conn: Connection, as_json: bool, names: Sequence[str], out: TextIO) -> int:
    """Print each change until the supervisor ends (exit status 0); a supervisor that
    falls silent raises NotAnswering (one line, exit status 2)."""
    from proctui.frontends.control import UnknownProcess

    for name in names:
        if name not in conn.names:
            raise UnknownProcess(name, conn.names)

    def say(event: dict[str, Any]) -> None:
        if names and event.get("name") is not None and event["name"] not in names:
            return
        out.write((json.dumps(event) if as_json else text(event)) + "\n")
        out.flush()  # a script reads each line as it comes

    _watch_reader(out, conn)
    conn.send(Hello("events"))  # said what it is: never closed for idleness
    say(hello(conn, names))
    said: set[str] = set()
    if conn.state.get("shutting_down") and conn.state.get("shutdown_why"):
        said.add("begun")  # the hello said it
    views = dict(conn.views)
    st = dict(conn.state)
    while True:
        message = conn.event()
        if message is None:
            break
        kind = message.get("t")
        if kind == "views":
            conn._views(message)
            now = time.monotonic()
            for view in conn.ordered_views():
                for event in process_changes(views.get(view.name), view, now):
                    say(event)
            views = dict(conn.views)
        elif kind == "state":
            conn.state = message
            for event in state_changes(st, message, said):
                say(event)
            st = dict(message)
    with contextlib.suppress(OSError, ValueError):
        say(_event("end", exit_status=st.get("exit_status")))
    return 0
