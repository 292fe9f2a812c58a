"""``proctui events``: what happens in a running supervisor, one line per event, for
scripts that watch (``--json``) and for people (text).

Read from the supervisor's record of its own transitions (its journal, each entry with a
sequence number: ``commands.event_log``), never from comparing two pushed views: what
happens between two pushes (a restart and its outcome, a process a reload added and
removed) is there all the same, in the order it happened, once. The pushes only say
when there is something new to ask for. A reconnecting reader would ask from its last
number and lose nothing. The JSON schema (``"schema": 1``) is documented in the README;
fields are only ever added within one schema number.
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

from proctui.commands.event_log import ReadEvents
from proctui.core.output.text import clean
from proctui.core.store.kinds import Kind
from proctui.frontends.status import state
from proctui.protocol import pushes
from proctui.protocol.link import Greet
from proctui.remote.client import Connection, NoSupervisor, NotAnswering

SCHEMA = 1
KINDS = ("hello", "state", "started", "restart", "ready", "outcome", "decision-pending",
         "decision-answered", "shutdown-begun", "shutdown-ended", "reload", "lost", "end")


def _event(kind: str, name: str | None = None, at: float | None = None,
           **fields: Any) -> dict[str, Any]:
    when = at if at is not None else time.time()
    return {"schema": SCHEMA, "event": kind, "time": round(when, 3), "name": name,
            **fields}


class Transitions:
    """Journal entries become events; each process's state is followed from the hello
    on, so that a ``state`` line names what it was before."""

    def __init__(self, states: dict[str, str]) -> None:
        self.states = dict(states)

    def events(self, e: dict[str, Any]) -> list[dict[str, Any]]:
        kind, name = e.get("kind"), e.get("name")
        at = e.get("wall") if isinstance(e.get("wall"), int | float) else None
        name = name if isinstance(name, str) else None
        out: list[dict[str, Any]] = []
        if kind == Kind.START and name is not None:
            restarts = _int(e.get("restarts"))
            out.append(_event("started", name, at, pid=e.get("pid"), restarts=restarts))
            if restarts:
                out.append(_event("restart", name, at, restarts=restarts, pid=e.get("pid")))
            out += self._state(name, "running", at, e.get("pid"), "started")
        elif kind == Kind.READY and name is not None:
            after = e.get("after")
            out.append(_event("ready", name, at, pid=None,
                              after_s=after if isinstance(after, int | float) else None))
        elif kind == Kind.OUTCOME and name is not None:
            text = str(e.get("text", ""))
            outcome = {"kind": e.get("outcome"), "exit_code": e.get("exit_code"),
                       "signal": e.get("signal"), "after_s": e.get("after"),
                       "clean": e.get("clean") is True, "text": text}
            out.append(_event("outcome", name, at, pid=e.get("pid"), outcome=outcome,
                              restarts=_int(e.get("restarts"))))
            ended = "failed" if e.get("outcome") == "failed-to-start" else \
                "abandoned" if e.get("outcome") in ("abandoned", "unkillable", "held",
                                                    "stop-failed", "kill-failed",
                                                    "wait-failed") else "ended"
            out += self._state(name, ended, at, e.get("pid"), text)
        elif kind == Kind.STOP and name is not None:
            out += self._state(name, "stopping", at, None, "stop requested")
        elif kind == Kind.SIGNAL and name is not None and e.get("signal") == "SIGKILL":
            out += self._state(name, "killing", at, None, "SIGKILL sent")
        elif kind == Kind.DEADLINE and name is not None and e.get("phase") == "deciding":
            out.append(_event("decision-pending", name, at, pid=None,
                              choices="kill|extend|abandon|wait", since_s=0.0))
            out += self._state(name, "deciding", at, None, "stop timeout reached")
        elif kind == Kind.DECISION and name is not None:
            action = str(e.get("action", ""))
            then = {"kill": "killing", "abandon": "abandoned", "extend": "stopping",
                    "wait": "stopping"}.get(action, self.states.get(name, ""))
            out.append(_event("decision-answered", name, at, pid=None, then=then,
                              action=action))
            if action in ("extend", "wait"):
                out += self._state(name, "stopping", at, None, f"decision: {action}")
        elif kind == Kind.WAITING and name is not None:
            out += self._state(name, "waiting", at, None, "waiting for its dependencies")
        elif kind == Kind.SHUTDOWN:
            out.append(_event("shutdown-begun", None, at, why=e.get("why")))
        elif kind == Kind.ALL_ENDED:
            out.append(_event("shutdown-ended", None, at, exit_status=e.get("exit_status")))
        elif kind == Kind.RELOAD:
            out.append(_event("reload", None, at, added=_names(e.get("added")),
                              removed=_names(e.get("removed")),
                              changed=_names(e.get("changed"))))
        elif kind == Kind.NOTICE and name is not None and \
                e.get("text") == "removed from the config (reload)":
            out += self._state(name, "removed", at, None, "removed from the config")
        return out

    def _state(self, name: str, new: str, at: float | None, pid: object,
               detail: str) -> list[dict[str, Any]]:
        before = self.states.get(name)
        self.states[name] = new
        if before == new:
            return []
        return [_event("state", name, at, state=new, previous=before, pid=pid,
                       detail=detail)]


def hello(conn: Connection, names: Sequence[str]) -> dict[str, Any]:
    h, st = conn.hello, conn.state
    return _event("hello", supervisor={
        "pid": h.pid, "version": h.version, "source": h.source, "run_dir": h.run_dir,
        "started": h.started, "shutting_down": st.shutting_down,
        "shutdown_why": st.shutdown_why},
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
        words = f"{event['previous'] or 'new'} -> {event['state']}: {event['detail']}"
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
        words = f"decision taken ({event.get('action') or '?'}): now {event['then']}"
    elif kind == "shutdown-begun":
        words = f"stopping everything ({event['why'] or 'reason unknown'})"
    elif kind == "shutdown-ended":
        words = f"everything has ended (exit status {event['exit_status']})"
    elif kind == "reload":
        parts = [f"{what} {', '.join(event[what])}" for what in ("added", "removed", "changed")
                 if event.get(what)]
        words = f"config read again: {'; '.join(parts) or 'nothing changed'}"
    elif kind == "lost":
        words = f"{event['count']} events are no longer kept by the supervisor"
    else:
        status = event.get("exit_status")
        words = "the supervisor has ended" + (f" (exit status {status})"
                                               if status is not None else
                                               " before everything had ended")
    return clean(f"{when} {name + ': ' if name else ''}{words}")


def _journal_after(run_dir: str, seen: int, last: int) -> list[dict[str, Any]]:
    """The entries numbered after ``seen`` up to ``last`` in the run directory's journal
    file, as far as it can be read (nothing when it cannot: never a traceback)."""
    from pathlib import Path

    from proctui.core.store.journal import NAME, Unreadable, read_file

    found: list[dict[str, Any]] = []
    try:
        for entry in read_file(Path(run_dir) / NAME):
            if isinstance(entry, dict) and isinstance(seq := entry.get("seq"), int) and \
                    seen < seq <= last:
                found.append(entry)
    except (Unreadable, OSError, ValueError):
        pass
    return found


def _names(value: object) -> list[str]:
    return [str(x) for x in value] if isinstance(value, list) else []


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


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


def stream(conn: Connection, as_json: bool, names: Sequence[str], out: TextIO,
           local: bool = True, host: str | None = None) -> int:
    """Print each event until the supervisor ends: exit status 0 when everything had
    ended (the last line says its exit status), 1 when the supervisor went away before
    (a crash is no normal end); a supervisor that falls silent raises NotAnswering (one
    line, exit status 2)."""
    from proctui.frontends.status import UnknownProcess

    for name in names:
        if name not in conn.names:
            raise UnknownProcess(name, conn.names)

    def say(event: dict[str, Any]) -> None:
        if names and event.get("name") is not None and event["name"] not in names:
            return
        if host is not None:  # several boxes in one stream: each event says whose
            event = {**event, "host": host}
        out.write((json.dumps(event) if as_json else
                   f"{host + '  ' if host is not None else ''}{text(event)}") + "\n")
        out.flush()  # a script reads each line as it comes

    _watch_reader(out, conn)
    conn.send(Greet("events"))  # said what it is: never closed for idleness
    say(hello(conn, names))
    seen = conn.state.journal_seq  # what the hello already tells
    follow = Transitions({v.name: state(v) for v in conn.ordered_views()})

    def catch_up() -> bool:
        """Ask for what is new; False when the supervisor closed the connection before
        answering (it ended: the rest is read from its journal on disk)."""
        nonlocal seen
        while conn.state.journal_seq > seen:
            try:
                page = conn.call(ReadEvents(seen))
            except NotAnswering:
                raise
            except NoSupervisor:
                return False
            if not page.ok:
                return True
            if page.lost:
                say(_event("lost", None, None, count=page.lost))
            for entry in page.events:
                for event in follow.events(entry):
                    say(event)
            if page.next <= seen:
                return True
            seen = page.next
        return True

    open_ = catch_up()
    while open_:
        message = conn.event()
        if message is None:
            break
        if conn.keep(pushes.decode(message)):
            open_ = catch_up()
    st = conn.state
    if local and st.journal_seq > seen:
        # The supervisor ended while pages were still to be asked for (its last state,
        # then the connection closed): the rest is in its journal on disk.
        for entry in _journal_after(conn.hello.run_dir, seen, st.journal_seq):
            for event in follow.events(entry):
                say(event)
    with contextlib.suppress(OSError, ValueError):
        say(_event("end", exit_status=st.exit_status if st.all_ended else None))
    return 0 if st.all_ended else 1
