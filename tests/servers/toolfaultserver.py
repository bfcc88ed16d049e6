"""A stdio MCP server whose tools lists and results break the ways public bug reports show
servers in the wild doing (issue 26): repeated names, bursts, bad schemas, answers that are not text.

The standard library only (~0.05 s of CPU a start; the SDK's import was ~1.5 s): it answers the
requests it serves as the SDK's lowlevel `Server` did (the same lines, era by era), and bends what
crosses its stdio wire the way the public bug reports describe:

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
import json
import os
import sys
from typing import Any

HANDSHAKE = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
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

    info = {"name": "toolfaultserver", "version": "1.0"}
    capabilities: dict[str, Any] = {"prompts": {"listChanged": False},
                                    "resources": {"listChanged": False, "subscribe": False}}
    if not args.no_tools:
        capabilities["tools"] = {"listChanged": False}
    log = open(args.log_requests, "a", buffering=1) if args.log_requests else None  # noqa: SIM115
    listings = {"n": 0}
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

    for raw in sys.stdin.buffer:
        try:
            message = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(message, dict) or "method" not in message or "id" not in message:
            continue  # a notification (initialized, cancelled) or an answer: nothing to answer
        method, rid, params = message["method"], message["id"], message.get("params") or {}
        if log is not None:
            log.write(method + "\n")
        # As the SDK's lowlevel `Server`: a request carrying the 2026-07-28 `_meta` is of that era.
        modern = "io.modelcontextprotocol/protocolVersion" in (params.get("_meta") or {})
        cache = {"ttlMs": 0, "cacheScope": "private"}

        def answer(result: dict[str, Any], rid: Any = rid, modern: bool = modern) -> None:
            if modern:
                result = {**result, "resultType": "complete", "_meta": {"io.modelcontextprotocol/serverInfo": info}}
            write({"jsonrpc": "2.0", "id": rid, "result": result})

        called = params.get("name") if method == "tools/call" else None
        if method == "server/discover":
            if args.discover == "answer":
                answer({"supportedVersions": ["2026-07-28"], "capabilities": capabilities, **cache}, modern=True)
        elif method == "initialize":
            asked = params.get("protocolVersion")
            answer({"protocolVersion": asked if asked in HANDSHAKE else HANDSHAKE[0], "capabilities": capabilities,
                    "serverInfo": info})
        elif method == "tools/list" and not args.no_tools:
            tools_list(rid)
        elif called == "close_stdout":
            stdout.close()  # the output ends; the process lives on, reading stdin
        elif called == "hang":
            for _ in sys.stdin.buffer:
                pass  # wedged: alive, reading, answering nothing
        elif called == "odd_shape":  # a result no protocol version accepts
            write({"jsonrpc": "2.0", "id": rid, "result": {"content": "not a list"}})
        elif method == "tools/call" and not args.no_tools:
            answer({**result_for(str(called), params.get("arguments") or {}), "isError": False})
        elif method == "prompts/list":
            answer({"prompts": [{"name": "greet", "description": "a greeting"}], **(cache if modern else {})})
        elif method == "resources/list":
            answer({"resources": [{"uri": "memo://notes/1", "name": "note"}], **(cache if modern else {})})
        elif method == "ping" and not modern:
            answer({})
        else:
            write({"jsonrpc": "2.0", "id": rid,
                   "error": {"code": -32601, "message": "Method not found", "data": method}})


if __name__ == "__main__":
    main()
