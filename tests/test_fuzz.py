"""Property tests: random configs give a spec or a ConfigError, nothing else; random
output loses no byte it promises to keep, and renders without crashing."""

from __future__ import annotations

import contextlib
import io
import json
import math
import string
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rich.console import Console

from proctui.commands.abandon_all import AbandonAll
from proctui.commands.kill import Kill
from proctui.commands.stop import Stop
from proctui.config import ConfigError, load_procfile, parse_toml
from proctui.core.output.lines import LineSplitter
from proctui.core.output.text import clean
from proctui.frontends.console.render import ansi_text

# The real console on a pty, the wheel, ssh or hundreds of processes: the second
# CI stage (README: "Tests").
pytestmark = pytest.mark.slow

KEYS = ["cmd", "shell", "cwd", "env", "env_file", "stop_timeout", "kill_timeout",
        "on_timeout", "stop_signal", "extend_step", "restart", "scrollback",
        "max_line_length", "colour", "", "ready", "depends_on", "ready_timeout",
        "watchdog_sec", "max_stop_time", "restart_with"]
VALUES = st.one_of(
    st.integers(-5, 100_000), st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(), st.text(max_size=20),
    st.sampled_from(["kill", "ask", "abandon", "TERM", "SIGINT", "no", "always", "nope"]),
    st.lists(st.text(max_size=5), max_size=3),
    st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=2),
)


def toml_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if value != value:
            return "nan"
        if value in (float("inf"), float("-inf")):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value)  # JSON's string escapes are TOML's
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return "{" + ", ".join(f"{json.dumps(k)} = {toml_value(v)}" for k, v in value.items()) + "}"


@st.composite
def toml_documents(draw) -> str:
    lines = []
    if draw(st.booleans()):
        lines.append("[defaults]")
        for key in draw(st.lists(st.sampled_from(KEYS), max_size=4, unique=True)):
            lines.append(f'"{key}" = {toml_value(draw(VALUES))}')
    for name in draw(st.lists(st.text(string.ascii_letters + " -_/", max_size=6),
                              max_size=3, unique=True)):
        lines.append(f'[processes."{name}"]')
        for key in draw(st.lists(st.sampled_from(KEYS), max_size=5, unique=True)):
            lines.append(f'"{key}" = {toml_value(draw(VALUES))}')
    text = "\n".join(lines)
    # Mutations: cut it short, or splice in a stray character.
    if draw(st.booleans()) and text:
        cut = draw(st.integers(0, len(text)))
        text = text[:cut] + draw(st.sampled_from(["", "[", "=", '"', "\n", "\x00"])) \
            + text[cut:]
    return text


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(toml_documents())
def test_random_toml_is_a_config_or_a_config_error(tmp_path_factory, text):
    base = Path("/nonexistent-base")
    try:
        config = parse_toml(text, "fuzz.toml", base)
    except ConfigError as e:
        message = str(e)
        assert message.startswith("fuzz.toml") and "\n" not in message
    else:
        assert config.processes


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_random_procfile_is_a_config_or_a_config_error(tmp_path_factory, text):
    path = tmp_path_factory.mktemp("pf") / "Procfile"
    path.write_bytes(text.encode("utf-8", "replace"))
    try:
        config = load_procfile(path)
    except ConfigError as e:
        assert "\n" not in str(e)
    else:
        assert all(p.name and p.argv for p in config.processes)


CHUNKS = st.lists(st.binary(max_size=200), max_size=30)


@settings(max_examples=300, deadline=None)
@given(CHUNKS, st.integers(1, 50))
def test_splitter_keeps_every_byte_of_output_without_carriage_returns(chunks, max_len):
    data = b"".join(chunks).replace(b"\r", b"")
    chunks = [c.replace(b"\r", b"") for c in chunks]
    splitter = LineSplitter(max_len)
    lines: list[str] = []
    for chunk in chunks:
        lines += splitter.feed_chunk(chunk).lines  # as the pipes read
    lines += splitter.finish()
    text = data.decode("utf-8", errors="replace")
    assert all(len(line) <= max_len for line in lines)
    # Joining the pieces gives back the text without its newlines: nothing dropped.
    assert "".join(lines) == text.replace("\n", "")


