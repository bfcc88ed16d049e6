"""Exposed tool names: `<server>__<tool>`, the names agents see (docs/tools.md).

Rules, stdlib only so the CLI may import this module:
- every character outside `[A-Za-z0-9_-]` becomes `_` (tool names in the spec's SEP-986
  charset allow `.` and `/`; many clients accept only the narrower set);
- at most 64 characters: a longer name keeps its first 57 characters plus `_` and six hex
  digits of sha256 over `server NUL tool`, so it is deterministic and stable across restarts;
- two tools whose names map to the same exposed name are a collision: both are reported
  and both get the hash suffix, so neither shadows the other and the result does not
  depend on the order servers connect in;
- the reverse map keeps (server, original tool name) for the call: exposed names are never
  parsed back, because a server name may end in `_` (`a_` + `b` and `a` + `_b` both read
  `a___b`).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

SEPARATOR = "__"
MAX_LEN = 64
HASH_LEN = 6
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def short_hash(server: str, tool: str) -> str:
    return hashlib.sha256(f"{server}\0{tool}".encode()).hexdigest()[:HASH_LEN]


def base_name(server: str, tool: str) -> str:
    """The exposed name before collision handling: sanitized, at most 64 characters."""
    name = _UNSAFE.sub("_", f"{server}{SEPARATOR}{tool}")
    return name if len(name) <= MAX_LEN else _suffixed(server, tool)


def _suffixed(server: str, tool: str) -> str:
    name = _UNSAFE.sub("_", f"{server}{SEPARATOR}{tool}")
    return f"{name[:MAX_LEN - HASH_LEN - 1]}_{short_hash(server, tool)}"


@dataclass(frozen=True)
class ExposedTool:
    exposed: str
    server: str
    tool: str


@dataclass
class NameMap:
    """`by_exposed[name]` → ExposedTool; `collisions` lists every clash, both sides named."""

    by_exposed: dict[str, ExposedTool] = field(default_factory=dict)
    by_original: dict[tuple[str, str], str] = field(default_factory=dict)
    collisions: list[dict[str, object]] = field(default_factory=list)

    def exposed_name(self, server: str, tool: str) -> str | None:
        return self.by_original.get((server, tool))


def build_name_map(pairs: Iterable[tuple[str, str]]) -> NameMap:
    """Exposed names for every (server, tool) pair; the result depends only on the set."""
    groups: dict[str, list[tuple[str, str]]] = {}
    for server, tool in sorted(set(pairs)):
        groups.setdefault(base_name(server, tool), []).append((server, tool))
    out = NameMap()
    for name, members in sorted(groups.items()):
        if len(members) == 1:
            out.by_original[members[0]] = name
            continue
        renamed = []
        for server, tool in members:
            alt = _suffixed(server, tool)
            renamed.append({"server": server, "tool": tool, "exposed": alt})
            out.by_original[(server, tool)] = alt
        out.collisions.append({"name": name, "members": renamed})
    # A hash-suffixed name could in theory equal another tool's plain name; keep the first
    # (sorted) and report the other rather than overwrite silently.
    seen: dict[str, tuple[str, str]] = {}
    for (server, tool), name in sorted(out.by_original.items()):
        if name in seen:
            out.collisions.append({"name": name, "members": [
                {"server": seen[name][0], "tool": seen[name][1], "exposed": name},
                {"server": server, "tool": tool, "exposed": None}]})
            del out.by_original[(server, tool)]
        else:
            seen[name] = (server, tool)
    out.by_exposed = {n: ExposedTool(n, s, t) for n, (s, t) in seen.items()}
    return out


def describe_collision(collision: dict[str, object]) -> str:
    members = collision["members"]
    assert isinstance(members, list)
    sides = " and ".join(f"`{m['server']}`/`{m['tool']}`" for m in members)
    shown = ", ".join(f"`{m['exposed']}`" for m in members if m["exposed"])
    return f"tool name collision: {sides} both map to `{collision['name']}`; exposed as {shown}"


def inert_entries(server: str, entries: Sequence[str], tools: Iterable[tuple[str, str]]) -> list[str]:
    """The `trust.autoApproveTools` entries of `server` that match none of its advertised
    tools, given as (the server's own name, exposed name) pairs: an entry approves a tool
    when it is its exposed name or `SERVER__TOOL` with the tool's own name."""
    names = {n for own, exposed in tools for n in (exposed, f"{server}{SEPARATOR}{own}")}
    return [e for e in entries if e not in names]


def inert_entry_warning(entry: str, advertised: Sequence[str]) -> str:
    """What `monad mcp status NAME` and `monad mcp trust` say about an entry that matches nothing."""
    return (f"trust.autoApproveTools entry `{entry}` matches no advertised tool (it has no effect); "
            f"advertised: {', '.join(advertised) or 'none'}")
