"""The server the official conformance suite's `conformance server` scenarios expect, built on
the SDK's `MCPServer`, over streamable HTTP on 127.0.0.1 (both eras: the handshake era up to
2025-11-25, and stateless 2026-07-28).

    python conformance_server.py --port PORT [--path /mcp]

It has the fixed names the scenarios call (`conformance list --server`):

- tools: `test_simple_text`, `test_image_content`, `test_audio_content`,
  `test_embedded_resource`, `test_multiple_content_types`, `test_error_handling`,
  `test_tool_with_logging` (three info messages ~50 ms apart), `test_tool_with_progress`
  (0, 50, 100 of 100), `test_sampling(prompt)`, `test_elicitation(message)`,
  `test_elicitation_sep1034_defaults`, `test_elicitation_sep1330_enums` (they ask in the
  session's era: a standalone `sampling/createMessage` or `elicitation/create` during the call
  on a handshake-era session, an `InputRequiredResult` at 2026-07-28, as a server behind
  monad's 2026-07-28 session must),
  `test_reconnection` (closes the call's SSE stream mid-call, SEP-1699), `json_schema_2020_12_tool`,
  `test_custom_header(region)` (`region` also in the `Mcp-Param-Region` header, SEP-2243),
  `test_logging_tool` and `test_streaming_elicitation` (server-stateless's diagnostics),
  `test_missing_capability` (needs `sampling`: -32021 without it), and the 2026-07-28
  `InputRequiredResult` tools (SEP-2322) `test_input_required_result_elicitation`,
  `_sampling`, `_list_roots`, `_request_state`, `_multiple_inputs`, `_multi_round`,
  `_tampered_state`, `_capabilities`;
- resources `test://static-text`, `test://static-binary`, `test://watched-resource` and the
  template `test://template/{id}/data`; `resources/subscribe`/`unsubscribe` (handshake era);
- prompts `test_simple_prompt`, `test_prompt_with_arguments(arg1, arg2)`,
  `test_prompt_with_embedded_resource(resourceUri)`, `test_prompt_with_image`, and
  `test_input_required_result_prompt` (an `InputRequiredResult` on `prompts/get`);
- `completion/complete` (empty), `logging/setLevel` (handshake era).

The SDK does the rest: `server/discover`, per-request `_meta`, sealing `requestState`
(a tampered one is refused), caching hints, DNS-rebinding protection on loopback.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import warnings
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.streamable_http import EventCallback, EventMessage, EventStore
from mcp.shared.exceptions import MCPError
from mcp_types import (
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    AudioContent,
    ClientCapabilities,
    Completion,
    EmbeddedResource,
    ImageContent,
    InputRequiredResult,
    MissingRequiredClientCapabilityErrorData,
    SamplingCapability,
    SamplingMessage,
    TextContent,
    TextResourceContents,
)
from mcp_types.jsonrpc import JSONRPCMessage
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

# A 1x1 PNG and a WAV header with two bytes of samples: the smallest valid payloads.
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
WAV = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQIAAAAAAA=="

app = MCPServer("conformance-server", instructions="The official conformance suite's server scenarios.",
                log_level="WARNING")
subscribed: set[str] = set()


class MemoryEventStore(EventStore):
    """Every SSE event kept in memory, so a client that lost a call's stream can resume it with
    `Last-Event-ID` (SEP-1699, `test_reconnection`)."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, JSONRPCMessage | None]] = []

    async def store_event(self, stream_id: str, message: JSONRPCMessage | None) -> str:
        event_id = str(len(self.events) + 1)
        self.events.append((stream_id, event_id, message))
        return event_id

    async def replay_events_after(self, last_event_id: str, send_callback: EventCallback) -> str | None:
        stream = next((s for s, e, _ in self.events if e == last_event_id), None)
        if stream is None:
            return None
        for s, e, message in self.events:
            if s == stream and int(e) > int(last_event_id) and message is not None:
                await send_callback(EventMessage(message, e))
        return stream