@settings(max_examples=200, deadline=None)
@given(CHUNKS)
def test_splitter_never_fails_on_any_bytes(chunks):
    splitter = LineSplitter(64)
    for chunk in chunks:
        splitter.feed(chunk)
    splitter.finish()


@settings(max_examples=300, deadline=None)
@given(CHUNKS, st.sampled_from([1, 3, 64, 8192]))
def test_a_chunk_and_a_list_of_lines_never_differ(chunks, max_len):
    by_list, by_chunk = LineSplitter(max_len), LineSplitter(max_len)
    for chunk in chunks:
        assert by_chunk.feed_chunk(chunk).lines == by_list.feed(chunk)
        assert by_chunk.partial == by_list.partial
    assert by_chunk.finish() == by_list.finish()


ESCAPES = st.sampled_from([
    "\x1b[31m", "\x1b[0m", "\x1b[1;38;5;200m", "\x1b[38;2;1;2;3m", "\x1b[2J", "\x1b[H",
    "\x1b[?25l", "\x1b]0;title\x07", "\x1b]8;;http://x\x1b\\", "\x1bP1$r\x1b\\", "\x1b(B",
    "\x1b", "\x07", "\x00", "\t", "[bold]", "[/]", "[@click=quit]", "[/bold]", "\r",
    "\u200b", "界", "\ud7ff",
])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(ESCAPES, st.text(max_size=10)), max_size=30))
def test_any_output_renders_as_plain_safe_text(parts):
    line = "".join(parts)
    console = Console(width=80, color_system="truecolor", file=io.StringIO())
    text = ansi_text(line, "red")
    assert "\x1b" not in text.plain
    list(text.render(console))
    cleaned = clean(line)
    assert "\x07" not in cleaned and "\x00" not in cleaned


# -- the notify socket ----------------------------------------------------------------------

NOTIFY_KEYS = ["READY", "STATUS", "STOPPING", "EXTEND_TIMEOUT_USEC", "WATCHDOG",
               "WATCHDOG_USEC", "MAINPID", "ERRNO", "FDSTORE", "X"]
DATAGRAMS = st.one_of(
    st.binary(max_size=6000),
    st.lists(st.tuples(st.sampled_from(NOTIFY_KEYS),
                       st.one_of(st.text(max_size=30), st.integers(-10, 10**20).map(str))),
             max_size=6).map(lambda kv: "\n".join(f"{k}={v}" for k, v in kv).encode()),
)


def test_random_datagrams_never_hurt_the_supervisor(tmp_path_factory):
    """Random datagrams, as a stranger and as the run's own process (whose messages are
    acted on): every one is dropped or taken, the supervisor keeps its deadlines."""
    import socket
    import time

    from proctui.core.life.outcome import OutcomeKind
    from tests.conftest import Harness, pyspec

    # The run's own process sends seeded random messages (acted on); the test then sends
    # hypothesis's as a stranger (dropped).
    own = ("import os, random, socket, time\n"
           "a = os.environ['NOTIFY_SOCKET']; a = '\\0' + a[1:]\n"
           "s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)\n"
           f"keys = {NOTIFY_KEYS!r}\n"
           "r = random.Random(7)\n"
           "vals = ['', '0', '-1', 'no', '99999999999999999999', 'x' * 300, '\\x1b]2;t']\n"
           "for _ in range(400):\n"
           "    msg = '\\n'.join(f'{r.choice(keys)}={r.choice(vals)}' for _ in range(3))\n"
           "    s.sendto(msg.encode(), a)\n"
           "print('ready', flush=True)\n"
           "time.sleep(60)\n")
    h = Harness([pyspec("relay", own, stop_timeout=0.5)])
    h.sup.start()
    try:
        h.wait_output("relay", "ready")
        target = "\0" + h.sup._engine.executor.speech.sockets["relay"].address[1:]
        sock = h.sup._engine.executor.speech.sockets["relay"]
        @settings(max_examples=150, deadline=None,
                  suppress_health_check=[HealthCheck.function_scoped_fixture])
        @given(DATAGRAMS)
        def stranger(data: bytes) -> None:
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s, \
                    contextlib.suppress(OSError):  # too long for a datagram at all
                s.sendto(data, target)

        stranger()
        time.sleep(0.2)
        assert sock.received > 0 and sum(sock.dropped.values()) > 0
        h.sup.send(Stop("relay"))
        outcome = h.outcome("relay")  # whatever the messages did, it ends, and words it
        assert outcome.kind in (OutcomeKind.STOPPED, OutcomeKind.KILLED,
                                OutcomeKind.WATCHDOG), outcome.text
        assert h.sup.snapshot().crash is None
        assert "\x1b" not in h.view("relay").status
    finally:
        h.sup.send(AbandonAll()).result(timeout=5)
        h.sup.close()


