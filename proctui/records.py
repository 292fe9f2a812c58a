"""``dataclass`` for proctui's frozen records, made without compiling code.

The standard decorator writes ``__init__``, ``__repr__``, ``__eq__``, ``__hash__``,
``__setattr__`` and ``__delattr__`` as source text and compiles each: about 1 ms a class
on an x86 host, ten times that under emulation on a small board, and proctui defines
about a hundred records before its first frame. Here the fields are collected as the
standard decorator collects them (``_collect``), the slots class is made once, and the
methods are shared functions that read the field names from the class. The classes are real
dataclasses (``fields``, ``replace`` and ``asdict`` work) and behave as the standard
frozen ones do; a test compares every record of proctui with its standard twin.

Anything else (not frozen, ``eq=False``, ``order``, ``kw_only``, ``__post_init__``, a
field with ``init=False`` or its own ``hash``, an ``InitVar`` or ``KW_ONLY``, a standard
frozen base, ``__slots__`` of its own) goes to the standard decorator unchanged, and so
does whatever it alone reads rightly (an annotation that names ClassVar, InitVar or
KW_ONLY in any other way), before anything of the class is changed. A standard dataclass
may be made on a record as on a standard frozen one.
"""

from __future__ import annotations

import abc
import dataclasses
import inspect
import re
import sys
import types
from collections.abc import Callable
from dataclasses import MISSING, FrozenInstanceError
from typing import Any, ClassVar, TypeVar, dataclass_transform, get_origin, overload

T = TypeVar("T")
_STANDARD = dataclasses.dataclass
_MARK = "__proctui_record__"  # (init names, defaults, factories, repr names, compare names)
_FIELD = dataclasses._FIELD  # type: ignore[attr-defined]  # a field, not a ClassVar or InitVar
_CLASSVAR = dataclasses._FIELD_CLASSVAR  # type: ignore[attr-defined]
_FIRST_NAME = re.compile(r"^(?:\s*(\w+)\s*\.)?\s*(\w+)")  # the standard one's, for a string
_SPECIAL = ("ClassVar", "InitVar", "KW_ONLY")  # annotations only the standard one reads


@_STANDARD(init=False, repr=False, eq=False, frozen=True)
class _Params:
    """Its parameters are every record's: frozen, so that the standard decorator refuses
    a mutable dataclass made on a record, at once and in its own words, as it refuses
    one on a standard frozen dataclass (the methods are made here, not by it)."""


_PARAMS = _Params.__dataclass_params__  # type: ignore[attr-defined]


@overload
def dataclass(cls: type[T], /) -> type[T]: ...
@overload
def dataclass(cls: None = None, /, **options: Any) -> Callable[[type[T]], type[T]]: ...


@dataclass_transform(field_specifiers=(dataclasses.field, dataclasses.Field))
def dataclass(cls: type[T] | None = None, /, **options: Any) -> Any:
    """``dataclasses.dataclass``, quicker for ``frozen=True`` (with or without slots)."""
    def wrap(c: type[T]) -> type[T]:
        return _make(c, options)
    return wrap if cls is None else wrap(cls)


def _make(cls: type[T], options: dict[str, Any]) -> type[T]:
    collected = _collect(cls) if _fast(cls, options) else None
    if collected is None:
        made: type[T] = _STANDARD(cls, **options)
        return made
    every, fields_by_name = collected
    if any(not f.init or f.hash is not None or f.kw_only is True for f in every):
        raise TypeError(f"{cls.__name__}: a field proctui's records do not support")
    had_doc = bool(cls.__dict__.get("__doc__"))
    target: Any = cls
    target.__dataclass_fields__ = fields_by_name
    target.__dataclass_params__ = _PARAMS
    if "__match_args__" not in cls.__dict__:
        target.__match_args__ = tuple(f.name for f in every)  # type: ignore[misc]
    if options.get("slots", False):
        cls = _with_slots(cls, every)
    names = tuple(f.name for f in every)
    defaults = {f.name: f.default for f in every if f.default is not MISSING}
    factories = {f.name: f.default_factory for f in every
                 if f.default_factory is not MISSING}
    shown = tuple(f.name for f in every if f.repr)
    compared = tuple(f.name for f in every if f.compare)
    setattr(cls, _MARK, (names, defaults, factories, shown, compared))
    own = cls.__dict__
    # The standard rules: what the class body defines stays, but for a frozen record's
    # __setattr__ and __delattr__; a body's __eq__ alone leaves __hash__ None there.
    hash_given = own.get("__hash__", MISSING) is not MISSING and not (
        own.get("__hash__") is None and "__eq__" in own)
    methods: dict[str, Callable[..., Any]] = {
        "__init__": _init, "__repr__": _repr, "__eq__": _eq}
    if not hash_given:
        methods["__hash__"] = _hash
    if options.get("slots"):
        # As the standard frozen slots classes: copy and pickle set the fields back.
        methods.update(__getstate__=_getstate, __setstate__=_setstate)
    for key, method in methods.items():
        if key not in own or (key == "__hash__" and not hash_given):
            setattr(cls, key, method)
    for key, method in (("__setattr__", _setattr), ("__delattr__", _delattr)):
        if key in own:
            raise TypeError(f"Cannot overwrite attribute {key} in class {cls.__name__}")
        setattr(cls, key, method)
    if not had_doc:
        cls.__doc__ = cls.__name__ + _signature(every)
    abc.update_abstractmethods(cls)
    return cls


