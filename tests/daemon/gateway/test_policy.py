"""The gateway's visibility rules: deferral, load_tools, conditions, filters (pure)."""

from __future__ import annotations

from typing import Any

import pytest

from monad_cli.core.filters import ServerFilter
from monad_cli.daemon.gateway.policy import (
    LOAD_TOOLS,
    LoadedTools,
    check_call,
    is_deferred,
    load_tools,
    load_tools_tool,
    offers_load_tools,
    visible_tools,
)

TOOLS = {
    "github": ["github__create_issue", "github__create_pr", "github__search"],
    "slack": ["slack__post_message", "slack__read"],
    "time": ["time__now"],
    "big": ["big__think"],
}
CONDITIONS = {"big": "model_params_gt:7", "time": None}


def ctx(**over: Any) -> dict[str, Any]:
    base: dict[str, Any] = dict(deferred_servers={"github"}, deferred_globs=["slack__post_*"],
                                conditions=CONDITIONS, facts={"model_params": "8"}, environ={})
    base.update(over)
    return base


def test_initial_list_leaves_out_deferred_servers_and_globs() -> None:
    assert visible_tools(TOOLS, loaded=LoadedTools(), **ctx()) == ["slack__read", "time__now", "big__think"]


def test_is_deferred() -> None:
    assert is_deferred("github__search", "github", deferred_servers={"github"}, deferred_globs=[])
    assert is_deferred("slack__post_message", "slack", deferred_servers=set(), deferred_globs=["slack__post_*"])
    assert not is_deferred("slack__read", "slack", deferred_servers=set(), deferred_globs=["slack__post_*"])


def test_load_by_server_adds_its_tools_and_reports_change() -> None:
    r = load_tools(LoadedTools(), servers=["github"], tools_by_server=TOOLS, **ctx())
    assert r.changed
    assert r.added == ["github__create_issue", "github__create_pr", "github__search"]
    assert r.loaded.servers == {"github"}
    assert visible_tools(TOOLS, loaded=r.loaded, **ctx())[:3] == r.added
    # Loading again changes nothing: no list_changed to send.
    again = load_tools(r.loaded, servers=["github"], tools_by_server=TOOLS, **ctx())
    assert not again.changed and again.added == []
    assert again.summary() == "no new tools loaded"


def test_load_by_glob_adds_only_matching_tools() -> None:
    r = load_tools(LoadedTools(), tools=["github__create_*", "slack__*"], tools_by_server=TOOLS, **ctx())
    assert r.added == ["github__create_issue", "github__create_pr", "slack__post_message"]
    assert "github__search" not in visible_tools(TOOLS, loaded=r.loaded, **ctx())
    assert r.summary().startswith("loaded 3 tools: github__create_issue")


def test_loads_are_remembered_for_tools_that_appear_later() -> None:
    r = load_tools(LoadedTools(), servers=["github"], tools=["slack__post_*"], tools_by_server=TOOLS, **ctx())
    grown = {**TOOLS, "github": [*TOOLS["github"], "github__new"], "slack": [*TOOLS["slack"], "slack__post_file"]}
    shown = visible_tools(grown, loaded=r.loaded, **ctx())
    assert "github__new" in shown and "slack__post_file" in shown


def test_unknown_servers_and_unmatched_globs_are_reported() -> None:
    r = load_tools(LoadedTools(), servers=["nope", "github"], tools=["zzz__*"], tools_by_server=TOOLS, **ctx())
    assert r.unknown_servers == ["nope"] and r.unmatched_globs == ["zzz__*"]
    assert r.loaded.globs == () and r.loaded.servers == {"github"}
    assert "unknown server(s): nope" in r.summary() and "no tool matches: zzz__*" in r.summary()


