"""monad's own lane on a server connection (`daemon/sessions/direct.py`): the `tools/call`
line it writes (its own ids, the session's 2026-07-28 envelope with the caller's
capabilities), the answers it takes and the ones it leaves to the SDK, cancellation and the
connection's end, and the raw requests daemon/tasks/ sends on it (a listen stream's
acknowledgement, a timeout) — on its own, with the SDK's real result validation inside —
and, on a real stdio connection and through the real supervisor, what a server sees."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types import ErrorData, JSONRPCError, JSONRPCNotification, JSONRPCRequest, JSONRPCResponse, Tool
from pydantic import ValidationError

from monad_cli.config.schema import validate
from monad_cli.daemon.sessions.direct import DirectLane
from monad_cli.daemon.sessions.stamp import Envelope
from monad_cli.daemon.sessions.stderr import StderrSink
from monad_cli.daemon.sessions.transports import Connection, stdio_transport
from monad_cli.daemon.trust.call import ToolCall
from tests.conftest import LIGHTTOOLSERVER, wait_for, wait_state

MODERN = "2026-07-28"
STAMP = {"io.modelcontextprotocol/protocolVersion": MODERN,
         "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}, "sampling": {}},
         "io.modelcontextprotocol/clientInfo": {"name": "monad", "version": "0"}}
TOOLS = [Tool(name="echo", input_schema={"type": "object"})]
SERVERS = Path(__file__).resolve().parents[2] / "servers"


@asynccontextmanager
async def monad_stdio(tmp_path: Path, command: str, args: list[str], **client: Any
                      ) -> AsyncIterator[tuple[Client, Connection]]:
    """A `mcp.Client` on monad's own stdio transport to `command args` (as an actor connects,
    without one): the connection's lane is there, attached."""
    spec = validate({"command": command, "args": args}, name="t", source="test", environ={})
    conn = Connection()
    async with Client(stdio_transport(spec, StderrSink(tmp_path / "stderr.log"), conn), cache=None,
                      **client) as session:
        assert conn.lane is not None
        conn.lane.attach(session)
        yield session, conn


class Wire:
    """What the lane wrote, and a way to answer it."""

    def __init__(self) -> None:
        self.lines: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.cancelled: list[dict[str, Any]] = []
        self.envelope = Envelope()
        self.lane = DirectLane(self, self.envelope, fast=True)
        self.lane.attached = True  # as `attach` does once the SDK's session is up

    async def request(self, body: dict[str, Any], headers: dict[str, str]) -> None:
        json.dumps(body, allow_nan=False)  # what a stdio wire refuses
        self.lines.append(body)
        self.headers.append(headers)

    async def notify(self, body: dict[str, Any]) -> None:
        self.cancelled.append(body)

    def stamp(self) -> None:
        """An SDK request went out with the session's envelope (the lane copies it)."""
        self.envelope.sent(JSONRPCRequest(jsonrpc="2.0", id=1, method="tools/list", params={"_meta": dict(STAMP)}))

    def answer(self, result: dict[str, Any] | None = None, error: ErrorData | None = None) -> bool:
        request_id = self.lines[-1]["id"]
        if error is not None:
            return self.lane.resolve(JSONRPCError(jsonrpc="2.0", id=request_id, error=error))
        return self.lane.resolve(JSONRPCResponse(jsonrpc="2.0", id=request_id, result=result or {}))


def echo(arguments: dict[str, Any] | None = None, **fields: Any) -> ToolCall:
    return ToolCall("srv__echo", arguments, tool=TOOLS[0], **fields)


def run(test: Any) -> Any:
    out: dict[str, Any] = {}

    async def main() -> None:
        wire = Wire()
        async with anyio.create_task_group() as tg:
            async def call(version: str = MODERN, arguments: dict[str, Any] | None = None, **fields: Any) -> None:
                try:
                    out["result"] = await wire.lane.call(echo(arguments, **fields), version, TOOLS)
                except Exception as e:
                    out["error"] = e

            await test(wire, tg, call)
            tg.cancel_scope.cancel()
        out["wire"] = wire

    anyio.run(main)
    return out


