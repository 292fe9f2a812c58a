"""The control socket's wire format: newline-delimited JSON, one object a line, versioned.

Snapshots are plain data already; this module turns them into JSON objects and back.
Times stay monotonic. A client on the same machine (the same ``boot`` id in the hello)
shares the clock; one on another machine (over SSH) translates every time it receives
into its own clock on receipt: hello, views and state carry the server's ``now``, and
``shift_times`` moves a view's times (``proctui.remote.connection`` does both).
"""

from __future__ import annotations

import json
import math
import types
from collections.abc import Callable
from dataclasses import fields, is_dataclass, replace
from functools import cache
from typing import Any, TypeGuard, Union, get_args, get_origin, get_type_hints

from proctui.config.spec import MAX_SECONDS
from proctui.core.life.asks import STATES, Ask, ask_dict
from proctui.core.life.outcome import ExitStatus, Outcome, OutcomeKind, Reason, Sent
from proctui.core.life.stop import DeadlineAction, Phase
from proctui.core.view import ProcessView, Usage

# 2: replies carry a fault code, tail and journal replies are pages, ping. 3: via (who
# asks: the SSH client, read-only), and the server's monotonic ``now`` and ``boot`` id
# for clients on another machine. 4: the command table is proctui.commands (interrupt,
# events from a sequence number), pushes are typed (protocol/pushes.py), and the state
# carries the whole snapshot but its views.
VERSION = 4
SOCKET = "control.sock"  # in the run directory
MAX_LINE = 1 << 20  # bytes in one message; longer lines drop the connection
MAX_NUMBER = 1 << 53  # whole numbers beyond a double's exact range are no count, pid or time
_VIEW_FIELDS = [f.name for f in fields(ProcessView)]
# The view's monotonic times: a client on another machine moves them into its own clock.
TIME_FIELDS = ("started_at", "ended_at", "stop_requested_at", "kill_sent_at", "deadline",
               "window_start", "restart_at", "ready_at", "decision_since")
__all__ = ["MAX_LINE", "MAX_NUMBER", "MAX_SECONDS", "SOCKET", "TIME_FIELDS", "VERSION",
           "Twice", "boot_id", "dumps", "finite", "loads", "outcome_from_dict",
           "outcome_to_dict", "shift_times", "view_from_dict", "view_to_dict", "whole"]


def dumps(message: dict[str, Any]) -> bytes:
    # backslashreplace: a lone surrogate (from a client's name, say) cannot stop a reply.
    text = json.dumps(message, ensure_ascii=False, separators=(",", ":"))
    return text.encode("utf-8", "backslashreplace") + b"\n"


class Twice(dict[str, Any]):
    """A message in which an object names a key twice: JSON keeps the last one, so
    ``{"op": "stop", "name": "a", "name": "b"}`` would stop b, though it also says a.
    ``key`` is the first such key; the request is refused, not guessed at."""

    key: str = ""


