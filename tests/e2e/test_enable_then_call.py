"""`monad mcp enable X && monad mcp call X__t` right after: the call waits for the server the
edit just enabled (as for one restarting), instead of racing the supervisor's watcher into
"no tool is exposed" (it did, for a server in agents.json, which the watcher polls — then
every 100 ms, now every half second: an agent's call came first). Real supervisor, real CLI, a real stdio server."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import LIGHTSERVER, status_of, wait_for, wait_state, write_atom

pytestmark = pytest.mark.e2e


def test_a_call_right_after_enable_reaches_the_server(supervisor: Any, monad_home: Path) -> None:
    write_atom(monad_home, "ts", f"command = {json.dumps(sys.executable)}\nargs = {json.dumps([LIGHTSERVER])}\n"
                                 "enabled = false\n")
    wait_state(supervisor, "ts", "disabled", timeout=60)
    for _round in range(2):  # enable, call, disable, again: no round may race
        r = supervisor("mcp", "enable", "ts")
        assert r.code == 0, r
        r = supervisor("mcp", "call", "ts__echo", "--arg", "text=hi", "--yes")
        assert r.code == 0 and r.out == "hi\n", r
        assert supervisor("mcp", "disable", "ts").code == 0
        wait_state(supervisor, "ts", "disabled", timeout=60)
    # Again: it says so and writes nothing (a trial read "disabled server" of a server already off).
    atom = monad_home / "atoms" / "mcp" / "ts.toml"
    before = atom.stat().st_mtime_ns
    r = supervisor("mcp", "disable", "ts")
    assert r.code == 0 and r.err == "server `ts` is already disabled (atoms/mcp/ts.toml); nothing was changed\n", r
    assert supervisor("mcp", "disable", "ts", "--json").json()["changed"] is False
    assert atom.stat().st_mtime_ns == before


def test_disable_stops_a_server_whose_atom_is_broken(supervisor: Any, monad_home: Path) -> None:
    """Found by a new-user trial: `bogus = 3` in a running server's atom, then `monad mcp
    disable` refused ("field `bogus`: unknown field") and `enable` said "nothing was changed"."""
    atom = write_atom(monad_home, "br", f"command = {json.dumps(sys.executable)}\n"
                                        f"args = {json.dumps([LIGHTSERVER])}\n")
    wait_state(supervisor, "br", "connected", timeout=60)
    atom.write_text(atom.read_text() + "# kept as written\nbogus = 3\n")
    wait_for(lambda: status_of(supervisor, "br").get("configError"))  # runs its last good definition
    r = supervisor("mcp", "enable", "br")  # enabled, but not as written: the problem, not "nothing was changed"
    assert r.code == 2 and r.err == "error: `atoms/mcp/br.toml`: server `br`, field `bogus`: unknown field\n", r
    r = supervisor("mcp", "disable", "br")
    assert r.code == 0 and r.err == "disabled server `br` (atoms/mcp/br.toml)\n", r
    assert atom.read_text().endswith("# kept as written\nbogus = 3\nenabled = false\n")
    row = wait_state(supervisor, "br", "failed")  # stopped: its definition is still invalid
    assert "field `bogus`: unknown field" in row["reason"], row
    assert not [t for t in supervisor("mcp", "tools", "--json").json() if t["name"].startswith("br__")]
    atom.write_text('command = "cat\n')  # a file that does not parse: nothing can be written into it
    r = supervisor("mcp", "disable", "br")
    assert r.code == 2 and r.err == (
        "error: server `br` cannot be disabled: `atoms/mcp/br.toml:1:15`: malformed TOML: illegal character "
        "'\\n'; fix the file (monad never rewrites it); or remove the server (`monad mcp remove br`)\n"), r


def _enable_then_call_three_times(supervisor: Any, monad_home: Path, name: str) -> None:
    """An agent already connected through `monad mcp serve` enables `name` (defined disabled)
    and calls its `echo` at once, three rounds; every call must reach the server."""
    import anyio
    from mcp import Client, StdioServerParameters

    wait_state(supervisor, name, "disabled", timeout=60)
    params = StdioServerParameters(command=sys.executable, args=["-m", "monad_cli", "mcp", "serve"],
                                   env={"MONAD_HOME": str(monad_home), "MONAD_NO_AUTOSTART": "1"})
    texts: list[str] = []

    async def main() -> None:
        async with Client(params, mode="legacy") as agent:
            await agent.list_tools()
            for _round in range(3):
                r = await anyio.to_thread.run_sync(lambda: supervisor("mcp", "enable", name))
                assert r.code == 0, r
                result = await agent.call_tool(f"{name}__echo", {"text": "hi"})
                texts.append(result.content[0].text if not result.is_error else f"error: {result.content[0].text}")
                assert (await anyio.to_thread.run_sync(lambda: supervisor("mcp", "disable", name))).code == 0
                await anyio.to_thread.run_sync(lambda: wait_state(supervisor, name, "disabled", timeout=60))

    anyio.run(main)
    assert texts == ["hi"] * 3, texts


def test_an_agents_call_right_after_enable_reaches_the_server(supervisor: Any, monad_home: Path) -> None:
    """An agent already connected calls the tool of a server just enabled, at once."""
    write_atom(monad_home, "ts", f"command = {json.dumps(sys.executable)}\nargs = {json.dumps([LIGHTSERVER])}\n"
                                 "enabled = false\ntrust = {autoApproveTools = [\"ts__echo\"]}\n")
    _enable_then_call_three_times(supervisor, monad_home, "ts")


def test_an_agents_call_right_after_enable_in_agents_json(supervisor: Any, monad_home: Path) -> None:
    """The same for a server defined in agents.json, which the watcher polls (every half second)."""
    entry = {"name": "aj", "transport": "stdio", "command": sys.executable, "args": [LIGHTSERVER], "enabled": False,
             "trust": {"autoApproveTools": ["aj__echo"]}}
    (monad_home / "agents.json").write_text(json.dumps({"mcpServers": [entry]}))
    _enable_then_call_three_times(supervisor, monad_home, "aj")