@settings(max_examples=1000, deadline=None)
@given(st.one_of(
    st.binary(max_size=600),
    st.lists(st.tuples(st.sampled_from([*NOTIFY_KEYS, "MONOTONIC_USEC", "a", ""]),
                       st.one_of(st.text(max_size=30), st.integers(-10, 10**30).map(str),
                                 st.text("0123456789²³¹٣߁੧", max_size=25))),
             max_size=6).map(lambda kv: "\n".join(f"{k}={v}" for k, v in kv).encode())))
def test_the_notify_parser_never_raises_and_bounds_every_number(data):
    from proctui.core.speak.notify import NUMBERS, Message, parse

    got = parse(data)
    if isinstance(got, str):
        assert got in ("malformed", "bad number")
        return
    msg = Message(1, 0, got)
    for key, (smallest, largest) in NUMBERS.items():
        if msg.get(key) is not None:
            value = msg.number(key)
            assert value is not None and smallest <= value <= largest
            assert msg.get(key).isascii()
    for key, value in got:
        assert "\0" not in value and "\n" not in value
        msg.number(key)  # any key as a number: an int or None, never an exception


JSONISH = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(),
              st.text(max_size=20), st.binary(max_size=10)),
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(st.text(max_size=5), inner, max_size=4)),
    max_leaves=20)


@settings(max_examples=500, deadline=None)
@given(st.dictionaries(st.text(max_size=8), JSONISH, max_size=6))
def test_any_journal_entry_encodes_to_one_ascii_line_of_json(data):
    from proctui.core.store.journal import encode

    line = encode({"t": 1.0, "wall": 2.0, "kind": "x", **data})
    assert line.endswith(b"\n") and line.count(b"\n") == 1 and line.isascii()
    assert isinstance(json.loads(line), dict)


# -- the control protocol ------------------------------------------------------------------

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                max_size=4),
    max_leaves=12)

def _sendable() -> dict[str, type]:
    """Every request a client may send: the table's wire commands and the link's own."""
    from proctui.commands import WIRE
    from proctui.protocol.link import LINK

    return {**WIRE, **LINK}


def _fields() -> list[str]:
    from dataclasses import fields

    return sorted({f.name for cls in _sendable().values() for f in fields(cls)})


# Every op a client may send (a command added to the table is fuzzed with no line here),
# and some that are none.
OPS = st.sampled_from([*sorted(_sendable()), "nope", "", "\ud800", "notice", "trouble"])
KEYS_OF_REQUESTS = st.sampled_from([*_fields(), "id"])


@settings(max_examples=500, deadline=None)
@given(OPS, st.dictionaries(KEYS_OF_REQUESTS, JSON, max_size=4))
def test_any_request_decodes_to_a_command_or_a_fault(op, rest):
    from proctui.protocol import wire
    from proctui.protocol.decode import decode
    from proctui.protocol.replies import encode_reply
    from tests import table as commands

    request = decode({"op": op, **rest})
    if isinstance(request, commands.Done):
        assert not request.ok and request.fault is not None and request.text
        wire.dumps(encode_reply(request, rest.get("id")))  # always sendable
    else:
        assert decode(request.wire()) == request


@settings(max_examples=500, deadline=None)
@given(OPS, st.lists(st.tuples(KEYS_OF_REQUESTS | st.just("op"),
                               JSON | st.integers(10**300, 10**400)), max_size=6))
def test_a_request_that_repeats_a_key_is_refused_never_guessed(op, pairs):
    """JSON keeps the last of two keys of one name; a request that names one twice (its
    op too) is a BAD_REQUEST, whichever they are, and nothing here raises."""
    from proctui.protocol import wire
    from proctui.protocol.decode import decode
    from proctui.protocol.replies import Done, Fault

    pairs = [("op", op), *pairs]
    text = "{" + ", ".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in pairs) + "}"
    request = decode(wire.loads(text.encode()))
    keys = [k for k, _ in pairs]
    if len(set(keys)) < len(keys):
        assert isinstance(request, Done) and request.fault is Fault.BAD_REQUEST
        assert "twice" in request.text
    else:
        assert not isinstance(request, Done) or (not request.ok and request.fault)


