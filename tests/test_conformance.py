"""One command table, every surface: each request of ``proctui.commands`` (and of the
link, ``proctui.protocol.link``) goes through the wire and comes back the same request;
every fault a request can give is a ``Fault``, with words, that survives the wire; what a
client may not send is refused by the decoder; every command the command line offers is
in the table and goes over the wire; and the supervisor, the remote core and the test
fake implement the same ``Core``. (mypy checks proctui/remote/conformance.py for the
two cores, and ``_fake`` when it is run on the tests; the fake's three doors are also
checked at run time below. The rest is what a type checker cannot see.)"""

from __future__ import annotations

import importlib
import re
import types
from collections.abc import Iterator
from concurrent.futures import Future
from dataclasses import MISSING, Field, fields, replace
from itertools import product
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

import click
import pytest

from proctui.cli import cli
from proctui.cli.table_commands import ops
from proctui.commands import COMMANDS, WIRE, Named, Request
from proctui.commands.api import Core
from proctui.core.reply import Done, Fault, failed
from proctui.core.supervisor import Supervisor
from proctui.protocol import wire
from proctui.protocol.decode import MAX_NAME, decode
from proctui.protocol.link import LINK
from proctui.protocol.replies import encode_reply
from proctui.remote.client import RemoteCore
from tests.fake_core import FakeCore

# What a client may send: the table's wire commands and the link's own requests.
SENDABLE: dict[str, type[Request[Any]]] = {**WIRE, **LINK}
# A value a field's type cannot tell is right (checked by the request's own ``check``).
VALID = {"ssh": ["10.0.0.5 50000", "fe80::1%eth0 22"], "signal": ["SIGINT", "SIGTERM"]}


def _fake(core: FakeCore) -> Core:
    return core  # mypy: the fake implements the protocol


def test_the_fake_and_the_supervisor_have_the_three_doors_and_nothing_else() -> None:
    """What a console drives (the fake in its tests, the supervisor for real) answers the
    same three doors: a snapshot, a request of the table sent for a future reply, and the
    output; the old methods (stop, journal, all_ended...) are gone from both."""
    from proctui.core.snapshot import CoreSnapshot
    from tests.fake_core import running

    for core in (FakeCore(running()), Supervisor([])):
        assert isinstance(core.snapshot(), CoreSnapshot)
        assert all(callable(getattr(core.output, door)) for door in
                   ("buffer", "changes", "listen"))
        assert callable(core.send)
        for old in ("stop", "kill", "extend", "journal", "all_ended", "gone"):
            assert not hasattr(core, old), f"{type(core).__name__}.{old}"
    for old in ("stop", "kill", "extend", "journal", "all_ended"):
        assert not hasattr(RemoteCore, old), f"RemoteCore.{old}"


def _candidates(hint: Any) -> list[Any]:
    """Right values of type ``hint``: of each option of a union, each of a Literal."""
    origin = get_origin(hint)
    if origin in (Union, types.UnionType):
        return [value for option in get_args(hint) for value in _candidates(option)]
    if origin is Literal:
        return list(get_args(hint))
    if origin is list:
        return [["a", "ünï ✓"], []]
    if origin is dict:
        return [{"a": 7, "b": 0}, {}]
    simple: dict[Any, list[Any]] = {
        type(None): [None], bool: [True, False], int: [3, 1 << 40], float: [2.5, 86400.0],
        str: ["web", "ünï ✓ \\ \"x\""]}
    return simple[hint]


def samples(cls: type[Request[Any]]) -> Iterator[Request[Any]]:
    """Requests of ``cls``: every default, then every right value of each field (each
    option of each union), combined as far as the longest list goes."""
    hints = get_type_hints(cls)
    if not any(_required(f) for f in fields(cls)):
        yield cls()
    options = {f.name: VALID.get(f.name) or _candidates(hints[f.name]) for f in fields(cls)}
    for i in range(max((len(v) for v in options.values()), default=0)):
        yield cls(**{name: values[i % len(values)] for name, values in options.items()})


def _required(f: Field[Any]) -> bool:
    return f.default is MISSING and f.default_factory is MISSING


def every_sample() -> list[Request[Any]]:
    return [request for cls in SENDABLE.values() for request in samples(cls)]


def through_the_wire(message: dict[str, Any]) -> Request[Any] | Done:
    """What the server makes of ``message``: its bytes on the wire, read and decoded."""
    return decode(wire.loads(wire.dumps({**message, "id": 9})))


