"""proctui.records makes the frozen records without compiling code: every record of
proctui must behave as the standard decorator's twin of it does, and an odd class body
be made (or refused) as the standard decorator makes it."""

from __future__ import annotations

import copy
import dataclasses
import importlib
import pickle
import pkgutil
import typing  # noqa: F401  (the namespace 'typing.ClassVar' is read in, below)
from typing import ClassVar

import pytest

import proctui
from proctui import records
from proctui.records import dataclass


def _all_records() -> list[type]:
    found = []
    for info in pkgutil.walk_packages(proctui.__path__, "proctui."):
        if ".console" in info.name or info.name.endswith("__main__"):
            continue  # Textual's modules: not records; imported by their own tests
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if isinstance(value, type) and value.__module__ == info.name and \
                    records._SPEC in value.__dict__:
                found.append(value)
    return found


RECORDS = _all_records()


def _twin(cls: type) -> type:
    """The same fields made by the standard decorator."""
    specs = []
    for f in dataclasses.fields(cls):
        kept = dataclasses.field(default=f.default, default_factory=f.default_factory,
                                 repr=f.repr, compare=f.compare)
        specs.append((f.name, f.type, kept))
    twin = dataclasses.make_dataclass(cls.__name__, specs, frozen=True,
                                      slots="__slots__" in cls.__dict__)
    if cls.__doc__ != cls.__name__ + records._signature(dataclasses.fields(cls)):
        twin.__doc__ = cls.__doc__  # its own (a signature is held by the test below)
    return twin


def _values(cls: type, offset: int) -> list[object]:
    return [offset + i for i, _ in enumerate(dataclasses.fields(cls))]


def _error(make) -> tuple[type, str] | None:
    try:
        make()
    except Exception as e:  # compared, whatever it is
        return type(e), str(e).split("__init__()", 1)[-1]
    return None


def test_there_are_records_to_compare():
    # The hot modules of the core are made here; the count guards the walk above.
    names = {c.__name__ for c in RECORDS}
    assert {"Output", "Launch", "DepsLooked", "Stop"} <= names
    assert len(RECORDS) > 60


@pytest.mark.parametrize("cls", RECORDS, ids=lambda c: f"{c.__module__}.{c.__qualname__}")
def test_each_record_behaves_as_its_standard_twin(cls):
    twin = _twin(cls)
    a, b = _values(cls, 1), _values(cls, 100)
    mine, theirs = cls(*a), twin(*a)
    assert repr(mine).replace(cls.__qualname__, "X", 1) == \
        repr(theirs).replace(twin.__qualname__, "X", 1)
    assert hash(mine) == hash(theirs)
    assert mine == cls(*a) and (mine != cls(*b)) == (theirs != twin(*b))
    assert mine != theirs  # another class is never equal, as with the standard one
    names = [f.name for f in dataclasses.fields(cls)]
    assert cls(**dict(zip(names, a, strict=True))) == mine
    assert cls.__match_args__ == twin.__match_args__
    assert cls.__doc__ == twin.__doc__
    if names:
        changed = dataclasses.replace(mine, **{names[0]: -1})
        assert getattr(changed, names[0]) == -1 and changed != mine
        assert dataclasses.asdict(mine) == dataclasses.asdict(theirs)
    for bad in (lambda c: c(*a, 0), lambda c: c(*a[:1], **{"nope": 1}),
                lambda c: c(*a, **({names[0]: 1} if names else {"x": 1}))):
        assert _error(lambda b=bad: b(cls)) == _error(lambda b=bad: b(twin))
    assert _error(cls) == _error(twin)
    for name in names:
        assert _error(lambda n=name: setattr(mine, n, 1)) == \
            _error(lambda n=name: setattr(theirs, n, 1))
        assert _error(lambda n=name: delattr(mine, n)) == \
            _error(lambda n=name: delattr(theirs, n))
    # Another name: refused by both (the standard slots twin says so with a TypeError of
    # its own, a known slip of the standard library; here it is FrozenInstanceError).
    assert _error(lambda: setattr(mine, "other", 1)) is not None
    assert _error(lambda: setattr(theirs, "other", 1)) is not None
    assert copy.copy(mine) == mine and copy.deepcopy(mine) == mine
    assert pickle.loads(pickle.dumps(mine)) == mine


