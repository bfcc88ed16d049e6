"""The gateway's direct lane for plain tools/calls (`gateway/direct.py`): what it takes and
what it leaves to the SDK's server, its answers in both eras, cancellation by the client and
by the connection's end. The lane runs here on its own, with the SDK's real result sieve and
request check inside; `tests/e2e/test_gateway_direct.py` holds its answers against the SDK's
through the real supervisor."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pytest
from mcp.shared.exceptions import MCPError
from mcp_types import JSONRPCResponse

from monad_cli.daemon.gateway.direct import DirectCalls, LaneCall, LaneHandler, _loads, _not_json

MODERN = "2026-07-28"
ENVELOPE = {"io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"}}
STAMP = {"name": "monad", "version": "0"}


def line(body: dict[str, Any]) -> bytes:
    return json.dumps(body).encode()


def call(request_id: Any = 1, name: str = "b__echo", arguments: Any = None, **extra: Any) -> bytes:
    params: dict[str, Any] = {"name": name, "arguments": {"text": "hi"} if arguments is None else arguments,
                              "_meta": dict(ENVELOPE), **extra}
    if params["_meta"] is None:
        del params["_meta"]
    return line({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params})


def text_result(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": False}


async def echo(name: str, arguments: dict[str, Any] | None, version: str,
               meta: dict[str, Any] | None = None) -> dict[str, Any]:
    # As `GatewaySession.call` answers: `resultType` is required at 2026-07-28, unknown before.
    return {**text_result(f"{name} {arguments} {version}"), **({"resultType": "complete"} if version == MODERN else {})}


def slow_call(cancelled: list[str]) -> Callable[..., Awaitable[dict[str, Any]]]:
    """A call that waits 30 s and notes its tool's name in `cancelled` when cancelled."""
    async def slow(name: str, arguments: dict[str, Any] | None, version: str,
                   meta: dict[str, Any] | None = None) -> dict[str, Any]:
        try:
            await anyio.sleep(30)
        except anyio.get_cancelled_exc_class():
            cancelled.append(name)
            raise
        return text_result("late")

    return slow


def as_handler(call_fn: Callable[..., Awaitable[dict[str, Any]]]) -> LaneHandler:
    """The lane's handler, answering with `call_fn(name, arguments, version, meta)`."""
    async def handle(call: LaneCall) -> dict[str, Any]:
        return await call_fn(call.name, call.arguments, call.version, call.meta)

    return handle


def run_lane(test: Callable[[DirectCalls, list[dict[str, Any]]], Awaitable[None]], *,
             call_fn: Callable[..., Awaitable[dict[str, Any]]] = echo, listed: bool = True) -> list[dict[str, Any]]:
    """Run `test(lane, answers)` with a lane, then end its connection (`close`); returns every
    line it wrote."""
    answers: list[dict[str, Any]] = []

    async def send(data: bytes) -> None:
        assert data.endswith(b"\n") and data.count(b"\n") == 1  # one message, one line
        answers.append(json.loads(data))

    async def main() -> None:
        lane = DirectCalls(as_handler(call_fn), send, server_info=STAMP, listed=lambda: listed)
        await test(lane, answers)
        await lane.close()

    anyio.run(main)
    return answers


async def settle() -> None:
    for _ in range(20):
        await anyio.sleep(0)


def test_a_plain_modern_call_is_taken_and_answered_as_the_sdk_shapes_it() -> None:
    async def extra_fields(name: str, arguments: dict[str, Any] | None, version: str,
                           meta: dict[str, Any] | None = None) -> dict[str, Any]:
        # `bogus` is no CallToolResult field: the SDK's per-version sieve drops it.
        return {**text_result("hi"), "bogus": 1, "resultType": "complete"}

    async def no_result_type(name: str, arguments: dict[str, Any] | None, version: str,
                             meta: dict[str, Any] | None = None) -> dict[str, Any]:
        return text_result("hi")

    async def test(lane: DirectCalls, answers: list[dict[str, Any]]) -> None:
        assert lane.take(call("a-string-id"))
        await settle()

    # Without `resultType` a 2026-07-28 result is invalid, as the SDK's runner holds it.
    assert run_lane(test, call_fn=no_result_type)[0]["error"]["code"] == -32603
    answers = run_lane(test, call_fn=extra_fields)
    assert answers == [{"jsonrpc": "2.0", "id": "a-string-id",
                        "result": {"content": [{"type": "text", "text": "hi"}], "isError": False,
                                   "resultType": "complete", "_meta": {"io.modelcontextprotocol/serverInfo": STAMP}}}]


