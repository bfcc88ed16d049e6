"""sessions/stamp.py held to the `mcp` SDK it wraps: a real SDK client and server (in memory).

The SDK writes its client capabilities into every 2026-07-28 request's `_meta` from the
session's `_stamp`; monad wraps that stamp so a request made for a caller carries the caller's
elicitation, sampling and roots. An SDK upgrade that renames the stamp, stops calling it per
request or calls it elsewhere than in the requesting task fails here first."""

from __future__ import annotations

import json
from typing import Any

import anyio
import mcp_types as types
from mcp import Client
from mcp.server import Server

from monad_cli.daemon.sessions import stamp
from monad_cli.daemon.trust.inputs import Caller, serving

RELAYED = ("elicitation", "sampling", "roots")


async def _list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
    return types.ListToolsResult(tools=[types.Tool(name="seen", input_schema={"type": "object"})])


async def _call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    meta = (ctx.params or {}).get("_meta") or {}
    text = json.dumps(meta.get(types.CLIENT_CAPABILITIES_META_KEY))
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


async def _elicit(context: Any, params: Any) -> types.ElicitResult:
    return types.ElicitResult(action="decline")


async def _sample(context: Any, params: Any) -> types.CreateMessageResult:
    return types.CreateMessageResult(role="assistant", content=types.TextContent(type="text", text="-"), model="m")


async def _roots(context: Any) -> types.ListRootsResult:
    return types.ListRootsResult(roots=[])


def _client(**kw: Any) -> Client:
    server = Server("seen", on_list_tools=_list_tools, on_call_tool=_call_tool)
    # As monad's own session offers them (sessions/actor.py): all three.
    return Client(server, elicitation_callback=_elicit, sampling_callback=_sample, list_roots_callback=_roots, **kw)


async def _seen(client: Client) -> Any:
    result = await client.call_tool("seen", {})
    return json.loads(result.content[0].text)


def test_a_2026_request_carries_the_callers_capabilities_and_monads_own_otherwise() -> None:
    async def main() -> None:
        async with _client() as client:
            assert client.protocol_version == "2026-07-28"
            wrapped = stamp.ensure(client.session)
            assert isinstance(wrapped, stamp.AgentStamp) and stamp.ensure(client.session) is wrapped  # once
            own = wrapped.own
            assert own is not None and set(RELAYED) <= set(own), own  # what the SDK's stamp wrote
            assert await _seen(client) == own  # monad's own request: monad's

            with serving(Caller(capabilities={"elicitation": {"form": {}}, "roots": {"listChanged": True}})):
                seen = await _seen(client)
            assert seen["elicitation"] == {"form": {}} and seen["roots"] == {} and "sampling" not in seen, seen
            assert {k: v for k, v in seen.items() if k not in RELAYED} == {
                k: v for k, v in own.items() if k not in RELAYED}  # the rest stays monad's

            with serving(Caller(capabilities={})):  # a caller that declared none
                assert not set(RELAYED) & set(await _seen(client))

            # Concurrent callers: the SDK stamps in the requesting task, each sees its own.
            got: dict[str, Any] = {}

            async def call_as(name: str, caps: dict[str, Any]) -> None:
                with serving(Caller(capabilities=caps)):
                    got[name] = await _seen(client)

            async with anyio.create_task_group() as tg:
                tg.start_soon(call_as, "sampling", {"sampling": {}})
                tg.start_soon(call_as, "roots", {"roots": {}})
            assert [k for k in got["sampling"] if k in RELAYED] == ["sampling"], got
            assert [k for k in got["roots"] if k in RELAYED] == ["roots"], got

            # A new era adoption (`ClientSession.adopt`, as a reconnect's server/discover does)
            # installs a new SDK stamp: wrapped again.
            assert client.session.discover_result is not None
            client.session.adopt(client.session.discover_result)
            assert not isinstance(client.session._stamp, stamp.AgentStamp)
            assert stamp.ensure(client.session) is not wrapped
            with serving(Caller(capabilities={"sampling": {}})):
                assert [k for k in await _seen(client) if k in RELAYED] == ["sampling"]

    anyio.run(main)


def test_a_handshake_era_session_keeps_its_initialize_capabilities() -> None:
    async def main() -> None:
        async with _client(mode="legacy") as client:
            assert client.protocol_version not in ("2026-07-28",)
            wrapped = stamp.ensure(client.session)
            assert wrapped is not None and wrapped.own is None  # the SDK's stamp writes no `_meta` capabilities
            with serving(Caller(capabilities={})):
                assert await _seen(client) is None  # nothing stamped: the server has them from `initialize`

    anyio.run(main)
