"""A stdio MCP server whose tools write down every run, so a test can count how many times a
call reached a server (docs/tasks.md "Resume after failures").

    python runsserver.py --runs PATH [--http PORT]

Over stdio, or with `--http PORT` over streamable HTTP at `http://127.0.0.1:PORT/mcp`.

Each run appends one line to PATH: `<event> <tool> <invocationId>` (the request's
`_meta["dev.monad/invocationId"]`, `-` without one). Events: `start` when a tool begins,
`done` when it answers, `cancelled` when the client's `notifications/cancelled` stopped it.

Tools:
- `charge(seconds)`: a side effect (no annotations): start, sleep, answer `charged`;
- `charge_safe(seconds)`: the same, annotated `idempotentHint: true`;
- `crash()`: start, then the process exits with status 3 (no answer);
- `crash_safe()`: the same, annotated `readOnlyHint: true`;
- `hang()`: start, then waits until cancelled.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

import anyio
from mcp.server import MCPServer
from mcp.server.mcpserver import Context  # module level: the SDK reads the tools' annotations
from mcp_types import ToolAnnotations

INVOCATION = "dev.monad/invocationId"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", required=True)
    ap.add_argument("--http", type=int, default=None)
    args = ap.parse_args()

    mcp = MCPServer("runs")

    def note(event: str, tool: str, ctx: Any) -> None:
        meta = ctx.request_context.meta or {}
        invocation = meta.get(INVOCATION, "-") if isinstance(meta, dict) else getattr(meta, INVOCATION, "-")
        with open(args.runs, "a") as f:
            f.write(f"{event} {tool} {invocation}\n")
            f.flush()
            os.fsync(f.fileno())

    async def run(tool: str, seconds: float, ctx: Any) -> str:
        note("start", tool, ctx)
        try:
            await anyio.sleep(seconds)
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                note("cancelled", tool, ctx)
            raise
        note("done", tool, ctx)
        return "charged"

    @mcp.tool()
    async def charge(seconds: float, ctx: Context) -> str:
        """Charge once (a side effect): sleep `seconds`, then answer."""
        return await run("charge", seconds, ctx)

    @mcp.tool(annotations=ToolAnnotations(idempotent_hint=True))
    async def charge_safe(seconds: float, ctx: Context) -> str:
        """Charge, idempotently: sleep `seconds`, then answer."""
        return await run("charge_safe", seconds, ctx)

    @mcp.tool()
    def crash(ctx: Context) -> str:
        """Exit the server process (status 3) without answering."""
        note("start", "crash", ctx)
        print("runsserver: exiting in the middle of a call", file=sys.stderr, flush=True)
        os._exit(3)

    @mcp.tool(annotations=ToolAnnotations(read_only_hint=True))
    def crash_safe(ctx: Context) -> str:
        """Read-only, and exits the server process (status 3) without answering."""
        note("start", "crash_safe", ctx)
        print("runsserver: exiting in the middle of a call", file=sys.stderr, flush=True)
        os._exit(3)

    @mcp.tool()
    async def hang(ctx: Context) -> str:
        """Never answers (until cancelled)."""
        return await run("hang", 1e9, ctx)

    if args.http is None:
        mcp.run()
    else:
        mcp.run("streamable-http", host="127.0.0.1", port=args.http)


if __name__ == "__main__":
    main()
