"""`validate_arguments`' own verdict for plain schemas (tools/arguments.py `_plain_plan`): it
may only call valid what jsonschema calls valid, and everything else stays jsonschema's to
judge and word. Held here to jsonschema itself over a grid of schemas and arguments."""

from __future__ import annotations

import itertools
from typing import Any

import jsonschema
import pytest
from referencing import Registry

from monad_cli.core.errors import InvalidInput
from monad_cli.tools.arguments import _plain_plan, _plain_valid, validate_arguments

VALUES: list[Any] = [None, True, False, 0, 7, -3, 1.0, 2.5, "", "x", [], [1, "a"], {}, {"k": 1}]
TYPES: list[Any] = [None, "string", "integer", "number", "boolean", "object", "array", "null",
                    ["string", "null"], ["integer", "number"], ["boolean", "array"]]
DIALECTS: list[Any] = [None, "https://json-schema.org/draft/2020-12/schema", "http://json-schema.org/draft-07/schema#",
                       "http://json-schema.org/draft-04/schema#", "http://json-schema.org/draft-03/schema#"]


def schemas() -> list[dict[str, Any]]:
    out = []
    for (ta, tb), required, others, dialect in itertools.product(
            itertools.product(TYPES, TYPES[:4]), ([], ["a"], ["a", "b"], ["c"]), (None, True, False), DIALECTS):
        props: dict[str, Any] = {"a": {"description": "first"} | ({"type": ta} if ta is not None else {}),
                                 "b": {"type": tb} if tb is not None else {"title": "any"}}
        schema: dict[str, Any] = {"type": "object", "properties": props, "required": required}
        if others is not None:
            schema["additionalProperties"] = others
        if dialect is not None:
            schema["$schema"] = dialect
        out.append(schema)
    return out


def argument_sets() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{}]
    for a in VALUES:
        out.append({"a": a})
        out.append({"a": a, "b": "s"})
        out.append({"a": a, "z": 1})
    return out


def test_a_plain_schema_is_called_valid_only_when_jsonschema_calls_it_valid() -> None:
    said_valid = 0
    for schema in schemas():
        plan = _plain_plan(schema)
        validator = jsonschema.validators.validator_for(schema)(schema, registry=Registry())
        for arguments in argument_sets():
            valid = not any(validator.iter_errors(arguments))
            if plan is not None and _plain_valid(plan, arguments):
                assert valid, (schema, arguments)
                said_valid += 1
            elif plan is not None:  # 1.0 too: an integer to both (a new-user trial: `--arg a=1.0`)
                assert not valid, (schema, arguments)
    assert said_valid > 5_000  # the grid's common cases are decided here


@pytest.mark.parametrize("schema", [
    {"type": "object", "properties": {"a": {"type": "string", "minLength": 2}}},
    {"type": "object", "properties": {"a": {"enum": ["x"]}}},
    {"type": "object", "properties": {"a": {"type": "string"}}, "patternProperties": {"^z": {"type": "integer"}}},
    {"type": "object", "properties": {"a": {"$ref": "#/$defs/s"}}, "$defs": {"s": {"type": "string"}}},
    {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "integer"}},
    {"type": "object", "properties": {"a": {"type": "strin"}}},
    {"type": "object", "properties": {"a": {"type": "string"}}, "$schema": "http://json-schema.org/draft-03/schema#"},
    {"properties": {"a": {"type": "string"}}},
    {"type": "object", "properties": {"a": True}},
])
def test_any_other_schema_is_jsonschemas(schema: dict[str, Any]) -> None:
    assert _plain_plan(schema) is None


def test_what_is_not_valid_is_worded_by_jsonschema() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}}, "required": ["a"]}
    validate_arguments(schema, {"a": 1, "b": "x"}, "t__x")
    validate_arguments(schema, {"a": 1.0}, "t__x")  # an integer (JSON Schema 2020-12 §6.1.1)
    with pytest.raises(InvalidInput, match=r"tool `t__x`: argument `a`: true is not of type 'integer'"):
        validate_arguments(schema, {"a": True}, "t__x")
    with pytest.raises(InvalidInput, match=r"tool `t__x`: arguments: 'a' is a required property"):
        validate_arguments(schema, {"b": "x"}, "t__x")
