"""A stdio MCP server whose tools lists and results break the ways public bug reports show
servers in the wild doing (issue 26): repeated names, bursts, bad schemas, answers that are not text.

The SDK's lowlevel `Server` does the MCP part; this file owns only the stdio wire (as
wirefaultserver.py does), so it can bend what crosses it the way the public bug reports describe:

    python toolfaultserver.py [--duplicate] [--no-tools] [--burst] [--bad-tool]
                          [--discover never] [--close-stdout-after-call]

Tools (unless `--no-tools`):
- `echo(text)`;
- `shot(scale)`: `scale` is required and has a default (`@playwright/mcp`'s
  `browser_take_screenshot`); answers with the arguments it received, as JSON;
- `embedded_text()`, `embedded_blob()`, `link()`, `image()`: results that are not text
  (an embedded text resource, an embedded blob resource, a `resource_link`, an image);
- `close_stdout()`: closes the server's stdout and keeps living (a server whose output ended);
- `odd_shape()`: answers a result whose `content` is a string (no protocol version accepts it);
- `hang()`: never answers, and from then on the server answers nothing (alive, reading).

Options:
- `--duplicate`: `tools/list` names `echo` twice (openclaw/mcporter#260);
- `--no-tools`: declares prompts and resources, no `tools` capability (microsoft/vscode#243614);
  `tools/list` is answered -32601, as such servers do;
- `--burst`: while answering the first `tools/list`, announce `tools/list_changed` five times
  before the answer; every later listing also has the tool `late` (so a lost burst leaves
  the tool set stale);
- `--bad-tool`: `tools/list` also has `broken`, whose `inputSchema` is a string (no usable
  schema), a tool without a name and one whose name is empty;
- `--discover never`: never answer `server/discover` (a legacy server that drops the probe);
  `--log-requests PATH` appends each request's method, one per line.
"""

from __future__ import annotations

import argparse
import base64
import gc
import json
import os
import sys
from typing import Any

BLOB = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(256))).decode()


def tool_defs(*, bad: bool) -> list[dict[str, Any]]:
    obj: dict[str, Any] = {"type": "object"}
    tools: list[dict[str, Any]] = [
        {"name": "echo", "inputSchema": {**obj, "properties": {"text": {"type": "string"}}, "required": ["text"]}},
        {"name": "shot", "inputSchema": {**obj, "properties": {
            "scale": {"type": "string", "enum": ["css", "device"], "default": "css"},
            "type": {"type": "string", "default": "png"}}, "required": ["scale", "type"]}},
        {"name": "embedded_text", "inputSchema": obj},
        {"name": "embedded_blob", "inputSchema": obj},
        {"name": "link", "inputSchema": obj},
        {"name": "image", "inputSchema": obj},
        {"name": "close_stdout", "inputSchema": obj},
        {"name": "odd_shape", "inputSchema": obj},
        {"name": "hang", "inputSchema": obj},
    ]
    if bad:
        tools.append({"name": "broken", "description": "its schema is a string", "inputSchema": "object"})
        tools.append({"description": "a tool without a name", "inputSchema": obj})
        tools.append({"name": "", "description": "a tool whose name is empty", "inputSchema": obj})
    return tools


