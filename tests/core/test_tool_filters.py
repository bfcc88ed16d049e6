"""Tool filters: the rules (`core/tool_filters.py`, table tests), `features/tools.toml` parsing,
and the tool service hiding and refusing with a real in-process MCP server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from monad_cli.config.features import load_tool_globs
from monad_cli.config.schema import validate
from monad_cli.core.errors import ConfigError, ToolHidden
from monad_cli.core.paths import paths
from monad_cli.core.tool_filters import (
    ToolPatternError,
    file_rule,
    hidden_by,
    inert_globs,
    literal_glob,
    server_rule,
    session_rule,
    split_tool_patterns,
)
from monad_cli.daemon.trust.call import ToolCall
from monad_cli.journal import tools as jt
from tests.daemon.trust.test_service import run, service

SRC = "atoms/mcp/gh.toml"


@pytest.mark.parametrize(("exposed", "own", "rules", "expected"), [
    # no rules: shown
    ("gh__delete_repo", "delete_repo", [], None),
    # per-server globs match the server's own name or the exposed one
    ("gh__delete_repo", "delete_repo", [server_rule("gh", {"disabled": ["delete_*"]}, SRC)],
     "excluded by `delete_*` (`tools.disabled` of server `gh` in atoms/mcp/gh.toml)"),
    ("gh__delete_repo", "delete_repo", [server_rule("gh", {"disabled": ["gh__delete_*"]}, SRC)],
     "excluded by `gh__delete_*` (`tools.disabled` of server `gh` in atoms/mcp/gh.toml)"),
    ("gh__search", "search", [server_rule("gh", {"enabled": ["gh__s*"]}, SRC)], None),
    # the file's and a gateway's globs match exposed names only
    ("gh__delete_repo", "delete_repo", [file_rule([], ["delete_*"])], None),
    # an enabled list means "only these"
    ("gh__search", "search", [server_rule("gh", {"enabled": ["search", "fetch_*"]}, SRC)], None),
    ("gh__push", "push", [server_rule("gh", {"enabled": ["search", "fetch_*"]}, SRC)],
     "not included: matches none of `search,fetch_*` (`tools.enabled` of server `gh` in atoms/mcp/gh.toml)"),
    # an empty enabled list is no include rule at all
    ("gh__push", "push", [server_rule("gh", {"enabled": []}, SRC)], None),
    # exclude wins over include, within a layer and across layers
    ("gh__search", "search", [server_rule("gh", {"enabled": ["search"], "disabled": ["s*"]}, SRC)],
     "excluded by `s*` (`tools.disabled` of server `gh` in atoms/mcp/gh.toml)"),
    ("gh__search", "search", [server_rule("gh", {"enabled": ["search"]}, SRC), file_rule([], ["*__search"])],
     "excluded by `*__search` (`disabled` in features/tools.toml)"),
    ("gh__search", "search", [file_rule(["gh__*"], []), session_rule(exclude=["gh__se*"])],
     "excluded by `gh__se*` (--exclude-tools of this gateway)"),
    # file and session globs match exposed names; every include layer must let it through
    ("gh__search", "search", [file_rule(["gh__*"], []), session_rule(include=["time__*"])],
     "not included: matches none of `time__*` (--include-tools of this gateway)"),
    ("gh__search", "search", [file_rule(["search"], [])],
     "not included: matches none of `search` (`enabled` in features/tools.toml)"),
    ("time__now", "now", [file_rule(["gh__*", "time__*"], []), session_rule(include=["*__now"])], None),
    # globs are case-sensitive, over the whole name
    ("gh__Search", "Search", [server_rule("gh", {"disabled": ["search"]}, None)], None),
    ("gh__search_all", "search_all", [server_rule("gh", {"disabled": ["search"]}, None)], None),
])
def test_hidden_by(exposed: str, own: str, rules: list[Any], expected: str | None) -> None:
    assert hidden_by(exposed, own, rules) == expected


def test_split_tool_patterns_and_literal_globs() -> None:
    assert split_tool_patterns(["gh__*, time__now", "", "x__[ab]?"], what="--include-tools") == \
        ["gh__*", "time__now", "x__[ab]?"]
    with pytest.raises(ToolPatternError) as info:
        split_tool_patterns(["gh__*", "bad name"], what="--exclude-tools")
    assert str(info.value).startswith("--exclude-tools: `bad name` is not a tool-name pattern")
    # a client's plain names become globs that match only themselves
    assert hidden_by("s__a*b", "a*b", [server_rule("s", {"disabled": [literal_glob("a*b")]}, None)])
    assert hidden_by("s__axb", "axb", [server_rule("s", {"disabled": [literal_glob("a*b")]}, None)]) is None
    assert literal_glob("get[1]?") == "get[[]1][?]"


def test_inert_globs_are_named() -> None:
    own, exposed = ["echo", "fail"], ["srv__echo", "srv__fail"]
    assert inert_globs({"enabled": ["echo", "f*"], "disabled": ["srv__fail"]}, own, exposed) == []
    assert inert_globs({"disabled": ["other__fail", "fial"]}, own, exposed) == [
        "`tools.disabled` entry `other__fail` matches no advertised tool; advertised: echo, fail",
        "`tools.disabled` entry `fial` matches no advertised tool; advertised: echo, fail"]
    assert inert_globs({}, ["echo"]) == []


def test_tools_toml_enabled_disabled(monad_home: Path) -> None:
    (monad_home / "features").mkdir(parents=True, exist_ok=True)
    (monad_home / "features" / "tools.toml").write_text(
        'deferred = ["gh__*"]\nenabled = ["gh__*", "time__*"]\ndisabled = ["*__delete_*"]\n')
    assert load_tool_globs(paths()) == {"deferred": ["gh__*"], "enabled": ["gh__*", "time__*"],
                                        "disabled": ["*__delete_*"]}
    (monad_home / "features" / "tools.toml").write_text('disabld = ["x"]\n')
    with pytest.raises(ConfigError) as info:
        load_tool_globs(paths())
    assert "`disabld` is not a known field (did you mean `disabled`?)" in info.value.message


def _spec(tools: dict[str, list[str]]) -> Any:
    return validate({"command": "inproc", "tools": tools}, name="srv", source="atoms/mcp/srv.toml", environ={})


def test_service_hides_lists_and_refuses(tmp_path: Path) -> None:
    globs: dict[str, list[str]] = {}

    async def main() -> None:
        async with service(tmp_path, _spec({"disabled": ["fail"]}), tool_globs=lambda: globs) as (svc, _session):
            shown = [t["name"] for t in svc.listing()]
            assert shown == ["srv__echo", "srv__upstream"]
            rows = {t["name"]: t["hidden"] for t in svc.listing(hidden=True)}
            assert rows == {"srv__echo": None, "srv__upstream": None,
                            "srv__fail": "excluded by `fail` (`tools.disabled` of server `srv` in atoms/mcp/srv.toml)"}
            with pytest.raises(ToolHidden) as info:
                await svc.call(ToolCall("srv__fail", {"text": "x"}, via="cli", approval={"mode": "yes"}))
            assert info.value.message == ("tool `srv__fail` is hidden: excluded by `fail` (`tools.disabled` of "
                                          "server `srv` in atoms/mcp/srv.toml); nothing was sent to the server")
            # a session's globs narrow further, for the listing and the call alike
            assert [t["name"] for t in svc.listing(include=["*__echo"])] == ["srv__echo"]
            with pytest.raises(ToolHidden) as info:
                await svc.call(ToolCall("srv__upstream", {"text": "x"}, via="gateway", approval={"mode": "yes"},
                               include=["*__echo"]))
            assert "not included: matches none of `*__echo` (--include-tools of this gateway)" in info.value.message
            ok = await svc.call(ToolCall("srv__echo", {"text": "hi"}, via="gateway", approval={"mode": "yes"},
                                include=["*__echo"]))
            assert ok["content"][0]["text"] == "hi"
            # features/tools.toml, read live on every listing and call; the signature follows
            before = svc.signature()
            globs["disabled"] = ["srv__echo"]
            assert svc.signature() != before
            assert [t["name"] for t in svc.listing()] == ["srv__upstream"]
            with pytest.raises(ToolHidden) as info:
                await svc.call(ToolCall("srv__echo", {"text": "hi"}, via="cli", approval={"mode": "yes"}))
            assert "excluded by `srv__echo` (`disabled` in features/tools.toml)" in info.value.message
            assert svc.warnings("srv") == []  # `fail` is advertised: not inert
            # refusals never reach the server; each is journaled `refused`, naming the rule
            rows = [(r["tool"], r["outcome"]) for r in jt.calls(svc.journal)]
            assert rows[-2:] == [("echo", "ok"), ("echo", "refused")] and rows[0][1] == "refused", rows
            assert "features/tools.toml" in jt.calls(svc.journal)[-1]["error"]

    run(main)


def test_the_gateway_hello_carries_tool_globs() -> None:
    from monad_cli.core.errors import InvalidInput
    from monad_cli.core.hello import build_hello, parse_hello

    view = parse_hello(build_hello(transport="stdio", include_tools=["gh__*"], exclude_tools=["*__delete_*"]))
    assert (view.include_tools, view.exclude_tools) == (("gh__*",), ("*__delete_*",))
    assert parse_hello(build_hello(transport="stdio")).include_tools == ()
    with pytest.raises(InvalidInput) as info:
        parse_hello(build_hello(transport="stdio", exclude_tools=["no spaces"]))
    assert str(info.value.message).startswith("--exclude-tools: `no spaces` is not a tool-name pattern")


def test_import_vscode_sse_and_empty_allow_lists(cli: Any, monad_home: Path, tmp_path: Path) -> None:
    import json
    import tomllib

    vscode = tmp_path / "mcp.json"
    vscode.write_text(json.dumps({"servers": {"old": {"type": "sse", "url": "http://127.0.0.1:9/sse"}}}))
    r = cli("mcp", "import", "vscode", str(vscode), "--json")
    assert r.code == 0 and r.json()["imported"] == 1, r
    old = tomllib.loads((monad_home / "atoms/mcp/old.toml").read_text())
    assert (old["transport"], old["url"]) == ("http", "http://127.0.0.1:9/sse")
    codex = tmp_path / "config.toml"
    codex.write_text('[mcp_servers.none]\ncommand = "srv"\nenabled_tools = []\n'
                     '[mcp_servers.bad]\ncommand = "srv"\nenabled_tools = "echo"\n')
    r = cli("mcp", "import", "codex", str(codex), "--json")
    rows = {s["name"]: s for s in r.json()["servers"]}
    assert tomllib.loads((monad_home / "atoms/mcp/none.toml").read_text())["tools"] == {"disabled": ["*"]}
    assert "`enabled_tools` is empty (no tool is let through)" in rows["none"]["detail"]
    assert rows["bad"]["result"] == "skipped" and "field `enabled_tools` must be a list of tool names" in \
        rows["bad"]["detail"]
