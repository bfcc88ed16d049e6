"""sessions/stamp.py: what a server sees of the caller a request is made for, on a real stdio
connection of monad's own transport to a real SDK server (tests/servers/askserver.py answers
with the `clientCapabilities` of the request's envelope).

A request made for a caller carries the caller's elicitation, sampling and roots in its
2026-07-28 envelope, and the rest of monad's own; monad's own requests carry monad's; a
handshake-era request carries none (its capabilities went with `initialize`), and the key
that brings the caller's capabilities to the transport never reaches a server. An SDK upgrade
that stops writing the envelope where monad's transport sees it fails here first."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client

from monad_cli.daemon.sessions.stamp import CALLER, Envelope, caller_meta
from monad_cli.daemon.trust.call import ToolCall
from monad_cli.daemon.trust.inputs import Caller
from tests.daemon.sessions.test_direct import SERVERS, monad_stdio

RELAYED = ("elicitation", "sampling", "roots")
ASK = [str(SERVERS / "askserver.py")]


async def _elicit(context: Any, params: Any) -> types.ElicitResult:
    return types.ElicitResult(action="decline")


async def _sample(context: Any, params: Any) -> types.CreateMessageResult:
    return types.CreateMessageResult(role="assistant", content=types.TextContent(type="text", text="-"), model="m")


async def _roots(context: Any) -> types.ListRootsResult:
    return types.ListRootsResult(roots=[])


# As monad's own session offers them (sessions/actor.py): all three.
OWN = {"elicitation_callback": _elicit, "sampling_callback": _sample, "list_roots_callback": _roots}


async def _seen(client: Client, caller: Caller | None) -> Any:
    result = await client.call_tool("capabilities", {}, meta=caller_meta(caller))  # type: ignore[arg-type]
    return json.loads(result.content[0].text)  # type: ignore[union-attr]


def test_a_2026_request_carries_the_callers_capabilities_and_monads_own_otherwise(tmp_path: Path) -> None:
    async def main() -> None:
        async with monad_stdio(tmp_path, sys.executable, ASK, **OWN) as (client, conn):
            assert client.protocol_version == "2026-07-28"
            own = await _seen(client, None)  # monad's own request: monad's
            assert set(RELAYED) <= set(own), own

            caller = Caller(capabilities={"elicitation": {"form": {}}, "roots": {"listChanged": True}})
            seen = await _seen(client, caller)
            assert seen["elicitation"] == {"form": {}} and seen["roots"] == {} and "sampling" not in seen, seen
            assert {k: v for k, v in seen.items() if k not in RELAYED} == {
                k: v for k, v in own.items() if k not in RELAYED}  # the rest stays monad's
            assert not set(RELAYED) & set(await _seen(client, Caller(capabilities={})))  # a caller that declared none
            assert await _seen(client, Caller()) == own  # a caller that says nothing: monad's

            # Concurrent callers: each request carries its own.
            got: dict[str, Any] = {}

            async def call_as(name: str, caps: dict[str, Any]) -> None:
                got[name] = await _seen(client, Caller(capabilities=caps))

            async with anyio.create_task_group() as tg:
                tg.start_soon(call_as, "sampling", {"sampling": {}})
                tg.start_soon(call_as, "roots", {"roots": {}})
            assert [k for k in got["sampling"] if k in RELAYED] == ["sampling"], got
            assert [k for k in got["roots"] if k in RELAYED] == ["roots"], got

            # A read and a completion made for a caller carry them too.
            read = await client.read_resource("ask://capabilities", meta=caller_meta(Caller(capabilities={})))
            assert not set(RELAYED) & set(json.loads(read.contents[0].text))  # type: ignore[union-attr]
            request = types.CompleteRequest(params=types.CompleteRequestParams(
                ref=types.PromptReference(name="ask"), argument=types.CompletionArgument(name="n", value=""),
                _meta=caller_meta(Caller(capabilities={"sampling": {}}))))
            completed = await client.session.send_request(request, types.CompleteResult)
            assert [k for k in json.loads(completed.completion.values[0]) if k in RELAYED] == ["sampling"]

            # monad's own lane: the envelope the SDK wrote last, with its own caller's.
            tools = list((await client.list_tools()).tools)
            call = ToolCall("t__capabilities", {}, tool=next(t for t in tools if t.name == "capabilities"),
                            capabilities={"elicitation": {"url": {}}})
            assert conn.lane is not None
            result = await conn.lane.call(call, client.protocol_version, tools)
            assert result is not None and call.request_id == "monad-1"
            lane_seen = json.loads(result.content[0].text)  # type: ignore[union-attr]
            assert [k for k in lane_seen if k in RELAYED] == ["elicitation"] and lane_seen["elicitation"] == {"url": {}}

    anyio.run(main)


def test_a_handshake_era_session_keeps_its_initialize_capabilities(tmp_path: Path) -> None:
    async def main() -> None:
        async with monad_stdio(tmp_path, sys.executable, ASK, mode="legacy", **OWN) as (client, _conn):
            assert client.protocol_version != "2026-07-28"
            # Nothing stamped: the server has them from `initialize`.
            assert await _seen(client, Caller(capabilities={})) is None

    anyio.run(main)


@pytest.mark.parametrize("meta, left", [
    ({CALLER: {}}, None),  # only the caller's key: the request as the SDK made it (no `_meta`)
    ({CALLER: {}, "progressToken": 3}, {"progressToken": 3}),
    ({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities":
      {"sampling": {}, "extensions": {"x": {}}}, CALLER: {"elicitation": {}}},
     {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities":
      {"elicitation": {}, "extensions": {"x": {}}}}),
])
def test_the_callers_key_never_leaves_the_transport(meta: dict[str, Any], left: Any) -> None:
    message = types.JSONRPCRequest(jsonrpc="2.0", id=1, method="tools/call", params={"name": "x", "_meta": meta})
    Envelope().sent(message)
    assert message.params is not None and message.params.get("_meta") == left
