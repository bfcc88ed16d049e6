"""A configurable MCP test server built on the SDK's `MCPServer` (stdio or streamable HTTP).

    python testserver.py [--http PORT [--sse]] [--legacy] [--slow-start S] [--hang]
                         [--stderr-flood BYTES] [--no-newlines] [--stray-stdout [LINES]]
                         [--crash-after S] [--exit-at-start N] [--tools-file PATH] [--name NAME] [--ask]
                         [--marker-dir DIR]

`--legacy`: refuse `server/discover`, so clients fall back to `initialize`: over HTTP with
HTTP 400, as a pre-2026 stateful server (the TypeScript SDK's) does, giving an
`Mcp-Session-Id`; over stdio with -32601, as a server of 2025-11-25 or older does. `--sse`:
the legacy HTTP+SSE transport (2024-11-05) at `/sse`.

Tools: `echo(text)`, `pid()`, `add(a, b)`, `slow(seconds)`, `env(name)`. With
`--tools-file`, the file (JSON: {"description": ..., "param": ..., "extra": bool}) shapes the
`echo` tool so tests can change the tool set between connects. `--ask` adds `greet()`, which
asks the client for a name (a form elicitation: a standalone `elicitation/create` on a legacy
session, an `InputRequiredResult` round on 2026-07-28) and answers `hello NAME`. With
`--marker-dir`, `slow` writes `DIR/slow.started` once it runs (a test kills the server then).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import threading
import time
from typing import Any


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--http", type=int, default=None)
    ap.add_argument("--path", default="/mcp")
    ap.add_argument("--legacy", action="store_true")
    ap.add_argument("--sse", action="store_true")
    ap.add_argument("--name", default="testserver")
    ap.add_argument("--slow-start", type=float, default=0.0)
    ap.add_argument("--hang", action="store_true")
    ap.add_argument("--stderr-flood", type=int, default=0)
    ap.add_argument("--no-newlines", action="store_true")
    ap.add_argument("--stray-stdout", type=int, nargs="?", const=1, default=0, metavar="LINES")
    ap.add_argument("--crash-after", type=float, default=None)
    ap.add_argument("--exit-at-start", type=int, default=None)
    ap.add_argument("--tools-file", default=None)
    ap.add_argument("--say", default=None, help="write this line to stderr at start")
    ap.add_argument("--ask", action="store_true")
    ap.add_argument("--marker-dir", default=None, help="`slow` writes DIR/slow.started once it runs")
    args = ap.parse_args()

    if args.say:
        print(args.say, file=sys.stderr, flush=True)
    if args.exit_at_start is not None:
        print(f"testserver: exiting with {args.exit_at_start} as asked", file=sys.stderr, flush=True)
        sys.exit(args.exit_at_start)
    if args.hang:
        print("testserver: hanging forever", file=sys.stderr, flush=True)
        while True:
            time.sleep(3600)
    if args.stderr_flood:
        chunk = ("x" * 1023 + ("" if args.no_newlines else "\n")).encode()
        written = 0
        while written < args.stderr_flood:
            os.write(2, chunk)
            written += len(chunk)
    if args.slow_start:
        time.sleep(args.slow_start)
    if args.stray_stdout:
        # Not JSON-RPC: a well-behaved client counts and ignores it.
        sys.stdout.write("this is not json\n" * args.stray_stdout)
        sys.stdout.flush()

    # Imported late: the early-exit and hang modes above must act before the slow SDK import.
    gc.disable()  # no cyclic collection while the SDK is imported (~0.3 s of CPU a start)
    from mcp.server import MCPServer
    gc.freeze()  # the SDK's import made ~1e5 lasting objects: out of every later collection
    gc.enable()

    shape = {"description": "Echo the text back.", "param": "text", "extra": False}
    if args.tools_file and os.path.exists(args.tools_file):
        with open(args.tools_file) as f:
            shape.update(json.load(f))

    mcp = MCPServer(args.name)

    def echo(**kwargs: str) -> str:
        return str(next(iter(kwargs.values()), ""))

    # Build echo with the configured parameter name and description.
    param = shape["param"]
    ns: dict = {}
    exec(f"def echo({param}: str) -> str:\n    return {param}\n", ns)
    mcp.add_tool(ns["echo"], name="echo", description=shape["description"])

    @mcp.tool()
    def pid() -> int:
        """The server's process id."""
        return os.getpid()

    @mcp.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @mcp.tool()
    async def slow(seconds: float) -> str:
        """Sleep, then answer."""
        import anyio

        if args.marker_dir:
            with open(os.path.join(args.marker_dir, "slow.started"), "w") as f:
                f.write("1")
        await anyio.sleep(seconds)
        return f"slept {seconds}"

    @mcp.tool()
    def env(name: str) -> str:
        """The value of an environment variable in the server ('<unset>' if unset)."""
        return os.environ.get(name, "<unset>")

    if args.ask:
        from typing import Annotated

        from mcp.server.mcpserver import Elicit, Resolve
        from pydantic import BaseModel

        class Name(BaseModel):
            name: str

        def ask_name() -> Any:
            return Elicit("Who is there?", Name)

        def greet(who: Any) -> str:
            """Ask for a name, then greet it."""
            return f"hello {who.name}"

        # Real objects, not the strings `from __future__ import annotations` leaves: the SDK
        # resolves them against this module, where these local names do not exist.
        ask_name.__annotations__ = {"return": Elicit[Name]}
        greet.__annotations__ = {"who": Annotated[Name, Resolve(ask_name)], "return": str}
        mcp.add_tool(greet, name="greet")

    if shape.get("extra"):
        @mcp.tool()
        def extra() -> str:
            """An added tool."""
            return "extra"

    if args.crash_after is not None:
        # Counted from here, after the slow imports: the server gets to connect first.
        def crash() -> None:
            time.sleep(args.crash_after)
            print("testserver: crashing as asked", file=sys.stderr, flush=True)
            os._exit(3)
        threading.Thread(target=crash, daemon=True).start()

    if args.http is not None and args.sse:
        mcp.run("sse", host="127.0.0.1", port=args.http)
    elif args.http is not None and args.legacy:
        import uvicorn

        app = mcp.streamable_http_app(streamable_http_path=args.path)
        uvicorn.run(refuse_discover(app), host="127.0.0.1", port=args.http, log_level="warning")
    elif args.http is not None:
        mcp.run("streamable-http", host="127.0.0.1", port=args.http, streamable_http_path=args.path)
    elif args.legacy:
        import anyio

        anyio.run(_serve_legacy, mcp)
    else:
        mcp.run()


