"""Long listings through the gateway come in pages (MCP spec, server/utilities/pagination):
an SDK client pages through 1,200 tools, 1,100 resources and prompts with `cursor` and
`nextCursor`, over the stdio relay and the HTTP gateway; a cursor the gateway did not give
is refused with -32602 and a reason. A request before `initialize` on the HTTP gateway says
what to do."""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from monad_cli.daemon.gateway.paging import PAGE_SIZE
from tests.conftest import LIGHTTOOLSERVER, wait_state, write_atom
from tests.e2e.test_gateway_features import RESOURCESERVER, _http_gateway, _serve

pytestmark = [pytest.mark.e2e]
MANY = 1200


async def _all(list_page: Any, attr: str) -> tuple[list[Any], int]:
    """Every item of a paged listing, and how many pages it took."""
    items: list[Any] = []
    cursor: str | None = None
    pages = 0
    while True:
        result = await list_page(cursor=cursor)
        pages += 1
        items += getattr(result, attr)
        cursor = result.next_cursor
        if cursor is None:
            return items, pages


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_an_sdk_client_pages_through_long_listings(supervisor: Any, monad_home: Path, transport: str) -> None:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.exceptions import MCPError

    write_atom(monad_home, "ts", f"command = {json.dumps(sys.executable)}\n"
                                 f"args = {json.dumps([LIGHTTOOLSERVER, '--many', str(MANY), '--page-size', '300'])}\n")
    write_atom(monad_home, "r", f"command = {json.dumps(sys.executable)}\n"
                                f"args = {json.dumps([RESOURCESERVER, '--many', '1100'])}\n")
    wait_state(supervisor, "ts", "connected", timeout=90)
    wait_state(supervisor, "r", "connected", timeout=90)

    async def main(url: str | None, headers: dict[str, str]) -> None:
        async with contextlib.AsyncExitStack() as stack:
            agents = []
            for mode in ("legacy", "auto"):
                if url is None:
                    agents.append(await stack.enter_async_context(Client(_serve(monad_home), mode=mode)))
                else:
                    http = await stack.enter_async_context(httpx2.AsyncClient(headers=headers, timeout=60))
                    agents.append(await stack.enter_async_context(
                        Client(streamable_http_client(url, http_client=http), mode=mode)))
            assert agents[1].protocol_version == "2026-07-28"
            for agent in agents:
                first = await agent.list_tools()
                assert len(first.tools) == PAGE_SIZE and first.next_cursor is not None
                tools, pages = await _all(agent.list_tools, "tools")
                names = [t.name for t in tools]
                assert len(names) == len(set(names)), "a tool listed twice across pages"
                assert {f"ts__t{i:03d}" for i in range(MANY)} <= set(names)
                assert pages == -(-len(names) // PAGE_SIZE) >= 3
                resources, pages = await _all(agent.list_resources, "resources")
                uris = {str(r.uri) for r in resources}
                assert {f"note://r/many/{i:04d}" for i in range(1100)} <= uris and pages >= 3
                prompts, pages = await _all(agent.list_prompts, "prompts")
                assert {f"r__p{i:04d}" for i in range(1100)} <= {p.name for p in prompts} and pages >= 3
                templates, pages = await _all(agent.list_resource_templates, "resource_templates")
                assert pages == 1 and templates
                for garbage in ("not-a-cursor", first.next_cursor + "x", "", "dG9vbHMvbGlzdDo5OTk5OQ"):
                    with pytest.raises(MCPError) as refused:
                        await agent.list_tools(cursor=garbage)
                    assert refused.value.error.code == -32602
                    assert "list again without a cursor" in refused.value.error.message, refused.value.error
                with pytest.raises(MCPError) as refused:  # another listing's cursor
                    await agent.list_prompts(cursor=first.next_cursor)
                assert "is not one this gateway gave for prompts/list" in refused.value.error.message

    if transport == "stdio":
        anyio.run(main, None, {})
    else:
        with _http_gateway(monad_home) as (url, headers):
            anyio.run(main, url, headers)


def test_a_request_before_initialize_says_what_to_do(supervisor: Any, monad_home: Path) -> None:
    """The SDK's bare -32602 for a request before the handshake becomes one that names it."""
    import subprocess

    lines = [{"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
             {"jsonrpc": "2.0", "id": 2, "method": "prompts/list", "params": {"cursor": "x"}}]
    r = subprocess.run([sys.executable, "-m", "monad_cli", "mcp", "serve"], capture_output=True, text=True,
                       input="".join(json.dumps(line) + "\n" for line in lines), timeout=60,
                       env={**__import__("os").environ, "MONAD_HOME": str(monad_home), "MONAD_NO_AUTOSTART": "1"})
    answers = [json.loads(line) for line in r.stdout.splitlines()]
    assert [a["id"] for a in answers] == [1, 2], r
    for answer, method in zip(answers, ("tools/list", "prompts/list"), strict=True):
        assert answer["error"]["code"] == -32602, answer
        assert answer["error"]["message"].startswith(f"{method} before initialize: send `initialize`"), answer
