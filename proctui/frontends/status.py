"""What a running supervisor's processes are doing, for people and scripts: ``status``
(its table, and the versioned ``--json``), what ``up`` reports once everything has
settled, ``is-ready`` and ``why``. Each reads only the views a supervisor pushes.

The JSON schema (``"schema": 1``) is documented in the README; a field is only ever added
within one schema number, never renamed or given another meaning.
"""

from __future__ import annotations

import json
import shlex
import time
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from proctui.core.life.asks import Ask
from proctui.core.life.outcome import Outcome, OutcomeKind, signal_name
from proctui.core.life.stop import Phase
from proctui.core.output.text import clean
from proctui.core.snapshot import CoreSnapshot
from proctui.core.view import ProcessView
from proctui.frontends.words import countdown, duration, look, running_words
from proctui.protocol import pushes
from proctui.protocol.link import Ping
from proctui.protocol.pushes import State
from proctui.remote.client import Connection, NotAnswering

SCHEMA = 1
# Every value "state" can have: the phase, with an ended process's two endings that
# scripts most need told apart.
STATES = ("waiting", "starting", "running", "stopping", "deciding", "killing", "backoff",
          "held", "ended", "failed", "abandoned")
SETTLE_TIMEOUT = 60.0  # seconds ``up`` waits for processes still starting


def state(v: ProcessView) -> str:
    if v.phase is Phase.ENDED and v.outcome is not None:
        if v.outcome.kind is OutcomeKind.FAILED_TO_START:
            return "failed"
        if v.outcome.left_running:
            return "abandoned"
    return v.phase.value


def outcome_json(o: Outcome | None) -> dict[str, Any] | None:
    if o is None:
        return None
    st = o.status
    return {"kind": o.kind.value,
            "exit_code": st.code if st is not None else None,
            "signal": signal_name(st.signal) if st is not None and st.signal else None,
            "after_s": round(o.duration, 3) if o.duration is not None else None,
            "clean": o.clean, "text": o.text}


def ready(v: ProcessView) -> bool | None:
    """None without a ready check; else whether it said it was ready (this run)."""
    if not v.ready_check:
        return None
    return v.ready_at is not None


def is_ready(v: ProcessView) -> bool:
    """Ready: it said so, or it runs and has no check to pass."""
    if v.ready_at is not None:
        return True
    return v.phase is Phase.RUNNING and not v.ready_check


def process_json(v: ProcessView, now: float) -> dict[str, Any]:
    usage = v.usage
    return {
        "name": v.name, "state": state(v), "phase": v.phase.value, "pid": v.pid,
        "uptime_s": round(now - v.started_at, 3) if v.alive and v.started_at else None,
        "ready": ready(v), "ready_check": v.ready_check or None,
        "waiting_for": list(v.waiting_for),
        "deadline_in_s": round(v.deadline - now, 3) if v.deadline is not None else None,
        "deadline_action": v.deadline_action.value if v.deadline is not None else None,
        "decision": "kill|extend|abandon|wait" if v.phase is Phase.DECIDING else None,
        "decision_since_s": round(now - v.decision_since, 3)
        if v.phase is Phase.DECIDING and v.decision_since is not None else None,
        "restart_in_s": round(max(0.0, v.restart_at - now), 3)
        if v.restart_at is not None else None,
        "outcome": outcome_json(v.outcome),
        "restarts": v.restarts,
        "cpu_percent": round(usage.cpu_percent, 1) if usage is not None else None,
        "memory_bytes": usage.rss_bytes if usage is not None else None,
        "silent_for_s": round(now - v.silent_since, 3) if v.silent_since is not None
        else None,
        "held": v.held or None, "status": v.status, "notify_dropped": v.notify_dropped,
        "detail": detail(v, now)}


def status_json(conn: Connection, now: float) -> dict[str, Any]:
    return status_of(conn.hello, conn.state, conn.ordered_views(), now)


