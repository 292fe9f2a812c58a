"""One command table: the supervisor, the remote core and the test fake implement the same
``Core``; every command the API sends is in the table once, and the table's docstrings
and its table of commands agree. (mypy checks ``_fake`` and proctui/protocol/conformance.py;
these tests check what a type checker cannot see.)"""

from __future__ import annotations

import inspect
from concurrent.futures import Future
from typing import Any

import pytest
from proctui.core.api import Core
from proctui.protocol.commands import COMMANDS, CORE_COMMANDS, Fault

from proctui.core.life.stages import Why
from proctui.core.view import Reply
from proctui.protocol import commands
from proctui.protocol.decode import decode
from proctui.protocol.replies import encode_reply
from proctui.remote.client import RemoteCore
from tests.fake_core import FakeCore


def _fake(core: FakeCore) -> Core:
    return core  # mypy: the fake implements the protocol


def _core_commands() -> set[str]:
    """The Core methods that send a command (they answer with a Future)."""
    return {name for name, fn in inspect.getmembers(Core, inspect.isfunction)
            if "Future" in str(inspect.signature(fn).return_annotation)}


def test_every_command_of_the_api_is_in_the_table_once() -> None:
    methods = [cls.method for cls in CORE_COMMANDS] + [commands.WantUsage.method]
    assert len(methods) == len(set(methods))
    assert set(methods) == _core_commands()
    assert len(COMMANDS) == len({cls.op for cls in COMMANDS.values()})


def test_each_command_is_documented_in_the_table_and_its_class() -> None:
    table = commands.__doc__ or ""
    for op, cls in COMMANDS.items():
        assert (cls.__doc__ or "").strip(), op
        assert f"\n{op} " in table, f"{op} is missing from the table in the docstring"


def test_the_remote_core_sends_the_tables_request_for_each_method(
        monkeypatch: pytest.MonkeyPatch) -> None:
    sent: list[commands.Request[Any]] = []

    def request(self: RemoteCore, req: commands.Request[Any]) -> Future[commands.Done]:
        sent.append(req)
        future: Future[commands.Done] = Future()
        future.set_result(commands.Done(True, "ok"))
        return future

    monkeypatch.setattr(RemoteCore, "_request", request)
    core = RemoteCore.__new__(RemoteCore)
    core.read_only = False  # (__init__ is skipped: nothing is connected)
    by_method = {cls.method: cls for cls in CORE_COMMANDS}
    for method, cls in by_method.items():
        params = [p for p in inspect.signature(getattr(Core, method)).parameters
                  if p not in ("self", "who")]
        args = {"name": "web", "ordered": True, "by": 5.0, "interactive": True,
                "why": Why.DOWN}
        reply = getattr(core, method)(*[args[p] for p in params]).result(1)
        assert isinstance(reply, Reply) and reply.ok
        assert type(sent[-1]) is cls, method


def test_a_request_goes_through_the_wire_and_back_unchanged() -> None:
    requests: tuple[commands.Request[Any], ...] = (
        commands.Stop("web"), commands.Extend("web", 2.5), commands.StopAll(False),
        commands.StopAll(True, Why.DOWN.value),
        commands.Watch(["a"], 3, {"a": 7}), commands.Tail("web", 10), commands.Journal(4),
        commands.Ping())
    for request in requests:
        assert decode(request.wire()) == request


def test_faults_have_words_and_survive_the_wire() -> None:
    for fault in Fault:
        assert fault.words and fault.words[0].islower()
        reply = commands.Stop("x").answer(encode_reply(commands.failed(fault)))
        assert reply.fault is fault and not reply.ok and reply.text == fault.words
