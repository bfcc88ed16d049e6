"""Exposed tool names, tool-set pins and `--arg` conversion: pure functions, no processes."""

from __future__ import annotations

import random
import re

import pytest

from monad_cli.core.errors import InvalidInput
from monad_cli.core.tool_names import base_name, build_name_map, describe_collision
from monad_cli.daemon.trust.pins import describe_change, same_hash, tool_set_hash
from monad_cli.tools.arguments import build_arguments, convert_value

SAFE = re.compile(r"[A-Za-z0-9_-]{1,64}\Z")
LONG = "a_tool_with_a_very_long_name_" + "x" * 41


def test_plain_and_sanitized_names() -> None:
    assert base_name("github", "create_issue") == "github__create_issue"
    assert base_name("ts", "Dockerfile problems scanner") == "ts__Dockerfile_problems_scanner"
    assert base_name("ts", "files/read.v2") == "ts__files_read_v2"


def test_long_names_are_truncated_deterministically_with_a_hash() -> None:
    name = base_name("server", LONG)
    assert len(name) == 64 and SAFE.match(name)
    assert name == base_name("server", LONG)  # stable across runs: no randomness, no order
    other = base_name("server", LONG[:-1] + "y")
    assert other != name and other[:57] == name[:57]  # same prefix, different hash suffix


def test_collisions_are_reported_and_neither_shadows_the_other() -> None:
    nmap = build_name_map([("ts", "get.user"), ("ts", "get_user"), ("ts", "echo")])
    assert nmap.exposed_name("ts", "echo") == "ts__echo"
    a, b = nmap.exposed_name("ts", "get.user"), nmap.exposed_name("ts", "get_user")
    assert a and b and a != b and a.startswith("ts__get_user_") and b.startswith("ts__get_user_")
    assert "ts__get_user" not in nmap.by_exposed  # neither takes the contested name
    assert nmap.by_exposed[a].tool == "get.user" and nmap.by_exposed[b].tool == "get_user"  # reverse map
    assert len(nmap.collisions) == 1
    text = describe_collision(nmap.collisions[0])
    assert "`ts`/`get.user`" in text and "`ts`/`get_user`" in text


def test_names_do_not_depend_on_connect_order() -> None:
    pairs = [("a", "b__c"), ("a_b", "c"), ("a_", "b"), ("a", "_b"), ("ts", "get.user"), ("ts", "get_user"),
             ("ts", LONG), ("x", "t1")]
    first = build_name_map(pairs).by_original
    for seed in range(5):
        shuffled = pairs[:]
        random.Random(seed).shuffle(shuffled)
        assert build_name_map(shuffled).by_original == first
    assert all(SAFE.match(n) for n in first.values())


def test_server_a_with_tool_b__c_and_server_a_b() -> None:
    nmap = build_name_map([("a", "b__c"), ("a_b", "c")])
    assert nmap.by_exposed["a__b__c"].server == "a" and nmap.by_exposed["a__b__c"].tool == "b__c"
    assert nmap.by_exposed["a_b__c"].server == "a_b"
    assert not nmap.collisions


def test_separator_ambiguity_is_a_collision_not_a_parse() -> None:
    # `a_` + `__` + `b` and `a` + `__` + `_b` are both `a___b`.
    nmap = build_name_map([("a_", "b"), ("a", "_b")])
    assert len(nmap.collisions) == 1
    assert {e.server for e in nmap.by_exposed.values()} == {"a", "a_"}


def _tool(name: str, description: str = "d", params: tuple[str, ...] = ("text",)) -> dict:
    return {"name": name, "description": description,
            "inputSchema": {"type": "object", "properties": {p: {"type": "string"} for p in params}}}


def test_tool_set_hash_covers_everything_and_ignores_order() -> None:
    base = [_tool("echo"), _tool("add", params=("a", "b"))]
    h = tool_set_hash(base)
    assert h.startswith("sha256:") and len(h) == 7 + 64
    assert tool_set_hash(list(reversed(base))) == h  # page order does not matter
    assert tool_set_hash([_tool("echo", "changed"), base[1]]) != h
    assert tool_set_hash([_tool("echo", params=("message",)), base[1]]) != h
    assert tool_set_hash([*base, _tool("extra")]) != h
    assert same_hash(h, h.removeprefix("sha256:")) and not same_hash(h, None)


