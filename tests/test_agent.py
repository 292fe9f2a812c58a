"""The agent's door (proctui mcp) without the SDK: the tools made from the command table,
who may use which, their schemas as the decoder's own rules, hostile arguments, bounded
answers, and what calling them does over a real control socket (an in-process
supervisor and its server, the door's RemoteCore on the socket). The SDK's own client
against the installed command is tests/test_mcp.py."""

from __future__ import annotations

import asyncio
import json
import select
import subprocess
import time

import pytest

from proctui.commands import COMMANDS
from proctui.commands.request_decision import RequestDecision
from proctui.frontends import agent
from proctui.frontends.agent import LOOKS, Door, Policy, every_tool, parse, schema
from proctui.remote.client import Connection, RemoteCore
from tests.children import STUBBORN
from tests.conftest import PY, pyspec, spec, wait_until
from tests.test_control_socket import served  # noqa: F401  (the fixture)

LOOKING = {"status", "why", "logs", "events", "is_ready", "decision", "timeline"}
ACTING = {"start", "stop", "restart", "extend", "reload", "request_decision"}
DECIDING = {"kill", "abandon", "down"}


# -- who may do what ----------------------------------------------------------------------


def offered(policy: Policy) -> set[str]:
    return {name for name, tool in every_tool().items() if policy.offers(tool)}


def test_the_tools_are_the_tables_and_the_looks():
    tools = every_tool()
    assert set(tools) == LOOKING | ACTING | DECIDING
    for name, tool in tools.items():
        if tool in LOOKS:
            continue
        assert tool.tool == name and (tool.op in COMMANDS or tool.op == "tail"), name
    # What ends a process, or answers for the operator, is never a tool an agent gets
    # by default: signal could send SIGKILL, answer would let an agent grant itself.
    for op in ("signal", "answer", "kill_all", "abandon_all", "interrupt",
               "set_interactive", "wait", "adopt", "clear"):
        assert COMMANDS[op].tool is None, op
    assert {n for n, t in tools.items() if t.decides} == DECIDING


def test_an_operator_decides_unless_it_hands_a_decision_over():
    here = Policy.of((), remote=False, read_only=False)
    assert offered(here) == LOOKING | ACTING and not here.read_only
    assert offered(Policy.of({"kill"}, remote=False, read_only=False)) == \
        LOOKING | ACTING | {"kill"}
    assert offered(Policy.of({"kill", "abandon", "down"}, False, False)) == \
        LOOKING | ACTING | DECIDING
    # Anything remote only looks, and says so to the supervisor (read-only link).
    remote = Policy.of((), remote=True, read_only=False)
    assert offered(remote) == LOOKING and remote.read_only
    assert offered(Policy.of({"act"}, remote=True, read_only=False)) == LOOKING | ACTING
    assert offered(Policy.of((), remote=False, read_only=True)) == LOOKING
    assert agent.parse_allow("kill, abandon") == frozenset({"kill", "abandon"})
    assert "'killall' is not one of" in agent.parse_allow("killall")


def test_a_tool_not_offered_says_what_is_true_of_this_door():
    def refused(policy: Policy, name: str) -> str:
        return agent.Door(lambda: (_ for _ in ()).throw(AssertionError), policy) \
            ._not_offered(name)

    here = refused(Policy.of((), remote=False, read_only=False), "kill")
    assert "Ask for it with request_decision (choice 'kill'" in here
    assert here.endswith("may hand it over with --allow kill")
    # A read-only door offers no request_decision and takes no --allow.
    for policy in (Policy.of((), remote=False, read_only=True),
                   Policy.of((), remote=True, read_only=False)):
        for name in ("kill", "stop"):
            said = refused(policy, name)
            assert "request_decision" not in said and "--allow kill" not in said, said
            assert "read-only: it may look, never act" in said, said
    # Over --host with only a kill handed over: no request_decision to ask with.
    handed = Policy.of({"kill"}, remote=True, read_only=False)
    assert "request_decision" not in refused(handed, "abandon")
    assert "over --host it acts only with --allow act" in refused(handed, "stop")


# -- schemas and hostile arguments --------------------------------------------------------


