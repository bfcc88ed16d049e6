"""Editing another client's JSON or JSONC file in place (monad_cli/clients/jsonc.py): one
member changes, every other byte stays (comments, order, trailing commas, one-line objects),
and a malformed file is named at its line and column in one line."""

from __future__ import annotations

import json

import json5
import pytest

from monad_cli.clients.jsonc import load, set_member
from monad_cli.core.errors import ConfigError

VSCODE = """{
  // servers of mine
  "servers": {
    "github": {"type": "http", "url": "https://api.example/mcp"}, // work
    "memory": {
      "command": "npx",
    },
  },
  "theme": "dark"
}
"""
MONAD = {"command": "monad", "args": ["mcp", "serve"]}


def test_a_member_is_added_with_the_files_indent_and_everything_else_kept() -> None:
    out = set_member(VSCODE, ("servers", "monad"), MONAD, comments=True)
    assert out.startswith('{\n  // servers of mine\n  "servers": {\n    "monad": {\n      "command": "monad",')
    assert out.endswith(VSCODE[VSCODE.index('    "github"'):])  # the rest, byte for byte
    assert json5.loads(out)["servers"] == {"monad": MONAD, **json5.loads(VSCODE)["servers"]}


def test_a_member_is_replaced_in_place() -> None:
    out = set_member(VSCODE, ("theme",), "light", comments=True)
    assert out == VSCODE.replace('"theme": "dark"', '"theme": "light"')


def test_removing_takes_out_only_that_member() -> None:
    out = set_member(VSCODE, ("servers", "memory"), None, comments=True)
    assert json5.loads(out) == {"servers": {"github": {"type": "http", "url": "https://api.example/mcp"}},
                                "theme": "dark"}
    assert "// servers of mine" in out and "// work" in out
    assert set_member(out, ("servers", "memory"), None, comments=True) == out  # nothing left to remove
    assert set_member(VSCODE, ("nothing", "here"), None, comments=True) == VSCODE


def test_missing_objects_on_the_path_are_created_and_one_line_objects_stay_one_line() -> None:
    assert set_member('{"a": {"b": 1}, "c": 2}', ("a", "d"), 3, comments=False) == '{"a": {"d": 3, "b": 1}, "c": 2}'
    out = set_member('{"c": 2}', ("mcpServers", "monad"), MONAD, comments=False)
    assert json.loads(out) == {"mcpServers": {"monad": MONAD}, "c": 2}
    assert set_member("", ("mcpServers", "monad"), {"x": 1}, comments=False) == \
        '{\n  "mcpServers": {\n    "monad": {\n      "x": 1\n    }\n  }\n}\n'


def test_of_duplicate_keys_the_last_counts_and_removal_takes_them_all() -> None:
    assert set_member('{"a": 1, "a": 2}', ("a",), 3, comments=False) == '{"a": 1, "a": 3}'
    assert set_member('{"a": 1, "a": 2}', ("a",), None, comments=False) == "{}"


@pytest.mark.parametrize(("text", "said"), [
    ('{"a": 1}', "`a` is not a JSON object; fix the file first"),
    ("[1, 2]", "the file's top level is not a JSON object"),
])
def test_a_path_through_something_else_is_refused(text: str, said: str) -> None:
    with pytest.raises(ConfigError, match=said):
        set_member(text, ("a", "b"), 1, comments=False)


@pytest.mark.parametrize(("comments", "where", "detail"), [
    (False, "`mcp.json:2:10`", "Expecting property name enclosed in double quotes"),
    (True, "`mcp.json:2:11`", 'Unexpected "\\n"'),  # json5 quotes the line break it met: kept on one line
])
def test_a_malformed_file_is_named_at_its_line_and_column_in_one_line(comments: bool, where: str,
                                                                      detail: str) -> None:
    with pytest.raises(ConfigError) as e:
        load('{\n  "a": 1,,\n}', source="mcp.json", comments=comments)
    message = str(e.value)
    assert message == f"{where}: malformed JSON: {detail}; fix the file (nothing was written)"
    assert "\n" not in message
