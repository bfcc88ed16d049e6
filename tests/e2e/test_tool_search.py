"""Tool search through the gateway (issue 40): `monad mcp serve --tool-search` over stdio and
HTTP lists `find_tool` and `call_tool`, finds tools among real servers' published tools
(bench/search/catalog/, served by tests/servers/catalogserver.py) and calls them; found
tools join the session's list with `notifications/tools/list_changed`; `call_tool` passes
the approval gate, the scrubber and the journal exactly as a direct call does; the result
budget (`--max-result-tokens`) round-trips a 1 MiB result exactly."""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.conftest import free_port, gateway_up, inspector_bin, wait_for, wait_state, write_atom

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]
CATALOG = ROOT / "bench" / "search" / "catalog"
CATALOGSERVER = str(ROOT / "tests" / "servers" / "catalogserver.py")
TESTSERVER = str(ROOT / "tests" / "servers" / "testserver.py")
SERVERS = ("git", "github", "slack", "playwright", "filesystem", "time", "memory", "atlassian")
SECRET = "SENTINEL-search-5d2e19"


def _catalog(home: Path, supervisor: Any, *names: str, auto: bool = True, extra: str = "") -> None:
    for name in names:
        args = [CATALOGSERVER, str(CATALOG / f"{name}.json"), *(["--big"] if name == "time" else [])]
        tools = [f"{name}__{t['name']}" for t in json.loads((CATALOG / f"{name}.json").read_text())["tools"]]
        trust = f"trust = {{autoApproveTools = {json.dumps(tools)}}}\n" if auto else ""
        write_atom(home, name, f"command = {json.dumps(sys.executable)}\nargs = {json.dumps(args)}\n{trust}{extra}")
    for name in names:
        wait_state(supervisor, name, "connected", timeout=90)


def _serve(home: Path, *flags: str) -> Any:
    from mcp import StdioServerParameters

    return StdioServerParameters(command=sys.executable, args=["-m", "monad_cli", "mcp", "serve", *flags],
                                 env={"MONAD_HOME": str(home), "MONAD_NO_AUTOSTART": "1"})


def _names(result: Any) -> list[str]:
    return [t["name"] for t in result.structured_content["tools"]]


async def _find(client: Any, changed: anyio.Event | None, query: str) -> Any:
    """find_tool, and the list change it causes: heard on a 2026-07-28 `subscriptions/listen`
    stream (`changed` None), or by a handshake-era client's message handler (`changed`)."""
    if changed is not None:
        found = await client.call_tool("find_tool", {"query": query})
        with anyio.fail_after(30):
            await changed.wait()
        return found
    async with client.listen(tools_list_changed=True) as sub:
        found = await client.call_tool("find_tool", {"query": query})
        with anyio.fail_after(30):
            async for _event in sub:
                break
    return found


async def _find_and_call(client: Any, changed: anyio.Event | None) -> None:
    listed = await client.list_tools()
    assert [t.name for t in listed.tools] == ["find_tool", "call_tool"]
    found = await _find(client, changed, "what changed in my working tree?")
    assert not found.is_error, found
    names = _names(found)
    assert names[0] in ("git__git_diff_unstaged", "git__git_status"), names
    assert len(names) == 8
    # The same as text, for agents that read text.
    assert json.loads(found.content[0].text) == found.structured_content
    hit = found.structured_content["tools"][0]
    assert hit["server"] == "git" and hit["inputSchema"]["type"] == "object" and hit["description"]
    relisted = [t.name for t in (await client.list_tools()).tools]
    assert relisted[:2] == ["find_tool", "call_tool"] and set(names) <= set(relisted[2:]), relisted
    called = await client.call_tool("call_tool", {"name": "git__git_diff_unstaged",
                                                  "arguments": {"repo_path": "/src"}})
    assert not called.is_error, called
    assert called.content[0].text == 'called git_diff_unstaged with {"repo_path": "/src"}'
    # A found tool is called directly too, by its name.
    direct = await client.call_tool("git__git_diff_unstaged", {"repo_path": "/src"})
    assert direct.content[0].text == called.content[0].text
    slack = _names(await client.call_tool("find_tool", {"query": "post a message to the #general channel",
                                                        "limit": 3}))
    assert slack[0] == "slack__slack_post_message" and len(slack) == 3, slack


def test_find_and_call_over_stdio_and_http(supervisor: Any, monad_home: Path) -> None:
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    _catalog(monad_home, supervisor, *SERVERS)

    async def stdio() -> None:  # a 2026-07-28 agent
        async with Client(_serve(monad_home, "--tool-search")) as client:
            await _find_and_call(client, None)

    anyio.run(stdio)

    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "monad_cli", "mcp", "serve", "--http", "--port", str(port),
                             "--tool-search"], env={**os.environ, "MONAD_NO_AUTOSTART": "1"},
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        url, headers = gateway_up(monad_home, port)

        async def http() -> None:  # a handshake-era agent
            import httpx2

            changed = anyio.Event()

            async def on_message(message: Any) -> None:
                if getattr(getattr(message, "root", message), "method", "") == "notifications/tools/list_changed":
                    changed.set()

            async with httpx2.AsyncClient(headers=headers) as http_client, \
                    Client(streamable_http_client(url, http_client=http_client), mode="legacy",
                           message_handler=on_message) as c:
                await _find_and_call(c, changed)

        anyio.run(http)
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