def test_describe_change_names_what_changed() -> None:
    old = [_tool("echo"), _tool("add", params=("a", "b"))]
    new = [_tool("echo", "now steals keys", params=("message",)), _tool("extra")]
    text = describe_change(old, new)
    assert "added `extra`" in text and "removed `add`" in text
    assert "`echo` changed description, inputSchema" in text
    assert "parameters removed: text; added: message" in text
    # A count takes its noun in the number it needs ("(1 tools)" was found by a new-user trial).
    assert describe_change(None, [_tool("echo")]).endswith("now 1 tool advertised")
    assert describe_change(None, new).endswith("now 2 tools advertised")


def test_tool_set_change_gives_each_field_old_and_new_and_the_cli_shows_them() -> None:
    from monad_cli.cli.commands._pin_review import change_lines
    from monad_cli.daemon.trust.pins import tool_set_change

    old = [_tool("echo"), _tool("add", params=("a", "b"))]
    new = [_tool("echo", "Line one.\nnow steals keys", params=("message",)), _tool("extra")]
    change = tool_set_change(old, new)
    assert change["pinnedKnown"] is True
    assert [t["name"] for t in change["added"]] == ["extra"] and [t["name"] for t in change["removed"]] == ["add"]
    [echo] = change["changed"]
    assert [f["field"] for f in echo["fields"]] == ["description", "inputSchema"]
    assert echo["fields"][0]["old"] == old[0]["description"] and echo["fields"][0]["new"].endswith("keys")
    lines = change_lines("srv", {"change": change, "pinned": "sha256:a", "hash": "sha256:b"})
    assert lines[0] == "server `srv`: its tool set changed since it was pinned (pinned sha256:a, now sha256:b)"
    assert "+ tool `extra` added" in lines and "- tool `add` removed" in lines
    assert "~ tool `echo` changed: description, inputSchema" in lines
    # A description whole on both sides, a line each; a schema as a line diff.
    at = lines.index("    description:", lines.index("~ tool `echo` changed: description, inputSchema"))
    assert lines[at + 1:at + 4] == [f"    - {old[0]['description']}", "    + Line one.", "    + now steals keys"]
    assert '    -     "text": {' in lines and '    +     "message": {' in lines

    # A pin this journal never saw the set of: said, and every tool shown as added.
    unknown = tool_set_change(None, new)
    assert unknown["pinnedKnown"] is False and unknown["removed"] == unknown["changed"] == []
    assert [t["name"] for t in unknown["added"]] == ["echo", "extra"]
    assert "unknown to this journal" in change_lines("srv", {"change": unknown, "pinned": "x", "hash": "y"})[1]


def test_arg_conversion_follows_the_schema() -> None:
    schema = {"properties": {"n": {"type": "integer"}, "r": {"type": "number"}, "f": {"type": "boolean"},
                             "l": {"type": "array"}, "o": {"type": "object"}, "s": {"type": "string"},
                             "opt": {"anyOf": [{"type": "integer"}, {"type": "null"}]}}}
    args = build_arguments(schema, ["n=3", "r=2.5", "f=false", "l=[1, 2]", "o={\"k\": 1}", "s=007", "opt=4",
                                    "unknown=x"], '{"s": "overridden", "z": 1}')
    assert args == {"n": 3, "r": 2.5, "f": False, "l": [1, 2], "o": {"k": 1}, "s": "007", "opt": 4,
                    "unknown": "x", "z": 1}
    with pytest.raises(InvalidInput, match="--arg n: expected an integer, got 'x'"):
        convert_value("n", "x", {"type": "integer"})
    with pytest.raises(InvalidInput, match="--arg l: expected a JSON array"):
        convert_value("l", "{}", {"type": "array"})
    with pytest.raises(InvalidInput, match="NAME=VALUE"):
        build_arguments(schema, ["novalue"], None)
    with pytest.raises(InvalidInput, match="--args-json must be a JSON object"):
        build_arguments(schema, [], "[1]")
