"""Tool filters end to end: the real supervisor, `monad mcp serve` driven by a real
`mcp.Client`, `monad mcp tools|call`, live edits of an atom and `features/tools.toml`,
a gateway's own `--include-tools`/`--exclude-tools`, and other clients' filters imported
(Codex, Gemini) and seen through a connected client. Legacy SSE entries import and connect."""

from __future__ import annotations

import json
import sys
import tomllib
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.conftest import LIGHTTOOLSERVER, status_of, wait_for, wait_state, write_atom
from tests.studio_helpers import StudioHTTP, open_studio

pytestmark = pytest.mark.e2e
TOOLS = ["add", "echo", "fail", "kinds", "mutate", "slow"]


def _atom(home: Path, name: str, *extra: str) -> Path:
    return write_atom(home, name, "\n".join([f"command = {json.dumps(sys.executable)}",
                                             f"args = {json.dumps([LIGHTTOOLSERVER])}", "timeout = 60", *extra,
                                             f"trust = {{autoApproveTools = [\"{name}__echo\", \"{name}__add\"]}}"])
                      + "\n")


def _gateway(home: Path, *flags: str) -> Any:
    from mcp import StdioServerParameters

    return StdioServerParameters(command=sys.executable, args=["-m", "monad_cli", "mcp", "serve", *flags],
                                 env={"MONAD_HOME": str(home), "MONAD_NO_AUTOSTART": "1"})


async def _names(client: Any) -> list[str]:
    return sorted(t.name for t in (await client.list_tools()).tools)


