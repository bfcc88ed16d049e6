"""An agent's own `_meta` keys reach the server through the gateway (docs/gateway.md "The
agent's `_meta`"): on tools/call (the stdio direct lane and the SDK's path, with and without
a progressToken), resources/read and prompts/get, over `monad mcp serve` stdio in both eras
and `--http`; monad's own keys stand beside them, and the protocol's and monad's reserved
keys an agent sends are not passed on."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.conftest import free_port, gateway_up, wait_state

pytestmark = pytest.mark.e2e
TRACESERVER = str(Path(__file__).resolve().parents[1] / "servers" / "traceserver.py")
VENDOR = {"tenant": "acme", "com.example/traceId": "t-42", "traceparent":
          "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
# What an agent must not be able to set on monad's upstream request.
RESERVED = {"io.modelcontextprotocol/related-task": {"taskId": "x"}, "monad/callerCapabilities": {"sampling": {}}}


def _serve(home: Path) -> Any:
    from mcp import StdioServerParameters

    return StdioServerParameters(command=sys.executable, args=["-m", "monad_cli", "mcp", "serve"],
                                 env={"MONAD_HOME": str(home), "MONAD_NO_AUTOSTART": "1"})


async def _probe(client: Any) -> dict[str, dict[str, Any]]:
    """What the server saw in `_meta` of each kind of request the agent sent with VENDOR keys."""
    seen: dict[str, dict[str, Any]] = {}
    meta = {**VENDOR, **RESERVED}
    plain = await client.call_tool("tr__where", {}, meta=meta)
    seen["call"] = json.loads(plain.content[0].text)

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        return None

    progressed = await client.call_tool("tr__where", {}, meta=meta, progress_callback=on_progress)
    seen["call+progress"] = json.loads(progressed.content[0].text)
    read = await client.read_resource("trace://where", meta=meta)
    seen["read"] = json.loads(read.contents[0].text)
    prompt = await client.get_prompt("tr__where", {"topic": "x"}, meta=meta)
    seen["prompt"] = json.loads(prompt.messages[0].content.text)
    bare = await client.call_tool("tr__where", {})
    seen["bare"] = json.loads(bare.content[0].text)
    return seen


def _check(seen: dict[str, dict[str, Any]]) -> None:
    for kind in ("call", "call+progress", "read", "prompt"):
        got = seen[kind]
        assert {k: got.get(k) for k in VENDOR} == VENDOR, (kind, got)
        assert not got.keys() & RESERVED.keys(), (kind, got)
    # monad asked the server for progress under a token of its own, beside the agent's keys.
    assert "progressToken" in seen["call+progress"] and "progressToken" not in seen["call"], seen
    assert not seen["bare"].keys() & VENDOR.keys(), seen  # nothing of an earlier request leaks into the next


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_agent_meta_reaches_the_server_over_stdio(supervisor: Any, monad_home: Path, mode: str) -> None:
    from mcp import Client

    (monad_home / "atoms" / "mcp").mkdir(parents=True, exist_ok=True)
    (monad_home / "atoms" / "mcp" / "tr.toml").write_text(
        f"command = {json.dumps(sys.executable)}\nargs = {json.dumps([TRACESERVER, '--whole-meta'])}\n"
        "timeout = 60\ntrust = {autoApproveTools = [\"tr__where\"]}\n")
    wait_state(supervisor, "tr", "connected", timeout=90)
    seen: dict[str, dict[str, Any]] = {}

    async def main() -> None:
        async with Client(_serve(monad_home), mode=mode) as client:
            await client.list_tools()  # a handshake-era connection takes the direct lane once it listed
            seen.update(await _probe(client))

    anyio.run(main)
    _check(seen)


def test_agent_meta_reaches_the_server_over_http(supervisor: Any, monad_home: Path) -> None:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    (monad_home / "atoms" / "mcp").mkdir(parents=True, exist_ok=True)
    (monad_home / "atoms" / "mcp" / "tr.toml").write_text(
        f"command = {json.dumps(sys.executable)}\nargs = {json.dumps([TRACESERVER, '--whole-meta'])}\n"
        "timeout = 60\ntrust = {autoApproveTools = [\"tr__where\"]}\n")
    wait_state(supervisor, "tr", "connected", timeout=90)
    port = free_port()
    http = subprocess.Popen([sys.executable, "-m", "monad_cli", "mcp", "serve", "--http", "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen: dict[str, dict[str, Any]] = {}
    try:
        url, headers = gateway_up(monad_home, port)

        async def main() -> None:
            async with (httpx2.AsyncClient(headers=headers) as h,
                        Client(streamable_http_client(url, http_client=h), mode="legacy") as client):
                seen.update(await _probe(client))

        anyio.run(main)
    finally:
        http.send_signal(signal.SIGINT)
        try:
            http.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            http.kill()
    _check(seen)
