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

The standard library only, as tests/servers/lightserver.py (both protocol eras, newline-
delimited JSON-RPC on stdio): tool search's tests start up to 8 of these at a time, and
the SDK's import cost ~1.5 s of CPU a start. What is under test is monad's search over the
lists, not the server's SDK.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import sys
from typing import Any

MODERN = "2026-07-28"
HANDSHAKE = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
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


def tools_of(catalogs: list[str], *, big: bool, typed: bool, limit: int | None) -> list[dict[str, Any]]:
    """The tools listed, wire shape: each file's as dumped (without outputSchema: the canned
    answer has no structured content to match one), then the `--big`/`--typed` ones."""
    dumped: list[dict[str, Any]] = []
    for path in catalogs:
        with open(path) as f:
            record = json.load(f)
        prefix = f"{record['server']}_" if len(catalogs) > 1 else ""
        dumped += [{**t, "name": prefix + t["name"]} for t in record["tools"]]
    dumped = dumped[:limit] if limit is not None else dumped
    tools = [{k: v for k, v in t.items() if k != "outputSchema"} for t in dumped]
    size = {"type": "object", "properties": {"size": {"type": "integer"}}, "required": ["size"]}
    if big:
        tools += [{"name": "big_text", "description": "A long text result of `size` bytes.", "inputSchema": size},
                  {"name": "big_blob", "description": "A large image result of `size` bytes.", "inputSchema": size}]
    if typed:
        tools.append({"name": "big_record", "description": "A long typed record of `size` bytes.",
                      "inputSchema": size, "outputSchema": RECORD_SCHEMA})
    return tools


def call(name: str, args: dict[str, Any]) -> dict[str, Any]:
    """A tools/call result, wire shape."""
    if name == "big_text":
        text = big_text(int(args["size"]))
        return {"content": [{"type": "text", "text": text}], "structuredContent": {"bytes": len(text.encode())},
                "isError": False}
    if name == "big_record":
        record = {"text": big_text(int(args["size"])), "bytes": int(args["size"])}
        return {"content": [{"type": "text", "text": json.dumps(record)}], "structuredContent": record,
                "isError": False}
    if name == "big_blob":
        data = base64.b64encode(big_bytes(int(args["size"]))).decode()
        return {"content": [{"type": "text", "text": "an image follows"},
                            {"type": "image", "data": data, "mimeType": "image/png"}], "isError": False}
    text = f"called {name} with {json.dumps(args, sort_keys=True)}"
    return {"content": [{"type": "text", "text": text}], "isError": False}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("catalog", nargs="+")
    parser.add_argument("--big", action="store_true")
    parser.add_argument("--typed", action="store_true")
    parser.add_argument("--limit", type=int)
    a = parser.parse_args()
    tools = tools_of(a.catalog, big=a.big, typed=a.typed, limit=a.limit)
    info = {"name": "catalog", "version": "1.0"}
    modern = False
    out = sys.stdout

    def send(message: dict[str, Any]) -> None:
        out.write(json.dumps(message) + "\n")
        out.flush()

    def answer(rid: object, result: dict[str, Any]) -> None:
        if modern:  # 2026-07-28: every result says its type and names the server
            result = {"resultType": "complete", **result, "_meta": {"io.modelcontextprotocol/serverInfo": info}}
        send({"jsonrpc": "2.0", "id": rid, "result": result})

    for line in sys.stdin:
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if not isinstance(msg, dict):
            continue
        method, rid, params = msg.get("method"), msg.get("id"), msg.get("params") or {}
        if rid is None or method is None:
            continue  # a notification (initialized, cancelled) or an answer: nothing to say
        if method == "server/discover":
            modern = True
            answer(rid, {"supportedVersions": [MODERN], "capabilities": {"tools": {}}, "ttlMs": 0,
                         "cacheScope": "private"})
        elif method == "initialize":
            asked = params.get("protocolVersion")
            answer(rid, {"protocolVersion": asked if asked in HANDSHAKE else HANDSHAKE[0],
                         "capabilities": {"tools": {}}, "serverInfo": info})
        elif method == "tools/list":
            answer(rid, {"tools": tools, **({"ttlMs": 0, "cacheScope": "private"} if modern else {})})
        elif method == "tools/call":
            answer(rid, call(str(params.get("name")), params.get("arguments") or {}))
        elif method == "ping":
            answer(rid, {})
        else:
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": f"Method not found: {method}"}})


if __name__ == "__main__":
    main()