def test_defaults_factories_and_fields_left_out_of_compare_and_repr():
    @dataclass(frozen=True, slots=True)
    class R:
        a: int
        b: list[int] = dataclasses.field(default_factory=list)
        c: str = dataclasses.field(default="c", compare=False, repr=False)

    one, two = R(1), R(1, c="other")
    assert one.b == [] and one.b is not two.b
    assert one == two
    assert repr(one) == "test_defaults_factories_and_fields_left_out_of_compare_and_repr." \
                        "<locals>.R(a=1, b=[])"


def test_a_record_without_a_docstring_is_given_the_standard_one():
    @dataclass(frozen=True, slots=True)
    class Mine:
        a: int
        b: str = "x"
        c: list[int] = dataclasses.field(default_factory=list)

    @dataclasses.dataclass(frozen=True, slots=True)
    class Theirs:
        a: int
        b: str = "x"
        c: list[int] = dataclasses.field(default_factory=list)

    assert Mine.__doc__ == Theirs.__doc__.replace("Theirs", "Mine")


def test_what_the_class_body_defines_stays():
    @dataclass(frozen=True)
    class R:
        a: int

        def __repr__(self) -> str:
            return "mine"

    assert repr(R(1)) == "mine" and R(1) == R(1)
    with pytest.raises(TypeError, match="Cannot overwrite attribute __setattr__"):
        @dataclass(frozen=True)
        class S:
            a: int

            def __setattr__(self, name: str, value: object) -> None:
                pass


def test_a_record_may_inherit_from_a_record():
    @dataclass(frozen=True)
    class Base:
        a: int

    @dataclass(frozen=True)
    class Child(Base):
        b: int = 2

    assert Child(1) == Child(1, 2) and repr(Child(1)).endswith("Child(a=1, b=2)")
    assert [f.name for f in dataclasses.fields(Child)] == ["a", "b"]
    assert Child(1) != Base(1)


def test_what_it_does_not_make_goes_to_the_standard_decorator():
    @dataclass
    class Plain:
        a: int

    @dataclass(frozen=True, order=True)
    class Ordered:
        a: int

    @dataclasses.dataclass(frozen=True)
    class StandardBase:
        a: int

    @dataclass(frozen=True)
    class OnStandard(StandardBase):
        b: int = 0

    for cls in (Plain, Ordered):
        assert records._SPEC not in cls.__dict__
    assert records._SPEC in OnStandard.__dict__  # a record on a standard frozen base
    p = Plain(1)
    p.a = 2  # not frozen
    assert Ordered(1) < Ordered(2)
    assert OnStandard(1) == OnStandard(1, 0)


def test_fields_are_collected_as_the_standard_decorator_collects_them():
    """A ClassVar is no field but keeps its value; a field() default becomes the class
    attribute (or none); a mutable default and a non-default after a default are
    refused; a slots record on a slots record adds only its own slots."""
    def both(body: dict[str, object], annotations: dict[str, object], **options: bool):
        made = []
        for decorate in (dataclass, dataclasses.dataclass):
            made.append(_error(lambda d=decorate: d(frozen=True, **options)(
                type("R", (), {"__annotations__": dict(annotations), **body}))))
        return made

    for body, given in (
            ({"a": []}, {"a": "list[int]"}),
            ({"a": 1}, {"a": "int", "b": "int"}),
            ({"a": dataclasses.field(default=1)}, {"a": int, "b": int})):
        mine, theirs = both(body, given)
        assert mine is not None and mine == theirs

    @dataclass(frozen=True, slots=True)
    class Mine:
        kind: ClassVar[str] = "k"
        other: ClassVar[int] = 3
        a: int = dataclasses.field(default=1)
        b: list[int] = dataclasses.field(default_factory=list)

    @dataclasses.dataclass(frozen=True, slots=True)
    class Theirs:
        kind: ClassVar[str] = "k"
        other: ClassVar[int] = 3
        a: int = dataclasses.field(default=1)
        b: list[int] = dataclasses.field(default_factory=list)

    assert records._SPEC in Mine.__dict__
    assert [f.name for f in dataclasses.fields(Mine)] == ["a", "b"]
    assert list(Mine.__dataclass_fields__) == list(Theirs.__dataclass_fields__)
    assert (Mine.kind, Mine.other, Mine().a, Mine.__slots__) == \
        (Theirs.kind, Theirs.other, Theirs().a, Theirs.__slots__)
    assert "a" not in Mine.__dict__ or not isinstance(Mine.__dict__["a"], dataclasses.Field)

    @dataclass(frozen=True, slots=True)
    class Child(Mine):
        c: int = 0

    assert Child.__slots__ == ("c",) and Child(2, [1], 3).c == 3
    assert dataclasses.replace(Child(), c=5) == Child(c=5)