def _text(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


async def _expect_list_changed(sub: Any) -> None:
    with anyio.fail_after(60):
        async for _event in sub:
            return


def test_hidden_tools_listed_refused_and_applied_live(supervisor: Any, monad_home: Path) -> None:
    from mcp import Client

    monad = supervisor
    atom = _atom(monad_home, "ts", 'tools = {disabled = ["fail", "mut*"]}')
    pid = wait_state(monad, "ts", "connected", timeout=90)["pid"]

    rows = {t["name"]: t["hidden"] for t in monad("mcp", "tools", "--json").json()}
    src = f"`tools.disabled` of server `ts` in {atom.relative_to(monad_home)}"
    assert rows == {"ts__add": None, "ts__echo": None, "ts__kinds": None, "ts__slow": None,
                    "ts__fail": f"excluded by `fail` ({src})", "ts__mutate": f"excluded by `mut*` ({src})"}
    table = monad("mcp", "tools", "ts")
    assert table.code == 0 and "hidden: excluded by `fail`" in table.out, table
    r = monad("mcp", "call", "ts__fail", "--arg", "text=x", "--yes")
    assert r.code == 1 and "Traceback" not in r.err, r
    assert f"tool `ts__fail` is hidden: excluded by `fail` ({src}); nothing was sent to the server" in r.err
    # The Studio (its own listener, cookie and Origin) gets the same rows and the same refusal.
    studio = StudioHTTP(open_studio(monad)["url"])
    try:
        studio.login()
        listed = {t["name"]: t["hidden"] for t in studio.get("/v1/tools?server=ts").json()["tools"]}
        assert listed == rows
        answer = studio.request("POST", "/v1/tools/call", body={"name": "ts__fail", "arguments": {}, "via": "studio",
                                                                 "approval": {"mode": "yes"}})
        assert answer.status_code == 403 and answer.json()["error"]["code"] == "tool_hidden", answer.text
        assert f"excluded by `fail` ({src})" in answer.json()["error"]["message"]
    finally:
        studio.close()

    async def main() -> None:
        async with Client(_gateway(monad_home, "--approval-timeout", "30")) as client:
            assert await _names(client) == ["ts__add", "ts__echo", "ts__kinds", "ts__slow"]
            refused = await client.call_tool("ts__fail", {"text": "x"})
            assert refused.is_error
            assert _text(refused) == f"tool `ts__fail` is hidden: excluded by `fail` ({src}); nothing was sent " \
                                     f"to the server"

            # Live: edit the atom's filter (enabled means "only these"; exclude still wins).
            async with client.listen(tools_list_changed=True) as sub:
                atom.write_text(atom.read_text().replace('tools = {disabled = ["fail", "mut*"]}',
                                                         'tools = {enabled = ["echo", "add"], disabled = ["add"]}'))
                await _expect_list_changed(sub)
            assert await _names(client) == ["ts__echo"]
            refused = await client.call_tool("ts__add", {"a": 1, "b": 2})
            assert refused.is_error and "excluded by `add` (`tools.disabled` of server `ts`" in _text(refused)
            refused = await client.call_tool("ts__kinds", {})
            assert refused.is_error and "not included: matches none of `echo,add` (`tools.enabled`" in _text(refused)
            assert _text(await client.call_tool("ts__echo", {"text": "still here"})) == "still here"

            # Live: features/tools.toml hides by exposed name, for every server.
            async with client.listen(tools_list_changed=True) as sub:
                (monad_home / "features").mkdir(exist_ok=True)
                (monad_home / "features" / "tools.toml").write_text('disabled = ["*__echo"]\n')
                await _expect_list_changed(sub)
            assert await _names(client) == []
            refused = await client.call_tool("ts__echo", {"text": "x"})
            assert refused.is_error and "excluded by `*__echo` (`disabled` in features/tools.toml)" in _text(refused)

            # And back: an empty file shows the atom's own filter again.
            async with client.listen(tools_list_changed=True) as sub:
                (monad_home / "features" / "tools.toml").write_text("")
                await _expect_list_changed(sub)
            assert await _names(client) == ["ts__echo"]

    anyio.run(main)
    # The filter only shapes the view: the server's session and process were never touched.
    row = status_of(monad, "ts")
    assert row["state"] == "connected" and row["pid"] == pid


def test_gateway_include_exclude_tools(supervisor: Any, monad_home: Path) -> None:
    from mcp import Client

    monad = supervisor
    _atom(monad_home, "ts")
    _atom(monad_home, "gh")
    (monad_home / "features").mkdir(exist_ok=True)
    (monad_home / "features" / "tools.toml").write_text('enabled = ["ts__*", "gh__echo", "gh__add"]\n')
    wait_state(monad, "ts", "connected", timeout=90)
    wait_state(monad, "gh", "connected", timeout=90)

    async def main() -> None:
        narrow = _gateway(monad_home, "--include-tools", "*__echo,*__add", "--exclude-tools", "gh__add",
                          "--approval-timeout", "30")
        async with Client(narrow) as client, Client(_gateway(monad_home)) as plain:
            assert await _names(client) == ["gh__echo", "ts__add", "ts__echo"]
            # the other gateway's view is its own: only features/tools.toml applies to it
            assert await _names(plain) == ["gh__add", "gh__echo"] + [f"ts__{t}" for t in TOOLS]
            refused = await client.call_tool("gh__add", {"a": 1, "b": 2})
            assert refused.is_error
            assert _text(refused) == ("tool `gh__add` is hidden: excluded by `gh__add` (--exclude-tools of this "
                                      "gateway); nothing was sent to the server")
            refused = await client.call_tool("ts__kinds", {})
            assert refused.is_error and "not included: matches none of `*__echo,*__add` (--include-tools of this " \
                                        "gateway)" in _text(refused)
            refused = await plain.call_tool("gh__kinds", {})
            assert refused.is_error and "not included: matches none of `ts__*,gh__echo,gh__add` (`enabled` in " \
                                        "features/tools.toml)" in _text(refused)
            added = await client.call_tool("ts__add", {"a": 2, "b": 3})
            assert not added.is_error and _text(added) == "5"

    anyio.run(main)
    # the gateway's flags are its own: the CLI calls what features/tools.toml lets through
    r = monad("mcp", "call", "gh__add", "--arg", "a=1", "--arg", "b=1", "--yes")
    assert r.code == 0 and r.out.strip() == "2", r
    bad = monad("mcp", "serve", "--include-tools", "no spaces")
    assert bad.code == 2 and bad.err.strip().startswith("error: --include-tools: `no spaces` is not a tool-name "
                                                        "pattern"), bad


def test_imported_filters_through_a_connected_client(monad: Any, monad_home: Path, tmp_path: Path) -> None:
    from mcp import Client, StdioServerParameters

    codex = tmp_path / "codex" / "config.toml"
    codex.parent.mkdir()
    codex.write_text(f'model = "o3"\n\n[mcp_servers.cx]\ncommand = {json.dumps(sys.executable)}\n'
                     f'args = [{json.dumps(LIGHTTOOLSERVER)}]\nenabled_tools = ["echo", "add"]\n'
                     f'disabled_tools = ["add"]\n')
    gemini = tmp_path / "gemini.json"
    gemini.write_text(json.dumps({"theme": "dark", "mcpServers": {"gm": {
        "command": sys.executable, "args": [LIGHTTOOLSERVER], "includeTools": ["kinds", "echo(text)", "add"],
        "excludeTools": ["kinds"]}}}))
    for client, path in (("codex", codex), ("gemini", gemini)):
        r = monad("mcp", "import", client, str(path))
        assert r.code == 0, r
    assert tomllib.loads((monad_home / "atoms/mcp/cx.toml").read_text())["tools"] == {
        "enabled": ["echo", "add"], "disabled": ["add"]}
    r = monad("mcp", "connect", "codex", str(codex))
    assert r.code == 0, r
    entry = tomllib.loads(codex.read_text())["mcp_servers"]["monad"]
    assert tomllib.loads(codex.read_text())["model"] == "o3"
    assert monad("daemon", "start").code == 0
    try:
        wait_state(monad, "cx", "connected", timeout=90)
        wait_state(monad, "gm", "connected", timeout=90)

        async def main() -> None:
            # Run the entry exactly as Codex would: its command, args and env.
            params = StdioServerParameters(command=entry["command"], args=entry["args"],
                                           env={"MONAD_NO_AUTOSTART": "1", **entry.get("env", {})})
            async with Client(params) as client:
                assert await _names(client) == ["cx__echo", "gm__add", "gm__echo"]
                refused = await client.call_tool("gm__kinds", {})
                assert refused.is_error and "excluded by `kinds` (`tools.disabled` of server `gm`" in _text(refused)

        anyio.run(main)
    finally:
        monad("daemon", "stop")


def test_legacy_sse_entries_import_and_connect(monad: Any, monad_home: Path, tmp_path: Path,
                                               http_testserver: Any) -> None:
    url, url2 = http_testserver("--sse", path="/sse"), http_testserver("--sse", path="/sse")  # one remote each
    claude = tmp_path / ".claude.json"
    claude.write_text(json.dumps({"numStartups": 3, "mcpServers": {"old": {"type": "sse", "url": url}}}))
    gemini = tmp_path / "settings.json"
    gemini.write_text(json.dumps({"mcpServers": {"gold": {"url": url2}}}))  # Gemini's `url` is SSE
    for client, path in (("claude-code", claude), ("gemini", gemini)):
        r = monad("mcp", "import", client, str(path), "--json")
        assert r.code == 0 and r.json()["imported"] == 1, r
    assert monad("daemon", "start").code == 0
    try:
        for name in ("old", "gold"):
            row = wait_state(monad, name, "connected", timeout=60)
            assert row["httpTransport"] == "sse", row
            r = wait_for(lambda n=name: (c := monad("mcp", "call", f"{n}__echo", "--arg", "text=over sse",
                                                    "--yes")).code == 0 and c, timeout=30)
            assert r.out.strip() == "over sse", r
    finally:
        monad("daemon", "stop")
