"""A stdio MCP server whose lists break (issue 26): prompts and resources lists with bad
items, and a tools change before its `subscriptions/listen` stream opens.

The SDK's lowlevel `Server` does the MCP part; this file owns the stdio wire, so it can
answer lists no SDK would send:

    python listfaultserver.py [--change-before-listen] [--bad-items] [--ttl-ms N] [--shapeless METHOD]...
                              [--code-zero METHOD]...

Tools: `echo(text)`. Prompts: `greet`. Resources: `memo://notes/1`; template `memo://notes/{id}`.

Options:
- `--change-before-listen`: a 2026-07-28 server that announces list changes only on
  `subscriptions/listen` (it serves that method, so it declares `tools.listChanged`). It
  adds the tool `late` when it receives the first `subscriptions/listen` request, before
  acknowledging it: the change falls, every time, between the client's first `tools/list`
  and the stream's opening, so no event is sent for it (no stream was open to carry one);
- `--ttl-ms N`: the `ttlMs` its `tools/list` results carry (default 0: immediately stale,
  the SDK's default);
- `--bad-items`: `prompts/list` also has `broken_prompt`, whose `arguments` is a string;
  `resources/list` also has `no_uri`, a resource without a `uri`;
  `resources/templates/list` also has `no_template`, a template without a `uriTemplate`.
- `--shapeless METHOD` (repeatable; `prompts/list`, `resources/list`,
  `resources/templates/list`): answers METHOD without its list (`{}` and, for a 2026-07-28
  client, the result envelope);
- `--code-zero METHOD` (repeatable; `resources/read`, `prompts/get`): fails METHOD with
  JSON-RPC error code 0, which JSON-RPC 2.0 does not define (section 5.1), and the text an
  SDK server sends for a handler's unhandled exception ("unhandled errors in a TaskGroup (1
  sub-exception)"), then `; note ` and the value of FAULT_NOTE when it is set (a secret the
  supervisor must mask);
- `--log-requests PATH` appends each request's method, one per line.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
from typing import Any


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--change-before-listen", action="store_true")
    ap.add_argument("--bad-items", action="store_true")
    ap.add_argument("--ttl-ms", type=int, default=0)
    ap.add_argument("--log-requests", default=None)
    ap.add_argument("--shapeless", action="append", default=[],
                    choices=["prompts/list", "resources/list", "resources/templates/list"])
    ap.add_argument("--code-zero", action="append", default=[], choices=["resources/read", "prompts/get"])
    args = ap.parse_args()

    gc.disable()  # no cyclic collection while the SDK is imported (~0.3 s of CPU a start)
    import anyio
    import mcp_types as types
    from mcp.server import Server
    from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler
    from mcp.shared.message import SessionMessage
    gc.freeze()  # the SDK's import made ~1e5 lasting objects: out of every later collection
    gc.enable()

    changed: list[bool] = []
    envelope = {"resultType": "complete", "ttlMs": 0, "cacheScope": "private"}
    obj: dict[str, Any] = {"type": "object"}

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[])  # answered on the wire (`tools_list` below)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        text = str((params.arguments or {}).get("text", params.name))
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)])

    async def list_prompts(ctx: Any, params: Any) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=[types.Prompt(name="greet", description="a greeting")])

    async def get_prompt(ctx: Any, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        message = types.PromptMessage(role="user", content=types.TextContent(type="text", text="hello"))
        return types.GetPromptResult(messages=[message])

    async def list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=[types.Resource(uri="memo://notes/1", name="note")])

    async def list_templates(ctx: Any, params: Any) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=[
            types.ResourceTemplate(uri_template="memo://notes/{id}", name="notes")])

    async def read_resource(ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        return types.ReadResourceResult(contents=[
            types.TextResourceContents(uri=str(params.uri), mime_type="text/plain", text="note one")])

    listen = ListenHandler(InMemorySubscriptionBus())

    async def on_listen(ctx: Any, params: types.SubscriptionsListenRequestParams) -> Any:
        if args.change_before_listen and not changed:
            changed.append(True)  # the change, before the ack: no stream carries its event
        return await listen(ctx, params)

    handlers: dict[str, Any] = {
        "on_list_tools": list_tools, "on_call_tool": call_tool, "on_list_prompts": list_prompts,
        "on_get_prompt": get_prompt, "on_list_resources": list_resources,
        "on_list_resource_templates": list_templates, "on_read_resource": read_resource}
    if args.change_before_listen:
        handlers["on_subscriptions_listen"] = on_listen
    server = Server("listfaultserver", version="1.0", **handlers)
    log = open(args.log_requests, "a", buffering=1) if args.log_requests else None  # noqa: SIM115
    stdout = os.fdopen(1, "wb", buffering=0)

    def write(data: dict[str, Any]) -> None:
        stdout.write(json.dumps(data, separators=(",", ":")).encode() + b"\n")

    def tools_list(request_id: Any) -> None:
        tools: list[dict[str, Any]] = [
            {"name": "echo", "inputSchema": {**obj, "properties": {"text": {"type": "string"}}}}]
        if changed:
            tools.append({"name": "late", "inputSchema": obj})
        write({"jsonrpc": "2.0", "id": request_id,
               "result": {"tools": tools, **envelope, "ttlMs": args.ttl_ms}})

    def bad_list(method: str, request_id: Any) -> None:
        key, good, bad = {
            "prompts/list": ("prompts", {"name": "greet", "description": "a greeting"},
                             {"name": "broken_prompt", "arguments": "not a list"}),
            "resources/list": ("resources", {"uri": "memo://notes/1", "name": "note"}, {"name": "no_uri"}),
            "resources/templates/list": ("resourceTemplates", {"uriTemplate": "memo://notes/{id}", "name": "notes"},
                                         {"name": "no_template"}),
        }[method]
        write({"jsonrpc": "2.0", "id": request_id, "result": {key: [bad, good], **envelope}})

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
                    if isinstance(message, types.JSONRPCRequest):
                        if log is not None:
                            log.write(message.method + "\n")
                        if message.method == "tools/list":
                            tools_list(message.id)
                            continue
                        if message.method in args.code_zero:
                            note = f"; note {os.environ['FAULT_NOTE']}" if os.environ.get("FAULT_NOTE") else ""
                            write({"jsonrpc": "2.0", "id": message.id, "error": {
                                "code": 0, "message": f"unhandled errors in a TaskGroup (1 sub-exception){note}"}})
                            continue
                        if message.method in args.shapeless:
                            write({"jsonrpc": "2.0", "id": message.id, "result": {**envelope}})
                            continue
                        if args.bad_items and message.method in (
                                "prompts/list", "resources/list", "resources/templates/list"):
                            bad_list(message.method, message.id)
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