def test_the_arguments_and_era_reach_the_call() -> None:
    async def test(lane: DirectCalls, answers: list[dict[str, Any]]) -> None:
        assert lane.take(call(5, "b__add", {"a": 1, "b": 2}))
        await settle()

    (answer,) = run_lane(test)
    assert answer["id"] == 5
    assert answer["result"]["content"][0]["text"] == f"b__add {{'a': 1, 'b': 2}} {MODERN}"


@pytest.mark.parametrize("request_line", [
    call(1, _meta={**ENVELOPE, "progressToken": "p"}),  # progress stays with the SDK's path
    call(1, task={"ttl": 1000}),  # a task-augmented call
    call(1, inputResponses={}),  # an MRTR retry
    call(1, arguments=["not", "an", "object"]),
    line({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": 7, "_meta": ENVELOPE}}),
    line({"jsonrpc": "2.0", "id": True, "method": "tools/call", "params": {"name": "x", "_meta": ENVELOPE}}),
    line({"jsonrpc": "2.0", "id": None, "method": "tools/call", "params": {"name": "x", "_meta": ENVELOPE}}),
    line({"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "x", "_meta": ENVELOPE}}),  # no id
    line({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "x", "_meta": {
        **ENVELOPE, "io.modelcontextprotocol/protocolVersion": "2099-01-01"}}}),  # a version we do not serve
    line({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "x", "_meta": {
        "io.modelcontextprotocol/protocolVersion": MODERN}}}),  # no client capabilities
    line({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "x", "_meta": {
        **ENVELOPE, "io.modelcontextprotocol/clientInfo": {"name": 3}}}}),  # the SDK's check says no
    line({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": ENVELOPE}}),
    line({"jsonrpc": "1.0", "id": 1, "method": "tools/call", "params": {"name": "x", "_meta": ENVELOPE}}),
    b"not json",
    b"[1, 2]",
    # A surrogate escape (a lone one is no text at all): the SDK's parser judges the line.
    call(1, arguments={"text": "x"}).replace(b'"x"', b'"\\ud800"'),
    call(1, arguments={"ratio": 1}).replace(b"1}", b"Infinity}"),  # not JSON (RFC 8259 section 6)
])
def test_what_the_lane_does_not_fully_understand_goes_to_the_sdk(request_line: bytes) -> None:
    async def test(lane: DirectCalls, answers: list[dict[str, Any]]) -> None:
        lane.era = "modern"  # as if an earlier request had opened the connection
        assert not lane.take(request_line)
        await settle()

    assert run_lane(test) == []


def test_a_handshake_era_call_is_taken_only_after_the_handshake_and_a_listing() -> None:
    initialize = line({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
    plain = call(1, _meta=None)
    listed = {"value": False}

    async def test(lane: DirectCalls, answers: list[dict[str, Any]]) -> None:
        assert not lane.take(initialize) and lane.era == "handshake"
        assert not lane.take(plain)  # no answer to initialize seen yet
        lane.sent(JSONRPCResponse(jsonrpc="2.0", id=0, result={"protocolVersion": "2025-06-18"}))
        assert not lane.take(plain)  # not initialized yet
        assert not lane.take(line({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        assert not lane.take(plain)  # not listed: the session has not registered the connection
        listed["value"] = True
        assert not lane.take(call(2))  # a 2026 envelope on a handshake connection: the SDK refuses it
        assert lane.take(plain)
        await settle()

    answers: list[dict[str, Any]] = []

    async def send(data: bytes) -> None:
        answers.append(json.loads(data))

    async def main() -> None:
        lane = DirectCalls(as_handler(echo), send, server_info=STAMP, listed=lambda: listed["value"])
        await test(lane, answers)
        await lane.close()

    anyio.run(main)
    # No resultType and no serverInfo stamp: both are 2026-07-28 vocabulary.
    assert answers == [{"jsonrpc": "2.0", "id": 1, "result": {
        "content": [{"type": "text", "text": "b__echo {'text': 'hi'} 2025-06-18"}], "isError": False}}]


def test_errors_are_answered_as_the_sdk_answers_them() -> None:
    async def failing(name: str, arguments: dict[str, Any] | None, version: str,
                      meta: dict[str, Any] | None = None) -> dict[str, Any]:
        if name == "unknown":
            raise MCPError(code=-32602, message="no tool `unknown`")
        if name == "invalid":
            return {"content": "not a list"}
        raise RuntimeError("a bug of ours")

    async def test(lane: DirectCalls, answers: list[dict[str, Any]]) -> None:
        for i, name in enumerate(("unknown", "invalid", "bug")):
            assert lane.take(call(i, name))
        await settle()

    answers = sorted(run_lane(test, call_fn=failing), key=lambda a: a["id"])
    assert [a["error"] for a in answers] == [
        {"code": -32602, "message": "no tool `unknown`"},
        {"code": -32603, "message": "Handler returned an invalid result"},
        {"code": -32603, "message": "Internal error"},
    ]


def test_a_cancelled_call_is_cancelled_and_never_answered() -> None:
    seen: list[str] = []
    slow = slow_call(seen)

    async def test(lane: DirectCalls, answers: list[dict[str, Any]]) -> None:
        assert lane.take(call(7, "first"))
        assert lane.take(call(8, "second"))
        await settle()
        not_ours = line({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 99}})
        assert not lane.take(not_ours)  # the SDK's dispatcher cancels its own
        # "7" names 7: ids are matched as the SDK's dispatcher matches them.
        assert lane.take(line({"jsonrpc": "2.0", "method": "notifications/cancelled",
                               "params": {"requestId": "7", "reason": "user"}}))
        await settle()
        assert seen == ["first"] and list(lane.in_flight) == ["8"]

    answers = run_lane(test, call_fn=slow)
    # The connection's end (`close`) answers the call still in flight.
    assert answers == [{"jsonrpc": "2.0", "id": 8, "error": {"code": -32000, "message": "Connection closed"}}]
    assert seen == ["first", "second"]


def test_a_duplicate_id_in_flight_goes_to_the_sdk() -> None:
    async def slow(name: str, arguments: dict[str, Any] | None, version: str,
                   meta: dict[str, Any] | None = None) -> dict[str, Any]:
        await anyio.sleep(30)
        return text_result("late")

    async def test(lane: DirectCalls, answers: list[dict[str, Any]]) -> None:
        assert lane.take(call(3))
        await settle()
        assert not lane.take(call(3))

    run_lane(test, call_fn=slow)


def test_a_call_cancelled_before_its_task_runs_is_never_run_nor_answered() -> None:
    ran: list[str] = []

    async def record(name: str, arguments: dict[str, Any] | None, version: str,
                     meta: dict[str, Any] | None = None) -> dict[str, Any]:
        ran.append(name)
        return text_result("ran")

    async def test(lane: DirectCalls, answers: list[dict[str, Any]]) -> None:
        assert lane.take(call(4))  # both lines come in one read: no task has run in between
        assert lane.take(line({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 4}}))
        await settle()
        assert lane.in_flight == {}

    assert run_lane(test, call_fn=record) == [] and ran == []


def test_escaped_spellings_are_read_as_json_reads_them() -> None:
    seen: list[str] = []
    slow = slow_call(seen)

    async def test(lane: DirectCalls, answers: list[dict[str, Any]]) -> None:
        lane.era = "modern"
        # PHP's json_encode writes `\/`; any character may be a \u escape.
        assert lane.take(call(1, "first").replace(b"tools/call", b"tools\\/call"))
        assert lane.take(call(2, "second").replace(b"tools/call", b"tools\\u002fcall"))
        await settle()
        assert lane.take(b'{"jsonrpc":"2.0","method":"notifications\\/cancelled","params":{"requestId":1}}')
        assert lane.take(b'{"jsonrpc":"2.0","method":"notifications\\u002Fcancelled","params":{"requestId":2}}')
        await settle()
        assert sorted(seen) == ["first", "second"] and lane.in_flight == {}

    assert run_lane(test, call_fn=slow) == []


@pytest.mark.parametrize("data", [
    call(1), call(1).decode().encode("utf-16-le"), call(1).decode().encode("utf-32"), b"\xef\xbb\xbf" + call(1),
    b'{"a": NaN}', b'{"a": -Infinity}', b'{"a": "\\ud800"}', b'{"a": "\xff"}', b'{"a": "\xed\xa0\x80"}', b"",
    b"[1, 2", b'{"a": 1} x', b'{"a": 1}\n',
])
def test_lines_are_parsed_as_json_loads_parses_them(data: bytes) -> None:
    # The lane keeps one decoder (`_loads`); what it reads, or refuses, is what json.loads does.
    def outcome(parse: Callable[[bytes], Any]) -> Any:
        try:
            return parse(data)
        except ValueError as e:
            return type(e)

    assert outcome(_loads) == outcome(lambda b: json.loads(b, parse_constant=_not_json))


@pytest.mark.parametrize("method, params", [
    ("resources/read", {"uri": "note://a"}),
    ("prompts/get", {"name": "b__greet", "arguments": {"who": "x"}}),
    ("completion/complete", {"ref": {"type": "ref/prompt", "name": "b__greet"},
                             "argument": {"name": "who", "value": "A"}}),
])
def test_reads_gets_and_completions_are_the_sdks(method: str, params: dict[str, Any]) -> None:
    async def test(lane: DirectCalls, answers: list[dict[str, Any]]) -> None:
        lane.era = "modern"
        assert not lane.take(line({"jsonrpc": "2.0", "id": 1, "method": method,
                                   "params": {"_meta": dict(ENVELOPE), **params}}))

    assert run_lane(test) == []
