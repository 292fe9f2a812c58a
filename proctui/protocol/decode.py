"""A client's message made a request of the command table, or the fault that says why it
is none. Every byte from a client is hostile: nothing here raises, every value is bounded
(lengths of names and lists, whole numbers within a double's exact range, finite
seconds), and its type is checked against the request's own annotations, so a field
added to a request is checked without a line here."""

from __future__ import annotations

import math
import re
import types
from collections.abc import Collection, Mapping
from dataclasses import MISSING, fields
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

from proctui import commands
from proctui.commands import Request
from proctui.core.reply import Done, Fault, failed
from proctui.protocol.link import LINK
from proctui.protocol.wire import Twice

MAX_NAME = 256  # characters in a process name or a client's kind
MAX_NAMES = 4096  # names in one watch request
MAX_NUMBER = 1 << 53  # integers beyond a double's exact range are not line numbers
_ASCII_WORD = re.compile(r"[a-z_]{1,32}")


class _Bad(Exception):
    pass


def decode(message: Mapping[str, Any]) -> Request[Any] | Done:
    """The request a client's message holds, or the fault that says why it holds none.
    Never raises: every byte from a client is hostile."""
    op = message.get("op")
    if isinstance(message, Twice):
        # Refused whole: to take either of the two would act on a guess.
        said = f"{op}: " if isinstance(op, str) and _ASCII_WORD.fullmatch(op) and \
            message.key != "op" else ""
        return failed(Fault.BAD_REQUEST, f"{said}the key {message.key[:40]!r} is given twice")
    if not isinstance(op, str) or not _ASCII_WORD.fullmatch(op):
        return failed(Fault.UNKNOWN_COMMAND, f"unknown command {str(op)[:40]!r}")
    cls = commands.WIRE.get(op) or LINK.get(op)
    if cls is None:
        return failed(Fault.UNKNOWN_COMMAND, f"unknown command {op!r}")
    values = fields_of(cls, message, op)
    if isinstance(values, Done):
        return values
    request = cls(**values)
    return request.check() or request


def fields_of(cls: type, message: Mapping[str, Any], op: str) -> dict[str, Any] | Done:
    """The values ``message`` gives for the fields of the dataclass ``cls``, each checked
    against its annotation and bounded; or the fault that says which is wrong (``op``
    names it). Keys that are no field are ignored. Never raises."""
    hints = _hints(cls)
    values: dict[str, Any] = {}
    for f in fields(cls):
        if f.name not in message:
            if f.default is MISSING and f.default_factory is MISSING:
                return failed(Fault.BAD_REQUEST, f"{op}: {f.name} is missing")
            continue
        try:
            values[f.name] = _value(message[f.name], hints[f.name])
        except _Bad:
            return failed(Fault.BAD_REQUEST if not _is_number(message[f.name]) else
                          Fault.BAD_VALUE,
                          f"{op}: {f.name} is not {_describe(hints[f.name])}")
    return values


def json_schema(cls: type, said: Mapping[str, str] | None = None,
                fixed: Collection[str] = ()) -> dict[str, Any]:
    """The JSON schema of the fields of the dataclass ``cls`` (but ``fixed``), as
    ``fields_of`` checks them: the same types and bounds, so what the schema allows is
    what is taken. ``said``: a description of each field."""
    hints = _hints(cls)
    properties: dict[str, Any] = {}
    required: list[str] = []
    for f in fields(cls):
        if f.name in fixed:
            continue
        schema = _schema(hints[f.name])
        if said and f.name in said:
            schema["description"] = said[f.name]
        if f.default is not MISSING and f.default is not None and \
                isinstance(f.default, str | int | float | bool):
            schema["default"] = f.default
        properties[f.name] = schema
        if f.default is MISSING and f.default_factory is MISSING:
            required.append(f.name)
    out: dict[str, Any] = {"type": "object", "properties": properties,
                           "additionalProperties": False}
    if required:
        out["required"] = required
    return out


def _schema(hint: Any) -> dict[str, Any]:
    origin = get_origin(hint)
    if origin in (Union, types.UnionType):
        return {"anyOf": [_schema(option) for option in get_args(hint)]}
    if origin is Literal:
        return {"type": "string", "enum": list(get_args(hint))}
    if origin is list:
        (item,) = get_args(hint)
        return {"type": "array", "items": _schema(item), "maxItems": MAX_NAMES}
    if origin is dict:
        _key, item = get_args(hint)
        return {"type": "object", "additionalProperties": _schema(item),
                "maxProperties": MAX_NAMES}
    return dict(_SIMPLE[hint])


_SIMPLE: dict[Any, dict[str, Any]] = {
    type(None): {"type": "null"}, bool: {"type": "boolean"},
    int: {"type": "integer", "minimum": -MAX_NUMBER, "maximum": MAX_NUMBER},
    float: {"type": "number", "minimum": -MAX_NUMBER, "maximum": MAX_NUMBER},
    str: {"type": "string", "maxLength": MAX_NAME}}


_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    hints = _HINTS.get(cls)
    if hints is None:
        hints = _HINTS[cls] = get_type_hints(cls)
    return hints


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _value(value: object, hint: Any) -> object:
    """``value`` if it is of type ``hint`` (and within bounds), else _Bad."""
    origin = get_origin(hint)
    if origin in (Union, types.UnionType):
        for option in get_args(hint):
            try:
                return _value(value, option)
            except _Bad:
                continue
        raise _Bad
    if origin is Literal:
        if value in get_args(hint) and type(value) is str:
            return value
        raise _Bad
    if hint is type(None):
        if value is None:
            return None
        raise _Bad
    if hint is bool:
        if isinstance(value, bool):
            return value
        raise _Bad
    if hint is int:
        if isinstance(value, int) and not isinstance(value, bool) and \
                abs(value) <= MAX_NUMBER:
            return value
        raise _Bad
    if hint is float:
        # An int beyond a double's exact range is no number of seconds, and float() of a
        # 400-digit one raised OverflowError.
        if isinstance(value, int) and not isinstance(value, bool) and \
                abs(value) <= MAX_NUMBER:
            return float(value)
        if isinstance(value, float) and math.isfinite(value):
            return value
        raise _Bad
    if hint is str:
        if isinstance(value, str) and len(value) <= MAX_NAME:
            return value
        raise _Bad
    if origin is list:
        (item,) = get_args(hint)
        if isinstance(value, list) and len(value) <= MAX_NAMES:
            return [_value(v, item) for v in value]
        raise _Bad
    if origin is dict:
        key, item = get_args(hint)
        if isinstance(value, dict) and len(value) <= MAX_NAMES:
            return {_value(k, key): _value(v, item) for k, v in value.items()}
        raise _Bad
    raise _Bad


def _describe(hint: Any) -> str:
    origin = get_origin(hint)
    if origin in (Union, types.UnionType):
        return " or ".join(_describe(h) for h in get_args(hint))
    if origin is Literal:
        return " or ".join(repr(a) for a in get_args(hint))
    if origin is list:
        return "a list of names"
    if origin is dict:
        return "a map of names to line numbers"
    return {bool: "true or false", int: "a whole number", float: "a number of seconds",
            str: f"a string of at most {MAX_NAME} characters",
            type(None): "null"}.get(hint, "valid")
