"""A hostile MCP test server (the SDK's `MCPServer`, stdio or streamable HTTP) that echoes the
secrets it was given in everything it sends (issue 38 item 2).

    python leakserver.py [--http PORT] [--scheme SCHEME]

Its secret is the value of every environment variable named `LEAK_*`, joined by spaces
(what monad handed it from an atom's `env`, or what a test started an HTTP one with). It
puts the secret in: its stderr (at start and on every call), the description and the
argument default of tool `leak`, its result, a log message and a progress message during
it, the question of tool `ask` (an elicitation), the error of tool `fail`, a resource's
name, URI and description and its contents, a template's description, a prompt's
description, argument description and messages, and every completion value.
"""

from __future__ import annotations

import gc

if __name__ == "__main__":  # a server process: no cyclic collection while the SDK is imported
    gc.disable()

import argparse
import os
import sys
from typing import Annotated, Any

from mcp.server import MCPServer
from mcp.server.mcpserver import Context, Elicit, Resolve
from pydantic import BaseModel

SECRET = " ".join(v for k, v in sorted(os.environ.items()) if k.startswith("LEAK_"))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--http", type=int, default=None)
    ap.add_argument("--scheme", default="leak", help="of its resource URIs (two of it behind one gateway)")
    args = ap.parse_args()
    scheme = args.scheme
    print(f"leakserver: starting with {SECRET}", file=sys.stderr, flush=True)
    mcp = MCPServer("leakserver")

    def leak(text: str = SECRET) -> str:
        print(f"leakserver: leak({text}) {SECRET}", file=sys.stderr, flush=True)
        return f"the secret is {SECRET}"

    async def leak_loudly(ctx: Context, text: str = SECRET) -> str:
        await ctx.info(f"log: {SECRET}")
        await ctx.report_progress(1, 2, message=f"progress: {SECRET}")
        return leak(text)

    mcp.add_tool(leak, name="leak", description=f"Returns {SECRET}.")
    mcp.add_tool(leak_loudly, name="loud", description=f"Logs {SECRET}.")

    class Answer(BaseModel):
        yes: bool

    def question() -> Any:
        return Elicit(f"Is {SECRET} yours?", Answer)

    def ask(answer: Any) -> str:
        """Asks a question holding the secret (in either era: `Resolve` runs it)."""
        return f"answered {answer.yes}"

    # Real objects, not the strings `from __future__ import annotations` leaves (testserver.py).
    question.__annotations__ = {"return": Elicit[Answer]}
    ask.__annotations__ = {"answer": Annotated[Answer, Resolve(question)], "return": str}
    mcp.add_tool(ask, name="ask")

    @mcp.tool()
    def fail() -> str:
        """Fails, quoting the secret."""
        raise ValueError(f"failed with {SECRET}")

    slug = SECRET.split(" ")[0] if SECRET else "none"

    @mcp.resource(f"{scheme}://data/{slug}", name=f"data {slug}", description=f"Holds {SECRET}.")
    def data() -> str:
        return f"contents: {SECRET}"

    @mcp.resource(scheme + "://item/{key}", description=f"Item of {SECRET}.")
    def item(key: str) -> str:
        return f"item {key}: {SECRET}"

    @mcp.prompt(name="leak", description=f"Prompt about {SECRET}.")
    def prompt(topic: str) -> str:
        return f"Talk about {topic} and {SECRET}."

    @mcp.completion()
    async def complete(ref: Any, argument: Any, context: Any) -> Any:
        from mcp_types import Completion

        return Completion(values=[SECRET, f"x {SECRET}"])

    if args.http is not None:
        mcp.run("streamable-http", host="127.0.0.1", port=args.http)
    else:
        mcp.run()


if __name__ == "__main__":
    # The SDK's import made ~1e5 lasting objects (pydantic models): kept out of every later
    # collection (`gc.freeze`), ~0.3 s of CPU less at each of hundreds of server starts a run.
    gc.freeze()
    gc.enable()
    main()