def _collect(cls: type) -> tuple[tuple[dataclasses.Field[Any], ...],
                                 dict[str, dataclasses.Field[Any]]] | None:
    """The fields, as CPython's ``dataclasses._process_class`` collects them (the bases'
    first, defaults looked up through the class as ``getattr`` finds them), or None,
    before anything of the class is touched, for what only the standard decorator
    knows how to read: an InitVar, a KW_ONLY marker, a ClassVar it would not call one.

    Done here rather than by the standard decorator with nothing to generate: that one
    still looked at every annotation through the typing module and made each slots
    class twice, 7 ms of proctui's start for its hundred records on an x86 host."""
    annotations = inspect.get_annotations(cls)
    kinds: dict[str, object] = {}
    for name, kind in annotations.items():
        classvar = _is_classvar(kind, cls)
        if classvar is None:
            return None
        kinds[name] = _CLASSVAR if classvar else _FIELD
    found: dict[str, dataclasses.Field[Any]] = {}
    for base in cls.__mro__[-1:0:-1]:
        inherited = base.__dict__.get("__dataclass_fields__")
        if inherited:
            found.update((f.name, f) for f in inherited.values())
    for name, kind in annotations.items():
        default: Any = getattr(cls, name, MISSING)
        if isinstance(default, types.MemberDescriptorType):
            default = MISSING  # a slot of a base: no default
        f: dataclasses.Field[Any] = default if isinstance(default, dataclasses.Field) else \
            dataclasses.field(default=default)
        f.name, f.type = name, kind
        _mark(f, kinds[name])
        if kinds[name] is _CLASSVAR:
            if f.default_factory is not MISSING:
                raise TypeError(f"field {name} cannot have a default factory")
            if f.kw_only is not MISSING:
                raise TypeError(f"field {name} is a ClassVar but specifies kw_only")
        elif f.kw_only is MISSING:
            f.kw_only = False
        if kinds[name] is _FIELD and f.default.__class__.__hash__ is None:
            raise ValueError(f"mutable default {type(f.default)} for field {name} is not "
                             "allowed: use default_factory")
        found[name] = f
    made = tuple(f for f in found.values() if _kind(f) is _FIELD)
    seen_default = False
    for f in made:
        has_default = f.default is not MISSING or f.default_factory is not MISSING
        if seen_default and not has_default:
            raise TypeError(f"non-default argument {f.name!r} follows default argument")
        seen_default = seen_default or has_default
    for name, value in cls.__dict__.items():
        if isinstance(value, dataclasses.Field) and name not in annotations:
            raise TypeError(f"{name!r} is a field but has no type annotation")
    for name in annotations:  # checked, now the class: a field() becomes its default
        f = found[name]
        if isinstance(getattr(cls, name, None), dataclasses.Field):
            if f.default is MISSING:
                delattr(cls, name)
            else:
                setattr(cls, name, f.default)
    return made, found


def _kind(f: dataclasses.Field[Any]) -> object:
    """A field's own kind: a field, a ClassVar or an InitVar (the standard one's mark)."""
    return getattr(f, "_field_type", None)


def _mark(f: dataclasses.Field[Any], kind: object) -> None:
    f._field_type = kind  # type: ignore[attr-defined]


def _is_classvar(kind: object, cls: type) -> bool | None:
    """Is ``kind`` a ClassVar, as the standard decorator tells (a string's first name
    looked up in the class's module)? None when it may be an InitVar or KW_ONLY, or
    names ClassVar in a way this does not follow: the standard decorator decides."""
    text = kind if isinstance(kind, str) else repr(kind)
    if not isinstance(kind, str):
        if kind is ClassVar or get_origin(kind) is ClassVar:
            return True
        return None if any(word in text for word in _SPECIAL) else False
    m = _FIRST_NAME.match(kind)
    module = sys.modules.get(cls.__module__)
    special = any(word in text for word in _SPECIAL)
    if m is None or module is None or m.group(1) is not None:
        return None if special else False  # "typing.ClassVar[...]": as it reads it
    found = vars(module).get(m.group(2))
    if found is ClassVar or get_origin(found) is ClassVar:
        return True
    if found is dataclasses.InitVar or found is dataclasses.KW_ONLY or \
            isinstance(found, dataclasses.InitVar):
        return None
    return None if special else False