# -- what a supervisor pushes, as a client reads it (a box over --host may be anyone's) ------

WILD = st.one_of(JSON, st.integers(10**300, 10**400), st.integers(-10**400, -10**300),
                 st.sampled_from([float("nan"), float("inf"), -float("inf"), "\ud800"]))


def _view_fields() -> list[str]:
    from dataclasses import fields

    from proctui.core.view import ProcessView

    return [f.name for f in fields(ProcessView)]


def _wild_view() -> st.SearchStrategy[dict[str, object]]:
    """A view whose every field may be right (the phase, a sent signal...) or anything."""
    outcome = st.fixed_dictionaries(
        {"kind": st.sampled_from(["stopped", "killed", "nope"]) | WILD,
         "text": st.text(max_size=10) | WILD},
        optional={"pid": WILD, "duration": WILD, "success_code": WILD,
                  "status": st.fixed_dictionaries({}, optional={
                      "code": WILD, "signal": WILD, "core_dumped": WILD, "known": WILD}) | WILD,
                  "sent": st.lists(st.lists(WILD | st.sampled_from([9, 1.5, "timeout"]),
                                            max_size=3), max_size=2) | WILD,
                  "left_behind": st.lists(WILD, max_size=2),
                  "left_pids": WILD})
    right = {"name": st.text(max_size=5), "phase": st.sampled_from(["running", "stopping"]),
             "deadline_action": st.sampled_from(["kill", "none"]), "outcome": outcome,
             "usage": st.lists(WILD | st.floats(0, 100), min_size=3, max_size=3),
             "escapees": st.lists(WILD, max_size=2), "notes": st.lists(WILD, max_size=2)}
    return st.fixed_dictionaries(
        {"name": st.text(max_size=5), "phase": st.sampled_from(["running", "stopping"])},
        optional={name: right.get(name, st.nothing()) | WILD for name in _view_fields()
                  if name not in ("name", "phase")})


PUSHES = st.one_of(
    st.dictionaries(st.sampled_from(["t", "v", "pid", "names", "scrollback", "started",
                                     "boot", "now", "views", "k", "id", "error", "n", "f",
                                     "l", "s", "st", "d", "o", "p", "c", "q", "removed",
                                     "worst", "crash", "journal_seq", "consoles", "strays"]),
                    WILD, max_size=6).map(lambda d: {**d, "t": d.get("t")}),
    st.builds(lambda t, rest: {**rest, "t": t},
              st.sampled_from(["hello", "views", "state", "out", "push", "reply", "error"]),
              st.dictionaries(st.sampled_from(["v", "pid", "names", "scrollback", "started",
                                               "k", "id", "n", "f", "l", "s", "st", "d",
                                               "removed", "worst", "now", "strays"]),
                              WILD, max_size=5)),
    st.builds(lambda views, now: {"t": "views", "views": views, "now": now},
              st.lists(_wild_view(), max_size=3), WILD),
)


def _typed(value: object, hint: object) -> bool:
    """Is ``value`` of type ``hint`` (a dataclass's field), all the way down?"""
    import dataclasses
    import math
    import types
    import typing
    from enum import Enum

    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return any(_typed(value, h) for h in typing.get_args(hint))
    if origin is tuple:
        args = typing.get_args(hint)
        if not isinstance(value, tuple):
            return False
        if len(args) == 2 and args[1] is Ellipsis:  # tuple[X, ...]: every item an X
            return all(_typed(v, args[0]) for v in value)
        # tuple[A, B]: each place its own type (a name, then an outcome or None)
        return len(value) == len(args) and all(
            _typed(v, h) for v, h in zip(value, args, strict=True))
    if hint is type(None):
        return value is None
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool) and abs(value) < 1 << 63
    if hint is float:
        return isinstance(value, int | float) and not isinstance(value, bool) and \
            abs(value) < 1 << 63 and math.isfinite(value)
    if hint is str:
        return isinstance(value, str)
    if isinstance(hint, type) and issubclass(hint, Enum):
        return isinstance(value, hint)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        hints = typing.get_type_hints(hint)
        return isinstance(value, hint) and all(
            _typed(getattr(value, f.name), hints[f.name]) for f in dataclasses.fields(hint))
    return True