def _quiet(coro_fn: Any) -> Any:
    """The SDK marks logging, sampling and roots deprecated at 2026-07-28 (SEP-2577); the
    handshake-era scenarios still use them."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return coro_fn()


# -- tools --------------------------------------------------------------------------------

@app.tool()
def test_simple_text() -> str:
    """Answers with a simple text."""
    return "This is a simple text response for testing."


@app.tool()
def test_image_content() -> list[ImageContent]:
    """Answers with a PNG image."""
    return [ImageContent(type="image", data=PNG, mime_type="image/png")]


@app.tool()
def test_audio_content() -> list[AudioContent]:
    """Answers with a WAV sound."""
    return [AudioContent(type="audio", data=WAV, mime_type="audio/wav")]


@app.tool()
def test_embedded_resource() -> list[EmbeddedResource]:
    """Answers with an embedded text resource."""
    return [EmbeddedResource(type="resource", resource=TextResourceContents(
        uri="test://embedded-resource", mime_type="text/plain", text="This is an embedded resource content."))]


@app.tool()
def test_multiple_content_types() -> list[TextContent | ImageContent | EmbeddedResource]:
    """Answers with a text, an image and an embedded resource."""
    return [TextContent(type="text", text="Multiple content types test:"),
            ImageContent(type="image", data=PNG, mime_type="image/png"),
            EmbeddedResource(type="resource", resource=TextResourceContents(
                uri="test://mixed-content-resource", mime_type="application/json",
                text=json.dumps({"test": "data", "value": 123})))]


@app.tool()
def test_error_handling() -> str:
    """Always fails (an `isError` result)."""
    raise RuntimeError("This tool intentionally returns an error for testing")


@app.tool()
async def test_tool_with_logging(ctx: Context) -> str:
    """Sends three info log messages about 50 ms apart during the call."""
    for i, text in enumerate(("Tool execution started", "Tool processing data", "Tool execution completed")):
        if i:
            await asyncio.sleep(0.05)
        await _quiet(lambda t=text: ctx.info(t))
    return "Tool with logging executed successfully"


@app.tool()
async def test_tool_with_progress(ctx: Context) -> str:
    """Reports progress 0, 50 and 100 of 100, about 50 ms apart."""
    for i, progress in enumerate((0, 50, 100)):
        if i:
            await asyncio.sleep(0.05)
        await ctx.report_progress(progress=progress, total=100, message=f"Completed step {progress} of 100")
    return "Progress test completed"


async def _question(ctx: Context, key: str, request: dict[str, Any]) -> dict[str, Any] | InputRequiredResult:
    """Ask the client `request` (wire shape) in the session's era: a standalone request
    during the call on a handshake-era session; at 2026-07-28, an `InputRequiredResult`
    under `key`, whose answer comes back in the retry's `inputResponses`. The answer as JSON,
    or the `InputRequiredResult` to return."""
    if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
        answer = _answers(ctx).get(key)
        return answer if answer is not None else _ask({key: request})
    params, related = request["params"], ctx.request_context.request_id
    if request["method"] == "elicitation/create":
        result: Any = await ctx.session.elicit_form(params["message"], params["requestedSchema"],
                                                    related_request_id=related)
    else:
        messages = [SamplingMessage.model_validate(m) for m in params["messages"]]
        result = await _quiet(lambda: ctx.session.create_message(messages=messages, max_tokens=params["maxTokens"],
                                                                 related_request_id=related))
    answer = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    assert isinstance(answer, dict)
    return answer


def _elicitation(message: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"method": "elicitation/create", "params": {"message": message, "requestedSchema": schema}}


def _outcome(answer: dict[str, Any]) -> str:
    return f"action={answer.get('action')}, content={json.dumps(answer.get('content') or {})}"


@app.tool()
async def test_sampling(prompt: str, ctx: Context) -> str | InputRequiredResult:
    """Asks the client for an LLM completion of `prompt` (`sampling/createMessage`)."""
    answer = await _question(ctx, "sampling", {"method": "sampling/createMessage", "params": {
        "messages": [{"role": "user", "content": {"type": "text", "text": prompt}}], "maxTokens": 100}})
    if isinstance(answer, InputRequiredResult):
        return answer
    return f"LLM response: {_sample_text(answer)}"


@app.tool()
async def test_elicitation(message: str, ctx: Context) -> str | InputRequiredResult:
    """Asks the user for a username and an email (`elicitation/create`)."""
    answer = await _question(ctx, "user_info", _elicitation(message, {
        "type": "object",
        "properties": {"username": {"type": "string", "description": "User's response"},
                       "email": {"type": "string", "description": "User's email address"}},
        "required": ["username", "email"]}))
    if isinstance(answer, InputRequiredResult):
        return answer
    return f"User response: {_outcome(answer)}"


@app.tool()
async def test_elicitation_sep1034_defaults(ctx: Context) -> str | InputRequiredResult:
    """Asks for a form whose every primitive field has a default (SEP-1034)."""
    answer = await _question(ctx, "defaults", _elicitation("Please provide user information", {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "User name", "default": "John Doe"},
            "age": {"type": "integer", "description": "User age", "default": 30},
            "score": {"type": "number", "description": "User score", "default": 95.5},
            "status": {"type": "string", "description": "User status", "enum": ["active", "inactive", "pending"],
                       "default": "active"},
            "verified": {"type": "boolean", "description": "Verification status", "default": True}}}))
    if isinstance(answer, InputRequiredResult):
        return answer
    return f"Elicitation completed: {_outcome(answer)}"


@app.tool()
async def test_elicitation_sep1330_enums(ctx: Context) -> str | InputRequiredResult:
    """Asks for a form with the five enum shapes of SEP-1330."""
    answer = await _question(ctx, "enums", _elicitation("Please select values using different enum schema types", {
        "type": "object",
        "properties": {
            "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
            "titledSingle": {"type": "string", "oneOf": [
                {"const": "value1", "title": "First Option"}, {"const": "value2", "title": "Second Option"},
                {"const": "value3", "title": "Third Option"}]},
            "legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"],
                           "enumNames": ["Option One", "Option Two", "Option Three"]},
            "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
            "titledMulti": {"type": "array", "items": {"anyOf": [
                {"const": "value1", "title": "First Choice"}, {"const": "value2", "title": "Second Choice"},
                {"const": "value3", "title": "Third Choice"}]}}}}))
    if isinstance(answer, InputRequiredResult):
        return answer
    return f"Elicitation completed: {_outcome(answer)}"


@app.tool()
async def test_reconnection(ctx: Context) -> str:
    """Closes the call's SSE stream mid-call; the client resumes it (SEP-1699)."""
    await _quiet(lambda: ctx.info("Before disconnect"))
    await ctx.close_sse_stream()
    await asyncio.sleep(0.2)
    await _quiet(lambda: ctx.info("After reconnect"))
    return "Reconnection test completed"