async def settle() -> None:
    for _ in range(10):
        await anyio.sleep(0)


def test_the_request_carries_its_own_id_and_the_sessions_envelope_and_the_answer_is_validated() -> None:
    async def test(wire: Wire, tg: Any, call: Any) -> None:
        assert await wire.lane.call(echo({}), MODERN, TOOLS) is None  # no envelope seen yet: the SDK's call
        wire.stamp()
        tg.start_soon(call, MODERN, {"text": "hi"})
        await settle()
        assert wire.lines == [{"jsonrpc": "2.0", "id": "monad-1", "method": "tools/call",
                               "params": {"name": "echo", "arguments": {"text": "hi"}, "_meta": STAMP}}]
        assert wire.headers == [{"mcp-protocol-version": MODERN, "mcp-method": "tools/call", "mcp-name": "echo"}]
        assert wire.answer({"content": [{"type": "text", "text": "hi"}], "isError": False, "resultType": "complete"})
        await settle()

    out = run(test)
    assert out["result"].content[0].text == "hi" and out["result"].is_error is False
    assert not out["wire"].lane.resolve(JSONRPCResponse(jsonrpc="2.0", id="monad-1", result={}))  # answered once


def test_a_call_carries_its_callers_capabilities_and_its_trace_context() -> None:
    async def test(wire: Wire, tg: Any, call: Any) -> None:
        wire.stamp()
        tg.start_soon(lambda: call(MODERN, None, capabilities={"roots": {"listChanged": True}},
                                   meta={"traceparent": "00-" + "1" * 32 + "-" + "2" * 16 + "-01"}))
        await settle()

    meta = run(test)["wire"].lines[0]["params"]["_meta"]
    assert meta["io.modelcontextprotocol/clientCapabilities"] == {"roots": {}}  # no listChanged: not relayed
    assert meta["traceparent"].startswith("00-111")


def test_a_tool_that_is_not_listed_or_has_an_output_schema_is_the_sdks() -> None:
    async def test(wire: Wire, tg: Any, call: Any) -> None:
        typed = [Tool(name="echo", input_schema={"type": "object"}, output_schema={"type": "object"})]
        assert await wire.lane.call(echo(), "2025-06-18", typed) is None
        other = ToolCall("srv__other", None, tool=Tool(name="other", input_schema={"type": "object"}))
        assert await wire.lane.call(other, "2025-06-18", TOOLS) is None
        assert wire.lines == []

    run(test)


def test_before_2026_a_result_type_means_nothing() -> None:
    async def test(wire: Wire, tg: Any, call: Any) -> None:
        tg.start_soon(call, "2025-11-25", None)
        await settle()
        wire.answer({"content": [{"type": "text", "text": "weird"}], "resultType": "input_required"})
        await settle()

    out = run(test)  # the version's surface drops the field, as the SDK does: kept, not sent again
    assert out["result"].content[0].text == "weird" and len(out["wire"].lines) == 1


def test_a_tool_that_may_be_a_task_a_server_with_extensions_or_an_http_connection_is_the_sdks() -> None:
    async def test(wire: Wire, tg: Any, call: Any) -> None:
        task_tool = [Tool.model_validate({"name": "echo", "inputSchema": {"type": "object"},
                                          "execution": {"taskSupport": "optional"}})]
        assert await wire.lane.call(echo(), "2025-06-18", task_tool) is None
        wire.lane.extended = True  # the tasks extension answers calls with tasks the SDK follows
        assert await wire.lane.call(echo(), "2025-06-18", TOOLS) is None
        wire.lane.extended, wire.lane.fast = False, False  # an HTTP connection's lane: raw requests only
        assert await wire.lane.call(echo(), "2025-06-18", TOOLS) is None
        assert wire.lines == []

    run(test)