@pytest.mark.parametrize(("kwargs", "message"), [
    ({}, "give `servers`"),
    ({"servers": [], "tools": []}, "give `servers`"),
    ({"servers": "github"}, "`servers` must be a list of strings"),
    ({"tools": [""]}, "`tools` must contain only non-empty strings"),
    ({"tools": [3]}, "`tools` must contain only non-empty strings"),
])
def test_bad_load_tools_arguments(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        load_tools(LoadedTools(), tools_by_server=TOOLS, **kwargs, **ctx())


def test_a_condition_flips_with_a_fact_on_every_list_and_call() -> None:
    small = ctx(facts={"model_params": "3"})
    assert "big__think" not in visible_tools(TOOLS, loaded=LoadedTools(), **small)
    assert "big__think" in visible_tools(TOOLS, loaded=LoadedTools(), **ctx())
    kw = dict(conditions=CONDITIONS, environ={})
    assert check_call("big__think", TOOLS, facts={"model_params": "8"}, **kw) is None
    reason = check_call("big__think", TOOLS, facts={"model_params": "3"}, **kw)
    assert reason == ("tool `big__think` is not available now: the condition of server `big` "
                      "(`model_params_gt:7`) does not hold")
    assert check_call("big__think", TOOLS, facts={}, **kw) is not None


def test_conditions_read_the_environment() -> None:
    cond = {"time": "env_set:CI and not fact_eq:env=prod"}
    shown = visible_tools(TOOLS, loaded=LoadedTools(), **ctx(conditions=cond, environ={"CI": "true"}))
    assert "time__now" in shown
    hidden = visible_tools(TOOLS, loaded=LoadedTools(), **ctx(conditions=cond, environ={"CI": "true"},
                                                              facts={"env": "prod"}))
    assert "time__now" not in hidden


def test_a_condition_beats_a_load() -> None:
    small = ctx(facts={"model_params": "1"}, deferred_servers={"big"})
    r = load_tools(LoadedTools(), servers=["big"], tools_by_server=TOOLS, **small)
    assert r.added == [] and r.hidden == ["big"] and not r.changed
    assert "not available now (condition or filter): big" in r.summary()
    # Once the fact changes, the remembered load shows the tool.
    assert "big__think" in visible_tools(TOOLS, loaded=r.loaded, **ctx(deferred_servers={"big"}))


def test_a_malformed_condition_hides_the_server() -> None:
    bad = ctx(conditions={"time": "env_set:"})
    assert "time__now" not in visible_tools(TOOLS, loaded=LoadedTools(), **bad)
    assert check_call("time__now", TOOLS, conditions={"time": "env_set:"}, facts={}, environ={}) is not None


def test_deferred_tools_can_be_called_without_loading() -> None:
    assert check_call("github__search", TOOLS, conditions=CONDITIONS, facts={}, environ={}) is None
    assert check_call("nope__x", TOOLS, conditions=CONDITIONS, facts={}, environ={}) == \
        "unknown tool `nope__x` (see tools/list)"


def test_server_filter_on_the_gateway() -> None:
    only_time = ServerFilter(include=("time",), include_origin="--include-mcps")
    assert visible_tools(TOOLS, loaded=LoadedTools(), server_filter=only_time, **ctx()) == ["time__now"]
    r = load_tools(LoadedTools(), servers=["github"], tools_by_server=TOOLS, server_filter=only_time, **ctx())
    assert r.added == [] and r.hidden == ["github"]
    assert check_call("slack__read", TOOLS, conditions={}, facts={}, environ={}, server_filter=only_time) == \
        "tool `slack__read` is not available: server `slack` is filtered out"


def test_load_tools_meta_tool() -> None:
    assert offers_load_tools(TOOLS, deferred_servers={"github"}, deferred_globs=[])
    assert offers_load_tools(TOOLS, deferred_servers=set(), deferred_globs=["slack__post_*"])
    assert not offers_load_tools(TOOLS, deferred_servers=set(), deferred_globs=["nomatch__*"])
    tool = load_tools_tool(TOOLS, deferred_servers={"github"}, deferred_globs=["slack__post_*"])
    assert tool["name"] == LOAD_TOOLS == "load_tools"
    assert "Deferred now: github (3 tools), slack (1 tool)." in tool["description"]
    assert set(tool["inputSchema"]["properties"]) == {"servers", "tools"}
    # It is a valid MCP Tool for the SDK.
    from mcp_types import Tool

    assert set(Tool.model_validate(tool).input_schema["properties"]) == {"servers", "tools"}