JSON_SCHEMA_2020_12 = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {"address": {"$anchor": "addressDef", "type": "object",
                          "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
    "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"},
                   "contactMethod": {"type": "string", "enum": ["phone", "email"]},
                   "phone": {"type": "string"}, "email": {"type": "string"}},
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}


def json_schema_2020_12_tool(name: str | None = None, address: dict[str, Any] | None = None,
                             contactMethod: str | None = None, phone: str | None = None,
                             email: str | None = None) -> str:
    """Tool with JSON Schema 2020-12 features"""
    return f"Received: {json.dumps([name, address, contactMethod, phone, email])}"


def test_custom_header(region: str, query: str | None = None) -> str:
    """Echoes its region, which the client also mirrors in the `Mcp-Param-Region` header"""
    return f"region={region}"


CUSTOM_HEADER_SCHEMA = {  # SEP-2243: `region` travels in a header too; the SDK checks they agree
    "type": "object",
    "properties": {"region": {"type": "string", "x-mcp-header": "Region"}, "query": {"type": "string"}},
    "required": ["region"],
}


@app.tool()
async def test_missing_capability(ctx: Context) -> str:
    """Needs the client's `sampling` capability: -32021 when it was not declared (SEP-2575)."""
    capabilities = ctx.client_capabilities
    if capabilities is None or capabilities.sampling is None:
        data = MissingRequiredClientCapabilityErrorData(
            required_capabilities=ClientCapabilities(sampling=SamplingCapability()))
        raise MCPError(code=MISSING_REQUIRED_CLIENT_CAPABILITY, message="This tool needs the sampling capability",
                       data=data.model_dump(by_alias=True, mode="json", exclude_none=True))
    return "the client declared sampling"


