"""``proctui mcp``: a running supervisor served to agents as an MCP server on stdio, with
the official ``mcp`` SDK (an optional extra: ``pip install 'proctui[mcp]'``; imported
here only when the server runs, never by any other command).

The SDK carries the protocol; what the tools are, what an agent may do and what each
answers is ``agent.py``. Resources: each process's recent output
(``proctui://output/NAME``) and the journal's latest entries (``proctui://journal``).
Nothing is written to stdout but the protocol (the SDK's); a line of ours goes to
stderr."""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, unquote

from proctui import __version__
from proctui.commands.api import Core
from proctui.frontends.agent import Answer, Door, Policy, description, schema, unreadable
from proctui.protocol.pushes import Hello

if TYPE_CHECKING:
    import mcp.types as types
    from mcp.server.context import ServerRequestContext
    from mcp.shared.message import SessionMessage

SCHEME = "proctui"
OUTPUT = f"{SCHEME}://output/"
JOURNAL = f"{SCHEME}://journal"
DESTRUCTIVE = frozenset({"stop", "restart", "kill", "abandon", "down", "reload"})

INSTRUCTIONS = (
    "proctui supervises the processes of one config (a dev server, a database, workers) "
    "and makes their shutdown visible: a stop signal, a countdown to a deadline, then "
    "the operator's decision. Look with status, why, logs, events, is_ready and "
    "timeline; act with start, stop, restart, extend (more time for a stopping process) "
    "and reload, where this door allows it. Killing a process, abandoning it and "
    "stopping everything are the operator's decisions: ask for them with "
    "request_decision (choice, name, why: your reason is shown to the operator word for "
    "word), then read the answer with decision (it may wait). A request waits until an "
    "operator grants or denies it, for at most 5 minutes.")


def serve(connect: Callable[[], tuple[Core, Hello]], policy: Policy, where: str) -> int:
    """Serve until the client closes stdin; the exit status."""
    import anyio

    door = Door(connect, policy)
    try:
        door.ensure()
    except Exception as e:  # no supervisor yet: each tool call will say so, and try again
        _say(f"{where}: {e} (tools will say so until one answers)")
    try:
        anyio.run(_serve, door)
    except KeyboardInterrupt:
        return 130
    finally:
        door.close()
    return 0


def _say(text: str) -> None:
    print(f"proctui mcp: {text}", file=sys.stderr, flush=True)


async def _serve(door: Door) -> None:
    import anyio
    import mcp.types as types
    from mcp.server.lowlevel import Server
    from mcp.server.stdio import stdio_server
    from mcp.shared.message import SessionMessage

    async def list_tools(ctx: ServerRequestContext[Any],
                         params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[
            types.Tool(name=name, description=description(tool), input_schema=schema(tool),
                       annotations=types.ToolAnnotations(
                           read_only_hint=not tool.acts,
                           destructive_hint=tool.acts and name in DESTRUCTIVE,
                           open_world_hint=False))
            for name, tool in door.tools.items()])

    async def call_tool(ctx: ServerRequestContext[Any],
                        params: types.CallToolRequestParams) -> types.CallToolResult:
        got: Answer = await door.call(params.name, params.arguments)
        return types.CallToolResult(content=[types.TextContent(type="text", text=got.text)],
                                    structured_content=got.data, is_error=got.error)

    async def list_resources(ctx: ServerRequestContext[Any],
                             params: types.PaginatedRequestParams | None) \
            -> types.ListResourcesResult:
        try:
            names = door.snapshot().names
        except Exception:
            names = []
        return types.ListResourcesResult(resources=[
            types.Resource(uri=JOURNAL, name="journal", mime_type="application/x-ndjson",
                           description="The latest entries of the supervisor's journal "
                                       "that tell what happened (starts, stops, signals, "
                                       "deadlines, decisions, requests, outcomes)"),
            *(types.Resource(uri=OUTPUT + quote(name, safe=""), name=f"output of {name}",
                             mime_type="text/plain",
                             description=f"The last lines {name} printed")
              for name in names)])

    async def list_templates(ctx: ServerRequestContext[Any],
                             params: types.PaginatedRequestParams | None) \
            -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=[
            types.ResourceTemplate(uri_template=OUTPUT + "{name}", name="output",
                                   mime_type="text/plain",
                                   description="The last lines a process printed")])

    async def read_resource(ctx: ServerRequestContext[Any],
                            params: types.ReadResourceRequestParams) \
            -> types.ReadResourceResult:
        uri = str(params.uri)
        try:
            if uri == JOURNAL:
                text, mime = await door.recent_journal(), "application/x-ndjson"
            elif uri.startswith(OUTPUT) and len(uri) < 1024:
                text, mime = await door.recent_output(unquote(uri[len(OUTPUT):])), \
                    "text/plain"
            else:
                text, mime = f"no resource {uri[:80]!r}", "text/plain"
        except Exception as e:  # (no supervisor, an unknown name: said, never raised)
            text, mime = f"error: {e}", "text/plain"
        return types.ReadResourceResult(contents=[
            types.TextResourceContents(uri=uri, text=text, mime_type=mime)])

    server: Server[Any] = Server(
        "proctui", version=__version__, instructions=INSTRUCTIONS,
        on_list_tools=list_tools, on_call_tool=call_tool, on_list_resources=list_resources,
        on_list_resource_templates=list_templates, on_read_resource=read_resource)
    async with stdio_server() as (read, write):
        # The SDK drops a line it cannot take as a message without a word, and its sender
        # would wait for ever: such a line is answered here, as JSON-RPC says, and what
        # is a message goes on to the server.
        taken, to_take = anyio.create_memory_object_stream[SessionMessage | Exception](0)

        async def screen() -> None:
            async with taken:
                async for item in read:
                    if isinstance(item, SessionMessage):
                        await taken.send(item)
                    else:
                        await _refuse(item, write.send)

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(screen)
            await server.run(to_take, write, server.create_initialization_options())
            tasks.cancel_scope.cancel()


async def _refuse(failure: Exception,
                  send: Callable[[SessionMessage], Awaitable[None]]) -> None:
    """The JSON-RPC error for a line the SDK's parser refused (agent.unreadable). The
    line is in the parser's error: the text it could not read as JSON; or, for a value
    that is no message, in each error that says a field is missing (the whole object)
    or that the value is not an object at all."""
    import mcp.types as types
    from mcp.shared.message import SessionMessage
    from pydantic import ValidationError

    errors = failure.errors() if isinstance(failure, ValidationError) else []
    text: str | None = None
    given: object = None
    for e in errors:
        if e["type"] == "json_invalid" and isinstance(e.get("input"), str):
            text = e["input"]
            break
        if len(e["loc"]) <= 1 or (e["type"] == "missing" and len(e["loc"]) == 2):
            given = e.get("input")
            break
    said = unreadable(text, given)
    if said is not None:
        await send(SessionMessage(types.JSONRPCError(
            jsonrpc="2.0", id=said.id,
            error=types.ErrorData(code=said.code, message=said.message))))