CV = ClassVar  # an alias the standard decorator follows through the module


class ClassVarRef:
    """A type whose name holds a special word: no ClassVar for either decorator."""


def _made(decorate, build):
    """What ``decorate`` makes of the class ``build`` returns: its fields, defaults,
    class attributes and a default instance, or the error, compared as words."""
    try:
        cls = decorate(build())
        every = dataclasses.fields(cls)
        names = [f.name for f in every]
        import inspect

        attrs = {n: repr(cls.__dict__.get(n)) for n in inspect.get_annotations(cls)}
        try:
            made = repr(cls()).split("(", 1)[-1]
        except TypeError as e:
            made = str(e).split("__init__()", 1)[-1]
        return (names, [(f.default, f.compare, f.repr, f.kw_only) for f in every],
                attrs, made, list(cls.__dataclass_fields__))
    except (TypeError, ValueError) as e:
        return type(e), str(e).replace("R.", "")


def _body(*pairs):
    def build():
        return type("R", (), {"__annotations__": {n: t for n, t, _ in pairs},
                              "__module__": __name__,
                              **{n: copy.copy(v) for n, _, v in pairs if v is not _NONE}})
    return build


_NONE = object()


@pytest.mark.parametrize("pairs", [
    # a field() before an annotation only the standard one reads: nothing is lost
    (("tags", "tuple", dataclasses.field(default=(), compare=False, repr=False)),
     ("ref", "ClassVarRef | None", None)),
    (("items", "list", dataclasses.field(default_factory=list)),
     ("ref", "ClassVarRef | None", None)),
    (("a", "int", dataclasses.field(default=1)), ("_", "KW_ONLY", _NONE), ("b", "int", 2)),
    (("x", "list", dataclasses.field(default=[])),),  # a mutable default, by field()
    (("x", "ClassVar[int]", dataclasses.field(default=3)), ("y", "int", 1)),
    (("x", "CV[int]", 5), ("y", "int", 1)),  # ClassVar by another name
    (("x", "typing.ClassVar[int]", 5), ("y", "int", 1)),
    (("x", "ClassVar[int]", dataclasses.field(default_factory=list)),),
], ids=["field-then-special", "factory-then-special", "kw-only", "mutable-field",
        "classvar-field", "classvar-alias", "classvar-qualified", "classvar-factory"])
def test_an_odd_class_body_is_made_as_the_standard_decorator_makes_it(pairs):
    mine = _made(dataclass(frozen=True), _body(*pairs))
    theirs = _made(dataclasses.dataclass(frozen=True), _body(*pairs))
    assert mine == theirs


def test_inheritance_slots_and_frozen_as_the_standard_decorator_has_them():
    def pair(decorate):
        base = decorate(type("A", (), {"__annotations__": {"x": "int"}, "x": 1,
                                       "__module__": __name__}))
        child = decorate(type("B", (base,), {"__annotations__": {"x": "int"},
                                             "__module__": __name__}))
        return repr(child()).split("(", 1)[-1]  # the redeclared field keeps its default

    assert pair(dataclass(frozen=True)) == pair(dataclasses.dataclass(frozen=True))

    @dataclass(frozen=True)
    class Record:
        a: int = 0

    with pytest.raises(TypeError, match="cannot inherit non-frozen dataclass from a frozen"):
        @dataclasses.dataclass
        class Mutable(Record):
            b: int = 1

    @dataclasses.dataclass(frozen=True)
    class Standard(Record):
        b: int = 1

    assert Standard(2, 3) == Standard(2, 3) and Standard().a == 0
    for decorate in (dataclass, dataclasses.dataclass):
        with pytest.raises(TypeError, match="already specifies __slots__"):
            decorate(frozen=True, slots=True)(
                type("S", (), {"__annotations__": {"a": "int"}, "__slots__": ("a",)}))

