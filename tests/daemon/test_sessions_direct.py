"""The upstream half of the direct lane (`daemon/sessions/direct.py`): the request line it writes
(the SDK's id sequence, the session's 2026-07-28 stamp), the answers it takes and the ones it
leaves to the SDK, cancellation and the connection's end — on its own, with the SDK's real
result validation inside — and, through the real supervisor, an answer over the size limit
failing exactly the lane's call."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.shared.exceptions import MCPError
from mcp_types import ErrorData, JSONRPCError, JSONRPCRequest, JSONRPCResponse, Tool
from pydantic import ValidationError

from monad_cli.daemon.sessions.direct import DirectLane
from tests.conftest import wait_for, wait_state

MODERN = "2026-07-28"
STAMP = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {},
         "io.modelcontextprotocol/clientInfo": {"name": "monad", "version": "0"}}
TOOLS = [Tool(name="echo", inputSchema={"type": "object"})]
TOOLSERVER = str(Path(__file__).resolve().parents[1] / "servers" / "toolserver.py")


class Wire:
    """What the lane wrote, and a way to answer it."""

    def __init__(self) -> None:
        self.lines: list[dict[str, Any]] = []
        self.cancelled: list[Any] = []
        self.lane = DirectLane(self.send, self.cancel)
        ids = iter(range(41, 1000))
        self.lane.allocate = lambda: next(ids)  # as `attach` takes the SDK dispatcher's

    async def send(self, line: bytes, request_id: Any, method: str) -> None:
        assert line.endswith(b"\n") and line.count(b"\n") == 1
        body = json.loads(line)
        assert body["id"] == request_id and body["method"] == method
        self.lines.append(body)

    async def cancel(self, line: bytes, request_id: Any) -> None:
        self.cancelled.append((json.loads(line), request_id))

    def answer(self, result: dict[str, Any] | None = None, error: ErrorData | None = None) -> bool:
        request_id = self.lines[-1]["id"]
        if error is not None:
            return self.lane.resolve(JSONRPCError(jsonrpc="2.0", id=request_id, error=error))
        return self.lane.resolve(JSONRPCResponse(jsonrpc="2.0", id=request_id, result=result or {}))


def run(test: Any) -> Any:
    out: dict[str, Any] = {}

    async def main() -> None:
        wire = Wire()
        async with anyio.create_task_group() as tg:
            async def call(version: str = MODERN, arguments: dict[str, Any] | None = None) -> None:
                try:
                    out["result"] = await wire.lane.call("echo", arguments, version, TOOLS)
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


def test_the_request_carries_the_sdk_id_and_the_sessions_stamp_and_the_answer_is_validated() -> None:
    async def test(wire: Wire, tg: Any, call: Any) -> None:
        assert await wire.lane.call("echo", {}, MODERN, TOOLS) is None  # no stamp seen yet: the SDK's call
        # The SDK's own requests carry the session's envelope; the lane's copy it.
        wire.lane.sent(JSONRPCRequest(jsonrpc="2.0", id=1, method="tools/list", params={"_meta": STAMP}))
        tg.start_soon(call, MODERN, {"text": "hi"})
        await settle()
        assert wire.lines == [{"jsonrpc": "2.0", "id": 41, "method": "tools/call",
                               "params": {"name": "echo", "arguments": {"text": "hi"}, "_meta": STAMP}}]
        assert wire.answer({"content": [{"type": "text", "text": "hi"}], "isError": False, "resultType": "complete"})
        await settle()

    out = run(test)
    assert out["result"].content[0].text == "hi" and out["result"].is_error is False
    assert not out["wire"].lane.resolve(JSONRPCResponse(jsonrpc="2.0", id=41, result={}))  # answered once


def test_a_tool_that_is_not_listed_or_has_an_output_schema_is_the_sdks() -> None:
    async def test(wire: Wire, tg: Any, call: Any) -> None:
        typed = [Tool(name="echo", inputSchema={"type": "object"}, outputSchema={"type": "object"})]
        assert await wire.lane.call("echo", None, "2025-06-18", typed) is None
        assert await wire.lane.call("other", None, "2025-06-18", TOOLS) is None
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


def test_a_tool_that_may_be_a_task_or_a_server_with_extensions_is_the_sdks() -> None:
    async def test(wire: Wire, tg: Any, call: Any) -> None:
        task_tool = [Tool(name="echo", inputSchema={"type": "object"}, execution={"taskSupport": "optional"})]
        assert await wire.lane.call("echo", None, "2025-06-18", task_tool) is None
        wire.lane.extended = True  # the tasks extension answers calls with tasks the SDK follows
        assert await wire.lane.call("echo", None, "2025-06-18", TOOLS) is None
        assert wire.lines == []

    run(test)


def test_a_handshake_era_request_has_no_stamp() -> None:
    async def test(wire: Wire, tg: Any, call: Any) -> None:
        tg.start_soon(call, "2025-06-18", None)
        await settle()
        assert wire.lines[0]["params"] == {"name": "echo"}
        wire.answer({"content": [{"type": "text", "text": "ok"}]})
        await settle()

    assert run(test)["result"].content[0].text == "ok"


@pytest.mark.parametrize("result, expect", [
    ({"resultType": "input_required", "inputRequests": {}}, None),  # the SDK's rounds: sent again there
    ({"content": "not a list", "resultType": "complete"}, ValidationError),  # as the SDK refuses it
    ({"resultType": "task", "task": {"taskId": "t1"}}, ValueError),  # never sent twice: refused
])
def test_answers_the_lane_does_not_keep(result: dict[str, Any], expect: Any) -> None:
    async def test(wire: Wire, tg: Any, call: Any) -> None:
        wire.lane.sent(JSONRPCRequest(jsonrpc="2.0", id=1, method="tools/list", params={"_meta": STAMP}))
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
        assert await wire.lane.call("echo", None, "2025-06-18", TOOLS) is None  # closed: nothing more is sent

    error = run(ended)["error"]
    assert isinstance(error, MCPError) and (error.error.code, error.error.message) == (-32000, "Connection closed")


def test_a_server_whose_stdin_is_gone_is_a_closed_connection() -> None:
    async def test(wire: Wire, tg: Any, call: Any) -> None:
        async def broken(line: bytes, request_id: Any, method: str) -> None:
            raise anyio.BrokenResourceError

        wire.lane.send = broken
        with pytest.raises(MCPError) as caught:
            await wire.lane.call("echo", None, "2025-06-18", TOOLS)
        assert (caught.value.error.code, caught.value.error.message) == (-32000, "Connection closed")
        assert wire.lane.pending == {}

    run(test)


def test_a_cancelled_call_tells_the_server() -> None:
    async def test(wire: Wire, tg: Any, call: Any) -> None:
        with anyio.move_on_after(0.05):
            await wire.lane.call("echo", None, "2025-06-18", TOOLS)
        assert wire.lane.pending == {}
        assert wire.cancelled == [({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {
            "requestId": 41, "reason": "the caller cancelled the call"}}, 41)]
        assert not wire.answer({"content": []})  # a late answer is not the lane's any more

    run(test)


@pytest.mark.e2e
def test_an_answer_over_the_limit_fails_the_lanes_call_and_the_session_goes_on(supervisor: Any,
                                                                               monad_home: Path) -> None:
    path = monad_home / "atoms" / "mcp" / "big.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"command = {json.dumps(sys.executable)}\nargs = {json.dumps([TOOLSERVER])}\n"
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
    wait_for(lambda: "server big: 2 tools/call on the direct lane" in (monad_home / "logs" / "daemon.log").read_text(),
             timeout=30)


@pytest.mark.e2e
def test_a_task_tool_of_a_tasks_server_runs_once_through_the_gateway(supervisor: Any, monad_home: Path,
                                                                     tmp_path: Path) -> None:
    """The tasks extension answers a call of a task tool with a task (SEP-2663), which the
    SDK's claim follows: such a server's calls never take the lane (a lane call answered
    `task` was once sent again through the SDK: two runs, one never tracked)."""
    log = tmp_path / "tasks.log"
    tasks = str(Path(__file__).resolve().parents[1] / "servers" / "tasks_server.py")
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


# -- resources/read and prompts/get on the same lane -----------------------------------------
def run_other(test: Any, method: str, version: str = MODERN) -> dict[str, Any]:
    """`test(wire)` then one read (`method` resources/read) or get on the lane, answered by
    `test`'s second half (`respond(wire)`)."""
    out: dict[str, Any] = {}

    async def main() -> None:
        wire = Wire()
        wire.lane.sent(JSONRPCRequest(jsonrpc="2.0", id=1, method="tools/list", params={"_meta": STAMP}))

        async def request() -> None:
            try:
                out["result"] = await (wire.lane.read("file:///a.txt", version) if method == "resources/read"
                                       else wire.lane.get("greet", {"who": "ann"}, version))
            except Exception as e:
                out["error"] = e

        async with anyio.create_task_group() as tg:
            tg.start_soon(request)
            await settle()
            await test(wire)
            await settle()
            tg.cancel_scope.cancel()
        out["wire"] = wire

    anyio.run(main)
    return out