@app.tool()
async def test_logging_tool(ctx: Context) -> str:
    """Logs at info during the call: sent only to a 2026-07-28 request whose `_meta` asked for
    a log level (the SDK filters; SEP-2575)."""
    await _quiet(lambda: ctx.info("test_logging_tool ran"))
    return "logged"


@app.tool()
async def test_streaming_elicitation(ctx: Context) -> str | InputRequiredResult:
    """Asks for a name: at 2026-07-28 as an `InputRequiredResult` on the call's own response,
    never a request of its own on that stream (SEP-2575)."""
    answer = await _question(ctx, "user_name", _form("What is your name?", "name"))
    if isinstance(answer, InputRequiredResult):
        return answer
    return f"Hello, {_content(answer).get('name')}!"


# -- 2026-07-28 InputRequiredResult rounds (SEP-2322) --------------------------------------

def _form(message: str, field: str, kind: str = "string") -> dict[str, Any]:
    return {"method": "elicitation/create", "params": {
        "message": message, "requestedSchema": {
            "type": "object", "properties": {field: {"type": kind}}, "required": [field]}}}


SAMPLE = {"method": "sampling/createMessage", "params": {
    "messages": [{"role": "user", "content": {"type": "text", "text": "What is the capital of France?"}}],
    "maxTokens": 100}}
ROOTS = {"method": "roots/list", "params": {}}


def _ask(requests: dict[str, Any], state: str | None = None) -> InputRequiredResult:
    return InputRequiredResult.model_validate({"inputRequests": requests, "requestState": state})


def _answers(ctx: Context) -> dict[str, Any]:
    """The client's answers, as plain JSON: key -> the response's fields."""
    return {k: v.model_dump(by_alias=True, mode="json", exclude_none=True)
            for k, v in (ctx.input_responses or {}).items()}


def _content(answer: dict[str, Any] | None) -> dict[str, Any]:
    return answer.get("content") or {} if answer and answer.get("action") == "accept" else {}


def _sample_text(answer: dict[str, Any] | None) -> str:
    content = (answer or {}).get("content")
    if isinstance(content, list):
        content = content[0] if content else {}
    return str((content or {}).get("text", ""))


@app.tool()
async def test_input_required_result_elicitation(ctx: Context) -> str | InputRequiredResult:
    """Asks for a name (an `input_required` elicitation), then greets it."""
    answer = _answers(ctx).get("user_name")
    name = _content(answer).get("name")
    if not isinstance(name, str):  # missing, wrong or malformed answers: ask again
        return _ask({"user_name": _form("What is your name?", "name")})
    return f"Hello, {name}!"


@app.tool()
async def test_input_required_result_sampling(ctx: Context) -> str | InputRequiredResult:
    """Asks the client's model a question (an `input_required` sampling request)."""
    answer = _answers(ctx).get("capital_question")
    if answer is None:
        return _ask({"capital_question": SAMPLE})
    return f"The model answered: {_sample_text(answer)}"


