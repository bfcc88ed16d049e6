"""An MCP test server for tool names, pins, pagination and calls, on the SDK's lowlevel `Server`.

    python toolserver.py [--names] [--many N] [--page-size K] [--repeat-cursor]
                         [--tools-file PATH] [--marker-dir DIR] [--name NAME] [--progress] [--rich-schema] [--big]
                         [--crash]

Default tools: `echo(text)`, `add(a:int, b:int)`, `kinds(flag:bool, ratio:number, items:array,
opts:object)`, `fail(message, log)` (isError, after writing `log` to stderr), `mutate(description)` (changes echo's
description and announces it: a rug pull under a live session), `slow(seconds)` (writes `<marker-dir>/slow.started`
and, when the call is cancelled, `<marker-dir>/slow.cancelled`).
`--names`: adds tools named `get.user`, `get_user`, `Dockerfile problems scanner` and a
70-character name. `--many N`: N more tools `t000`... served `--page-size` per page.
`--repeat-cursor`: every page returns the same nextCursor. `--progress`: adds `steps(n, delay)`,
which sends n notifications/progress (`step i`, i/n) when the caller asked for them, each
`delay` seconds (default 0.05) after the last, then answers `did n steps`. `--rich-schema`:
adds `rich`, whose inputSchema (`RICH_SCHEMA`) uses JSON Schema 2020-12 keywords a careless
client drops or rewrites; it answers with its arguments as JSON. `--tools-file`: JSON
{"description": ..., "param": ..., "extra": bool} shapes `echo` (read at start: a rug pull
between connects). `--big`: adds `big(kib)`, which answers `kib` KiB of words (bench/bench_scrub.py).
`--crash`: adds `exit(status, log)`, which writes `log` to stderr and ends the process with
`status` under the call, never answering it.
"""

from __future__ import annotations

import gc

if __name__ == "__main__":  # a server process: no cyclic collection while the SDK is imported
    gc.disable()

import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.stdio import stdio_server
from mcp.server.subscriptions import (
    InMemorySubscriptionBus,
    ListenHandler,
    ToolsListChanged,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

# The tool set it shares with its standard-library twin (lighttoolserver.py, a sibling).
sys.path.insert(0, str(Path(__file__).resolve().parent))
from lighttoolserver import LONG_NAME, RICH_SCHEMA, options, plain_call


def schema(props: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": required or list(props)}


def main() -> None:
    args, shape = options()
    param = shape["param"]
    tools = [
        types.Tool(name="echo", description=shape["description"], input_schema=schema({param: {"type": "string"}})),
        types.Tool(name="add", description="Add two integers.",
                   input_schema=schema({"a": {"type": "integer"}, "b": {"type": "integer"}})),
        types.Tool(name="kinds", description="Echo typed arguments as JSON.",
                   input_schema=schema({"flag": {"type": "boolean"}, "ratio": {"type": "number"},
                                        "items": {"type": "array"}, "opts": {"type": "object"}}, ["flag"])),
        types.Tool(name="fail", description="Always a tool error.",
                   input_schema=schema({"message": {"type": "string"}, "log": {"type": "string"}}, ["message"])),
        types.Tool(name="slow", description="Sleep, then answer.",
                   input_schema=schema({"seconds": {"type": "number"}})),
        types.Tool(name="mutate", description="Change echo's description, then announce the change.",
                   input_schema=schema({"description": {"type": "string"}})),
    ]
    if args.progress:
        tools.append(types.Tool(name="steps", description="Report progress n times, then answer.",
                                input_schema=schema({"n": {"type": "integer"}, "delay": {"type": "number"}}, ["n"])))
    if args.rich_schema:
        tools.append(types.Tool(name="rich", description="JSON Schema 2020-12 keywords.", input_schema=RICH_SCHEMA))
    if args.big:
        tools.append(types.Tool(name="big", description="Answer kib KiB of words.",
                                input_schema=schema({"kib": {"type": "integer"}})))
    if args.crash:
        tools.append(types.Tool(name="exit", description="Write log to stderr, then exit with status.",
                                input_schema=schema({"status": {"type": "integer"}, "log": {"type": "string"}},
                                                    ["status"])))
    if shape.get("extra"):
        tools.append(types.Tool(name="extra", description="An added tool.", input_schema=schema({})))
    if args.names:
        for n in ("get.user", "get_user", "Dockerfile problems scanner", LONG_NAME):
            tools.append(types.Tool(name=n, description=f"Answers with its name: {n}", input_schema=schema({})))
    for i in range(args.many):
        tools.append(types.Tool(name=f"t{i:03d}", description=f"Tool number {i}.", input_schema=schema({})))
    names = {t.name for t in tools}
    marker = Path(args.marker_dir) if args.marker_dir else None

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        if args.repeat_cursor:
            return types.ListToolsResult(tools=tools[:2], next_cursor="again")
        start = int(params.cursor) if params and params.cursor else 0
        end = start + args.page_size
        return types.ListToolsResult(tools=tools[start:end], next_cursor=str(end) if end < len(tools) else None)

    def text(s: str, *, error: bool = False) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(type="text", text=s)], is_error=error)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        a = params.arguments or {}
        name = params.name
        if (plain := plain_call(name, a, param)) is not None:
            return types.CallToolResult.model_validate(plain)
        if name == "steps":
            n = int(a.get("n", 3))
            for i in range(1, n + 1):
                await ctx.session.report_progress(float(i), float(n), f"step {i}")
                await anyio.sleep(float(a.get("delay", 0.05)))
            return text(f"did {n} steps")
        if name == "mutate":
            # A rug pull at runtime: the tool set changes under a live session.
            tools[0] = tools[0].model_copy(update={"description": str(a.get("description"))})
            if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
                await bus.publish(ToolsListChanged())
            else:
                await ctx.session.send_tool_list_changed()
            return text("mutated")
        if name == "slow":
            if marker:
                (marker / "slow.started").write_text("1")
            try:
                await anyio.sleep(float(a.get("seconds", 1)))
            except anyio.get_cancelled_exc_class():
                if marker:
                    (marker / "slow.cancelled").write_text("1")
                raise
            return text(f"slept {a.get('seconds')}")
        if name in names:
            return text(name)
        return text(f"unknown tool {name}", error=True)

    bus = InMemorySubscriptionBus()
    server = Server(args.name, on_list_tools=list_tools, on_call_tool=call_tool,
                    on_subscriptions_listen=ListenHandler(bus))

    async def run() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options(NotificationOptions(tools_changed=True)))

    anyio.run(run)


if __name__ == "__main__":
    # The SDK's import made ~1e5 lasting objects (pydantic models): kept out of every later
    # collection (`gc.freeze`), ~0.3 s of CPU less at each of hundreds of server starts a run.
    gc.freeze()
    gc.enable()
    main()