def test_a_read_and_a_get_carry_the_sdk_id_and_the_stamp_and_their_answers_are_validated() -> None:
    async def read(wire: Wire) -> None:
        assert wire.lines == [{"jsonrpc": "2.0", "id": 41, "method": "resources/read",
                               "params": {"uri": "file:///a.txt", "_meta": STAMP}}]
        assert wire.answer({"contents": [{"uri": "file:///a.txt", "text": "A"}], "resultType": "complete",
                            "ttlMs": -5})

    out = run_other(read, "resources/read")
    assert out["result"].contents[0].text == "A"
    assert out["result"].ttl_ms == 0  # a negative ttlMs is taken as 0, as the SDK does
    assert out["wire"].lane.taken == {"resources/read": 1}

    async def get(wire: Wire) -> None:
        assert wire.lines == [{"jsonrpc": "2.0", "id": 41, "method": "prompts/get",
                               "params": {"name": "greet", "arguments": {"who": "ann"}}}]  # no stamp before 2026
        assert wire.answer({"messages": [{"role": "user", "content": {"type": "text", "text": "hi ann"}}]})

    out = run_other(get, "prompts/get", "2025-11-25")
    assert out["result"].messages[0].content.text == "hi ann"


@pytest.mark.parametrize("method", ["resources/read", "prompts/get"])
@pytest.mark.parametrize("result, expect", [
    ({"resultType": "input_required", "inputRequests": {}}, None),  # the SDK's rounds: sent again there
    ({"contents": "not a list", "messages": "not a list", "resultType": "complete"}, ValidationError),
    ({"resultType": "task", "task": {"taskId": "t1"}}, ValueError),  # never sent twice: refused
])
def test_read_and_get_answers_the_lane_does_not_keep(method: str, result: dict[str, Any], expect: Any) -> None:
    async def test(wire: Wire) -> None:
        wire.answer(result)

    out = run_other(test, method)
    assert len(out["wire"].lines) == 1  # one request, never a second send from the lane
    if expect is None:
        assert out["result"] is None and "error" not in out
    else:
        assert isinstance(out["error"], expect) and "result" not in out


