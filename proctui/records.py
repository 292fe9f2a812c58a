"""``dataclass`` for proctui's frozen records: the standard decorator, without compiling
code for each class.

On Python 3.11 the standard decorator writes a frozen class's ``__init__``, ``__repr__``,
``__eq__``, ``__hash__``, ``__setattr__`` and ``__delattr__`` as source text and compiles
each: about 1 ms a class on an x86 host, ten times that on a small board, and proctui
defines about two hundred records before its first frame: 0.8 of a bare Textual app's
first frame on this host (tests/bench/startup.py; the figures are in RESULTS.md). Here the
standard decorator is asked for the class alone (its fields, ``__match_args__`` and
slots, through the public parameters that generate no method), and the methods are shared
functions that read the field names the decorator found, through ``dataclasses.fields``.
``fields``, ``replace`` and ``asdict`` work as on any dataclass; a test holds every record
of proctui to the behaviour of its standard twin.

Only ``frozen=True`` (with or without ``slots``) is made here; any other option, and a
class with ``__post_init__``, goes to the standard decorator unchanged.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from dataclasses import MISSING, FrozenInstanceError
from typing import Any, TypeVar, dataclass_transform, overload

T = TypeVar("T")
_STANDARD = dataclasses.dataclass
_SPEC = "__proctui_record__"
_OURS = frozenset({"frozen", "slots"})


@_STANDARD(frozen=True)
class _Frozen:
    """Its parameters are every record's (frozen, compared): a standard dataclass made on
    a record checks them, as on a standard frozen one."""


_PARAMS = _Frozen.__dataclass_params__  # type: ignore[attr-defined]


@overload
def dataclass(cls: type[T], /) -> type[T]: ...
@overload
def dataclass(cls: None = None, /, **options: Any) -> Callable[[type[T]], type[T]]: ...


@dataclass_transform(field_specifiers=(dataclasses.field, dataclasses.Field))
def dataclass(cls: type[T] | None = None, /, **options: Any) -> Any:
    """``dataclasses.dataclass``, without compiling code for ``frozen=True``."""
    def wrap(c: type[T]) -> type[T]:
        if set(options) - _OURS or not options.get("frozen") or \
                hasattr(c, "__post_init__"):
            made: type[T] = _STANDARD(c, **options)
            return made
        return _record(c, bool(options.get("slots")))
    return wrap if cls is None else wrap(cls)


class _Spec:
    """What the shared methods read of a record's class."""

    __slots__ = ("compared", "defaults", "factories", "hashed", "name", "names",
                 "positional", "shown")

    def __init__(self, cls: type, every: tuple[dataclasses.Field[Any], ...]) -> None:
        self.name = cls.__name__
        self.names = tuple(f.name for f in every)
        self.positional = tuple(f.name for f in every if not f.kw_only)
        self.defaults = {f.name: f.default for f in every if f.default is not MISSING}
        self.factories = {f.name: f.default_factory for f in every
                          if f.default_factory is not MISSING}
        self.shown = tuple(f.name for f in every if f.repr)
        self.compared = tuple(f.name for f in every if f.compare)
        self.hashed = tuple(f.name for f in every
                            if (f.compare if f.hash is None else f.hash))


def _record(cls: type[T], slots: bool) -> type[T]:
    own = dict(cls.__dict__)
    if not own.get("__doc__"):
        # Written below: the standard decorator's own would read a signature first.
        cls.__doc__ = cls.__name__
    for key in ("__setattr__", "__delattr__"):
        if key in own:  # the standard frozen decorator's refusal, in its words
            raise TypeError(f"Cannot overwrite attribute {key} in class {cls.__name__}")
    # Nothing compiled: no __init__, __repr__, __eq__ (and so no __hash__) asked for;
    # frozen (its __setattr__ and __delattr__ compiled, then replaced) only where the
    # standard decorator requires it: on a frozen base.
    frozen_base = any(getattr(getattr(base, "__dataclass_params__", None), "frozen", False)
                      for base in cls.__mro__[1:])
    made: Any = _STANDARD(cls, init=False, repr=False, eq=False, slots=slots,
                          frozen=frozen_base)
    made.__dataclass_params__ = _PARAMS
    every = dataclasses.fields(made)
    if any(not f.init for f in every):
        raise TypeError(f"{cls.__name__}: a field with init=False is not a record's")
    seen_default = False  # (the standard decorator checks it as it writes __init__)
    for f in every:
        if f.kw_only:
            continue
        if f.default is MISSING and f.default_factory is MISSING:
            if seen_default:
                raise TypeError(f"non-default argument {f.name!r} follows default argument")
        else:
            seen_default = True
    setattr(made, _SPEC, _Spec(made, every))
    # The standard rules: what the class body defines stays (a body's __eq__ alone
    # leaves __hash__ None, as there); a frozen record's __setattr__ and __delattr__
    # are always these.
    hash_given = "__hash__" in own and not (own["__hash__"] is None and "__eq__" in own)
    methods: dict[str, Callable[..., Any]] = {
        "__init__": _init, "__repr__": _repr, "__eq__": _eq}
    if slots:  # as the standard frozen slots classes: copy and pickle set fields back
        methods.update(__getstate__=_getstate, __setstate__=_setstate)
    for key, method in methods.items():
        if key not in own:
            setattr(made, key, method)
    if not hash_given:
        made.__hash__ = _hash
    made.__setattr__ = _setattr
    made.__delattr__ = _delattr
    if not own.get("__doc__"):
        made.__doc__ = made.__name__ + _signature(every)
    result: type[T] = made
    return result