def test_a_handshake_era_request_has_no_envelope() -> None:
    async def test(wire: Wire, tg: Any, call: Any) -> None:
        wire.stamp()
        tg.start_soon(call, "2025-06-18", None)
        await settle()
        assert wire.lines[0]["params"] == {"name": "echo"}
        assert wire.headers[0] == {"mcp-protocol-version": "2025-06-18"}
        wire.answer({"content": [{"type": "text", "text": "ok"}]})
        await settle()

    assert run(test)["result"].content[0].text == "ok"


@pytest.mark.parametrize("result, expect", [
    ({"resultType": "input_required", "inputRequests": {}}, None),  # the SDK's rounds: sent again there
    ({"content": "not a list", "resultType": "complete"}, ValidationError),  # as the SDK refuses it
    ({"resultType": "task", "task": {"taskId": "t1"}}, MCPError),  # never sent twice: refused
])
def test_answers_the_lane_does_not_keep(result: dict[str, Any], expect: Any) -> None:
    async def test(wire: Wire, tg: Any, call: Any) -> None:
        wire.stamp()
        tg.start_soon(call)
        await settle()
        wire.answer(result)
        await settle()

    out = run(test)
    if expect is None:
        assert out == {"result": None, "wire": out["wire"]}
    else:
        assert isinstance(out["error"], expect)


def test_an_error_answer_is_the_sdks_error_and_the_end_fails_what_is_in_flight() -> None:
    async def test(wire: Wire, tg: Any, call: Any) -> None:
        tg.start_soon(call, "2025-06-18", None)
        await settle()
        wire.answer(error=ErrorData(code=-32602, message="unknown tool"))
        await settle()

    error = run(test)["error"]
    assert isinstance(error, MCPError) and error.error.code == -32602 and error.error.message == "unknown tool"

    async def ended(wire: Wire, tg: Any, call: Any) -> None:
        tg.start_soon(call, "2025-06-18", None)
        await settle()
        wire.lane.close()  # the server's stdout ended
        await settle()
        assert await wire.lane.call(echo(), "2025-06-18", TOOLS) is None  # closed: nothing more is sent

    error = run(ended)["error"]
    assert isinstance(error, MCPError) and (error.error.code, error.error.message) == (-32000, "Connection closed")


def test_a_server_whose_stdin_is_gone_is_a_closed_connection_and_nan_is_the_sdks() -> None:
    async def test(wire: Wire, tg: Any, call: Any) -> None:
        assert await wire.lane.call(echo({"n": float("nan")}), "2025-06-18", TOOLS) is None
        assert wire.lane.pending == {} and wire.cancelled == []

        async def broken(body: dict[str, Any], headers: dict[str, str]) -> None:
            raise anyio.BrokenResourceError

        wire.request = broken  # type: ignore[method-assign]
        with pytest.raises(MCPError) as caught:
            await wire.lane.call(echo(), "2025-06-18", TOOLS)
        assert (caught.value.error.code, caught.value.error.message) == (-32000, "Connection closed")
        assert wire.lane.pending == {}

    run(test)


def test_a_cancelled_call_tells_the_server() -> None:
    async def test(wire: Wire, tg: Any, call: Any) -> None:
        with anyio.move_on_after(0.05):
            await wire.lane.call(echo(), "2025-06-18", TOOLS)
        assert wire.lane.pending == {}
        assert wire.cancelled == [{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {
            "requestId": "monad-1", "reason": "the caller cancelled the call"}}]
        assert not wire.answer({"content": []})  # a late answer is not the lane's any more

    run(test)