@app.tool()
async def test_input_required_result_list_roots(ctx: Context) -> str | InputRequiredResult:
    """Asks for the client's roots (an `input_required` roots/list request)."""
    answer = _answers(ctx).get("client_roots")
    if answer is None:
        return _ask({"client_roots": ROOTS})
    roots = [r.get("uri") for r in answer.get("roots", [])]
    return f"The client has {len(roots)} root(s): {', '.join(map(str, roots))}"


@app.tool()
async def test_input_required_result_request_state(ctx: Context) -> str | InputRequiredResult:
    """Asks for a confirmation with a `requestState`, and checks the state comes back."""
    if ctx.request_state != "confirm-round-1" or "confirm" not in _answers(ctx):
        return _ask({"confirm": _form("Please confirm", "ok", "boolean")}, "confirm-round-1")
    return f"state-ok: confirmed={_content(_answers(ctx)['confirm']).get('ok')}"


@app.tool()
async def test_input_required_result_multiple_inputs(ctx: Context) -> str | InputRequiredResult:
    """Asks for a form, a sampling and the roots at once, with a `requestState`."""
    answers = _answers(ctx)
    wanted = {"user_name": _form("What is your name?", "name"),
              "greeting": {"method": "sampling/createMessage", "params": {
                  "messages": [{"role": "user", "content": {"type": "text", "text": "Generate a greeting"}}],
                  "maxTokens": 50}},
              "client_roots": ROOTS}
    missing = {k: v for k, v in wanted.items() if k not in answers}
    if missing or ctx.request_state != "multiple-inputs":
        return _ask(missing or wanted, "multiple-inputs")
    return (f"name={_content(answers['user_name']).get('name')}, greeting={_sample_text(answers['greeting'])}, "
            f"roots={len(answers['client_roots'].get('roots', []))}")


@app.tool()
async def test_input_required_result_multi_round(ctx: Context) -> str | InputRequiredResult:
    """Three rounds: a name, then a colour (each with a new `requestState`), then the answer."""
    answers, state = _answers(ctx), ctx.request_state
    if state == "round-2" and "step2" in answers:
        return f"Your favorite color is {_content(answers['step2']).get('color')}"
    if state == "round-1" and "step1" in answers:
        return _ask({"step2": _form("Step 2: What is your favorite color?", "color")}, "round-2")
    return _ask({"step1": _form("Step 1: What is your name?", "name")}, "round-1")


@app.tool()
async def test_input_required_result_tampered_state(ctx: Context) -> str | InputRequiredResult:
    """Asks with a sealed `requestState`; the SDK refuses a tampered one (-32602)."""
    if ctx.request_state == "untampered" and "confirm" in _answers(ctx):
        return "state verified"
    return _ask({"confirm": _form("Please confirm", "ok", "boolean")}, "untampered")


@app.tool()
async def test_input_required_result_capabilities(ctx: Context) -> str | InputRequiredResult:
    """Asks only for what the client declared (`_meta` clientCapabilities)."""
    answers = _answers(ctx)
    if answers:
        return f"answered: {', '.join(sorted(answers))}"
    caps = ctx.client_capabilities
    requests: dict[str, Any] = {}
    if caps is not None and caps.elicitation is not None:
        requests["user_name"] = _form("What is your name?", "name")
    if caps is not None and caps.sampling is not None:
        requests["capital_question"] = SAMPLE
    if caps is not None and caps.roots is not None:
        requests["client_roots"] = ROOTS
    if not requests:
        return "the client declared no capability to ask with"
    return _ask(requests)


# -- resources ----------------------------------------------------------------------------

@app.resource("test://static-text", name="static-text", description="A static text resource",
              mime_type="text/plain")
def static_text() -> str:
    return "This is the content of the static text resource."


@app.resource("test://static-binary", name="static-binary", description="A static binary resource (a PNG)",
              mime_type="image/png")
def static_binary() -> bytes:
    return base64.b64decode(PNG)