def refuse_discover(app: object) -> object:
    """ASGI wrapper: a POST of `server/discover` gets 400, as from a server that predates it."""

    async def wrapped(scope: dict, receive: object, send: object) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            return await app(scope, receive, send)  # type: ignore[operator]
        chunks = []
        while True:
            message = await receive()  # type: ignore[operator]
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        body = b"".join(chunks)
        try:
            method = json.loads(body).get("method")
        except (ValueError, AttributeError):
            method = None
        if method == "server/discover":
            payload = json.dumps({"jsonrpc": "2.0", "id": None, "error": {
                "code": -32000, "message": "Bad Request: Server not initialized"}}).encode()
            await send({"type": "http.response.start", "status": 400,  # type: ignore[operator]
                        "headers": [(b"content-type", b"application/json")]})
            await send({"type": "http.response.body", "body": payload})  # type: ignore[operator]
            return None
        replayed = False

        async def replay() -> dict:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()  # type: ignore[operator, no-any-return]

        return await app(scope, replay, send)  # type: ignore[operator]

    return wrapped


async def _serve_legacy(mcp: Any) -> None:
    """stdio, refusing the 2026-07-28 `server/discover` probe (the SDK's server speaks both)."""
    import anyio
    import mcp_types as types
    from mcp.server.stdio import stdio_server
    from mcp.shared.message import SessionMessage

    async with stdio_server() as (read, write):
        send, receive = anyio.create_memory_object_stream[Any](100)

        async def refuse_discover() -> None:
            async with send:
                async for item in read:
                    msg = getattr(item, "message", None)
                    if isinstance(msg, types.JSONRPCRequest) and msg.method == "server/discover":
                        error = types.ErrorData(code=types.METHOD_NOT_FOUND, message="Method not found")
                        await write.send(SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=msg.id, error=error)))
                        continue
                    await send.send(item)

        low = mcp._lowlevel_server
        async with anyio.create_task_group() as tg:
            tg.start_soon(refuse_discover)
            await low.run(receive, write, low.create_initialization_options())
            tg.cancel_scope.cancel()


if __name__ == "__main__":
    main()
