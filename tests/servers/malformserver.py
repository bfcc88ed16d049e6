"""A streamable-HTTP MCP server (the SDK's `MCPServer`, 2025-11-25) that answers some calls
with what no MCP message is, quoting the secret it was given (issue 38 item 2: what fails
to parse must not carry a secret past the scrubber):

    python malformserver.py --http PORT

Its secret is the value of `LEAK_TOKEN` in its environment. Tools: `echo(text)`; and
three the wrapper answers itself, before the SDK: `malformed` (a JSON-RPC response whose
`result` is a string holding the secret: it fails validation), `broken` (HTTP 500 with
the secret in a text body), `garbled` (200, `application/json`, a body that is not JSON
and holds the secret).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

SECRET = os.environ.get("LEAK_TOKEN", "none")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--http", type=int, required=True)
    args = ap.parse_args()

    gc.disable()  # no cyclic collection while the SDK is imported (~0.3 s of CPU a start)
    import uvicorn
    from mcp.server import MCPServer
    from testserver import refuse_discover
    gc.freeze()  # the SDK's import made ~1e5 lasting objects: out of every later collection
    gc.enable()

    mcp = MCPServer("malformserver")

    @mcp.tool()
    def echo(text: str) -> str:
        """Echo the text back."""
        return text

    for name in ("malformed", "broken", "garbled"):
        mcp.add_tool(lambda: "never", name=name, description="Answered by the wrapper.")

    inner = refuse_discover(mcp.streamable_http_app(streamable_http_path="/mcp"))

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            return await inner(scope, receive, send)  # type: ignore[operator, no-any-return]
        chunks, more = [], True
        while more:
            message = await receive()
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        body = b"".join(chunks)
        try:
            request = json.loads(body)
        except ValueError:
            request = {}
        tool = (request.get("params") or {}).get("name") if request.get("method") == "tools/call" else None
        answers = {
            "malformed": (200, json.dumps({"jsonrpc": "2.0", "id": request.get("id"),
                                           "result": f"not an object: {SECRET}"}).encode()),
            "broken": (500, f"internal error, token {SECRET}".encode()),
            "garbled": (200, f"{{not json {SECRET}".encode()),
        }
        if tool in answers:
            status, payload = answers[tool]
            await send({"type": "http.response.start", "status": status,
                        "headers": [(b"content-type", b"application/json" if status == 200 else b"text/plain")]})
            await send({"type": "http.response.body", "body": payload})
            return None
        replayed = False

        async def replay() -> dict[str, Any]:
            nonlocal replayed
            if replayed:
                return await receive()  # type: ignore[no-any-return]
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        return await inner(scope, replay, send)  # type: ignore[operator, no-any-return]

    uvicorn.run(app, host="127.0.0.1", port=args.http, log_level="warning")


if __name__ == "__main__":
    main()
