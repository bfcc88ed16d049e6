"""A light MCP server over stdio: the standard library only, so it starts in ~20 ms.

    python lightserver.py [--name NAME]

For benchmarks and tests where the server's own start must not hide the client's cost
(`bench/bench_startup.py`: 50 of them). Both protocol eras: `server/discover` at
2026-07-28 (MCP spec 2026-07-28, basic/lifecycle) and the `initialize` handshake up to
2025-11-25. One tool, `echo(text)`. Newline-delimited JSON-RPC on stdin/stdout; anything
else is answered -32601.
"""

from __future__ import annotations

import json
import sys

MODERN = "2026-07-28"
HANDSHAKE = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
TOOLS = [{"name": "echo", "description": "Echo the text back.",
          "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}]


def main() -> None:
    name = sys.argv[sys.argv.index("--name") + 1] if "--name" in sys.argv else "lightserver"
    info = {"name": name, "version": "1.0"}
    modern = False
    out = sys.stdout

    def answer(rid: object, result: dict[str, object]) -> None:
        if modern:  # 2026-07-28: every result says its type; cacheable ones carry the cache fields
            result = {"resultType": "complete", **result, "_meta": {"io.modelcontextprotocol/serverInfo": info}}
        out.write(json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}) + "\n")
        out.flush()

    for line in sys.stdin:
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        method, rid = msg.get("method"), msg.get("id")
        if rid is None:
            continue  # a notification (initialized, cancelled): nothing to say
        if method == "server/discover":
            modern = True
            answer(rid, {"supportedVersions": [MODERN], "capabilities": {"tools": {}}, "ttlMs": 0,
                         "cacheScope": "private"})
        elif method == "initialize":
            asked = (msg.get("params") or {}).get("protocolVersion")
            answer(rid, {"protocolVersion": asked if asked in HANDSHAKE else HANDSHAKE[0],
                         "capabilities": {"tools": {}}, "serverInfo": info})
        elif method == "tools/list":
            answer(rid, {"tools": TOOLS, **({"ttlMs": 0, "cacheScope": "private"} if modern else {})})
        elif method == "tools/call":
            text = ((msg.get("params") or {}).get("arguments") or {}).get("text", "")
            answer(rid, {"content": [{"type": "text", "text": str(text)}], "isError": False})
        elif method == "ping":
            answer(rid, {})
        else:
            out.write(json.dumps({"jsonrpc": "2.0", "id": rid,
                                  "error": {"code": -32601, "message": f"Method not found: {method}"}}) + "\n")
            out.flush()


if __name__ == "__main__":
    main()