@app.resource("test://template/{id}/data", name="template", description="A resource template",
              mime_type="application/json")
def template(id: str) -> str:
    return json.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"})


@app.resource("test://watched-resource", name="watched-resource", description="A resource to subscribe to",
              mime_type="text/plain")
def watched() -> str:
    return "Watched resource content"


# -- prompts ------------------------------------------------------------------------------

@app.prompt()
def test_simple_prompt() -> list[dict[str, Any]]:
    """A simple prompt without arguments"""
    return [{"role": "user", "content": {"type": "text", "text": "This is a simple prompt for testing."}}]


@app.prompt()
def test_prompt_with_arguments(arg1: str, arg2: str) -> list[dict[str, Any]]:
    """A prompt with two required arguments"""
    text = f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"
    return [{"role": "user", "content": {"type": "text", "text": text}}]


@app.prompt()
def test_prompt_with_embedded_resource(resourceUri: str) -> list[dict[str, Any]]:
    """A prompt embedding a resource"""
    return [{"role": "user", "content": {"type": "resource", "resource": {
                "uri": resourceUri, "mimeType": "text/plain", "text": "Embedded resource content for testing."}}},
            {"role": "user", "content": {"type": "text", "text": "Please process the embedded resource above."}}]


@app.prompt()
def test_prompt_with_image() -> list[dict[str, Any]]:
    """A prompt with an image"""
    return [{"role": "user", "content": {"type": "image", "data": PNG, "mimeType": "image/png"}},
            {"role": "user", "content": {"type": "text", "text": "Please analyze the image above."}}]


@app.prompt()
async def test_input_required_result_prompt(ctx: Context) -> Any:
    """A prompt that first asks for its context (an `input_required` result on prompts/get)"""
    answer = _answers(ctx).get("user_context")
    if answer is None:
        return _ask({"user_context": _form("What context should the prompt use?", "context")})
    return [{"role": "user", "content": {"type": "text",
                                         "text": f"Prompt with context: {_content(answer).get('context')}"}}]


@app.completion()
async def complete(ref: object, argument: object, context: object) -> Completion:
    return Completion(values=[], total=0, has_more=False)


def _handshake_era_handlers() -> None:
    """`logging/setLevel` and `resources/subscribe`/`unsubscribe`: gone at 2026-07-28, where
    the SDK answers them 404/-32601 by itself; served on a handshake-era session."""
    import mcp_types as types

    async def set_level(ctx: Any, params: types.SetLevelRequestParams) -> types.EmptyResult:
        return types.EmptyResult()

    async def subscribe(ctx: Any, params: types.SubscribeRequestParams) -> types.EmptyResult:
        subscribed.add(str(params.uri))
        return types.EmptyResult()

    async def unsubscribe(ctx: Any, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
        subscribed.discard(str(params.uri))
        return types.EmptyResult()

    low = app._lowlevel_server
    low.add_request_handler("logging/setLevel", types.SetLevelRequestParams, set_level)
    low.add_request_handler("resources/subscribe", types.SubscribeRequestParams, subscribe)
    low.add_request_handler("resources/unsubscribe", types.UnsubscribeRequestParams, unsubscribe)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--path", default="/mcp")
    args = ap.parse_args()
    # Listed with their schemas verbatim (the SDK would derive them from the signatures).
    for fn, schema in ((json_schema_2020_12_tool, JSON_SCHEMA_2020_12), (test_custom_header, CUSTOM_HEADER_SCHEMA)):
        app.add_tool(fn, name=fn.__name__, description=(fn.__doc__ or "").strip())
        tool = app._tool_manager.get_tool(fn.__name__)
        assert tool is not None
        tool.parameters = schema
    _handshake_era_handlers()
    app.run("streamable-http", host="127.0.0.1", port=args.port, streamable_http_path=args.path,
            event_store=MemoryEventStore(), retry_interval=100)


if __name__ == "__main__":
    main()