def test_every_schema_is_a_json_schema_and_the_parser_takes_what_it_allows():
    import jsonschema

    examples = {"name": "web", "by": 2.5, "since": 3, "lines": 10, "start": 0,
                "choice": "kill", "why": "it hangs", "ordered": True, "names": ["web"],
                "wait": 1.0, "id": 1, "width": 80}
    for name, tool in every_tool().items():
        made = schema(tool)
        jsonschema.Draft202012Validator.check_schema(made)
        args = {k: examples[k] for k in made["properties"]}
        jsonschema.validate(args, made)
        assert not isinstance(parse(tool, name, args), str), (name, parse(tool, name, args))
        # (down is the choice that needs no process: the others' name is checked after)
        required = {k: "down" if k == "choice" else examples[k]
                    for k in made.get("required", ())}
        assert not isinstance(parse(tool, name, required), str), name
        assert "description" in made["properties"].get("name", {"description": 1}), name
    # The door's own fields are never the agent's: down says why it stops itself.
    assert "why" not in schema(every_tool()["down"])["properties"]
    down = parse(every_tool()["down"], "down", {})
    assert down.why == "an agent (proctui mcp --allow down)"  # type: ignore[union-attr]
    assert isinstance(parse(every_tool()["down"], "down", {"why": "quit key"}), str)


HOSTILE: list[object] = [None, [], "x", 7, {"name": None}, {"name": 10 ** 400},
                         {"name": "x" * 100_000}, {"name": "web", "by": float("nan")},
                         {"name": "web", "by": -1}, {"name": "web", "by": 1e300},
                         {"names": [{"a": 1}]}, {"wait": 1e9}, {"id": True},
                         {"choice": "rm -rf /", "why": "x", "name": "web"},
                         {"why": "", "choice": "kill", "name": "web"}, {"width": 10 ** 6},
                         {"lines": -1, "name": "web"}, {"start": "0", "name": "web"},
                         {"\ud800": 1}, {"name": "web", "extra": 1}]


def test_hostile_arguments_are_an_error_never_an_exception():
    for name, tool in every_tool().items():
        for arguments in HOSTILE:
            got = parse(tool, name, arguments)
            assert isinstance(got, str | agent.Look) or hasattr(got, "op"), (name, got)
    nested: object = {}
    for _ in range(10_000):
        nested = {"name": nested}
    assert isinstance(parse(every_tool()["why"], "why", nested), str)


def test_a_line_that_is_no_message_is_answered_as_json_rpc_says():
    """The SDK drops a line it cannot take as a message without a word (its sender
    would wait for ever); agent.unreadable says what answers it."""
    lone = '{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"x": "\\ud800"}}'
    deep = '{"jsonrpc": "2.0", "id": "q", "method": "x", "params": {"a": ' + \
        "[" * 300 + "]" * 300 + "}}"
    got = agent.unreadable(lone)
    assert (got.id, got.code) == (2, agent.PARSE_ERROR) and "lone surrogate" in got.message
    assert (agent.unreadable(deep).id, agent.unreadable(deep).code) == ("q", agent.PARSE_ERROR)
    assert agent.unreadable("not json at all") == \
        agent.Unreadable(None, agent.PARSE_ERROR, "Parse error: the message is not JSON")
    assert agent.unreadable("x" * (agent.MAX_UNREADABLE + 1)).id is None
    # A value read but no message: an invalid request, with its id where it has one.
    assert agent.unreadable(None, {"jsonrpc": "1.0", "id": 6, "method": "x"}) == \
        agent.Unreadable(6, agent.INVALID_REQUEST,
                         "Invalid Request: not a JSON-RPC 2.0 message")
    assert agent.unreadable(None, [1, 2]).id is None
    assert agent.unreadable(None, {"jsonrpc": "2.0", "id": 7}).id == 7
    # JSON-RPC answers neither a notification nor a response, however wrong.
    assert agent.unreadable('{"method": "x", "params": "\\udc00"}') is None
    assert agent.unreadable(None, {"jsonrpc": "2.0", "method": 5}) is None
    assert agent.unreadable(None, {"jsonrpc": "2.0", "id": 9, "result": 5}) is None
    # Only an id it may give back: a whole number a double holds, a short plain string.
    for hostile in (True, 1 << 60, 1.5, "x" * 300, "a\x1b[31mb", [1], {"a": 1}):
        assert agent.unreadable(None, {"id": hostile, "method": 3}).id is None, hostile


