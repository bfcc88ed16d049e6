"""Local `$ref`/`$defs` resolution of tool input schemas: a pure function, no processes."""

from __future__ import annotations

from typing import Any

from monad_cli.tools.schema_refs import resolve_local

PYDANTIC = {  # what pydantic emits for `def f(n: Count, opts: Opts | None = None)`
    "type": "object",
    "$defs": {"Count": {"type": "integer", "minimum": 0},
              "Opts": {"type": "object", "properties": {"deep": {"type": "boolean"},
                                                        "child": {"$ref": "#/$defs/Opts"}}}},
    "properties": {"n": {"$ref": "#/$defs/Count", "description": "how many"},
                   "opts": {"anyOf": [{"$ref": "#/$defs/Opts"}, {"type": "null"}]}},
    "required": ["n"],
}


def test_local_refs_are_replaced_by_their_targets_with_siblings_kept() -> None:
    resolved = resolve_local(PYDANTIC)
    assert resolved["properties"]["n"] == {"type": "integer", "minimum": 0, "description": "how many"}
    opts = resolved["properties"]["opts"]["anyOf"][0]
    assert opts["properties"]["deep"] == {"type": "boolean"}
    # A recursive type is followed once; the inner occurrence stays a reference.
    assert opts["properties"]["child"] == {"$ref": "#/$defs/Opts"}
    assert PYDANTIC["properties"]["n"] == {"$ref": "#/$defs/Count", "description": "how many"}  # not mutated


def test_allof_with_one_ref_and_older_definitions() -> None:
    schema = {"definitions": {"Flag": {"type": "boolean"}},
              "properties": {"flag": {"allOf": [{"$ref": "#/definitions/Flag"}], "description": "a flag"}}}
    assert resolve_local(schema)["properties"]["flag"] == {"type": "boolean", "description": "a flag"}
    merged = resolve_local({"$defs": {"A": {"properties": {"a": {"type": "string"}}, "required": ["a"]}},
                            "allOf": [{"$ref": "#/$defs/A"}, {"properties": {"b": {"type": "integer"}},
                                                              "required": ["b"]}]})
    assert merged["properties"] == {"a": {"type": "string"}, "b": {"type": "integer"}}
    assert merged["required"] == ["a", "b"]


def test_pointer_escapes_and_array_indexes() -> None:
    schema: dict[str, Any] = {"$defs": {"a/b": {"type": "number"}, "m~n": {"type": "string"},
                                        "list": [{"type": "boolean"}], "My Type": {"type": "number"}},
                              "properties": {"x": {"$ref": "#/$defs/a~1b"}, "y": {"$ref": "#/$defs/m~0n"},
                                             "z": {"$ref": "#/$defs/list/0"}, "w": {"$ref": "#/$defs/My%20Type"}}}
    props = resolve_local(schema)["properties"]
    assert props["x"] == {"type": "number"} and props["y"] == {"type": "string"}
    assert props["z"] == {"type": "boolean"} and props["w"] == {"type": "number"}


def test_dangling_and_remote_refs_are_left_alone_and_never_fetched() -> None:
    schema = {"properties": {"d": {"$ref": "#/$defs/Missing"}, "r": {"$ref": "http://127.0.0.1:9/s.json"},
                             "o": {"$ref": "other.json#/X"}, "anchor": {"$ref": "#name"}}}
    assert resolve_local(schema) == schema