# -- raw requests (daemon/tasks/) --------------------------------------------------------------
def test_a_raw_request_its_acknowledgement_and_its_end() -> None:
    acks: list[dict[str, Any]] = []

    async def test(wire: Wire, tg: Any, call: Any) -> None:
        wire.stamp()

        async def listen() -> None:
            try:
                call_out["result"] = await wire.lane.request("subscriptions/listen", {"notifications": {}}, MODERN,
                                                             on_ack=acks.append)
            except MCPError as e:
                call_out["error"] = e

        call_out: dict[str, Any] = {}
        tg.start_soon(listen)
        await settle()
        assert wire.lines[0]["params"] == {"notifications": {}, "_meta": STAMP}  # monad's own capabilities
        assert wire.headers[0] == {"mcp-protocol-version": MODERN, "mcp-method": "subscriptions/listen"}
        ack = JSONRPCNotification(jsonrpc="2.0", method="notifications/subscriptions/acknowledged", params={
            "notifications": {"taskIds": ["t1"]}, "_meta": {"io.modelcontextprotocol/subscriptionId": "monad-1"}})
        assert wire.lane.resolve(ack) and acks == [ack.params]
        other = JSONRPCNotification(jsonrpc="2.0", method="notifications/subscriptions/acknowledged", params={
            "notifications": {}, "_meta": {"io.modelcontextprotocol/subscriptionId": "listen-1"}})
        assert not wire.lane.resolve(other)  # the SDK's own stream's: its
        # The server tears the stream down.
        assert wire.lane.resolve(JSONRPCNotification(jsonrpc="2.0", method="notifications/cancelled",
                                                     params={"requestId": "monad-1"}))
        await settle()
        assert call_out["error"].error.message == "the server cancelled the request"

    run(test)


def test_a_raw_request_that_times_out_tells_the_server() -> None:
    async def test(wire: Wire, tg: Any, call: Any) -> None:
        with pytest.raises(MCPError) as caught:
            await wire.lane.request("tools/call", {"name": "x", "task": {"ttl": 1}}, "2025-11-25", timeout=0.05)
        assert caught.value.error.code == -32001 and wire.lane.pending == {}
        assert [c["params"]["requestId"] for c in wire.cancelled] == ["monad-1"]

    run(test)


def test_on_a_real_connection_the_lane_and_the_sdk_share_it(tmp_path: Path) -> None:
    """A stdio connection of monad's own transport: a plain call goes on the lane (the
    server answers it), the SDK's requests and the lane's never mix up their ids."""
    async def main() -> None:
        async with monad_stdio(tmp_path, sys.executable, [LIGHTTOOLSERVER]) as (client, conn):
            assert conn.lane is not None
            tools = list((await client.list_tools()).tools)
            tool = next(t for t in tools if t.name == "echo")
            call = ToolCall("t__echo", {"text": "lane"}, tool=tool)
            result = await conn.lane.call(call, client.protocol_version, tools)
            assert result is not None and result.content[0].text == "lane" and call.request_id == "monad-1"
            sdk = await client.call_tool("echo", {"text": "sdk"})
            assert sdk.content[0].text == "sdk"
            again = await conn.lane.call(ToolCall("t__echo", {"text": "two"}, tool=tool), client.protocol_version,
                                         tools)
            assert again is not None and again.content[0].text == "two" and conn.lane.taken == {"tools/call": 2}

    anyio.run(main)


@pytest.mark.e2e
def test_an_answer_over_the_limit_fails_the_lanes_call_and_the_session_goes_on(supervisor: Any,
                                                                               monad_home: Path) -> None:
    path = monad_home / "atoms" / "mcp" / "big.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"command = {json.dumps(sys.executable)}\nargs = {json.dumps([LIGHTTOOLSERVER])}\n"
                    "maxMessageBytes = 65536\ntrust = {autoApproveTools = [\"big__echo\"]}\n")
    wait_state(supervisor, "big", "connected", timeout=90)
    from tests.e2e.test_gateway_direct import MODERN as ENVELOPE
    from tests.e2e.test_gateway_direct import Lines

    lines = Lines(monad_home)
    try:
        call = {"name": "big__echo", "_meta": ENVELOPE}
        answer = lines.ask(1, "tools/call", {**call, "arguments": {"text": "x" * 100_000}})
        text = answer["result"]["content"][0]["text"]
        assert answer["result"]["isError"] is True and "maxMessageBytes" in text, answer
        answer = lines.ask(2, "tools/call", {**call, "arguments": {"text": "small"}})
        assert answer["result"]["content"][0]["text"] == "small"  # the session went on
    finally:
        lines.close()
    supervisor("mcp", "disable", "big")  # the session's end logs what the lane carried
    wait_for(lambda: "server big: 2 tools/call on monad's own lane" in (monad_home / "logs" / "daemon.log").read_text(),
             timeout=30)