def status_of(hello: pushes.Hello, st: State | CoreSnapshot, views: Sequence[ProcessView],
              now: float) -> dict[str, Any]:
    """``status --json``: from the supervisor's hello, its state (as pushed, or as a
    snapshot of it) and its views."""
    return {"schema": SCHEMA, "supervisor": {
        "pid": hello.pid, "version": hello.version,
        "source": hello.source, "run_dir": hello.run_dir,
        "started": hello.started, "consoles": st.consoles,
        "shutting_down": st.shutting_down, "shutdown_why": st.shutdown_why,
        "all_ended": st.all_ended,
        "exit_status": st.exit_status if st.all_ended else None,
        "troubles": list(st.troubles)},
        "processes": [process_json(v, now) for v in views],
        "asks": [ask_json(a, now) for a in st.asks]}


def ask_json(a: Ask, now: float) -> dict[str, Any]:
    """An agent's request for a decision, for scripts and agents: times as seconds from
    now, never a clock's reading."""
    return {"id": a.id, "choice": a.choice, "name": a.name or None, "why": a.why,
            "asker": a.asker, "state": a.state, "pid": a.pid,
            "asked_s_ago": round(now - a.asked_at, 3),
            "lapses_in_s": round(a.expires_at - now, 3) if a.waiting else None,
            "answered_s_ago": round(now - a.answered_at, 3)
            if a.answered_at is not None else None,
            "answer": a.answer or None}


def ask_line(a: Ask, now: float) -> str:
    """A request waiting for the operator, in a line of ``status``."""
    return (f"request {a.id}: {a.asker} asks to {a.what}: {a.why!r} (asked "
            f"{duration(now - a.asked_at)} ago, lapses in "
            f"{duration(max(0.0, a.expires_at - now))}): proctui answer {a.id} grant|deny")


# -- waiting on pushed views --------------------------------------------------------------


def follow(conn: Connection, done: Callable[[list[ProcessView]], bool],
           timeout: float) -> bool:
    """Read the views the supervisor pushes until ``done(views)`` or ``timeout``
    seconds; False on timeout or when the supervisor ended."""
    deadline = time.monotonic() + timeout
    while not done(conn.ordered_views()):
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        try:
            message = conn.receive(timeout=min(left, 1.0))
        except NotAnswering:
            if time.monotonic() - conn.heard >= conn.timeout:
                raise
            try:
                conn.send(Ping())  # quiet, not gone: a ping proves it answers
            except (BrokenPipeError, ConnectionResetError):
                return False  # it closed its end: it has ended (not our stdout's pipe)
            continue
        if message is None:
            return False
        conn.keep(pushes.decode(message))
    return True


# -- up -----------------------------------------------------------------------------------


def settled(views: Sequence[ProcessView]) -> bool:
    """Nothing is still starting, or what is waits on an operator: a leftover of an
    earlier run parked at a decision or held keeps its successor from starting."""
    if all(v.phase is not Phase.STARTING for v in views):
        return True
    return any(v.leftover and v.phase in (Phase.DECIDING, Phase.HELD) for v in views)


def up_report(views: Sequence[ProcessView]) -> tuple[int, list[str], list[str]]:
    """(processes started, lines for stdout, failures for stderr), once settled."""
    started, lines, failures = 0, [], []
    for v in views:
        if v.leftover:
            # An earlier run's process, not one of these: said, never counted as started.
            lines.append(f"{v.name}: {v.outcome.text}" if v.outcome is not None else
                         f"{v.name}: an earlier run's process, {v.phase.value}")
            continue
        o = v.outcome
        if o is not None and o.kind is OutcomeKind.FAILED_TO_START:
            failures.append(f"{v.name}: {o.text}")
        elif v.phase is Phase.WAITING:
            lines.append(f"{v.name}: waiting for {', '.join(v.waiting_for) or 'its turn'}")
        elif v.phase is Phase.STARTING:
            lines.append(f"{v.name}: not started yet: an earlier run's process waits for "
                         "a decision (proctui status)")
        elif v.phase is Phase.ENDED and o is None and v.pid is None:
            # Ended before it ever started (what it needed failed, a stop came first):
            # counted as started, and said nowhere ("1 of 2 started" with none running).
            lines.append(f"{v.name}: {_not_started(v)}")
        else:
            started += 1
            if v.phase is Phase.ENDED and o is not None:
                lines.append(f"{v.name}: {o.text}")
    return started, lines, failures