@settings(max_examples=1500, deadline=None)
@given(PUSHES)
def test_any_push_decodes_to_a_typed_message_or_nothing(message):
    """What a supervisor (or a box over --host) sends becomes a typed message whose every
    field is of its type, all the way down (a view's times are finite numbers, its
    outcome's signals whole numbers), or None: never an exception, never a value that
    makes a console's arithmetic raise."""
    import dataclasses
    import typing

    from proctui.protocol import pushes, wire

    line = wire.dumps(message)  # what arrives, as bytes
    got = pushes.decode(wire.loads(line))
    if got is None:
        return
    hints = typing.get_type_hints(type(got))
    for f in dataclasses.fields(got):
        if f.name != "body":  # (a reply's body: its request's own answer() reads it)
            assert _typed(getattr(got, f.name), hints[f.name]), (f.name, got)
    if isinstance(got, pushes.Views):
        for view in got.views:
            assert _typed(view, type(view)), view


@settings(max_examples=300, deadline=None)
@given(PUSHES, WILD)
def test_a_client_reads_any_push_with_any_clock_without_raising(message, now):
    """The connection's own reading of a push (the clock of another machine moved into
    ours, a view's times moved with it) never raises on what a box sends."""
    import socket

    from proctui.protocol import pushes, wire
    from proctui.remote.connection import Connection

    ours, theirs = socket.socketpair()
    try:
        conn = Connection(ours, where="fake", local=False, timeout=1.0)
        conn.offset = 0.0  # another machine's clock
        theirs.sendall(wire.dumps({**message, "now": now}))
        got = conn.receive()
        assert got is not None
        assert conn.offset is not None and math.isfinite(conn.offset)
        conn.keep(pushes.decode(got))
    finally:
        ours.close()
        theirs.close()


def test_a_push_nested_past_any_reason_is_a_bad_message_not_a_crash():
    from proctui.protocol import wire

    with pytest.raises(ValueError):
        wire.loads(b'{"t": "views", "views": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n")


# Every op but those that act on everything at once (the target process must live on).
EVERYTHING = {"stop_all", "kill_all", "abandon_all", "interrupt"}
SAFE_OPS = st.sampled_from([*sorted(set(_sendable()) - EVERYTHING), "nope"])
LINES = st.one_of(
    st.binary(max_size=300).map(lambda b: b.replace(b"\n", b" ") + b"\n"),
    st.builds(lambda op, rest: {"op": op, **rest}, SAFE_OPS,
              st.dictionaries(KEYS_OF_REQUESTS, JSON, max_size=4)).map(
        lambda m: json.dumps(m).encode() + b"\n"),
)


def test_random_requests_never_hurt_the_control_server(tmp_path_factory):
    """Random lines and random requests (never naming the running process, never the
    stop-everything ones) at a real server: each is answered or drops its client, and the
    server and the process are as they were."""
    import socket
    import time

    from proctui.core.life.stop import Phase
    from proctui.core.store.rundir import RunDir
    from proctui.core.supervisor import Supervisor
    from proctui.remote.client import Connection
    from proctui.remote.server import Server
    from tests import table as commands
    from tests.conftest import all_ended, spec, wait_until

    name = "the-target-process"
    run_dir = RunDir(tmp_path_factory.mktemp("fuzz") / "run")
    run_dir.open()
    sup = Supervisor([spec(name, "sleep 600")], run_dir=run_dir)
    sup.start()
    server = Server(sup, run_dir)
    server.start()
    path = str(run_dir.path / "control.sock")
    try:
        wait_until(lambda: sup.snapshot().views[0].phase is Phase.RUNNING, what="running")

        @settings(max_examples=150, deadline=None,
                  suppress_health_check=[HealthCheck.function_scoped_fixture])
        @given(st.lists(LINES, min_size=1, max_size=4))
        def client(lines: list[bytes]) -> None:
            if any(name.encode() in line for line in lines):
                return
            with socket.socket(socket.AF_UNIX) as s:
                s.connect(path)
                with contextlib.suppress(OSError):
                    s.sendall(b"".join(lines) + b'{"op":"ping","id":"end"}\n')
                s.settimeout(0.2)
                seen, until = b"", time.monotonic() + 5
                while b'"id":"end"' not in seen and time.monotonic() < until:
                    try:
                        chunk = s.recv(1 << 16)
                    except TimeoutError:
                        continue
                    except OSError:
                        break
                    if not chunk:
                        break  # dropped: that is an answer too
                    seen = seen[-200:] + chunk

        client()
        assert sup.snapshot().views[0].phase is Phase.RUNNING and sup.snapshot().crash is None
        conn = Connection.open(run_dir.path)
        try:
            assert conn.call(commands.Ping()).ok
        finally:
            conn.close()
    finally:
        sup.send(Kill(name)).result(timeout=5)
        wait_until(lambda: all_ended(sup), timeout=20, what="the target killed")
        server.close()
        sup.close()
        run_dir.close()


# -- the journal reader and the timeline (issue 17) ---------------------------------------

JOURNAL_VALUES = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True), st.integers(-10**30, 10**30),
    st.booleans(), st.none(), st.text(max_size=30),
    st.sampled_from(["SIGKILL", "SIGTERM", "deciding", "stopping", "process", "abandoned",
                     "\x1b[2J", "\ud800", "\u202e", "]]>", "<&'\""]),
    st.lists(st.integers(), max_size=2))
