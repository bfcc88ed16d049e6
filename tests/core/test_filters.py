"""Server filters: the pure rules, features/mcp.toml, and the real supervisor applying them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from monad_cli.config.features import load_mcp_filter
from monad_cli.core.errors import ConfigError
from monad_cli.core.filters import PatternError, ServerFilter, combine, split_patterns
from monad_cli.core.paths import paths
from tests.conftest import light_cmd, pid_alive, status_of, wait_for, wait_reconnected, wait_state, write_atom


# -- pure rules -----------------------------------------------------------------------------
def test_split_patterns_is_comma_separated_and_repeatable() -> None:
    assert split_patterns(["context7, git*", "", "x,,y"], what="--include-mcps") == \
        ["context7", "git*", "x", "y"]
    with pytest.raises(PatternError, match=r"^--exclude-mcps: `a b` is not a server-name pattern"):
        split_patterns(["a b"], what="--exclude-mcps")
    with pytest.raises(PatternError, match="`a/b`"):
        split_patterns(["ok,a/b"], what="--exclude-mcps")


def test_exclude_wins_over_include_and_names_the_rule() -> None:
    f = ServerFilter(include=("git*", "context7"), exclude=("gitlab",), include_origin="--include-mcps",
                     exclude_origin="--exclude-mcps")
    assert f.reason("github") is None
    assert f.reason("context7") is None
    assert f.reason("gitlab") == "excluded by `gitlab` (--exclude-mcps)"
    assert f.reason("portainer") == "not included: matches none of `git*,context7` (--include-mcps)"


def test_empty_include_means_all_and_star_exclude_means_none() -> None:
    assert ServerFilter(include=(), include_origin="x").allows("anything")
    assert ServerFilter().allows("anything")
    off = ServerFilter(exclude=("*",), exclude_origin="--exclude-mcps")
    assert not off.allows("a") and not off.allows("Z-9")


def test_globs_are_case_sensitive_and_match_whole_names() -> None:
    f = ServerFilter(include=("git",), include_origin="f")
    assert f.allows("git")
    assert not f.allows("github") and not f.allows("Git")
    assert ServerFilter(include=("s[0-9]",), include_origin="f").allows("s7")


def test_flags_replace_the_file_list_by_list() -> None:
    f = combine(flag_include=["a*"], flag_exclude=None, file_enabled=["b"], file_disabled=["a2"])
    assert f.allows("a1") and not f.allows("b")
    assert f.reason("a2") == "excluded by `a2` (`[mcp] disabled` in `features/mcp.toml`)"
    g = combine(flag_include=None, flag_exclude=[], file_enabled=["b"], file_disabled=["b"])
    assert g.allows("b")  # the exclude flag (even empty) replaced the file's `disabled`
    assert g.reason("c") == "not included: matches none of `b` (`[mcp] enabled` in `features/mcp.toml`)"


# -- features/mcp.toml -------------------------------------------------------------------------
def _features(home: Path, name: str, text: str) -> Path:
    d = home / "features"
    d.mkdir(parents=True, exist_ok=True)
    p = d / name
    p.write_text(text)
    return p


def test_mcp_toml_defaults(monad_home: Path) -> None:
    assert load_mcp_filter(paths()) == ([], [])
    _features(monad_home, "mcp.toml", '[mcp]\nenabled = []\ndisabled = ["portainer", "x*"]\n')
    assert load_mcp_filter(paths()) == ([], ["portainer", "x*"])


@pytest.mark.parametrize(("text", "expected"), [
    ("[mcp]\ndisabled = [\"a\" \"b\"]\n", r"^`features/mcp\.toml:2:\d+`: malformed TOML"),
    ("[mcp]\ndisable = []\n", r"`\[mcp\]` `disable` is not a known field \(did you mean `disabled`\?\)"),
    ("[mcp]\nenabled = \"git*\"\n", r"field `mcp.enabled` must be a list of glob patterns"),
    ("[mcp]\nenabled = [\"a b\"]\n", r"field `mcp.enabled`: `a b` is not a server-name pattern"),
    ("mcp = 3\n", r"`mcp` must be a table"),
    ("[tools]\n", r"`tools` is not a known field"),
])
def test_mcp_toml_errors_are_one_line_and_name_the_field(monad_home: Path, text: str, expected: str) -> None:
    _features(monad_home, "mcp.toml", text)
    with pytest.raises(ConfigError, match=expected) as info:
        load_mcp_filter(paths())
    assert "\n" not in info.value.message


# -- the CLI ----------------------------------------------------------------------------------
def test_bad_pattern_flag_is_a_one_line_usage_error(cli: Any) -> None:
    r = cli("daemon", "start", "--include-mcps", "ok,not/ok")
    assert r.code == 2, r
    assert r.err.strip() == ("error: --include-mcps: `not/ok` is not a server-name pattern (letters, digits, "
                             "`_`, `-` and the globs `*`, `?`, `[...]`)")
    assert "Traceback" not in r.err


# -- the real supervisor ----------------------------------------------------------------------
def _atom(home: Path, name: str, *, required: bool = False) -> None:
    cmd = light_cmd()
    lines = [f"command = {json.dumps(cmd[0])}", f"args = {json.dumps(cmd[1:])}", "timeout = 60"]
    if required:
        lines.append("required = true")
    write_atom(home, name, "\n".join(lines) + "\n")


def _start(monad: Any, *flags: str) -> None:
    r = monad("daemon", "start", *flags, timeout=120)
    assert r.code == 0, r



@pytest.mark.e2e
def test_include_exclude_precedence_in_status(monad: Any, monad_home: Path) -> None:
    for name in ("a1", "a2", "b", "c"):
        _atom(monad_home, name)
    _start(monad, "--include-mcps", "a*,b", "--exclude-mcps", "a2")
    try:
        wait_state(monad, "a1", "connected", timeout=90)
        wait_state(monad, "b", "connected", timeout=90)
        a2 = status_of(monad, "a2")
        assert a2["state"] == "filtered"
        assert a2["reason"] == "excluded by `a2` (--exclude-mcps)"
        c = status_of(monad, "c")
        assert c["state"] == "filtered"
        assert c["reason"] == "not included: matches none of `a*,b` (--include-mcps)"
        assert c["pid"] is None
        # The list view shows the same rule.
        rows = {r["name"]: r for r in monad("mcp", "list", "--json").json()}
        assert rows["c"]["state"] == "filtered" and "--include-mcps" in rows["c"]["reason"]
        # `mcp wait` gives up on a filtered server at once, with the rule.
        r = monad("mcp", "wait", "c", "--timeout", "30")
        assert r.code == 1 and "excluded" not in r.err and "not included" in r.err, r
    finally:
        monad("daemon", "stop")


@pytest.mark.e2e
def test_file_defaults_flags_override_and_live_refiltering(monad: Any, monad_home: Path) -> None:
    for name in ("keep", "drop"):
        _atom(monad_home, name)
    mcp_toml = _features(monad_home, "mcp.toml", '[mcp]\nenabled = ["nothing-matches"]\n')
    # The include flag replaces the file's `enabled`; the file's (empty) `disabled` stays.
    _start(monad, "--include-mcps", "*")
    try:
        keep = wait_state(monad, "keep", "connected", timeout=90)
        drop = wait_state(monad, "drop", "connected", timeout=90)
        drop_pid = drop["pid"]
        assert drop_pid and pid_alive(drop_pid)

        # Live: exclude `drop` in the file; its process goes away, `keep` keeps its session.
        mcp_toml.write_text('[mcp]\nenabled = ["nothing-matches"]\ndisabled = ["dr*"]\n')
        drop = wait_state(monad, "drop", "filtered", timeout=60)
        assert drop["reason"] == "excluded by `dr*` (`[mcp] disabled` in `features/mcp.toml`)"
        wait_for(lambda: not pid_alive(drop_pid), timeout=30)
        assert status_of(monad, "keep")["pid"] == keep["pid"]

        # A malformed file keeps the last good filters and says so.
        mcp_toml.write_text('[mcp]\ndisabled = [\n')
        answer = wait_for(lambda: (s := monad("mcp", "list", "--json")) and "malformed TOML" in s.err and s)
        assert "features/mcp.toml" in answer.err and "previous server filters stay in force" in answer.err
        assert status_of(monad, "drop")["state"] == "filtered"

        # Removing the file lifts the exclusion live.
        mcp_toml.unlink()
        drop = wait_state(monad, "drop", "connected", timeout=90)
        assert drop["pid"] != drop_pid
        assert status_of(monad, "keep")["pid"] == keep["pid"]
    finally:
        monad("daemon", "stop")


@pytest.mark.e2e
def test_exclude_everything_even_a_required_server(monad: Any, monad_home: Path) -> None:
    _atom(monad_home, "needed", required=True)
    _atom(monad_home, "other")
    _start(monad, "--exclude-mcps", "*")
    try:
        for name in ("needed", "other"):
            row = status_of(monad, name)
            assert row["state"] == "filtered", row
            assert row["reason"] == "excluded by `*` (--exclude-mcps)"
    finally:
        monad("daemon", "stop")


@pytest.mark.e2e
def test_reconnect_all_keeps_filtered_servers_filtered(monad: Any, monad_home: Path) -> None:
    _atom(monad_home, "on")
    _atom(monad_home, "off")
    _features(monad_home, "mcp.toml", '[mcp]\ndisabled = ["off"]\n')
    _start(monad)
    try:
        first = wait_state(monad, "on", "connected", timeout=90)
        assert status_of(monad, "off")["reason"] == "excluded by `off` (`[mcp] disabled` in `features/mcp.toml`)"
        (monad_home / "atoms" / "mcp" / "idle.toml").write_text('command = "true"\nenabled = false\n')
        wait_state(monad, "idle", "disabled")
        r = monad("mcp", "reconnect", "--all", "--json")
        # Only what a reconnect reconnects is named so; the others are named apart, with why.
        assert r.code == 0 and r.json()["reconnecting"] == ["on"], r
        assert r.json()["skipped"] == [
            {"name": "idle", "reason": "disabled (enabled = false); `monad mcp enable idle` connects it"},
            {"name": "off", "reason": "filtered out: excluded by `off` (`[mcp] disabled` in `features/mcp.toml`)"}]
        r = monad("mcp", "reconnect", "--all")
        assert r.code == 0 and "reconnecting `on`\n" in r.err and "`off`" not in r.err.splitlines()[0], r
        assert "not reconnecting `off`: filtered out: excluded by `off`" in r.err
        again = wait_reconnected(monad, "on", first["pid"], timeout=90)
        assert again["pid"] != first["pid"]
        assert status_of(monad, "off")["state"] == "filtered"
    finally:
        monad("daemon", "stop")
