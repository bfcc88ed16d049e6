"""`monad mcp serve NAME` for a server that is not serving (issue 39): its agent, and the person
reading the agent's MCP panel, learn that the server failed and how to see why, instead of a
healthy-looking entry with no tools. Real supervisor, a server that cannot start, the SDK's
client in both protocol eras and the MCP Inspector CLI; `connect --per-server` says so too."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.conftest import LIGHTSERVER, inspector_bin, wait_state, write_atom

pytestmark = pytest.mark.e2e
SENTINEL = "SENTINEL-5e1d0"
# A server that dies at once, saying why on stderr (with a secret of its env, which must stay `***`).
DIES = (f'transport = "stdio"\ncommand = {json.dumps(sys.executable)}\n'
        f'args = ["-c", "import os, sys; sys.exit(\'cannot open the index: token=\' + os.environ[\'API_TOKEN\'])"]\n'
        f'env = {{API_TOKEN = "{SENTINEL}"}}\n')


def _serve(home: Path, name: str) -> Any:
    from mcp import StdioServerParameters

    return StdioServerParameters(command=sys.executable, args=["-m", "monad_cli", "mcp", "serve", name],
                                 env={"MONAD_HOME": str(home), "MONAD_NO_AUTOSTART": "1"})


def test_a_failed_servers_entry_says_so_and_how_to_see_why(supervisor: Any, monad_home: Path) -> None:
    from mcp import Client
    from mcp.shared.exceptions import MCPError
    from mcp_types import ToolListChangedNotification

    write_atom(monad_home, "broken", DIES)
    wait_state(supervisor, "broken", "failed", timeout=60)
    heard: list[str] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, ToolListChangedNotification):
            heard.append(message.method)

    async def main() -> None:
        for mode in ("legacy", "auto"):  # initialize, and server/discover (2026-07-28)
            async with Client(_serve(monad_home, "broken"), mode=mode) as agent:
                text = agent.instructions or ""
                assert "server `broken` has failed" in text and "`monad mcp status broken`" in text, text
                assert "cannot open the index" in text and SENTINEL not in text, text
                with pytest.raises(MCPError) as listed:
                    await agent.list_tools()
                message = listed.value.error.message
                assert message.startswith("server `broken` has failed") and "`monad mcp status broken`" in message
                assert SENTINEL not in message
                # A call of a tool it would have (the agent remembers it, or guesses) says the same,
                # not a bare "no tool is exposed".
                for call in (agent.call_tool("search", {}), agent.call_tool("search", {}, meta={"tenant": "t"})):
                    with pytest.raises(MCPError) as called:
                        await call
                    message = called.value.error.message
                    assert called.value.error.code == -32602, called.value.error
                    assert message.startswith("no tool `search`: server `broken` has failed"), message
                    assert "`monad mcp status broken`" in message and SENTINEL not in message, message
        # Fixed while an agent is connected: it hears the list change and gets the tools.
        async with Client(_serve(monad_home, "broken"), mode="legacy", message_handler=on_message) as agent:
            with pytest.raises(MCPError):
                await agent.list_tools()  # as agents do on connecting
            write_atom(monad_home, "broken", f'transport = "stdio"\ncommand = {json.dumps(sys.executable)}\n'
                                             f'args = [{json.dumps(LIGHTSERVER)}]\n')
            await anyio.to_thread.run_sync(lambda: wait_state(supervisor, "broken", "connected", timeout=60))
            with anyio.fail_after(30):
                while not heard:
                    await anyio.sleep(0.05)
            assert "echo" in {t.name for t in (await agent.list_tools()).tools}

    anyio.run(main)


def test_the_inspector_shows_the_failure(supervisor: Any, monad_home: Path, tmp_path: Path) -> None:
    """What a person sees in an agent's MCP panel: the Inspector's tools/list prints the reason."""
    write_atom(monad_home, "broken", DIES)
    wait_state(supervisor, "broken", "failed", timeout=60)
    r = subprocess.run([inspector_bin(), "--cli", "-e", f"MONAD_HOME={monad_home}", "-e", "MONAD_NO_AUTOSTART=1",
                        sys.executable, "-m", "monad_cli", "mcp", "serve", "broken", "--method", "tools/list"],
                       capture_output=True, text=True, timeout=120,
                       env={**os.environ, "MCP_CATALOG_PATH": str(tmp_path / "catalog.json")})
    assert r.returncode != 0, (r.stdout, r.stderr)
    assert "server `broken` has failed" in r.stdout + r.stderr and "monad mcp status broken" in r.stdout + r.stderr
    assert SENTINEL not in r.stdout + r.stderr


def test_connect_per_server_names_failed_and_disabled_servers(supervisor: Any, monad_home: Path,
                                                              tmp_path: Path) -> None:
    write_atom(monad_home, "broken", DIES)
    write_atom(monad_home, "works", f'transport = "stdio"\ncommand = {json.dumps(sys.executable)}\n'
                                    f'args = [{json.dumps(LIGHTSERVER)}]\n')
    write_atom(monad_home, "off", 'transport = "stdio"\ncommand = "true"\nenabled = false\n')
    wait_state(supervisor, "broken", "failed", timeout=60)
    wait_state(supervisor, "works", "connected", timeout=60)
    path = tmp_path / "claude.json"
    r = supervisor("mcp", "connect", "claude-code", str(path), "--per-server")
    assert r.code == 0, r
    assert sorted(json.loads(path.read_text())["mcpServers"]) == ["broken", "works"]
    assert "server `broken` has failed (" in r.err and "`monad mcp status broken` says why" in r.err, r
    assert "server `off` is disabled: no entry for it" in r.err and "`works`" not in r.err.split("\n", 1)[1], r
    assert SENTINEL not in r.err + r.out
    r = supervisor("mcp", "connect", "claude-code", str(path), "--per-server", "--json")
    notes = r.json()["notes"]
    assert notes["off"] == {"state": "disabled", "reason": None, "written": False}
    assert notes["broken"]["state"] == "failed" and notes["broken"]["written"] is True and "works" not in notes


def test_a_disabled_servers_entry_says_to_enable_it_not_to_reconnect(supervisor: Any, monad_home: Path) -> None:
    """Found by a new-user trial: `monad mcp serve NAME` of a disabled server told the agent
    "`monad mcp reconnect NAME` tries again", which refuses a disabled server."""
    from mcp import Client
    from mcp.shared.exceptions import MCPError

    write_atom(monad_home, "off", f'transport = "stdio"\ncommand = {json.dumps(sys.executable)}\n'
                                  f'args = [{json.dumps(LIGHTSERVER)}]\nenabled = false\n')
    wait_state(supervisor, "off", "disabled", timeout=60)

    async def main() -> str:
        async with Client(_serve(monad_home, "off")) as agent:
            with pytest.raises(MCPError) as listed:
                await agent.list_tools()
            return listed.value.error.message

    message = anyio.run(main)
    assert message.startswith("server `off` is disabled") and "`monad mcp enable off` turns it on" in message, message
    assert "reconnect" not in message
    assert supervisor("mcp", "reconnect", "off").code == 2  # what the old advice led to
