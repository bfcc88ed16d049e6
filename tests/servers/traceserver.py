"""An MCP server (the SDK's lowlevel `Server`, stdio) that says what trace context reached it.

    python traceserver.py

Tools: `where()` answers the W3C trace context keys of its request's `params._meta`
(`traceparent`, `tracestate`, `baggage`) as JSON, as any server that continues a trace
reads them (SEP-414); `echo(text)` answers its text (a result that holds what the caller
sent); `fail(text)` is a tool error; `secret()` answers its `TRACE_SECRET` environment
variable (a result that holds an env value).
"""

from __future__ import annotations

import json
import os
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.stdio import stdio_server

TRACE_KEYS = ("traceparent", "tracestate", "baggage")
ANY = {"type": "object", "properties": {"text": {"type": "string"}}}


def main() -> None:
    tools = [types.Tool(name="where", description="The trace context of this request.", input_schema=ANY),
             types.Tool(name="echo", description="Echo the text back.", input_schema=ANY),
             types.Tool(name="fail", description="Always a tool error.", input_schema=ANY),
             types.Tool(name="secret", description="Answer TRACE_SECRET.", input_schema=ANY)]

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    def text(s: str, *, error: bool = False) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(type="text", text=s)], is_error=error)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        given = (params.arguments or {}).get("text", "")
        if params.name == "where":
            meta = (ctx.params or {}).get("_meta") or {}
            return text(json.dumps({k: meta[k] for k in TRACE_KEYS if k in meta}))
        if params.name == "echo":
            return text(str(given))
        if params.name == "fail":
            return text(str(given), error=True)
        if params.name == "secret":
            return text(os.environ.get("TRACE_SECRET", ""))
        return text(f"unknown tool {params.name}", error=True)

    server = Server("traceserver", on_list_tools=list_tools, on_call_tool=call_tool)

    async def run() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(run)


if __name__ == "__main__":
    main()
