"""An agent for the telemetry tests: the MCP SDK's client with the OpenTelemetry SDK set up,
as an agent that exports its own traces has it; run as its own process (the global tracer
provider must not leak into the test process).

    python telemetry_agent.py TOOL [TEXT] [--progress]   (MONAD_HOME in the environment)
    python telemetry_agent.py resource:URI | prompt:NAME | complete:NAME

Starts a span `agent turn`, calls TOOL through `monad mcp serve` over stdio (the SDK's
dispatcher opens its CLIENT span and puts its traceparent into `params._meta`), and prints
`{"traceId", "traceFlags", "spans": [{name, spanId, parentSpanId}], "text", "isError"}` as JSON
(`{…, "error": code}` for an error answer).
`--progress`: the call asks for progress, which takes the SDK's paths inside monad;
`--no-trace`: no OpenTelemetry SDK set up (an agent that sends no trace context).
`resource:URI` reads a resource, `prompt:NAME` gets a prompt, `complete:NAME` completes the
prompt's `topic` argument (`text`: the first content's text, or the first value).
`AGENT_HTTP_URL` and `AGENT_HTTP_TOKEN` in the environment: through `monad mcp serve --http`;
`AGENT_SERVE_FLAGS`: more flags for `monad mcp serve` (`--tool-search on`). TOOL `find_tool`
is called with `{"query": TEXT}`.
"""

from __future__ import annotations

import json
import os
import sys

import anyio
from mcp import Client, StdioServerParameters
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


def main() -> None:
    argv = [a for a in sys.argv[1:] if a not in ("--progress", "--no-trace")]
    tool = argv[0]
    text = argv[1] if len(argv) > 1 else ""
    progress = "--progress" in sys.argv
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    if "--no-trace" not in sys.argv:
        trace.set_tracer_provider(provider)
    serve_flags = os.environ.get("AGENT_SERVE_FLAGS", "").split()
    params = StdioServerParameters(command=sys.executable, args=["-m", "monad_cli", "mcp", "serve", *serve_flags],
                                   env={"MONAD_HOME": os.environ["MONAD_HOME"], "MONAD_NO_AUTOSTART": "1"})
    http_url = os.environ.get("AGENT_HTTP_URL")  # `monad mcp serve --http`'s URL instead of stdio
    out: dict[str, object] = {}

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        pass

    async def run() -> None:
        if http_url is not None:
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            headers = {"Authorization": f"Bearer {os.environ['AGENT_HTTP_TOKEN']}"}
            async with httpx2.AsyncClient(headers=headers) as h, \
                    Client(streamable_http_client(http_url, http_client=h)) as client:
                await call(client)
            return
        async with Client(params) as client:
            await call(client)

    async def call(client: Client) -> None:
        from mcp import MCPError

        with trace.get_tracer("agent").start_as_current_span("agent turn") as span:
            out["traceId"] = format(span.get_span_context().trace_id, "032x")
            out["traceFlags"] = format(span.get_span_context().trace_flags, "02x")
            try:
                await request(client)
            except MCPError as e:  # an error answer: its code
                out["error"] = e.error.code

    async def request(client: Client) -> None:
        kind, _, name = tool.partition(":")
        if kind == "list":  # the listings the gateway answers itself
            await client.list_tools()
            await client.list_prompts()
            await client.list_resources()
            out["text"] = ""
            return
        if kind == "resource":
            read = await client.read_resource(name)
            out["text"] = getattr(read.contents[0], "text", "")
            return
        if kind == "prompt":
            prompt = await client.get_prompt(name)
            out["text"] = getattr(prompt.messages[0].content, "text", "")
            return
        if kind == "complete":
            import mcp_types as types

            done = await client.complete(types.PromptReference(type="ref/prompt", name=name),
                                         {"name": "topic", "value": "t"})
            out["text"] = done.completion.values[0]
            return
        arguments = {"query": text} if tool == "find_tool" else {"text": text}
        result = await client.call_tool(tool, arguments, progress_callback=on_progress if progress else None)
        out["text"] = result.content[0].text if result.content else ""
        out["isError"] = bool(result.is_error)

    anyio.run(run)
    out["spans"] = [{"name": s.name, "spanId": format(s.context.span_id, "016x"),
                     "parentSpanId": format(s.parent.span_id, "016x") if s.parent else ""}
                    for s in exporter.get_finished_spans()]
    print(json.dumps(out))


if __name__ == "__main__":
    main()
