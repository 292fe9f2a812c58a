"""``proctui mcp`` as an agent meets it: the official SDK's own client
(``mcp.client.stdio`` running ``proctui mcp``) against a supervisor started with
``proctui up``, and the operator's console, the installed wheel's, on a real pty read
through a terminal emulator. The agent lists the tools, reads status and a page of logs,
gives a stopping process more time, and asks for a kill; the question appears on the
console, is answered there with its key, and the agent sees the answer."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from tests.children import POLITE, STUBBORN
from tests.conftest import PY
from tests.screen import Screen
from tests.test_detach import Detached, toml_str
from tests.test_hostile_input import FAKE_SSH

# The real console on a pty, the wheel, ssh or hundreds of processes: the second
# CI stage (README: "Tests").
pytestmark = pytest.mark.slow

WHY = "the dev server hangs on :8000 and ignores SIGTERM"


def config(tmp_path: Path) -> Path:
    path = tmp_path / "proctui.toml"
    path.write_text(f"""
[processes.web]
cmd = [{toml_str(PY)}, "-c", {toml_str(STUBBORN)}]
stop_timeout = 3

[processes.db]
cmd = [{toml_str(PY)}, "-c", {toml_str(POLITE)}]
""")
    return path


@contextlib.asynccontextmanager
async def agent(*args: str, env: dict[str, str] | None = None) -> AsyncIterator:
    """The SDK's client session on ``proctui mcp ARGS``; the server ends with it."""
    from mcp import ClientSession, StdioServerParameters, stdio_client

    # The whole environment: the test's token reaches the server and what it starts.
    params = StdioServerParameters(command=PY, args=["-m", "proctui", "mcp", *args],
                                   env={**os.environ, **(env or {})})
    async with stdio_client(params, errlog=sys.stderr) as (read, write), \
            ClientSession(read, write, read_timeout_seconds=60) as session:
        await session.initialize()
        yield session


async def call(session, tool: str, /, **arguments: object) -> dict:  # type: ignore[no-untyped-def,type-arg]
    got = await session.call_tool(tool, arguments)
    assert not got.is_error, (tool, got.content[0].text)
    data = json.loads(got.content[0].text)
    assert data == got.structured_content
    return data  # type: ignore[no-any-return]


def journal(d: Detached, kind: str) -> list[dict]:  # type: ignore[type-arg]
    text = (d.run_dir / "journal.jsonl").read_text()
    return [e for e in map(json.loads, text.splitlines()) if e.get("kind") == kind]


