"""Which tools the gateway (`monad mcp serve`) shows a client, and `load_tools` (pure).

The gateway keeps one `LoadedTools` per client session and asks this module, on every
`tools/list` and `tools/call`, what is visible. Inputs are plain data, so the rules are
tested without a server: `tools_by_server` (server → its exposed tool names, in list
order); the server filter (`--include-mcps`/`--exclude-mcps`: a filtered-out server shows
nothing); conditions (server → its `condition` text, evaluated against `--fact k=v` and the
environment on every call: docs/filtering.md "Conditions"); and deferral (a server with
`deferred = true`, or exposed names matching a `deferred` glob of `features/tools.toml`).

Deferred tools are left out of the list until `load_tools` loads them (`servers`: names,
`tools`: globs over exposed names), which then sends `notifications/tools/list_changed`
(MCP spec, server/tools "List Changed Notification"). Loads are remembered as asked, so a
tool that appears later on a loaded server, or matches a loaded glob, is visible too.
Deferral only trims the list: a deferred tool called by name without loading it is allowed,
unless a condition or filter hides its server.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from functools import lru_cache, partial
from typing import Any

from monad_cli.config.conditions import ConditionError, Node, evaluate, parse
from monad_cli.core.filters import ServerFilter
from monad_cli.core.messages import counted
from monad_cli.core.tool_filters import is_deferred

LOAD_TOOLS = "load_tools"


@dataclass(frozen=True)
class LoadedTools:
    """What a client session loaded so far: server names and tool-name globs."""

    servers: frozenset[str] = frozenset()
    globs: tuple[str, ...] = ()


@dataclass(frozen=True)
class LoadResult:
    """Outcome of one `load_tools` call. `changed` → send `notifications/tools/list_changed`."""

    loaded: LoadedTools
    added: list[str] = field(default_factory=list)  # newly visible exposed names, list order
    unknown_servers: list[str] = field(default_factory=list)
    unmatched_globs: list[str] = field(default_factory=list)
    hidden: list[str] = field(default_factory=list)  # servers asked for whose condition fails / filtered

    @property
    def changed(self) -> bool:
        return bool(self.added)

    def summary(self) -> str:
        """One line for the `load_tools` tool result text."""
        parts = [f"loaded {counted(len(self.added), 'tool')}: {', '.join(self.added)}" if self.added
                 else "no new tools loaded"]
        if self.unknown_servers:
            parts.append(f"unknown server(s): {', '.join(self.unknown_servers)}")
        if self.unmatched_globs:
            parts.append(f"no tool matches: {', '.join(self.unmatched_globs)}")
        if self.hidden:
            parts.append(f"not available now (condition or filter): {', '.join(self.hidden)}")
        return "; ".join(parts)


@lru_cache(maxsize=256)
def _parsed(text: str) -> Node | None:
    try:
        return parse(text)
    except ConditionError:
        return None  # config loading rejects these; if one slips through, hide (fail closed)


def server_available(server: str, *, conditions: Mapping[str, str | None], facts: Mapping[str, str],
                     environ: Mapping[str, str], server_filter: ServerFilter | None = None) -> bool:
    """Whether `server`'s tools may be shown/called now (filter and condition only)."""
    if server_filter is not None and not server_filter.allows(server):
        return False
    text = conditions.get(server)
    if not text:
        return True
    node = _parsed(text)
    return node is not None and evaluate(node, facts=facts, environ=environ)


def visible_tools(tools_by_server: Mapping[str, Sequence[str]], *, deferred_servers: Collection[str],
                  deferred_globs: Sequence[str], loaded: LoadedTools, conditions: Mapping[str, str | None],
                  facts: Mapping[str, str], environ: Mapping[str, str],
                  server_filter: ServerFilter | None = None) -> list[str]:
    """Exposed tool names to answer `tools/list` with, in `tools_by_server` order (without
    the `load_tools` meta-tool: see `offers_load_tools`)."""
    out: list[str] = []
    for server, tools in tools_by_server.items():
        if not server_available(server, conditions=conditions, facts=facts, environ=environ,
                                server_filter=server_filter):
            continue
        for tool in tools:
            if (not is_deferred(tool, server, deferred_servers=deferred_servers, deferred_globs=deferred_globs)
                    or server in loaded.servers or any(fnmatchcase(tool, g) for g in loaded.globs)):
                out.append(tool)
    return out


def offers_load_tools(tools_by_server: Mapping[str, Sequence[str]], *, deferred_servers: Collection[str],
                      deferred_globs: Sequence[str]) -> bool:
    """Whether the gateway lists `load_tools`: when deferral is configured for any server
    or tool it serves (kept listed once everything is loaded, so the list stays stable)."""
    return any(is_deferred(t, s, deferred_servers=deferred_servers, deferred_globs=deferred_globs)
               for s, tools in tools_by_server.items() for t in tools) or any(
        s in deferred_servers for s in tools_by_server)


