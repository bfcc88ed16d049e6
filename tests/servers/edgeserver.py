"""A streamable-HTTP MCP server (the SDK's `MCPServer`, 2025-11-25 with sessions) behind
ASGI wrappers that answer the ways remote servers in the wild do (issue 26):

    python edgeserver.py --http PORT [--busy-for S] [--busy-status 429] [--retry-after N]
                         [--stale-session-status 400] [--log PATH]

- `--busy-for S`: every request in the first S seconds after start is answered
  `--busy-status` (429 by default; 503 works too) with `Retry-After: N` when
  `--retry-after` is given (RFC 9110 §10.2.3; RFC 6585 §4), then it serves;
- `--stale-session-status 400`: a request carrying an `Mcp-Session-Id` this process did not
  issue (a client of the process before a restart) is answered 400 with a JSON-RPC error
  "Bad Request: No valid session ID provided", as `@modelcontextprotocol/server-everything`
  does, instead of the 404 the spec asks for;
- `--log PATH`: one line per HTTP request: `<monotonic seconds> <method> <status>`.

Tools: `echo(text)`, `pid()`, `slow(seconds)`.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--http", type=int, required=True)
    ap.add_argument("--busy-for", type=float, default=0.0)
    ap.add_argument("--busy-status", type=int, default=429)
    ap.add_argument("--retry-after", default=None)
    ap.add_argument("--stale-session-status", type=int, default=None)
    ap.add_argument("--log", default=None)
    args = ap.parse_args()

    gc.disable()  # no cyclic collection while the SDK is imported (~0.3 s of CPU a start)
    import uvicorn
    from mcp.server import MCPServer
    from testserver import refuse_discover
    gc.freeze()  # the SDK's import made ~1e5 lasting objects: out of every later collection
    gc.enable()

    mcp = MCPServer("edgeserver")

    @mcp.tool()
    def echo(text: str) -> str:
        """Echo the text back."""
        return text

    @mcp.tool()
    async def slow(seconds: float) -> str:
        """Answer after `seconds`."""
        import anyio

        await anyio.sleep(seconds)
        return f"slept {seconds:g} s"

    @mcp.tool()
    def pid() -> str:
        """The server's process id."""
        return str(os.getpid())

    started = time.monotonic()
    issued: set[str] = set()
    log = open(args.log, "a", buffering=1) if args.log else None  # noqa: SIM115
    inner = refuse_discover(mcp.streamable_http_app(streamable_http_path="/mcp"))

    async def answer(send: Any, status: int, headers: list[tuple[bytes, bytes]], body: bytes) -> None:
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/json"), *headers]})
        await send({"type": "http.response.body", "body": body})

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await inner(scope, receive, send)  # type: ignore[operator, no-any-return]
        status_seen: list[int] = []

        async def noting(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                status_seen.append(message["status"])
                for key, value in message.get("headers", []):
                    if key.lower() == b"mcp-session-id":
                        issued.add(value.decode())
            await send(message)

        try:
            if time.monotonic() - started < args.busy_for:
                headers = [(b"retry-after", args.retry_after.encode())] if args.retry_after else []
                return await answer(noting, args.busy_status, headers,
                                           b'{"error": "busy, come back later"}')
            sid = dict(scope["headers"]).get(b"mcp-session-id")
            if args.stale_session_status and sid is not None and sid.decode() not in issued:
                body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {
                    "code": -32000, "message": "Bad Request: No valid session ID provided"}}).encode()
                return await answer(noting, args.stale_session_status, [], body)
            return await inner(scope, receive, noting)  # type: ignore[operator, no-any-return]
        finally:
            if log is not None:
                log.write(f"{time.monotonic():.3f} {scope['method']} {status_seen[0] if status_seen else 0}\n")

    uvicorn.run(app, host="127.0.0.1", port=args.http, log_level="warning")


if __name__ == "__main__":
    main()
