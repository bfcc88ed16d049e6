"""A configurable MCP test server built on the SDK's `MCPServer` (stdio or streamable HTTP).

    python testserver.py [--http PORT] [--slow-start S] [--hang] [--stderr-flood BYTES]
                         [--no-newlines] [--stray-stdout] [--crash-after S] [--exit-at-start N]
                         [--tools-file PATH] [--name NAME]

Tools: `echo(text)`, `pid()`, `add(a, b)`, `slow(seconds)`, `env(name)`. With
`--tools-file`, the file (JSON: {"description": ..., "param": ..., "extra": bool}) shapes the
`echo` tool so tests can change the tool set between connects.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--http", type=int, default=None)
    ap.add_argument("--path", default="/mcp")
    ap.add_argument("--name", default="testserver")
    ap.add_argument("--slow-start", type=float, default=0.0)
    ap.add_argument("--hang", action="store_true")
    ap.add_argument("--stderr-flood", type=int, default=0)
    ap.add_argument("--no-newlines", action="store_true")
    ap.add_argument("--stray-stdout", action="store_true")
    ap.add_argument("--crash-after", type=float, default=None)
    ap.add_argument("--exit-at-start", type=int, default=None)
    ap.add_argument("--tools-file", default=None)
    ap.add_argument("--say", default=None, help="write this line to stderr at start")
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
        sys.stdout.write("this is not json\n")
        sys.stdout.flush()

    # Imported late: the early-exit and hang modes above must act before the slow SDK import.
    from mcp.server import MCPServer

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

        await anyio.sleep(seconds)
        return f"slept {seconds}"

    @mcp.tool()
    def env(name: str) -> str:
        """The value of an environment variable in the server ('<unset>' if unset)."""
        return os.environ.get(name, "<unset>")

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

    if args.http is not None:
        mcp.run("streamable-http", host="127.0.0.1", port=args.http, streamable_http_path=args.path)
    else:
        mcp.run()


if __name__ == "__main__":
    main()