@pytest.mark.e2e
def test_a_task_tool_of_a_tasks_server_runs_once_through_the_gateway(supervisor: Any, monad_home: Path,
                                                                     tmp_path: Path) -> None:
    """The tasks extension answers a call of a task tool with a task (SEP-2663), which the
    SDK's claim follows: such a server's calls never take the lane (a lane call answered
    `task` was once sent again through the SDK: two runs, one never tracked)."""
    log = tmp_path / "tasks.log"
    tasks = str(Path(__file__).resolve().parents[2] / "servers" / "tasks_server.py")
    path = monad_home / "atoms" / "mcp" / "tk.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"command = {json.dumps(sys.executable)}\n"
                    f"args = {json.dumps([tasks, '--log', str(log), '--poll-ms', '100'])}\n"
                    'trust = {autoApproveTools = ["tk__slow", "tk__quick"]}\n')
    wait_state(supervisor, "tk", "connected", timeout=90)
    from tests.e2e.test_gateway_direct import MODERN as ENVELOPE
    from tests.e2e.test_gateway_direct import Lines

    lines = Lines(monad_home)
    try:
        answer = lines.ask(1, "tools/call", {"name": "tk__slow", "arguments": {"seconds": 0.2, "label": "once"},
                                             "_meta": ENVELOPE})
        assert answer["result"]["content"][0]["text"] == "slept 0.2 once", answer
        answer = lines.ask(2, "tools/call", {"name": "tk__quick", "arguments": {"text": "q"}, "_meta": ENVELOPE})
        assert answer["result"]["isError"] is False, answer
    finally:
        lines.close()
    runs = [e for e in map(json.loads, log.read_text().splitlines()) if e["event"] == "run"]
    assert len(runs) == 1, runs


@pytest.mark.e2e
def test_a_read_answered_in_a_shape_of_no_result_is_refused_never_sent_again(supervisor: Any, monad_home: Path,
                                                                             tmp_path: Path) -> None:
    """tests/servers/wirefaultserver.py answers `wild://bad-shape` with `contents` a string: the
    read (the SDK's session's) fails with one line naming what failed, the journal row says
    error, the server got the read once, and the session goes on."""
    requests = tmp_path / "requests.log"
    wild = str(Path(__file__).resolve().parents[2] / "servers" / "wirefaultserver.py")
    path = monad_home / "atoms" / "mcp" / "w.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"command = {json.dumps(sys.executable)}\n"
                    f"args = {json.dumps([wild, '--log-requests', str(requests)])}\n")
    wait_state(supervisor, "w", "connected", timeout=90)
    from tests.e2e.test_gateway_direct import MODERN as ENVELOPE
    from tests.e2e.test_gateway_direct import Lines

    lines = Lines(monad_home)
    try:
        bad = lines.ask(1, "resources/read", {"uri": "wild://bad-shape", "_meta": ENVELOPE})
        fine = lines.ask(2, "resources/read", {"uri": "wild://fine", "_meta": ENVELOPE})
    finally:
        lines.close()
    assert bad["error"]["code"] == -32603 and "\n" not in bad["error"]["message"], bad
    assert "server `w`" in bad["error"]["message"] and "contents" in bad["error"]["message"], bad
    assert fine["result"]["contents"][0]["text"] == "fine", fine  # the session went on
    assert requests.read_text().splitlines().count("resources/read") == 2  # each read sent once
    rows = wait_for(lambda: [e["detail"] for e in supervisor("journal", "--json", "-n", "100").json()
                             if e["kind"] == "resource.read"] or None, timeout=30)
    bad_row = next(d for d in rows if d["uri"] == "wild://bad-shape")
    assert bad_row["outcome"] == "error" and "contents" in bad_row["error"], rows