def test_proctui_mcp_answers_every_line_that_is_no_message_and_serves_on():
    """The installed command's own stdio: each line the SDK would drop gets its error,
    and the next call is served."""
    pytest.importorskip("mcp")
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                    "clientInfo": {"name": "test", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"why",'
        '"arguments":{"name":"\\ud800"}}}',
        "not json",
        '{"jsonrpc":"2.0","id":3,"method":123}',
        '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"x":"\\ud800"}}',
        {"jsonrpc": "2.0", "id": 4, "method": "tools/list"}]
    text = "".join((line if isinstance(line, str) else json.dumps(line)) + "\n"
                   for line in lines)
    # stdin stays open until the last answer is read, as a client's does: at its end the
    # server may end before it answers.
    server = subprocess.Popen([PY, "-m", "proctui", "mcp", "--run-dir",
                               "/nonexistent/proctui"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert server.stdin is not None and server.stdout is not None
        server.stdin.write(text)
        server.stdin.flush()
        replies = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len(replies) < 5:
            ready, _, _ = select.select([server.stdout], [], [], 1)
            if ready:
                line = server.stdout.readline()
                if not line:
                    break
                replies.append(json.loads(line))
    finally:
        server.kill()
        server.wait(10)
    # (The server answers a call when it is done, so not always in the order asked.)
    assert sorted(((r.get("id"), r.get("error", {}).get("code")) for r in replies), key=str) \
        == sorted([(1, None), (2, agent.PARSE_ERROR), (None, agent.PARSE_ERROR),
                   (3, agent.INVALID_REQUEST), (4, None)], key=str), replies
    listed = next(r for r in replies if r.get("id") == 4)
    assert any(tool["name"] == "status" for tool in listed["result"]["tools"])


def test_the_sdk_is_never_imported_but_by_proctui_mcp_itself():
    probe = ("import sys\n"
             "from proctui.cli import cli\n"
             "for name in ('status', 'mcp', 'run', 'stop'):\n"
             "    ctx = cli.make_context('proctui', [name, '--help'], resilient_parsing=True)\n"
             "    cli.get_command(ctx, name)\n"
             "import proctui.frontends.agent, proctui.frontends.mcp_server\n"
             "print(sorted(m for m in sys.modules if m == 'mcp' or m.startswith('mcp.')))\n")
    got = subprocess.run([PY, "-c", probe], capture_output=True, text=True, timeout=60)
    assert got.stdout.strip() == "[]", got.stdout + got.stderr


def test_without_the_extra_proctui_mcp_is_one_line_naming_it():
    hide = ("import sys\n"
            "class Hide:\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name == 'mcp' or name.startswith('mcp.'):\n"
            "            raise ModuleNotFoundError(f'No module named {name!r}')\n"
            "sys.meta_path.insert(0, Hide())\n"
            "sys.argv = ['proctui', 'mcp', '--run-dir', '/nonexistent']\n"
            "from proctui.cli import main\n"
            "main()\n")
    got = subprocess.run([PY, "-c", hide], capture_output=True, text=True, timeout=60)
    assert got.returncode == 2, got
    assert got.stdout == "" and got.stderr.count("\n") == 1, got.stderr
    assert "pip install 'proctui[mcp]'" in got.stderr and "Traceback" not in got.stderr
    bad = subprocess.run([PY, "-m", "proctui", "mcp", "--allow", "kill,sudo"],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "'sudo' is not one of act, kill, abandon, down" in \
        bad.stderr


# -- calls over a real control socket -----------------------------------------------------


def door_on(s, policy: Policy | None = None) -> Door:  # type: ignore[no-untyped-def]
    def connect():  # type: ignore[no-untyped-def]
        conn = Connection.open(s.run_dir.path)
        return RemoteCore(conn, output=False, kind="mcp"), conn.hello

    return Door(connect, policy or Policy.of((), remote=False, read_only=False))


def call(door: Door, name: str, arguments: object = None) -> agent.Answer:
    got = asyncio.run(door.call(name, arguments if arguments is not None else {}))
    assert len(got.text.encode()) <= agent.MAX_REPLY
    if got.data is not None:
        assert json.loads(got.text) == got.data
    return got


def test_looking_acting_and_asking_over_the_socket(served):  # noqa: F811
    s = served([pyspec("web", STUBBORN, stop_timeout=30), spec("db", "sleep 60")])
    door = door_on(s)
    try:
        wait_until(lambda: "ready" in s.sup.output.buffer("web").read(0).lines, what="ready")
        status = call(door, "status").data
        assert [p["state"] for p in status["processes"]] == ["running", "running"]
        assert status["supervisor"]["pid"] and status["asks"] == []
        page = call(door, "logs", {"name": "web", "lines": 1}).data
        assert page["lines"] == ["ready"] and not page["more"]
        assert call(door, "why", {"name": "db"}).data["why"].startswith("running (pid")
        # Acting: what it did shows in the very next look (the reply waits for its push).
        assert call(door, "stop", {"name": "web"}).data["ok"]
        assert call(door, "status").data["processes"][0]["state"] == "stopping"
        extended = call(door, "extend", {"name": "web", "by": 100})
        assert extended.data["ok"] and "extended by 100s" in extended.data["text"]
        assert call(door, "status").data["processes"][0]["deadline_in_s"] > 100
        # Killing is the operator's: not a tool; asking is.
        refused = call(door, "kill", {"name": "web"})
        assert refused.error and "only an operator decides it" in refused.text
        asked = call(door, "request_decision", {"choice": "kill", "name": "web",
                                                "why": "it ignores SIGTERM"})
        number = asked.data["ask"]["id"]
        assert asked.data["ask"]["state"] == "waiting"
        assert asked.data["ask"]["asker"].startswith("an agent through proctui mcp (uid ")
        waiting = call(door, "decision", {"id": number}).data["ask"]
        assert waiting["state"] == "waiting" and 299 < waiting["lapses_in_s"] <= 300
        # An agent answering its own request is refused by the supervisor as well.
        from proctui.commands.answer import AnswerAsk

        conn = Connection.open(s.run_dir.path)
        try:
            from proctui.protocol.link import Greet

            conn.call(Greet("mcp"))
            self_granted = conn.call(AnswerAsk(number, True))
            assert self_granted.fault is not None and "never answer" in self_granted.text
        finally:
            conn.close()
        # The operator answers (here, as an attached console would); the agent waits.
        operator = {"uid": 0, "pid": 1, "client": "console"}

        def later() -> None:
            time.sleep(0.3)
            s.sup.send(AnswerAsk(number, True), who=operator)

        async def wait_for_answer() -> agent.Answer:
            loop = asyncio.get_running_loop()
            answering = loop.run_in_executor(None, later)
            got = await door.call("decision", {"id": number, "wait": 20})
            await answering
            return got

        answered = asyncio.run(wait_for_answer()).data["ask"]
        assert answered["state"] == "granted" and "attached console" in answered["answer"]
        wait_until(lambda: s.view("web").outcome is not None, what="web killed")
        assert s.view("web").outcome.text.startswith("killed with SIGKILL by operator")
        events = call(door, "events", {"since": 0}).data["events"]
        kinds = [e["kind"] for e in events]
        assert "ask" in kinds and "answer" in kinds and "outcome" in kinds
        (ask_entry,) = [e for e in events if e["kind"] == "ask"]
        assert ask_entry["client"] == "mcp" and ask_entry["why"] == "it ignores SIGTERM"
        picture = call(door, "timeline", {"width": 100}).text
        assert f"ask {number}: kill web  mcp uid" in picture
        assert f"answer {number}: granted  console uid 0" in picture
    finally:
        door.close()


def test_answers_are_bounded_pages(served):  # noqa: F811
    # Lines of quotes and backslashes: twice as long in JSON as on the screen.
    flood = "import sys\nfor i in range(20000): print('line', i, '\\\\\"' * 1000)\n" \
            "import time\ntime.sleep(60)"
    s = served([pyspec("flood", flood, scrollback=30_000)])
    door = door_on(s)
    try:
        wait_until(lambda: s.sup.output.buffer("flood").output_total >= 20_000,
                   timeout=30, what="the flood")
        page = call(door, "logs", {"name": "flood", "lines": 20_000}).data
        assert len(page["lines"]) < agent.MAX_LINES and page["more"]
        follow = call(door, "logs", {"name": "flood", "start": page["next"]}).data
        assert follow["first"] == page["next"]  # read on from where the page ended
        resource = asyncio.run(door.recent_output("flood"))
        assert resource.count("\n") < agent.RECENT and len(resource) <= agent.MAX_REPLY
    finally:
        door.close()


def test_a_door_with_no_supervisor_says_so_and_finds_one_that_starts(tmp_path, served):  # noqa: F811
    from proctui.remote.client import NoSupervisor

    started: list[object] = []

    def connect():  # type: ignore[no-untyped-def]
        if not started:
            raise NoSupervisor("no supervisor is running (test)")
        conn = Connection.open(started[0].run_dir.path)  # type: ignore[attr-defined]
        return RemoteCore(conn, output=False, kind="mcp"), conn.hello

    door = Door(connect, Policy.of((), remote=False, read_only=False))
    try:
        got = call(door, "status")
        assert got.error and got.text == "no supervisor is running (test)"
        started.append(served([spec("a", "sleep 60")]))
        assert call(door, "status").data["processes"][0]["name"] == "a"
    finally:
        door.close()


@pytest.mark.parametrize("tool", sorted(LOOKING - {"timeline"}))
def test_unknown_names_and_bad_waits_are_errors(served, tool):  # noqa: F811
    s = served([spec("a", "sleep 60")])
    door = door_on(s)
    try:
        arguments = {"status": {}, "why": {"name": "zz"}, "logs": {"name": "zz"},
                     "events": {"since": -1}, "is_ready": {"names": ["zz"]},
                     "decision": {"id": 5, "wait": 61}}[tool]
        got = call(door, tool, arguments)
        assert got.error == (tool != "status"), got
        if tool in ("why", "logs", "is_ready"):
            assert "no process named 'zz' (there are: a)" in got.text
    finally:
        door.close()


def test_a_waiting_look_costs_the_supervisor_nothing(served):  # noqa: F811
    """Twenty agents waiting for an answer that will not come, and twenty paging logs,
    meanwhile: the supervisor's core is never asked to wait, and a deadline due
    meanwhile is kept (its SIGKILL within 100 ms, as with any client)."""
    from proctui.commands.stop import Stop
    from proctui.core.life.outcome import Reason
    from tests.test_control_socket import _deadline

    s = served([pyspec("hung", STUBBORN, stop_timeout=1.0)], interactive=False)
    door = door_on(s)
    try:
        wait_until(lambda: s.sup.output.buffer("hung").output_total >= 1, what="ready")

        async def crowd() -> None:
            waits = [door.call("decision", {"id": 99, "wait": 3}) for _ in range(20)]
            pages = [door.call("logs", {"name": "hung"}) for _ in range(20)]
            assert s.sup.send(Stop("hung")).result(5).ok
            await asyncio.gather(*waits, *pages)

        began = time.monotonic()
        asyncio.run(crowd())
        assert time.monotonic() - began < 10
        wait_until(lambda: s.view("hung").outcome is not None, timeout=20, what="hung killed")
        outcome = s.view("hung").outcome
        kill = next(x for x in outcome.sent if x.reason is Reason.TIMEOUT)
        late = kill.at - _deadline(s.view("hung"), 1.0)
        assert 0 <= late < 0.1, f"SIGKILL {late * 1000:.0f} ms after its deadline"
    finally:
        door.close()


def test_request_decision_is_one_table_request_on_every_door():
    """The tool's request is the wire's: the same fields, checks and faults."""
    tool = every_tool()["request_decision"]
    assert tool is RequestDecision
    made = parse(tool, "request_decision", {"choice": "down", "why": "done"})
    assert made == RequestDecision("down", "done")
    assert "give a reason" in parse(tool, "request_decision",
                                    {"choice": "kill", "name": "web", "why": "\x1b[0m"})
