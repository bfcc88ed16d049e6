"""An MCP test server that lists a real server's published tools (from bench/search/catalog/)
and answers every call with what it was asked, for tool search (issue 40).

    python catalogserver.py CATALOG.json... [--big] [--typed] [--limit N]

With several files, each tool is named `SERVER_TOOL` (two servers may share a tool name);
`--limit N` serves the first N tools. Each tool of the file is listed as it was dumped (name, description, input schema,
annotations; not its output schema, which the canned answer would not match);
a call answers one text item, `called NAME with ARGUMENTS-AS-JSON`. `--big` adds
`big_text(size:int)`, a text of `size` UTF-8 bytes (a deterministic mix of ASCII and
multibyte characters), and `big_blob(size:int)`, an image item of `size` random-looking bytes
(base64), plus structured content in both, for the result budget. `--typed` adds
`big_record(size:int)`, whose `outputSchema` (`RECORD_SCHEMA`) its structured content
`{"text": <size bytes>, "bytes": size}` matches (and its text item is that JSON).
"""

from __future__ import annotations

import gc

if __name__ == "__main__":  # a server process: no cyclic collection while the SDK is imported
    gc.disable()

import argparse
import base64
import hashlib
import json
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.stdio import stdio_server

RECORD_SCHEMA: dict[str, Any] = {"type": "object", "properties": {"text": {"type": "string"},
                                                                  "bytes": {"type": "integer"}},
                                  "required": ["text", "bytes"]}


def big_text(size: int) -> str:
    """`size` UTF-8 bytes: ASCII lines with a two-byte and a three-byte character in each."""
    out, n, i = [], 0, 0
    while n < size:
        line = f"line {i:07d} é € {hashlib.sha256(str(i).encode()).hexdigest()}\n"
        out.append(line)
        n += len(line.encode())
        i += 1
    text = "".join(out).encode()[:size].decode(errors="ignore")  # never half a character
    return text + "." * (size - len(text.encode()))


def big_bytes(size: int) -> bytes:
    out = bytearray()
    i = 0
    while len(out) < size:
        out += hashlib.sha256(i.to_bytes(8, "big")).digest()
        i += 1
    return bytes(out[:size])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("catalog", nargs="+")
    parser.add_argument("--big", action="store_true")
    parser.add_argument("--typed", action="store_true")
    parser.add_argument("--limit", type=int)
    a = parser.parse_args()
    dumped = []
    for path in a.catalog:
        with open(path) as f:
            record = json.load(f)
        prefix = f"{record['server']}_" if len(a.catalog) > 1 else ""
        dumped += [{**t, "name": prefix + t["name"]} for t in record["tools"]]
    dumped = dumped[:a.limit] if a.limit is not None else dumped
    # Listed without outputSchema: the canned answer has no structured content to match one.
    tools = [types.Tool.model_validate({k: v for k, v in t.items() if k != "outputSchema"}) for t in dumped]
    if a.big:
        size = {"type": "object", "properties": {"size": {"type": "integer"}}, "required": ["size"]}
        tools += [types.Tool(name="big_text", description="A long text result of `size` bytes.", input_schema=size),
                  types.Tool(name="big_blob", description="A large image result of `size` bytes.", input_schema=size)]
    if a.typed:
        size = {"type": "object", "properties": {"size": {"type": "integer"}}, "required": ["size"]}
        tools.append(types.Tool(name="big_record", description="A long typed record of `size` bytes.",
                                input_schema=size, output_schema=RECORD_SCHEMA))

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        args = params.arguments or {}
        if params.name == "big_text":
            text = big_text(int(args["size"]))
            return types.CallToolResult(content=[types.TextContent(type="text", text=text)],
                                        structured_content={"bytes": len(text.encode())})
        if params.name == "big_record":
            record = {"text": big_text(int(args["size"])), "bytes": int(args["size"])}
            return types.CallToolResult(content=[types.TextContent(type="text", text=json.dumps(record))],
                                        structured_content=record)
        if params.name == "big_blob":
            data = base64.b64encode(big_bytes(int(args["size"]))).decode()
            return types.CallToolResult(content=[types.TextContent(type="text", text="an image follows"),
                                                 types.ImageContent(type="image", data=data, mime_type="image/png")])
        text = f"called {params.name} with {json.dumps(args, sort_keys=True)}"
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)])

    server = Server("catalog", on_list_tools=list_tools, on_call_tool=call_tool)

    async def run() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(run)


if __name__ == "__main__":
    # The SDK's import made ~1e5 lasting objects (pydantic models): kept out of every later
    # collection (`gc.freeze`), ~0.3 s of CPU less at each of hundreds of server starts a run.
    gc.freeze()
    gc.enable()
    main()