def _with_slots(cls: type[T], every: tuple[dataclasses.Field[Any], ...]) -> type[T]:
    """The class made again with ``__slots__`` for its fields, as the standard one does."""
    body = dict(cls.__dict__)
    inherited: set[str] = set()
    for base in cls.__mro__[1:-1]:
        slots = base.__dict__.get("__slots__", ())
        inherited.update((slots,) if isinstance(slots, str) else slots)
    body["__slots__"] = tuple(f.name for f in every if f.name not in inherited)
    for f in every:
        body.pop(f.name, None)
    body.pop("__dict__", None)
    body.pop("__weakref__", None)
    qualname = getattr(cls, "__qualname__", None)
    meta: Any = type(cls)
    made: type[T] = meta(cls.__name__, cls.__bases__, body)
    if qualname is not None:
        made.__qualname__ = qualname
    return made


def _fast(cls: type, options: dict[str, Any]) -> bool:
    if set(options) - {"frozen", "slots"} or not options.get("frozen"):
        return False
    if options.get("slots") and "__slots__" in cls.__dict__:
        return False  # the standard one refuses it, in its words
    if hasattr(cls, "__post_init__"):
        return False  # (an InitVar is _collect's to tell: it reads the annotations once)
    for base in cls.__mro__[1:]:
        params = base.__dict__.get("__dataclass_params__")
        if params is not None and base.__dict__.get(_MARK) is None:
            return False  # a standard dataclass base: its rules, its decorator
    return True


def _spec(self: object) -> tuple[tuple[str, ...], dict[str, Any], dict[str, Any],
                                 tuple[str, ...], tuple[str, ...]]:
    spec: Any = getattr(type(self), _MARK)
    return spec  # type: ignore[no-any-return]


def _init(self: object, *args: Any, **kwargs: Any) -> None:
    names, defaults, factories, _shown, _compared = _spec(self)
    name = type(self).__name__
    if len(args) > len(names):
        most = len(names) + 1
        least = most - len(defaults) - len(factories)
        takes = f"from {least} to {most}" if least < most else f"{most}"
        raise TypeError(f"{name}.__init__() takes {takes} positional argument"
                        f"{'s' if most > 1 else ''} but {len(args) + 1} were given")
    given = names[:len(args)]
    for key in kwargs:  # checked in the order Python's own argument parsing does
        if key not in names:
            raise TypeError(f"{name}.__init__() got an unexpected keyword argument {key!r}")
        if key in given:
            raise TypeError(f"{name}.__init__() got multiple values for argument {key!r}")
    put = object.__setattr__
    for key, value in zip(given, args, strict=True):
        put(self, key, value)
    missing: list[str] = []
    for key in names[len(args):]:
        if key in kwargs:
            put(self, key, kwargs[key])
        elif key in defaults:
            put(self, key, defaults[key])
        elif key in factories:
            put(self, key, factories[key]())
        else:
            missing.append(key)
    if missing:
        quoted = [repr(k) for k in missing]
        listed = quoted[0] if len(quoted) == 1 else \
            ", ".join(quoted[:-1]) + (", and " if len(quoted) > 2 else " and ") + quoted[-1]
        raise TypeError(f"{name}.__init__() missing {len(missing)} required positional "
                        f"argument{'s' if len(missing) > 1 else ''}: {listed}")


def _repr(self: object) -> str:
    shown = _spec(self)[3]
    return (f"{type(self).__qualname__}("
            + ", ".join(f"{k}={getattr(self, k)!r}" for k in shown) + ")")


def _eq(self: object, other: object) -> object:
    if other.__class__ is not self.__class__:
        return NotImplemented
    compared = _spec(self)[4]
    same: bool = tuple(getattr(self, k) for k in compared) == \
        tuple(getattr(other, k) for k in compared)
    return same


def _hash(self: object) -> int:
    return hash(tuple(getattr(self, k) for k in _spec(self)[4]))


def _setattr(self: object, name: str, value: object) -> None:
    # As the standard one: every name of a record itself, only the fields of a plain
    # subclass's instance.
    if _MARK in type(self).__dict__ or name in _spec(self)[0]:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")
    object.__setattr__(self, name, value)


def _delattr(self: object, name: str) -> None:
    if _MARK in type(self).__dict__ or name in _spec(self)[0]:
        raise FrozenInstanceError(f"cannot delete field {name!r}")
    object.__delattr__(self, name)


def _getstate(self: object) -> list[object]:
    return [getattr(self, k) for k in _spec(self)[0]]


def _setstate(self: object, state: list[object]) -> None:
    for key, value in zip(_spec(self)[0], state, strict=True):
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