# -- every op round-trips -----------------------------------------------------------------


def test_every_request_goes_through_the_wire_and_back_unchanged() -> None:
    tried: set[str] = set()
    for request in every_sample():
        assert request.check() is None, f"{request!r} is not a right sample"
        back = through_the_wire(request.wire())
        # repr, not ==: True == 1 and 2 == 2.0, but a bool is no count and a count no
        # number of seconds.
        assert repr(back) == repr(request), (request, back)
        tried.add(request.op)
    assert tried == set(SENDABLE), set(SENDABLE) - tried
    # The table's ops and the link's are two sets: none says what the other means.
    assert not set(WIRE) & set(LINK)


def test_each_op_is_its_own_classes_alone() -> None:
    assert all(cls.op == op for op, cls in {**COMMANDS, **LINK}.items())
    assert len(set(COMMANDS.values())) == len(COMMANDS)


def test_what_a_client_may_not_send_is_an_unknown_command() -> None:
    """A notice, a trouble, a rebuilt store, printing notices: a frontend says them to
    its own core; from a client they are no command at all."""
    private = [op for op, cls in COMMANDS.items() if not cls.wire_op]
    assert private, "the table has requests only a frontend says"
    for op in private:
        got = through_the_wire({"op": op, "text": "hello", "area": "disk"})
        assert isinstance(got, Done) and got.fault is Fault.UNKNOWN_COMMAND, (op, got)


# -- every fault is a Fault -----------------------------------------------------------------

HOSTILE: list[object] = [None, True, -1, 0, 1 << 60, -(1 << 60), 10 ** 400, 1.5, float("nan"),
                         float("inf"), -1e308, "", "x" * (MAX_NAME + 1), "\ud800", [], [[1]],
                         ["a"] * 5000, {}, {"a": "b"}, {"a": True}, {"a": [1]}]


def _is_fault(got: Done) -> None:
    assert isinstance(got, Done) and not got.ok, got
    assert isinstance(got.fault, Fault), got
    assert got.text and "\n" not in got.text and len(got.text) < 400, got


def test_every_refusal_of_the_decoder_is_a_fault_with_words() -> None:
    """Each field of each request given every wrong value (and left out), each message
    made of garbage: the decoder never raises, and what it refuses is a Fault."""
    for op, cls in SENDABLE.items():
        base = next(samples(cls)).wire()
        for f in fields(cls):
            for bad in HOSTILE:
                got = decode({**base, f.name: bad})
                if isinstance(got, Done):
                    _is_fault(got)
                    assert got.fault in (Fault.BAD_REQUEST, Fault.BAD_VALUE), (op, f.name, bad)
                else:  # a right value after all (a bool for a flag, a count for a count)
                    assert got.check() is None and type(got) is cls
            if _required(f):
                missing = {k: v for k, v in base.items() if k != f.name}
                got = decode(missing)
                assert isinstance(got, Done) and got.fault is Fault.BAD_REQUEST, (op, got)
                _is_fault(got)
    for message in ({}, {"op": None}, {"op": "STOP"}, {"op": "x" * 100}, {"op": ["stop"]},
                    {"op": "frobnicate"}, {"op": "__class__"}):
        got = decode(message)
        assert isinstance(got, Done) and got.fault is Fault.UNKNOWN_COMMAND, message
        _is_fault(got)
    twice = wire.loads(b'{"op": "stop", "name": "a", "name": "b"}')
    got = decode(twice)
    assert isinstance(got, Done) and got.fault is Fault.BAD_REQUEST
    _is_fault(got)


def test_every_fault_a_module_names_is_a_fault() -> None:
    """Each command's module says its wire message and the faults it gives; every fault it
    names is one the protocol has."""
    for op, cls in COMMANDS.items():
        doc = " ".join((importlib.import_module(cls.__module__).__doc__ or "").split())
        assert (cls.__doc__ or "").strip(), f"{op} has no docstring"
        if not cls.wire_op:
            assert "Not a wire command" in doc, op
            continue
        assert re.search(r'Wire: \{"op": "' + re.escape(op) + '"', doc), \
            f"{cls.__module__}'s docstring does not say its wire message"
        # "Faults: UNKNOWN_NAME; BAD_VALUE unless 0 < by <= MAX_SECONDS; REFUSED when ...":
        # each clause begins with the fault it names.
        said = doc.partition("Faults: ")[2]
        for clause in said.split(";") if said else []:
            name = clause.split()[0].rstrip(".,")
            assert name in Fault.__members__, f"{op} names the fault {name}, which is none"