# -- why and is-ready ---------------------------------------------------------------------


def why(v: ProcessView, now: float) -> str:
    """Why it is not running, or not ready: a line or two."""
    o = v.outcome
    phase = v.phase
    if phase is Phase.WAITING:
        return f"waiting for {', '.join(v.waiting_for) or 'its turn'} before it starts"
    if phase is Phase.STARTING:
        return f"waiting for {v.waiting_for[0]} before it starts" if v.waiting_for else \
            "starting"
    if phase is Phase.BACKOFF:
        due = max(0.0, (v.restart_at or now) - now)
        last = f" after {o.text}" if o is not None else ""
        return f"backoff: restart in {due:.1f}s{last} (restarts so far: {v.restarts})"
    if phase is Phase.HELD:
        return f"held: {v.held}"
    if phase is Phase.DECIDING:
        since = f" for {now - v.decision_since:.0f}s" if v.decision_since else ""
        return (f"deciding: its stop timeout was reached; a decision has been waiting"
                f"{since} (proctui kill|extend|abandon {shlex.quote(v.name)})")
    if phase.stopping:
        cd = countdown(v, now)
        return f"{phase.value}: {cd.text}" if cd is not None else phase.value
    if phase is Phase.ENDED:
        return f"ended: {o.text}" if o is not None else _not_started(v)
    if v.ready_check and v.ready_at is None:
        up = f" for {now - v.started_at:.1f}s" if v.started_at else ""
        return f"running{up}, not ready yet: waiting for {v.ready_check}"
    return f"running (pid {v.pid}) and ready"


def not_ready(views: Sequence[ProcessView], now: float) -> list[str]:
    return [f"{v.name}: {why(v, now)}" for v in views if not is_ready(v)]


def check_ready(conn: Connection, names: Sequence[str], wait: bool, timeout: float,
                out: TextIO) -> int:
    """``is-ready``: 0 when every named process (all without names) is ready, else 1 with
    one line naming who is not and why; ``wait``: until ready or ``timeout``."""
    for name in names:
        if name not in conn.names:
            raise UnknownProcess(name, conn.names)

    def chosen(views: Sequence[ProcessView]) -> list[ProcessView]:
        return [v for v in views if not names or v.name in names]

    def never(views: Sequence[ProcessView]) -> bool:
        # Ended and not ready (it failed, or never started: what it needed failed):
        # nothing will make it ready but a start, and waiting the whole timeout for it
        # only delayed the script's answer.
        return any(v.phase is Phase.ENDED and not is_ready(v) for v in views)

    if wait:
        follow(conn, lambda views: all(is_ready(v) for v in chosen(views)) or
               never(chosen(views)), timeout)
    views = chosen(conn.ordered_views())
    missing = not_ready(views, time.monotonic())
    if not missing:
        out.write(f"ready: {', '.join(v.name for v in views)}\n")
        return 0
    waited = "" if not wait else " (it has ended: no use waiting)" if never(views) else \
        f" after waiting {timeout:g}s"
    out.write(clean(f"not ready{waited}: {'; '.join(missing)}") + "\n")
    return 1


def explain(conn: Connection, name: str, out: TextIO) -> int:
    """``why NAME``: why it is not running, or not ready."""
    view = conn.views.get(name)
    if view is None:
        raise UnknownProcess(name, conn.names)
    out.write(clean(f"{name}: {why(view, time.monotonic())}") + "\n")
    return 0


class UnknownProcess(Exception):
    def __init__(self, name: str, known: list[str]) -> None:
        shown = ", ".join(known[:12]) + (", ..." if len(known) > 12 else "")
        super().__init__(f"no process named {name!r} (there are: {shown or 'none'})")