def result_for(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    if name == "echo":
        content: list[dict[str, Any]] = [{"type": "text", "text": str(arguments.get("text", ""))}]
    elif name == "embedded_text":
        content = [{"type": "resource", "resource": {"uri": "memo://notes/1", "mimeType": "text/plain",
                                                     "text": "the embedded note"}}]
    elif name == "embedded_blob":
        content = [{"type": "text", "text": "a picture follows"},
                   {"type": "resource", "resource": {"uri": "file:///pictures/dot.png", "mimeType": "image/png",
                                                     "blob": BLOB}}]
    elif name == "link":
        content = [{"type": "resource_link", "uri": "https://example.invalid/report.pdf", "name": "report.pdf",
                    "mimeType": "application/pdf"}]
    elif name == "image":
        content = [{"type": "image", "data": BLOB, "mimeType": "image/png"}]
    else:
        content = [{"type": "text", "text": json.dumps(arguments, sort_keys=True)}]
    return {"content": content}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--duplicate", action="store_true")
    ap.add_argument("--no-tools", action="store_true")
    ap.add_argument("--burst", action="store_true")
    ap.add_argument("--bad-tool", action="store_true")
    ap.add_argument("--discover", choices=("answer", "never"), default="answer")
    ap.add_argument("--log-requests", default=None)
    args = ap.parse_args()

    gc.disable()  # no cyclic collection while the SDK is imported (~0.3 s of CPU a start)
    import anyio
    import mcp_types as types
    from mcp.server import Server
    from mcp.shared.message import SessionMessage
    gc.freeze()  # the SDK's import made ~1e5 lasting objects: out of every later collection
    gc.enable()

    async def list_prompts(ctx: Any, params: Any) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=[types.Prompt(name="greet", description="a greeting")])

    async def list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=[types.Resource(uri="memo://notes/1", name="note")])

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[])  # answered on the wire (`tools/list` below)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        return types.CallToolResult.model_validate(result_for(params.name, params.arguments or {}))

    handlers: dict[str, Any] = {"on_list_prompts": list_prompts, "on_list_resources": list_resources}
    if not args.no_tools:
        handlers.update(on_list_tools=list_tools, on_call_tool=call_tool)
    server = Server("toolfaultserver", version="1.0", **handlers)
    log = open(args.log_requests, "a", buffering=1) if args.log_requests else None  # noqa: SIM115
    listings = {"n": 0}
    frozen: list[bool] = []
    stdout = os.fdopen(1, "wb", buffering=0)

    def write(data: dict[str, Any]) -> None:
        if not stdout.closed:
            stdout.write(json.dumps(data, separators=(",", ":")).encode() + b"\n")

    def tools_list(request_id: Any) -> None:
        listings["n"] += 1
        tools = tool_defs(bad=args.bad_tool)
        if args.duplicate:
            tools.append({"name": "echo", "description": "the second echo", "inputSchema": {"type": "object"}})
        if args.burst and listings["n"] == 1:
            for _ in range(5):  # the burst, while the first listing is in flight
                write({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        if args.burst and listings["n"] > 1:
            tools.append({"name": "late", "inputSchema": {"type": "object"}})
        # The 2026-07-28 envelope fields too: a legacy session drops them (a later revision's).
        write({"jsonrpc": "2.0", "id": request_id, "result": {"tools": tools, "resultType": "complete",
                                                               "ttlMs": 0, "cacheScope": "private"}})

    async def serve() -> None:
        to_server, server_reads = anyio.create_memory_object_stream[SessionMessage | Exception](16)
        server_writes, from_server = anyio.create_memory_object_stream[SessionMessage](16)

        async def read_stdin() -> None:
            stdin = anyio.wrap_file(os.fdopen(0, "rb"))
            async with to_server:
                async for raw in stdin:
                    try:
                        message = types.jsonrpc_message_adapter.validate_json(raw, by_name=False)
                    except ValueError:
                        continue
                    if frozen:
                        continue  # wedged: alive, reading, answering nothing
                    if isinstance(message, types.JSONRPCRequest):
                        if log is not None:
                            log.write(message.method + "\n")
                        if message.method == "server/discover" and args.discover == "never":
                            continue
                        if message.method == "tools/list" and not args.no_tools:
                            tools_list(message.id)
                            continue
                        called = (message.params or {}).get("name") if message.method == "tools/call" else None
                        if called == "close_stdout":
                            stdout.close()  # the output ends; the process lives on, reading stdin
                            continue
                        if called == "hang":
                            frozen.append(True)
                            continue
                        if called == "odd_shape":  # a result no protocol version accepts
                            write({"jsonrpc": "2.0", "id": message.id, "result": {"content": "not a list"}})
                            continue
                    await to_server.send(SessionMessage(message))

        async def write_stdout() -> None:
            async with from_server:
                async for item in from_server:
                    write(item.message.model_dump(by_alias=True, exclude_unset=True, mode="json"))

        async with anyio.create_task_group() as tg:
            tg.start_soon(read_stdin)
            tg.start_soon(write_stdout)
            await server.run(server_reads, server_writes, server.create_initialization_options())
            tg.cancel_scope.cancel()

    anyio.run(serve)
    sys.exit(0)


if __name__ == "__main__":
    main()