def test_every_fault_has_words_and_survives_the_wire_to_every_request() -> None:
    for fault in Fault:
        assert fault.words and fault.words[0].islower() and "\n" not in fault.words
        for cls in SENDABLE.values():
            request = next(samples(cls))
            reply = request.answer(wire.loads(wire.dumps(encode_reply(failed(fault), 9))))
            assert isinstance(reply, Done), (cls, reply)
            assert (reply.ok, reply.fault, reply.text) == (False, fault, fault.words), cls
    # A fault this proctui does not know (a newer supervisor's) is still a Fault.
    reply = next(samples(WIRE["stop"])).answer({"t": "reply", "ok": False, "text": "no",
                                                "fault": "SOMETHING_NEW"})
    assert reply.fault is Fault.REFUSED


@pytest.fixture
def empty_core() -> Iterator[Supervisor]:
    sup = Supervisor([])
    sup.start()
    try:
        yield sup
    finally:
        sup.close()


def test_a_core_refuses_with_a_fault_through_its_own_door(empty_core: Supervisor) -> None:
    """Not only the control socket's decoder: the core checks what any door sends it, and
    refuses what names no process, each time with a Fault."""
    for cls in WIRE.values():
        if issubclass(cls, Named):
            request = replace(next(samples(cls)), name="nobody")  # type: ignore[call-arg]
            reply = empty_core.send(request).result(10)
            _is_fault(reply)
            assert reply.fault is Fault.UNKNOWN_NAME, (cls.op, reply)
    for bad in (WIRE["journal"](-1), WIRE["events"](-1),  # type: ignore[call-arg]
                WIRE["extend"]("nobody", -5.0), WIRE["extend"]("nobody", 1e300)):  # type: ignore[call-arg]
        reply = empty_core.send(bad).result(10)
        _is_fault(reply)
        assert reply.fault is Fault.BAD_VALUE, (bad, reply)


# -- the command line -------------------------------------------------------------------


def test_every_command_the_command_line_offers_is_in_the_table_and_on_the_wire() -> None:
    offered = ops()
    assert offered and len(offered) == len(set(offered))
    ctx = click.Context(cli)
    listed = cli.list_commands(ctx)
    for op in offered:
        cls = COMMANDS.get(op)
        assert cls is not None and cls.cli is not None, op
        # The command line sends it to a supervisor over its control socket (or ssh).
        assert op in WIRE, f"proctui {op} would be refused as an unknown command"
        command = cli.get_command(ctx, op)
        assert command is not None and command.name == op and op in listed
        assert cls.help() and command.help == cls.help(), op
    for op, cls in COMMANDS.items():
        if cls.cli is not None:
            assert op in offered, f"{op} has words for the command line but is not offered"


def test_the_words_of_each_command_make_requests_of_the_table() -> None:
    for op in ops():
        cls = COMMANDS[op]
        for words in (("web",), ("web", "db"), ("web", "10")):
            made = cls.from_words(words)
            if isinstance(made, str):
                assert made and "\n" not in made, (op, words)
                continue
            for request in made:
                assert type(request) in COMMANDS.values() and request.check() is None
                assert repr(through_the_wire(request.wire())) == repr(request)


# -- the remote core ----------------------------------------------------------------------


def test_the_remote_core_sends_each_request_as_it_is_given(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``send`` is the remote core's only door for commands: the request goes out as it
    came (the server decodes the same request), and a read-only core refuses, without
    sending it, every request that acts, and only those."""
    sent: list[Request[Any]] = []

    def request(self: RemoteCore, req: Request[Any], internal: bool = False) -> Future[Done]:
        sent.append(req)
        future: Future[Done] = Future()
        future.set_result(Done(True, "ok"))
        return future

    monkeypatch.setattr(RemoteCore, "_request", request)
    for read_only, req in product((False, True), [r for cls in WIRE.values()
                                                  for r in samples(cls)]):
        core = RemoteCore.__new__(RemoteCore)  # (__init__ skipped: nothing is connected)
        core.read_only = read_only
        core._wants_usage = False
        del sent[:]
        reply = core.send(req).result(1)
        if read_only and req.acts:
            assert sent == [] and reply.fault is Fault.READ_ONLY, req
            assert type(reply) is type(req.answer({"ok": False})), req
        else:
            assert sent == [req] and reply.ok, req
