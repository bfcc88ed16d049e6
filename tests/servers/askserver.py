"""An MCP test server (the SDK's lowlevel `Server`, stdio, both eras) that asks its client
something during `resources/read` and `prompts/get`, and logs at every level when asked:
for the gateway's tests of a 2026-07-28 agent's questions and log messages.

    python askserver.py

- resource `ask://name`: asks the client's name (a form elicitation) and reads `hello <name>`;
- prompt `ask`: asks the same and answers `Hello, <name>!`;
- tool `shout(text)` and the read of `ask://log`: send `text` (or `read`) as one log message
  at debug and one at info (logger `ask`) during the request, then answer.
- tool `capabilities()`, the read of `ask://capabilities` and any `completion/complete`: answer
  with the client capabilities the request's `_meta` envelope carried (2026-07-28), as JSON
  (`null` for a handshake-era request, which carries none): what a server sees of its client.
- tool `sample()`, the read of `ask://sample` and prompt `sample`: ask the name first (a question round), then
  need the client's `sampling` capability, which the request's envelope must carry: without it
  the error -32021 "missing required client capability" (2026-07-28, SEP-2575) with its
  `requiredCapabilities` data, as servers that sample do; with it, `sampled for <name>`.

`--inert-extension`: declare an extension (`example.com/inert`, which adds nothing): monad
keeps every request to it on the SDK's session, never its stdio direct lane.

It asks in its era's way: on a 2026-07-28 connection by an `InputRequiredResult` (the
question keyed `name`, `requestState` `asked`), before by an `elicitation/create` request.
A decline reads `hello nobody`. Each resources/list and prompts/list writes a line to stderr
(`askserver: resources/list`): it announces no list changes, so a client that lists for every
read shows there.
"""

from __future__ import annotations

import gc

if __name__ == "__main__":  # a server process: no cyclic collection while the SDK is imported
    gc.disable()

import json
import sys
import warnings
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from mcp_types import MISSING_REQUIRED_CLIENT_CAPABILITY
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

QUESTION = "What is your name?"
SCHEMA: dict[str, Any] = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


async def _name(ctx: Any, params: Any) -> str | types.InputRequiredResult:
    """The client's answer, or (2026-07-28, first round) the question to return."""
    if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
        answer = (params.input_responses or {}).get("name")
        if answer is None:
            ask = types.ElicitRequest(params=types.ElicitRequestFormParams(message=QUESTION, requested_schema=SCHEMA))
            return types.InputRequiredResult(input_requests={"name": ask}, request_state="asked")
        result = types.ElicitResult.model_validate(answer.model_dump(by_alias=True, exclude_none=True))
    else:
        result = await ctx.session.elicit_form(QUESTION, SCHEMA, related_request_id=ctx.request_id)
    if result.action != "accept" or not result.content:
        return "nobody"
    return str(result.content.get("name"))


SAMPLING_NEEDED = "This request needs the sampling capability"


def _needs_sampling(ctx: Any) -> None:
    """Raise -32021 when the request's envelope does not carry `sampling` (2026-07-28)."""
    meta = (ctx.params or {}).get("_meta") if isinstance(ctx.params, dict) else None
    caps = meta.get(types.CLIENT_CAPABILITIES_META_KEY) if isinstance(meta, dict) else None
    if not isinstance(caps, dict) or "sampling" not in caps:
        data = types.MissingRequiredClientCapabilityErrorData(
            required_capabilities=types.ClientCapabilities(sampling=types.SamplingCapability()))
        raise MCPError(code=MISSING_REQUIRED_CLIENT_CAPABILITY, message=SAMPLING_NEEDED,
                       data=data.model_dump(by_alias=True, mode="json", exclude_none=True))


def _seen(ctx: Any) -> str:
    """The request's envelope `clientCapabilities`, as JSON."""
    meta = (ctx.params or {}).get("_meta") if isinstance(ctx.params, dict) else None
    return json.dumps(meta.get(types.CLIENT_CAPABILITIES_META_KEY) if isinstance(meta, dict) else None,
                      sort_keys=True)


async def _log(ctx: Any, text: str) -> None:
    with warnings.catch_warnings():  # logging is deprecated at 2026-07-28 (SEP-2577), still served
        warnings.simplefilter("ignore")
        for level in ("debug", "info"):
            await ctx.session.send_log_message(level, f"{level}: {text}", logger="ask",
                                               related_request_id=ctx.request_id)