def _spec_of(cls: type) -> _Spec:
    spec: _Spec = getattr(cls, _SPEC)
    return spec


def _init(self: object, *args: Any, **kwargs: Any) -> None:
    spec = _spec_of(type(self))
    if len(args) > len(spec.positional):
        most = len(spec.positional) + 1
        least = most - sum(1 for n in spec.positional
                           if n in spec.defaults or n in spec.factories)
        takes = f"from {least} to {most}" if least < most else f"{most}"
        raise TypeError(f"{spec.name}.__init__() takes {takes} positional argument"
                        f"{'s' if most > 1 else ''} but {len(args) + 1} were given")
    given = spec.positional[:len(args)]
    for key in kwargs:  # checked in the order Python's own argument parsing does
        if key not in spec.names:
            raise TypeError(f"{spec.name}.__init__() got an unexpected keyword argument "
                            f"{key!r}")
        if key in given:
            raise TypeError(f"{spec.name}.__init__() got multiple values for argument "
                            f"{key!r}")
    put = object.__setattr__
    for key, value in zip(given, args, strict=True):
        put(self, key, value)
    missing: list[str] = []
    for key in spec.names:
        if key in given:
            continue
        if key in kwargs:
            put(self, key, kwargs[key])
        elif key in spec.defaults:
            put(self, key, spec.defaults[key])
        elif key in spec.factories:
            put(self, key, spec.factories[key]())
        else:
            missing.append(key)
    if missing:  # worded as Python words a function's: the positional ones first
        positional = [k for k in missing if k in spec.positional]
        kind = "positional" if positional else "keyword-only"
        missing = positional or missing
        quoted = [repr(k) for k in missing]
        listed = quoted[0] if len(quoted) == 1 else \
            ", ".join(quoted[:-1]) + (", and " if len(quoted) > 2 else " and ") + quoted[-1]
        raise TypeError(f"{spec.name}.__init__() missing {len(missing)} required {kind} "
                        f"argument{'s' if len(missing) > 1 else ''}: {listed}")


def _repr(self: object) -> str:
    shown = _spec_of(type(self)).shown
    return (f"{type(self).__qualname__}("
            + ", ".join(f"{k}={getattr(self, k)!r}" for k in shown) + ")")


def _eq(self: object, other: object) -> object:
    if other.__class__ is not self.__class__:
        return NotImplemented
    compared = _spec_of(type(self)).compared
    same: bool = tuple(getattr(self, k) for k in compared) == \
        tuple(getattr(other, k) for k in compared)
    return same


def _hash(self: object) -> int:
    return hash(tuple(getattr(self, k) for k in _spec_of(type(self)).hashed))


def _setattr(self: object, name: str, value: object) -> None:
    # As the standard one: every name of a record itself, only the fields of a plain
    # subclass's instance.
    if _SPEC in type(self).__dict__ or name in _spec_of(type(self)).names:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")
    object.__setattr__(self, name, value)


def _delattr(self: object, name: str) -> None:
    if _SPEC in type(self).__dict__ or name in _spec_of(type(self)).names:
        raise FrozenInstanceError(f"cannot delete field {name!r}")
    object.__delattr__(self, name)


def _getstate(self: object) -> list[object]:
    return [getattr(self, k) for k in _spec_of(type(self)).names]


def _setstate(self: object, state: list[object]) -> None:
    for key, value in zip(_spec_of(type(self)).names, state, strict=True):
        object.__setattr__(self, key, value)


def _signature(every: tuple[dataclasses.Field[Any], ...]) -> str:
    """The standard decorator's docstring for a class without one: its signature."""
    params = []
    for f in every:
        text = f"{f.name}: {inspect.formatannotation(f.type)}"
        if f.default is not MISSING:
            text += f" = {f.default!r}"
        elif f.default_factory is not MISSING:
            text += " = <factory>"
        params.append(text)
    return "(" + ", ".join(params) + ")"
