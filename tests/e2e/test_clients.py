"""After `monad mcp connect CLIENT`, a real MCP client started the way that client would start
it (command, args and env read from the written file with the client's own format rules)
lists monad's tools through the gateway of the real supervisor."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from tests.clients import EXPECTED, copy_fixture, parse, servers_key
from tests.conftest import LIGHTTOOLSERVER, wait_state

pytestmark = pytest.mark.e2e


def test_every_connected_client_lists_monads_tools(supervisor: Any, monad_home: Path, tmp_path: Path) -> None:
    import anyio
    from mcp import Client, StdioServerParameters

    monad = supervisor
    assert monad("mcp", "add", "ts", "--", sys.executable, LIGHTTOOLSERVER).code == 0
    wait_state(monad, "ts", "connected")
    entries: dict[str, dict[str, Any]] = {}
    for client, (rel, _) in EXPECTED.items():
        path = copy_fixture(tmp_path / client, rel)
        r = monad("mcp", "connect", client, str(path))
        assert r.code == 0, r
        data = parse(client, (path / "monad.yaml" if client == "aura" else path).read_text())
        key = servers_key(client)
        entries[client] = _as_stdio(client, data["monad"] if key is None else data[key]["monad"])

    async def list_through(entry: dict[str, Any]) -> set[str]:
        # As the clients do: the entry's env over a minimal environment of their own.
        params = StdioServerParameters(command=entry["command"], args=entry["args"], env=entry.get("env"))
        with anyio.fail_after(60):
            async with Client(params) as session:
                return {t.name for t in (await session.list_tools()).tools}

    for client, entry in entries.items():
        names = anyio.run(list_through, entry)
        assert {"ts__echo", "ts__add"} <= names, (client, names)


def _as_stdio(client: str, entry: dict[str, Any]) -> dict[str, Any]:
    """`command`, `args`, `env` of a stdio entry, read as each client reads its own spelling."""
    if client == "opencode":
        assert entry["type"] == "local" and entry["enabled"] is True
        return {"command": entry["command"][0], "args": entry["command"][1:], "env": entry.get("environment")}
    if client == "goose":
        assert entry["type"] == "stdio" and entry["enabled"] is True
        return {"command": entry["cmd"], "args": entry["args"], "env": entry.get("envs")}
    assert entry.get("type", "stdio") in ("stdio", "local")  # Copilot CLI's word for stdio
    return entry
