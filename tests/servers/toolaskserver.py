"""An SDK server (`MCPServer`) of the handshake era whose tools ask the client during the
call, as servers in the wild do: for the Studio's Try questions.

    python toolaskserver.py

It answers `server/discover` with "method not found", as servers from before 2026-07-28 do,
so a client speaks the handshake era with it and the server's questions are plain
`elicitation/create` and `sampling/createMessage` requests during the call.

Tools: `signup()` asks a form (elicitation form mode: `name` string, `age` integer,
`newsletter` boolean) and answers with what came back; `connect()` asks the person to open a
URL (URL mode) and answers with the action; `withdraw(after)` asks the form and withdraws the
question after `after` seconds (notifications/cancelled), answering `withdrawn`;
`summarize(text)` asks for a sampling and answers with the model's text, or why it was refused.
"""

from __future__ import annotations

import gc

if __name__ == "__main__":  # a server process: no cyclic collection while the SDK is imported
    gc.disable()

import anyio
import mcp_types as types
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp_types import SamplingMessage, TextContent
from pydantic import BaseModel, Field

app = MCPServer("askserver")


class Signup(BaseModel):
    name: str = Field(description="Your name")
    age: int = Field(description="Your age in years")
    newsletter: bool = Field(default=False, description="Send the newsletter")


@app.tool()
async def signup(ctx: Context) -> str:
    """Ask for a name, an age and a newsletter choice."""
    result = await ctx.elicit("Sign up for the example service", Signup)
    if result.action != "accept":
        return f"action: {result.action}"
    d = result.data
    return f"action: accept; name={d.name}; age={d.age}; newsletter={d.newsletter}"


@app.tool()
async def withdraw(after: float, ctx: Context) -> str:
    """Ask the signup form, and withdraw the question after `after` seconds (the SDK sends
    notifications/cancelled for it): `withdrawn`, or the action if an answer came first."""
    with anyio.move_on_after(after):
        result = await ctx.elicit("Sign up (this question is withdrawn soon)", Signup)
        return f"action: {result.action}"
    return "withdrawn"


@app.tool()
async def connect(ctx: Context) -> str:
    """Ask the person to open the example calendar's sign-in page."""
    result = await ctx.elicit_url("Sign in to the example calendar",
                                  "https://calendar.example.com/connect?session=e42", "e42")
    return f"action: {result.action}"


@app.tool()
async def summarize(text: str, ctx: Context) -> str:
    """Ask the client's model for a summary of `text`."""
    try:
        result = await ctx.session.create_message(
            messages=[SamplingMessage(role="user", content=TextContent(type="text", text=text))], max_tokens=20)
    except Exception as e:  # the refusal is the answer the test reads
        return f"refused: {e}"
    return f"summary: {getattr(result.content, 'text', result.content)}"


async def serve() -> None:
    server = app._lowlevel_server  # the SDK's own runner, fed through the filter below
    async with stdio_server() as (reads, writes):
        to_server, server_reads = anyio.create_memory_object_stream[SessionMessage | Exception](16)

        async def only_the_handshake_era() -> None:
            async with to_server:
                async for item in reads:
                    message = item.message if isinstance(item, SessionMessage) else None
                    if isinstance(message, types.JSONRPCRequest) and message.method == "server/discover":
                        await writes.send(SessionMessage(types.JSONRPCError(
                            jsonrpc="2.0", id=message.id,
                            error=types.ErrorData(code=types.METHOD_NOT_FOUND, message="Method not found"))))
                        continue
                    await to_server.send(item)

        async with anyio.create_task_group() as tg:
            tg.start_soon(only_the_handshake_era)
            await server.run(server_reads, writes, server.create_initialization_options())
            tg.cancel_scope.cancel()


if __name__ == "__main__":
    # The SDK's import made ~1e5 lasting objects (pydantic models): kept out of every later
    # collection (`gc.freeze`), ~0.3 s of CPU less at each of hundreds of server starts a run.
    gc.freeze()
    gc.enable()
    anyio.run(serve)