def detail(view: ProcessView, now: float) -> str:
    """Where a process is, in the words of the console's table."""
    phase = view.phase
    if phase is Phase.RUNNING:
        return running_words(view, now)
    if phase is Phase.DECIDING:
        waited = now - view.decision_since if view.decision_since is not None else None
        so_far = "" if waited is None else \
            f", {f'{max(0, int(waited))}s' if waited < 60 else duration(waited)} so far"
        return (f"stop timeout reached: waiting for a decision{so_far} (proctui "
                f"kill|extend|abandon {shlex.quote(view.name)}, or proctui attach)")
    if phase.stopping:
        cd = countdown(view, now)
        return cd.text if cd is not None else phase.value
    if phase in (Phase.WAITING, Phase.STARTING) and view.waiting_for:
        return f"waiting for {', '.join(view.waiting_for)}"
    if phase is Phase.WAITING:
        return "waiting"
    if phase is Phase.BACKOFF:
        due = f"restarts in {max(0.0, (view.restart_at or now) - now):.1f}s"
        return f"{due} (last: {view.outcome.text})" if view.outcome else due
    if phase is Phase.HELD:
        return view.held
    if view.outcome is not None:
        return view.outcome.text
    return _not_started(view) if phase is Phase.ENDED else phase.value


def _not_started(view: ProcessView) -> str:
    """A process that ended without ever starting, and why ("db is not started: it
    ended (failed to start: ...)"): "never started" alone left the operator guessing."""
    return f"not started: {view.not_started}" if view.not_started else "not started"


def status(conn: Connection, as_json: bool, out: TextIO) -> int:
    now = time.monotonic()
    if as_json:
        out.write(json.dumps(status_json(conn, now), indent=2) + "\n")
        return 0
    from proctui.frontends.printer import cells, terminal_columns, wrap_words

    views = conn.ordered_views()
    rows = [(v.name, look(v).label, str(v.pid or "-"), detail(v, now)) for v in views]
    head = ("NAME", "STATE", "PID", "")
    # In terminal columns: a 日本語 name is two a character (its row's columns went out).
    widths = [max(cells(r[i]) for r in [head, *rows]) for i in range(3)]
    # On a terminal, folded at spaces: a detail under the detail column (if that leaves
    # it room), the last line under itself (the terminal cut "attache" / "d").
    columns = terminal_columns(out)
    for row in [head, *rows]:
        line = "  ".join(cell + " " * (widths[i] - cells(cell))
                         for i, cell in enumerate(row[:3]))
        used = cells(line)
        hang = used + 2 if columns and columns - used - 2 >= 30 else 4
        for piece in wrap_words(clean(f"{line}  {row[3]}".rstrip()), columns, hang):
            out.write(piece + "\n")
    hello, state = conn.hello, conn.state
    up = duration(time.time() - (hello.started or time.time()))
    consoles = state.consoles
    # Its own console (proctui run) is no client: "0 consoles attached" beside it read
    # as if nobody were looking.
    attached = f"{consoles} console{'s' if consoles != 1 else ''} attached"
    words = [f"supervisor pid {hello.pid}, up {up}", f"run dir {hello.run_dir}",
             f"its own console and {attached}" if hello.console else attached]
    if state.shutting_down:
        why = state.shutdown_why
        words.append("stopping everything" + (f" ({why})" if why else ""))
    for piece in wrap_words(clean(" · ".join(words)), columns, 2):
        out.write(piece + "\n")
    for trouble in troubles(state):
        for piece in wrap_words(clean(f"warning: {trouble}"), columns, 2):
            out.write(piece + "\n")
    for ask in state.asks:
        if ask.waiting:
            for piece in wrap_words(clean(ask_line(ask, now)), columns, 2):
                out.write(piece + "\n")
    return 0


def troubles(state: State) -> list[str]:
    """What keeps the supervisor from keeping a promise (a full disk)."""
    return list(state.troubles)