async def list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
    print("askserver: resources/list", file=sys.stderr, flush=True)
    return types.ListResourcesResult(resources=[types.Resource(uri="ask://name", name="name"),
                                                types.Resource(uri="ask://log", name="log"),
                                                types.Resource(uri="ask://capabilities", name="capabilities"),
                                                types.Resource(uri="ask://sample", name="sample")])


async def read_resource(ctx: Any, params: types.ReadResourceRequestParams) -> Any:
    if str(params.uri) == "ask://capabilities":
        return types.ReadResourceResult(contents=[types.TextResourceContents(uri="ask://capabilities",
                                                                             text=_seen(ctx))])
    if str(params.uri) == "ask://sample":
        asked = await _name(ctx, params)
        if isinstance(asked, types.InputRequiredResult):
            return asked
        _needs_sampling(ctx)
        return types.ReadResourceResult(contents=[types.TextResourceContents(uri="ask://sample",
                                                                             text=f"sampled for {asked}")])
    if str(params.uri) == "ask://log":
        await _log(ctx, "read")
        return types.ReadResourceResult(contents=[types.TextResourceContents(uri="ask://log", text="logged")])
    name = await _name(ctx, params)
    if isinstance(name, types.InputRequiredResult):
        return name
    return types.ReadResourceResult(contents=[types.TextResourceContents(uri="ask://name", text=f"hello {name}")])


async def list_prompts(ctx: Any, params: Any) -> types.ListPromptsResult:
    print("askserver: prompts/list", file=sys.stderr, flush=True)
    return types.ListPromptsResult(prompts=[types.Prompt(name="ask", description="Asks your name."),
                                            types.Prompt(name="sample", description="Asks, then needs sampling.")])


async def get_prompt(ctx: Any, params: types.GetPromptRequestParams) -> Any:
    name = await _name(ctx, params)
    if isinstance(name, types.InputRequiredResult):
        return name
    if params.name == "sample":
        _needs_sampling(ctx)
        name = f"sampled for {name}"
    return types.GetPromptResult(messages=[types.PromptMessage(
        role="user", content=types.TextContent(type="text", text=f"Hello, {name}!"))])


async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
    return types.ListToolsResult(tools=[types.Tool(
        name="shout", input_schema={"type": "object", "properties": {"text": {"type": "string"}}}),
        types.Tool(name="capabilities", input_schema={"type": "object"}),
        types.Tool(name="sample", input_schema={"type": "object"})])


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> Any:
    if params.name == "capabilities":
        return types.CallToolResult(content=[types.TextContent(type="text", text=_seen(ctx))])
    if params.name == "sample":
        asked = await _name(ctx, params)
        if isinstance(asked, types.InputRequiredResult):
            return asked
        _needs_sampling(ctx)
        return types.CallToolResult(content=[types.TextContent(type="text", text=f"sampled for {asked}")])
    text = str((params.arguments or {}).get("text", ""))
    await _log(ctx, text)
    return types.CallToolResult(content=[types.TextContent(type="text", text="shouted")])


def main() -> None:
    with warnings.catch_warnings():  # logging is deprecated at 2026-07-28 (SEP-2577), still served
        warnings.simplefilter("ignore")
        server = Server("askserver", on_list_resources=list_resources, on_read_resource=read_resource,
                        on_list_prompts=list_prompts, on_get_prompt=get_prompt, on_list_tools=list_tools,
                        on_call_tool=call_tool, on_set_logging_level=lambda ctx, params: _empty(),
                        on_completion=complete)
    if "--inert-extension" in sys.argv[1:]:
        server.extensions["example.com/inert"] = {}

    async def run() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(run)


async def complete(ctx: Any, params: types.CompleteRequestParams) -> types.CompleteResult:
    return types.CompleteResult(completion=types.Completion(values=[_seen(ctx)]))


async def _empty() -> types.EmptyResult:
    return types.EmptyResult()


if __name__ == "__main__":
    # The SDK's import made ~1e5 lasting objects (pydantic models): kept out of every later
    # collection (`gc.freeze`), ~0.3 s of CPU less at each of hundreds of server starts a run.
    gc.freeze()
    gc.enable()
    main()
