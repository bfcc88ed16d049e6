"""The real gateway (`monad mcp serve`) driven by `mcp.Client`: deferred tools and
`load_tools` with list_changed, conditions flipping with facts and live edits, and the
gateway's own server filters."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.conftest import LIGHTTOOLSERVER, status_of, wait_state, write_atom

pytestmark = pytest.mark.e2e
TOOLS = ["add", "echo", "fail", "kinds", "mutate", "slow"]


def _atom(home: Path, name: str, *extra: str) -> Path:
    return write_atom(home, name, "\n".join([f"command = {json.dumps(sys.executable)}",
                                             f"args = {json.dumps([LIGHTTOOLSERVER])}", "timeout = 60", *extra,
                                             f"trust = {{autoApproveTools = [\"{name}__echo\"]}}"]) + "\n")


def _gateway(home: Path, *flags: str, env: dict[str, str] | None = None) -> Any:
    from mcp import StdioServerParameters

    return StdioServerParameters(command=sys.executable, args=["-m", "monad_cli", "mcp", "serve", *flags],
                                 env={"MONAD_HOME": str(home), "MONAD_NO_AUTOSTART": "1", **(env or {})})


async def _names(client: Any) -> list[str]:
    return sorted(t.name for t in (await client.list_tools()).tools)


def _text(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


async def _expect_list_changed(sub: Any) -> None:
    with anyio.fail_after(60):
        async for _event in sub:
            return


def test_deferred_tools_load_tools_and_list_changed(supervisor: Any, monad_home: Path) -> None:
    from mcp import Client

    monad = supervisor
    (monad_home / "features").mkdir(exist_ok=True)
    (monad_home / "features" / "tools.toml").write_text('deferred = ["ts__sl*"]\n')
    _atom(monad_home, "ts")
    _atom(monad_home, "gh", "deferred = true")
    wait_state(monad, "ts", "connected", timeout=90)
    wait_state(monad, "gh", "connected", timeout=90)  # deferred servers still connect at startup

    listed = {t["name"]: t["deferred"] for t in monad("mcp", "tools", "--json").json()}
    assert listed["gh__echo"] and listed["ts__slow"] and not listed["ts__echo"]
    table = monad("mcp", "tools", "gh")
    assert table.code == 0 and "deferred" in table.out.splitlines()[1], table
    r = monad("mcp", "call", "gh__echo", "--arg", "text=direct")  # callable without loading
    assert r.code == 0 and r.out.strip() == "direct", r

    async def main() -> None:
        async with Client(_gateway(monad_home, "--approval-timeout", "30")) as client:
            first = await _names(client)
            assert first == sorted([f"ts__{t}" for t in TOOLS if t != "slow"] + ["load_tools"])
            meta = next(t for t in (await client.list_tools()).tools if t.name == "load_tools")
            assert "Deferred now: gh (6 tools), ts (1 tool)." in (meta.description or "")

            async with client.listen(tools_list_changed=True) as sub:
                loaded = await client.call_tool("load_tools", {"servers": ["gh"]})
                assert not loaded.is_error
                assert _text(loaded) == f"loaded {len(TOOLS)} tools: " + ", ".join(f"gh__{t}" for t in TOOLS)
                await _expect_list_changed(sub)
            assert await _names(client) == sorted(first + [f"gh__{t}" for t in TOOLS])
            echoed = await client.call_tool("gh__echo", {"text": "via gateway"})
            assert _text(echoed) == "via gateway" and not echoed.is_error

            by_glob = await client.call_tool("load_tools", {"tools": ["ts__sl*"]})
            assert _text(by_glob) == "loaded 1 tool: ts__slow"
            assert "ts__slow" in await _names(client)

            again = await client.call_tool("load_tools", {"servers": ["gh"]})
            assert _text(again) == "no new tools loaded" and not again.is_error
            unknown = await client.call_tool("load_tools", {"servers": ["nope"], "tools": ["zz*"]})
            assert unknown.is_error
            assert _text(unknown) == "no new tools loaded; unknown server(s): nope; no tool matches: zz*"
            empty = await client.call_tool("load_tools", {})
            assert empty.is_error and "give `servers`" in _text(empty)

    anyio.run(main)


def test_conditions_flip_with_facts_and_live_edits(supervisor: Any, monad_home: Path) -> None:
    from mcp import Client

    monad = supervisor
    big = _atom(monad_home, "big", 'condition = "model_params_gt:7"')
    _atom(monad_home, "ci", 'condition = "env_set:MONAD_TEST_CI_FLAG and not fact_eq:env=prod"')
    before = wait_state(monad, "big", "connected", timeout=90)
    wait_state(monad, "ci", "connected", timeout=90)

    async def main() -> None:
        large = _gateway(monad_home, "--fact", "model_params=8", "--fact", "env=ci",
                         env={"MONAD_TEST_CI_FLAG": "1"})
        small = _gateway(monad_home, "--fact", "model_params=3")
        async with Client(large) as client_l, Client(small) as client_s:
            assert await _names(client_l) == sorted([f"big__{t}" for t in TOOLS] + [f"ci__{t}" for t in TOOLS])
            assert _text(await client_l.call_tool("big__echo", {"text": "hi"})) == "hi"

            assert await _names(client_s) == []
            refused = await client_s.call_tool("big__echo", {"text": "hi"})
            assert refused.is_error
            assert _text(refused) == ("tool `big__echo` is not available now: the condition of server `big` "
                                      "(`model_params_gt:7`) does not hold")

            # Editing the condition flips it live for the small model's gateway.
            async with client_s.listen(tools_list_changed=True) as sub:
                text = big.read_text().replace("model_params_gt:7", "model_params_gt:2")
                await anyio.to_thread.run_sync(big.write_text, text)
                await _expect_list_changed(sub)
            assert await _names(client_s) == sorted(f"big__{t}" for t in TOOLS)
            assert _text(await client_s.call_tool("big__echo", {"text": "now"})) == "now"

    anyio.run(main)
    # A condition only shapes the gateway's view: the server kept its session.
    assert status_of(monad, "big")["pid"] == before["pid"]
    # Every call has its rows, the one the view refused too (with its reason).
    rows = [(c["exposed"], c["outcome"]) for c in monad("journal", "--calls", "--json").json()]
    assert rows == [("big__echo", "ok"), ("big__echo", "refused"), ("big__echo", "ok")], rows
    assert "does not hold" in monad("journal", "--calls", "--json").json()[1]["error"]


def test_gateway_serves_a_filtered_view(supervisor: Any, monad_home: Path) -> None:
    from mcp import Client

    monad = supervisor
    _atom(monad_home, "keep")
    _atom(monad_home, "skip", "deferred = true")
    wait_state(monad, "keep", "connected", timeout=90)
    wait_state(monad, "skip", "connected", timeout=90)

    async def main() -> None:
        async with Client(_gateway(monad_home, "--include-mcps", "k*,skip", "--exclude-mcps", "skip")) as client:
            # `skip` is deferred but filtered out: no load_tools offered for it.
            assert await _names(client) == sorted(f"keep__{t}" for t in TOOLS)
            refused = await client.call_tool("skip__echo", {"text": "x"})
            assert refused.is_error and _text(refused) == ("tool `skip__echo` is not available: server `skip` "
                                                           "is filtered out")

    anyio.run(main)
    [row] = monad("journal", "--calls", "--json").json()
    assert (row["exposed"], row["via"], row["outcome"]) == ("skip__echo", "gateway", "refused")
    assert row["error"] == "tool `skip__echo` is not available: server `skip` is filtered out"


def test_serve_rejects_bad_facts_and_patterns(cli: Any) -> None:
    r = cli("mcp", "serve", "--fact", "model_params=huge")
    assert r.code == 2 and r.err.startswith("error: --fact model_params must be a number"), r
    r = cli("mcp", "serve", "--exclude-mcps", "a b")
    assert r.code == 2 and "`a b` is not a server-name pattern" in r.err, r