def load_tools(loaded: LoadedTools, *, servers: Sequence[str] = (), tools: Sequence[str] = (),
               tools_by_server: Mapping[str, Sequence[str]], deferred_servers: Collection[str],
               deferred_globs: Sequence[str], conditions: Mapping[str, str | None], facts: Mapping[str, str],
               environ: Mapping[str, str], server_filter: ServerFilter | None = None) -> LoadResult:
    """Apply one `load_tools(servers=[...], tools=[globs])` call; returns the new state.

    Raises `ValueError` (one line, for the tool's error result) when both lists are empty
    or an item is not a non-empty string. Unknown servers, globs matching no tool, and
    servers hidden by a condition or filter are reported in the result, not raised.
    """
    servers, tools = _strings(servers, "servers"), _strings(tools, "tools")
    if not servers and not tools:
        raise ValueError("give `servers` (server names) and/or `tools` (glob patterns over tool names)")

    available = partial(server_available, conditions=conditions, facts=facts, environ=environ,
                        server_filter=server_filter)
    unknown = [s for s in servers if s not in tools_by_server]
    hidden = [s for s in servers if s in tools_by_server and not available(s)]
    all_tools = [(s, t) for s, ts in tools_by_server.items() for t in ts]
    unmatched = [g for g in tools if not any(fnmatchcase(t, g) for _, t in all_tools)]
    for g in tools:
        for s in dict.fromkeys(s for s, t in all_tools if fnmatchcase(t, g)):
            if not available(s) and s not in hidden:
                hidden.append(s)
    new = LoadedTools(servers=loaded.servers | {s for s in servers if s in tools_by_server},
                      globs=tuple(dict.fromkeys([*loaded.globs, *(g for g in tools if g not in unmatched)])))
    common: dict[str, Any] = dict(deferred_servers=deferred_servers, deferred_globs=deferred_globs,
                                  conditions=conditions, facts=facts, environ=environ, server_filter=server_filter)
    before = set(visible_tools(tools_by_server, loaded=loaded, **common))
    added = [t for t in visible_tools(tools_by_server, loaded=new, **common) if t not in before]
    return LoadResult(loaded=new, added=added, unknown_servers=unknown, unmatched_globs=unmatched, hidden=hidden)


def check_call(tool: str, tools_by_server: Mapping[str, Sequence[str]], *, conditions: Mapping[str, str | None],
               facts: Mapping[str, str], environ: Mapping[str, str],
               server_filter: ServerFilter | None = None) -> str | None:
    """None if a `tools/call` of exposed name `tool` may go on, else the one-line reason to
    return as the error. Conditions are re-evaluated here, on every call."""
    for server, tools in tools_by_server.items():
        if tool in tools:
            if server_filter is not None and not server_filter.allows(server):
                return f"tool `{tool}` is not available: server `{server}` is filtered out"
            if not server_available(server, conditions=conditions, facts=facts, environ=environ):
                return (f"tool `{tool}` is not available now: the condition of server `{server}` "
                        f"(`{conditions.get(server)}`) does not hold")
            return None
    return f"unknown tool `{tool}` (see tools/list)"


def load_tools_tool(tools_by_server: Mapping[str, Sequence[str]], *, deferred_servers: Collection[str],
                    deferred_globs: Sequence[str]) -> dict[str, Any]:
    """The `load_tools` meta-tool as an MCP Tool object (name, description, inputSchema);
    the description names the deferred servers and counts so a model knows what to ask for."""
    counts: dict[str, int] = {}
    for server, tools in tools_by_server.items():
        n = sum(1 for t in tools if is_deferred(t, server, deferred_servers=deferred_servers,
                                                 deferred_globs=deferred_globs))
        if n or server in deferred_servers:
            counts[server] = n
    listing = ", ".join(f"{s} ({n} tool{'s' if n != 1 else ''})" for s, n in counts.items()) or "none"
    return {
        "name": LOAD_TOOLS,
        "description": ("Load deferred tools into the tool list. Pass `servers` (server names) and/or "
                        "`tools` (glob patterns over tool names such as `github__create_*`). "
                        f"Deferred now: {listing}."),
        "inputSchema": {
            "type": "object",
            "properties": {
                "servers": {"type": "array", "items": {"type": "string"},
                            "description": "Load every tool of these servers."},
                "tools": {"type": "array", "items": {"type": "string"},
                          "description": "Load the tools whose names match these glob patterns."},
            },
            "additionalProperties": False,
        },
    }


def _strings(values: Any, name: str) -> list[str]:
    if values is None:
        return []
    if isinstance(values, str) or not isinstance(values, Sequence):
        raise ValueError(f"`{name}` must be a list of strings")
    if not all(isinstance(v, str) and v.strip() for v in values):
        raise ValueError(f"`{name}` must contain only non-empty strings")
    return [v.strip() for v in values]


__all__ = [
    "LOAD_TOOLS",
    "LoadResult",
    "LoadedTools",
    "check_call",
    "is_deferred",
    "load_tools",
    "load_tools_tool",
    "offers_load_tools",
    "server_available",
    "visible_tools",
]
