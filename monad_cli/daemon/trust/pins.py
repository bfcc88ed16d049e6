"""`pinnedToolHash`: sha256 over the canonical JSON of a server's whole tool set.

The hash covers every page of tools/list (MCP spec, server/utilities/pagination) and, per
tool, the fields that change what an agent is told or a call does (`PINNED_FIELDS`); tools
sorted by name, keys sorted, no whitespace, written `sha256:<hex>`. A server that swaps a
tool's description or schema after it was trusted (a "rug pull") no longer matches.
Stdlib only.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any

from monad_cli.core.messages import counted

PINNED_FIELDS = ("name", "title", "description", "inputSchema", "outputSchema", "annotations", "execution")


def canonical_tools(tools: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The pinned view of tools (wire shape, camelCase keys), sorted by name."""
    out = [{k: t[k] for k in PINNED_FIELDS if t.get(k) is not None} for t in tools]
    return sorted(out, key=lambda t: str(t.get("name")))


def tool_set_hash(tools: Iterable[Mapping[str, Any]]) -> str:
    body = json.dumps(canonical_tools(tools), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(body.encode()).hexdigest()


def norm_hash(digest: str) -> str:
    """`digest` as `sha256:<lowercase hex>`, whether it was written with the prefix or not."""
    return "sha256:" + digest.removeprefix("sha256:").lower()


def same_hash(a: str | None, b: str | None) -> bool:
    """Compare pins with or without the `sha256:` prefix."""
    return a is not None and b is not None and norm_hash(a) == norm_hash(b)


def _params(schema: Any) -> set[str]:
    props = (schema or {}).get("properties") or {}
    return set(props) if isinstance(props, Mapping) else set()


def describe_change(old: Iterable[Mapping[str, Any]] | None, new: Iterable[Mapping[str, Any]]) -> str:
    """What changed between two tool sets, one line: added/removed tools, changed fields.

    `old=None` (the pinned set was never seen by this journal) says so instead of a diff.
    """
    change = tool_set_change(old, new)
    if old is None:
        return f"the pinned tool set is unknown to this journal; now {counted(len(change['added']), 'tool')} advertised"
    parts = [f"{verb} " + ", ".join(f"`{t['name']}`" for t in change[verb]) for verb in ("added", "removed")
             if change[verb]]
    for tool in change["changed"]:
        detail = ", ".join(f["field"] for f in tool["fields"])
        schema = next((f for f in tool["fields"] if f["field"] == "inputSchema"), None)
        if schema is not None:
            was, now = _params(schema["old"]), _params(schema["new"])
            if was != now:
                detail += (f" (parameters removed: {', '.join(sorted(was - now)) or '-'}; "
                           f"added: {', '.join(sorted(now - was)) or '-'})")
        parts.append(f"`{tool['name']}` changed {detail}")
    return "; ".join(parts) or "no visible difference"


def tool_set_change(old: Iterable[Mapping[str, Any]] | None, new: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """What changed between the pinned tool set `old` and the advertised set `new`, tool by
    tool, for a person to review before a pin accepts it (`monad mcp pin`, the Studio).

    Returns `{pinnedKnown, added, removed, changed}`: `added`/`removed` are whole tools in
    the pinned view (`canonical_tools`), by name; `changed` is `[{name, fields: [{field, old,
    new}]}]` with each differing field of `PINNED_FIELDS` and its two values as the server
    sent them (None: absent on that side). `old=None` (the pinned set was never seen by this
    journal: a pin written by hand or in another home) gives `pinnedKnown: false` and every
    new tool under `added`. The values are the server's own text: the caller scrubs them
    and escapes them for its screen.
    """
    new_by = {str(t["name"]): t for t in canonical_tools(new)}
    old_by = {str(t["name"]): t for t in canonical_tools(old)} if old is not None else {}
    changed = []
    for name in sorted(set(old_by) & set(new_by)):
        a, b = old_by[name], new_by[name]
        fields = [{"field": f, "old": a.get(f), "new": b.get(f)} for f in PINNED_FIELDS if a.get(f) != b.get(f)]
        if fields:
            changed.append({"name": name, "fields": fields})
    return {"pinnedKnown": old is not None,
            "added": [new_by[n] for n in sorted(set(new_by) - set(old_by))],
            "removed": [old_by[n] for n in sorted(set(old_by) - set(new_by))],
            "changed": changed}