JOURNAL_ENTRIES = st.fixed_dictionaries(
    {"t": st.one_of(st.floats(-1e3, 1e12), st.integers(-10, 10**12), JOURNAL_VALUES),
     "kind": st.sampled_from(["waiting", "start", "stage", "ready", "stop", "deadline",
                              "signal", "decision", "extend", "outcome", "notify", "x"])},
    optional={"name": st.one_of(st.text(max_size=12), st.sampled_from(["a", "b"]),
                                JOURNAL_VALUES),
              "ready": JOURNAL_VALUES, "stage": JOURNAL_VALUES, "phase": JOURNAL_VALUES,
              "deadline": st.one_of(st.floats(0, 100), JOURNAL_VALUES),
              "signal": JOURNAL_VALUES, "action": JOURNAL_VALUES, "who": JOURNAL_VALUES,
              "text": JOURNAL_VALUES, "outcome": JOURNAL_VALUES})


@settings(max_examples=500, deadline=None)
@given(st.lists(st.one_of(st.binary(max_size=80), st.sampled_from([
    b'{"t": 1, "kind": "start", "name": "a"}', b'{"t": Infinity, "kind": "x"}',
    b'{"t": 1e999, "kind": "x"}', b'{"t": 1, "kind": "x", "name": "\\ud800"}', b"[" * 3000,
    b'{"t": -0.0, "kind": 5}', b"\xff\xfe", b'{"t": 1, "kind"'])), max_size=20))
def test_the_journal_reader_never_raises_on_any_bytes(lines):
    from proctui.core.store.journal import BadLine, parse_lines, read_lines

    got = list(read_lines(line + b"\n" for line in lines))
    for item in got:
        if isinstance(item, BadLine):
            assert item.why and 1 <= item.number <= len(lines)
        else:
            assert isinstance(item, dict) and "kind" in item
            t = item["t"]
            assert isinstance(t, int | float) and abs(t) <= 1e11
    text = b"\n".join(lines).decode("utf-8", "surrogateescape")
    assert all(isinstance(e, dict) for e in parse_lines(text))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(JOURNAL_ENTRIES, max_size=30), st.text(max_size=20),
       st.integers(40, 200))
def test_the_timeline_draws_any_entries_as_safe_text_and_valid_xml(entries, title, width):
    import xml.etree.ElementTree as ET

    from proctui.frontends import timeline as pictures
    from proctui.frontends import timeline_svg

    picture = pictures.build(entries)
    import unicodedata

    for line in pictures.text(picture, width):
        assert not any(unicodedata.category(c) in ("Cc", "Cs", "Zl", "Zp")
                       or 0x202A <= ord(c) <= 0x202E or 0x2066 <= ord(c) <= 0x2069
                       for c in line), line
    svg = timeline_svg.svg(picture, width=max(400, width * 6), title=title)
    ET.fromstring(svg.encode("utf-8"))