def loads(line: bytes) -> dict[str, Any]:
    """One message; raises ValueError for anything that is not a JSON object. A message
    with a key given twice in any of its objects comes back as a ``Twice``."""
    twice: list[str] = []

    def pairs_once(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        made = dict(pairs)
        if len(made) != len(pairs) and not twice:
            seen: set[str] = set()
            for key, _value in pairs:
                if key in seen:
                    twice.append(key)
                    break
                seen.add(key)
        return made

    try:
        value: object = json.loads(line, object_pairs_hook=pairs_once)
    except RecursionError:  # nested past any reason: a bad message, not a crash
        raise ValueError("nested too deep") from None
    if not isinstance(value, dict):
        raise ValueError("not a JSON object")
    if twice:
        marked = Twice(value)
        marked.key = twice[0]
        return marked
    return value


def outcome_to_dict(o: Outcome) -> dict[str, Any]:
    return {
        "kind": o.kind.value, "text": o.text, "pid": o.pid, "duration": o.duration,
        "status": None if o.status is None else {
            "code": o.status.code, "signal": o.status.signal,
            "core_dumped": o.status.core_dumped, "known": o.status.known},
        "sent": [[int(s.signal), s.at, s.reason.value] for s in o.sent],
        "left_behind": list(o.left_behind), "left_pids": list(o.left_pids),
        "success_code": o.success_code,
    }


def outcome_from_dict(d: dict[str, Any]) -> Outcome:
    """The outcome ``d`` holds, every field of its type; else ValueError (nothing else:
    what a supervisor sends may be anything)."""
    try:
        status = d.get("status")
        outcome = Outcome(
            kind=OutcomeKind(d["kind"]), text=str(d["text"]), pid=d.get("pid"),
            status=None if status is None else ExitStatus(**status),
            duration=d.get("duration"),
            sent=tuple(Sent(int(sig), float(at), Reason(reason)) for sig, at, reason in
                       d.get("sent", [])),
            left_behind=tuple(d.get("left_behind", ())),
            left_pids=tuple(d.get("left_pids", ())),
            success_code=_bool_or_none(d.get("success_code")),
        )
    except (KeyError, TypeError, ArithmeticError, AttributeError) as e:
        raise ValueError(f"not an outcome: {type(e).__name__}") from None
    if not fits(outcome, Outcome):
        raise ValueError("not an outcome: a field of another type")
    return outcome


def _bool_or_none(value: object) -> bool | None:
    return value if isinstance(value, bool) else None


def view_to_dict(v: ProcessView) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in _VIEW_FIELDS:
        value = getattr(v, name)
        if isinstance(value, Phase | DeadlineAction):
            value = value.value
        elif isinstance(value, Outcome):
            value = outcome_to_dict(value)
        elif isinstance(value, Usage):
            value = [value.cpu_percent, value.rss_bytes, value.members]
        elif isinstance(value, tuple):
            value = list(value)
        out[name] = value
    return out


def view_from_dict(d: dict[str, Any]) -> ProcessView:
    """The view ``d`` holds (ValueError without a name and a phase). A field that is not
    of its type (a time that is no finite number, a pid that is a string) keeps its
    default: a console's arithmetic on what a supervisor sent must never raise."""
    name, phase = d.get("name"), d.get("phase")
    if not isinstance(name, str) or not isinstance(phase, str):
        raise ValueError("a view without a name or a phase")
    cmd = d.get("cmd", "")
    base = ProcessView(name=name, phase=Phase(phase), cmd=cmd if isinstance(cmd, str) else "")
    checks = _view_checks()
    changes: dict[str, Any] = {}
    for field in _VIEW_FIELDS:
        if field not in d or field in ("name", "phase", "cmd"):
            continue
        value = d[field]
        try:
            if field == "deadline_action":
                value = DeadlineAction(value)
            elif field == "outcome" and value is not None:
                value = outcome_from_dict(value)
            elif field == "usage" and value is not None:
                value = Usage(*value)
            elif isinstance(value, list):
                value = tuple(value)
        except (ValueError, TypeError):
            continue
        if checks[field](value):
            changes[field] = value
    return replace(base, **changes)


@cache
def _view_checks() -> dict[str, Callable[[object], bool]]:
    hints = _hints(ProcessView)
    return {name: _checker(hints[name]) for name in _VIEW_FIELDS}


@cache
def _hints(cls: type) -> dict[str, Any]:
    return get_type_hints(cls)


def whole(value: object) -> TypeGuard[int]:
    """A whole number of JSON (not a bool) within a double's exact range."""
    return isinstance(value, int) and not isinstance(value, bool) and abs(value) <= MAX_NUMBER


def finite(value: object) -> TypeGuard[int | float]:
    """A number of JSON (not a bool), finite and within a double's exact range: no count of
    seconds or monotonic time is larger, and arithmetic with it never raises."""
    if isinstance(value, float):
        return math.isfinite(value) and abs(value) <= MAX_NUMBER
    return whole(value)


def fits(value: object, hint: Any) -> bool:
    """Is ``value`` of type ``hint`` (a field's annotation), all the way down?"""
    return _checker(hint)(value)


@cache
def _checker(hint: Any) -> Callable[[object], bool]:
    """``fits`` for one annotation, made once: a view's every field is checked in every
    push, and the big ones (2,000 views at a shutdown) must not hold up the reader."""
    origin = get_origin(hint)
    if origin in (Union, types.UnionType):
        args = get_args(hint)
        options = [_checker(option) for option in args if option is not type(None)]
        if len(options) == 1:
            only = options[0]
            if type(None) in args:  # most fields: X | None
                return lambda value: value is None or only(value)
            return only

        def any_of(value: object) -> bool:
            return (value is None and type(None) in args) or \
                any(check(value) for check in options)

        return any_of
    if origin is tuple:
        item = _checker(get_args(hint)[0])
        return lambda value: isinstance(value, tuple) and all(map(item, value))
    if hint is type(None):
        return lambda value: value is None
    if hint is bool:
        return lambda value: value is True or value is False
    if hint is int:
        return whole
    if hint is float:
        return finite
    if isinstance(hint, type) and is_dataclass(hint):
        parts = tuple((f.name, _checker(_hints(hint)[f.name])) for f in fields(hint))
        return lambda value: isinstance(value, hint) and all(
            check(getattr(value, name)) for name, check in parts)
    if isinstance(hint, type):
        return lambda value: isinstance(value, hint)
    return lambda value: False


def shift_times(view: dict[str, Any], offset: float,
                times: tuple[str, ...] = TIME_FIELDS) -> None:
    """Move a view's monotonic times (in its wire form) by ``offset`` seconds: from the
    server's clock into the client's. Anything that is not a number is left for
    ``view_from_dict`` to judge."""
    for name in times:
        value = view.get(name)
        if finite(value):
            view[name] = value + offset


ASK_TIMES = ("asked_at", "expires_at", "answered_at")  # monotonic, as the views' times
_ASK_TEXT = {"choice": 16, "name": 256, "why": 1024, "asker": 512, "state": 16,
             "answer": 1024}


def ask_to_dict(a: Ask) -> dict[str, Any]:
    return ask_dict(a)


def ask_from_dict(d: object) -> Ask | None:
    """The request ``d`` holds, its strings cut short; None unless it has an id, a known
    state and finite times (what a supervisor sends may be anything)."""
    if not isinstance(d, dict):
        return None
    number, state = d.get("id"), d.get("state")
    asked, expires = d.get("asked_at"), d.get("expires_at")
    if not whole(number) or state not in STATES or not finite(asked) or not finite(expires):
        return None
    text = {key: value[:limit] if isinstance(value := d.get(key), str) else ""
            for key, limit in _ASK_TEXT.items()}
    answered, pid, run = d.get("answered_at"), d.get("pid"), d.get("run")
    return Ask(id=number, choice=text["choice"], name=text["name"], why=text["why"],
               asker=text["asker"], asked_at=float(asked), expires_at=float(expires),
               state=text["state"],
               answered_at=float(answered) if finite(answered) else None,
               answer=text["answer"], pid=pid if whole(pid) else None,
               run=run if whole(run) else 0)


def shift_ask_times(state: dict[str, Any], offset: float) -> None:
    """Move the times of a state's requests by ``offset`` seconds, as ``shift_times``
    does a view's."""
    asks = state.get("asks")
    for ask in asks if isinstance(asks, list) else ():
        if isinstance(ask, dict):
            shift_times(ask, offset, ASK_TIMES)


def boot_id() -> str:
    """This boot's id: two processes with the same one share the monotonic clock."""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as f:
            return f.read(64).strip()
    except (OSError, ValueError):
        return ""