def test_a_read_error_a_cancelled_get_and_the_end_are_as_for_calls() -> None:
    async def error(wire: Wire) -> None:
        wire.answer(error=ErrorData(code=-32002, message="resource not found"))

    e = run_other(error, "resources/read")["error"]
    assert isinstance(e, MCPError) and (e.error.code, e.error.message) == (-32002, "resource not found")

    async def ended(wire: Wire) -> None:
        wire.lane.close()

    e = run_other(ended, "prompts/get")["error"]
    assert isinstance(e, MCPError) and (e.error.code, e.error.message) == (-32000, "Connection closed")

    async def cancelled(wire: Wire, tg: Any, call: Any) -> None:
        with anyio.move_on_after(0.05):
            await wire.lane.get("greet", None, "2025-06-18")
        assert wire.lines[0]["params"] == {"name": "greet"}  # no arguments: none sent, no stamp before 2026
        assert wire.lane.pending == {}
        assert wire.cancelled == [({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {
            "requestId": 41, "reason": "the caller cancelled the request"}}, 41)]

    run(cancelled)


def test_a_get_whose_arguments_are_not_strings_is_the_sdks() -> None:
    async def test(wire: Wire, tg: Any, call: Any) -> None:
        assert await wire.lane.get("greet", {"n": 1}, "2025-06-18") is None  # type: ignore[dict-item]
        wire.lane.extended = True
        assert await wire.lane.read("file:///a.txt", "2025-06-18") is None
        assert wire.lines == []

    run(test)


@pytest.mark.e2e
def test_a_read_answered_in_a_shape_of_no_result_is_refused_never_sent_again(supervisor: Any, monad_home: Path,
                                                                             tmp_path: Path) -> None:
    """tests/servers/wildserver.py answers `wild://bad-shape` with `contents` a string: the
    lane's read fails with one line naming what failed, the journal row says error, the server
    got the read once (not again through the SDK), and the session goes on."""
    requests = tmp_path / "requests.log"
    wild = str(Path(__file__).resolve().parents[1] / "servers" / "wildserver.py")
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
    supervisor("mcp", "disable", "w")  # the session's end logs what the lane carried
    log = monad_home / "logs" / "daemon.log"
    wait_for(lambda: "server w: 2 resources/read on the direct lane" in log.read_text(), timeout=30)