def test_an_agent_asks_and_the_operator_answers_on_a_real_console(tmp_path, installed):
    d = Detached(tmp_path, config(tmp_path))
    console: Screen | None = None
    try:
        async def play() -> None:
            nonlocal console
            async with agent("--run-dir", str(d.run_dir)) as session:
                tools = {t.name: t for t in (await session.list_tools()).tools}
                assert {"status", "logs", "extend", "request_decision", "decision"} <= \
                    set(tools)
                assert not {"kill", "abandon", "down", "signal"} & set(tools)
                assert tools["extend"].input_schema["properties"]["by"]["anyOf"]
                assert tools["status"].annotations.read_only_hint

                status = await call(session, "status")
                assert [p["name"] for p in status["processes"]] == ["web", "db"]
                assert status["supervisor"]["pid"] == d.pid
                page = await call(session, "logs", name="web", lines=5)
                assert page["lines"][-1] == "ready" and not page["more"], page
                resources = {str(r.uri) for r in (await session.list_resources()).resources}
                assert resources == {"proctui://journal", "proctui://output/web",
                                     "proctui://output/db"}
                output = await session.read_resource("proctui://output/web")
                assert output.contents[0].text.endswith("ready")
                entries = (await session.read_resource("proctui://journal")).contents[0].text
                assert [json.loads(e)["kind"] for e in entries.splitlines()][:1] == ["begin"]

                # A stop, then more time for it: the agent's extend, as an operator's.
                assert (await call(session, "stop", name="web"))["ok"]
                extended = await call(session, "extend", name="web", by=120)
                assert extended["ok"], extended
                web = (await call(session, "status"))["processes"][0]
                assert web["state"] == "stopping" and web["deadline_in_s"] > 100

                refused = await session.call_tool("kill", {"name": "web"})
                assert refused.is_error and "request_decision" in refused.content[0].text
                asked = await call(session, "request_decision", choice="kill", name="web",
                                   why=WHY)
                number = asked["ask"]["id"]

                # The operator's console, the installed wheel's, on a real terminal.
                console = Screen([str(installed / "venv/bin/proctui"), "attach",
                                  "--run-dir", str(d.run_dir)], tmp_path, 24, 80)
                await anyio.to_thread.run_sync(lambda: console.wait(  # type: ignore[union-attr]
                    lambda lines: any("An agent asks to kill web" in x for x in lines) and
                    any(WHY[:40] in x for x in lines) and
                    any("K kill: grant it" in x for x in lines),  # armed: its keys shown
                    what="the agent's question, armed"))
                assert "1 of 1 waiting" in console.text()
                assert (await call(session, "decision", id=number))["ask"]["state"] == \
                    "waiting"
                console.press(b"K")
                answered = await call(session, "decision", id=number, wait=30)
                assert answered["ask"]["state"] == "granted", answered
                assert "the operator at an attached console" in answered["ask"]["answer"]
                # is_ready waits until web is ready or has ended: here, its ending.
                ended = await call(session, "is_ready", names=["web"], wait=30)
                assert not ended["ready"] and "killed with SIGKILL by operator" in \
                    ended["not_ready"][0], ended
                web = (await call(session, "status"))["processes"][0]
                assert web["outcome"]["text"].startswith("killed with SIGKILL by operator")
                await anyio.to_thread.run_sync(lambda: console.wait_text(  # type: ignore[union-attr]
                    "killed with SIGKILL by operator"))

        anyio.run(play)
        (asked,) = journal(d, "ask")
        assert (asked["choice"], asked["name"], asked["why"], asked["client"]) == \
            ("kill", "web", WHY, "mcp")
        assert asked["uid"] == os.getuid()
        (answer,) = journal(d, "answer")
        assert (answer["answer"], answer["client"], answer["uid"]) == \
            ("granted", "console", os.getuid())
        assert console is not None
        console.press(b"d")
        assert console.finish() == 0
        down = d.ctl("down")
        assert "db: stopped after" in down.stdout
    finally:
        if console is not None:
            console.close()
        d.kill()


def test_over_host_the_door_only_looks_unless_it_may_act(tmp_path):
    d = Detached(tmp_path, config(tmp_path))
    fake = tmp_path / "fake_ssh.py"
    fake.write_text(FAKE_SSH)
    env = {"PROCTUI_SSH": f"{shlex.quote(PY)} {shlex.quote(str(fake))}",
           "PROCTUI_REMOTE": f"{shlex.quote(PY)} -m proctui"}
    where = ("--host", "box", "--run-dir", str(d.run_dir))
    try:
        async def play() -> None:
            async with agent(*where, env=env) as session:
                names = {t.name for t in (await session.list_tools()).tools}
                assert names == {"status", "why", "logs", "events", "is_ready", "decision",
                                 "timeline"}
                assert (await call(session, "status"))["processes"][1]["name"] == "db"
                stop = await session.call_tool("stop", {"name": "db"})
                assert stop.is_error and "--allow act" in stop.content[0].text
                ask = await session.call_tool("request_decision",
                                              {"choice": "down", "why": "done"})
                assert ask.is_error
            async with agent(*where, "--allow", "act,kill", env=env) as session:
                names = {t.name for t in (await session.list_tools()).tools}
                assert {"stop", "kill", "request_decision"} <= names
                assert not {"abandon", "down"} & names
                assert (await call(session, "kill", name="web"))["ok"]

        anyio.run(play)
        assert "db" not in [e.get("name") for e in journal(d, "command")]
        (kill,) = journal(d, "command")
        assert (kill["op"], kill["name"], kill["client"]) == ("kill", "web", "mcp")
    finally:
        d.kill()
