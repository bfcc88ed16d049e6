"""Local references in a tool's `inputSchema`, resolved without fetching anything.

pydantic and FastMCP put a tool's nested types under `$defs` (older drafts: `definitions`)
and point at them with `{"$ref": "#/$defs/Name"}`, sometimes wrapped as `{"allOf": [{"$ref":
...}]}` beside a description (JSON Schema 2020-12 §8.2.3.1 `$ref`, §10.2.1.1 `allOf`).
`resolve_local` replaces each local reference by what it points to (RFC 6901 JSON Pointer),
so `--arg n=5` converts by the referenced type and the CLI and the Studio build forms from
the result. Pure: nothing is fetched or imported. A reference to another document, or a
dangling one, is left as it is; a cycle (a recursive type) is followed once, the inner
occurrence staying a `$ref`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote

MAX_DEPTH = 64  # a schema nested deeper than this is left as written from there on

_MISSING = object()


def ref_target(root: Any, ref: str) -> Any:
    """What the local reference `ref` ("#", "#/$defs/X") points to in `root`, or
    `_MISSING` when it is not local or points at nothing."""
    if not isinstance(ref, str) or not ref.startswith("#"):
        return _MISSING
    pointer = unquote(ref[1:])
    if pointer == "":
        return root
    if not pointer.startswith("/"):
        return _MISSING  # a plain-name fragment (`$anchor`): not followed
    node = root
    for raw in pointer[1:].split("/"):
        token = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            return _MISSING
    return node


def _merge_all_of(node: dict[str, Any]) -> dict[str, Any]:
    """`{"allOf": [A, B], ...}` with every branch an object schema → one merged schema
    (properties merged, `required` joined); anything else is kept as it is."""
    branches = node.get("allOf")
    if not isinstance(branches, list) or not branches or not all(isinstance(b, dict) for b in branches):
        return node
    if any("$ref" in b for b in branches):
        return node  # a branch left unresolved (remote, dangling, cyclic): keep the allOf
    merged: dict[str, Any] = {}
    properties: dict[str, Any] = {}
    required: list[str] = []
    for branch in [*branches, {k: v for k, v in node.items() if k != "allOf"}]:
        for key, value in branch.items():
            if key == "properties" and isinstance(value, dict):
                properties.update(value)
            elif key == "required" and isinstance(value, list):
                required.extend(r for r in value if r not in required)
            else:
                merged[key] = value
    if properties:
        merged["properties"] = properties
    if required:
        merged["required"] = required
    return merged


def resolve_local(schema: Any) -> Any:
    """A copy of `schema` with its local `$ref`s replaced (see the module docstring).
    Sibling keywords of a `$ref` are kept over the target's (a description beside it)."""

    def walk(node: Any, active: tuple[str, ...], depth: int) -> Any:
        if depth > MAX_DEPTH:
            return node
        if isinstance(node, list):
            return [walk(item, active, depth + 1) for item in node]
        if not isinstance(node, Mapping):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref not in active:
            target = ref_target(schema, ref)  # `_MISSING` for a remote or dangling one
            if isinstance(target, Mapping):
                siblings = {k: v for k, v in node.items() if k != "$ref"}
                return walk({**target, **siblings}, (*active, ref), depth + 1)
        out = {key: walk(value, active, depth + 1) for key, value in node.items()}
        return _merge_all_of(out)

    return walk(schema, (), 0)
