"""Tool search in the gateway: `find_tool` and `call_tool` instead of the whole catalog
(docs/gateway.md "Tool search").

One `ToolSearch` per supervisor (`Gateway.search`), shared by every session: a
`monad_cli.search.ToolIndex` over the exposed tools (`ToolService.listing`, idle on-demand
servers' from their cached lists), built again when the name map, a server's definition,
features/tools.toml's globs or the session's tool globs change. A session keeps only what
its tools/list would show (`among`: never a disabled, filtered, hidden or unloaded deferred
tool). The index holds stemmed words and BM25F postings, never a schema: a hit's
description and `inputSchema` come from the server's last tools/list.

Token estimates (`estimate_tokens`) count JSON as UTF-8 bytes / 4, the usual rule of thumb
for English text and JSON in current tokenizers (bench/search/catalog/'s tools average ~350
tokens each by it: 20,000 tokens, `auto`'s default, is ~57 of them).
"""

from __future__ import annotations

import json
import logging
import weakref
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import anyio

from monad_cli.daemon.trust.listing import dump_tool

log = logging.getLogger("monad.gateway")

FIND_TOOL = "find_tool"
CALL_TOOL = "call_tool"
DEFAULT_LIMIT = 8
MAX_LIMIT = 50
MAX_QUERY_CHARS = 1000
BYTES_PER_TOKEN = 4
MAX_FOUND = 64  # found tools one agent's list keeps (the most recently found; clients cap lists at ~128)
SLICE = 250  # tools analysed or indexed between two yields to the event loop (~5-50 ms)


class FoundTools:
    """What find_tool returned, per agent: the found tools join that agent's tools/list. `key`
    is the agent's connection, held weakly (its end takes its found tools). At most
    `MAX_FOUND`, the latest; one its server no longer lists leaves at the next listing (and
    stays callable by name and through call_tool)."""

    def __init__(self) -> None:
        self._by: weakref.WeakKeyDictionary[Any, dict[str, None]] = weakref.WeakKeyDictionary()

    def add(self, key: Any, names: Iterable[str]) -> bool:
        """Remember `names` as found by `key` (the latest last); True when its list changed
        (a new name, or an old one dropped for the cap)."""
        found = self._by.setdefault(key, {})
        changed = False
        for name in names:
            changed |= found.pop(name, False) is False  # absent before: new
            found[name] = None  # (re)found: the most recent
        while len(found) > MAX_FOUND:
            del found[next(iter(found))]
            changed = True
        return changed

    def of(self, key: Any, listed: Iterable[str]) -> set[str]:
        """The found tools of `key` among `listed` (the names its list would show now); those
        no longer listed are forgotten."""
        found = self._by.get(key)
        if not found:
            return set()
        now = set(listed)
        for name in [n for n in found if n not in now]:
            del found[name]
        return set(found)


def estimate_tokens(value: Any) -> int:
    """About how many tokens `value` takes in a model's context: its compact JSON's UTF-8
    bytes / 4 (module docstring)."""
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()) // BYTES_PER_TOKEN


def find_tool_tool() -> dict[str, Any]:
    """The `find_tool` meta-tool (MCP spec, server/tools `Tool`), with its output schema."""
    hit = {"type": "object", "properties": {
        "name": {"type": "string", "description": "The name to call it by (with call_tool, or directly)."},
        "server": {"type": "string"}, "description": {"type": "string"}, "inputSchema": {"type": "object"}},
        "required": ["name", "server", "description", "inputSchema"]}
    return {
        "name": FIND_TOOL,
        "description": ("Find tools for a task among every connected server's tools. Describe the task in plain "
                        "words (\"what changed in my working tree\", \"post a message to a Slack channel\"); the "
                        "best matches come first, each with its name, server, description and input schema. "
                        "Then call one with call_tool (or directly by its name: found tools join the tool list)."),
        "inputSchema": {"type": "object", "properties": {
            "query": {"type": "string", "description": "The task, in plain words."},
            "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT,
                      "description": "How many tools to return at most."}},
            "required": ["query"], "additionalProperties": False},
        "outputSchema": {"type": "object", "properties": {"tools": {"type": "array", "items": hit}},
                         "required": ["tools"]},
        "annotations": {"title": "Find tools", "readOnlyHint": True, "openWorldHint": False},
    }


def call_tool_tool() -> dict[str, Any]:
    """The `call_tool` meta-tool: calls a tool by the name `find_tool` gave."""
    return {
        "name": CALL_TOOL,
        "description": ("Call a tool that find_tool returned, by its name, with its arguments (an object matching "
                        "the tool's inputSchema). Returns that tool's result. The call passes monad's approval "
                        "gate like any other."),
        "inputSchema": {"type": "object", "properties": {
            "name": {"type": "string", "description": "The tool's name, as find_tool gave it."},
            "arguments": {"type": "object", "description": "The tool's arguments."}},
            "required": ["name"], "additionalProperties": False},
        "annotations": {"title": "Call a found tool", "openWorldHint": True},
    }


@dataclass(frozen=True)
class _Row:
    """What the index reads of a `ToolService.listing` row."""

    name: str
    server: str
    tool: str
    description: str
    title: str
    params: tuple[str, ...]
    params_schema: dict[str, Any]  # name -> the parameter's schema, for its description
    deferred: bool
    condition: str | None

    @classmethod
    def of(cls, row: Mapping[str, Any]) -> _Row:
        props = (row.get("inputSchema") or {}).get("properties")
        props = props if isinstance(props, dict) else {}
        # Only each parameter's description is read: the rest of its schema is not kept.
        params = {k: {"description": v["description"]} if isinstance(v, dict) and isinstance(v.get("description"), str)
                  else {} for k, v in props.items()}
        title = row.get("title") or (row.get("annotations") or {}).get("title") or ""
        return cls(row["name"], row["server"], row["tool"], str(row.get("description") or ""), str(title),
                   tuple(props), params, bool(row.get("deferred")),
                   row.get("condition"))


@dataclass
class _Built:
    key: tuple[Any, ...]
    index: Any  # ToolIndex
    meta: dict[str, tuple[str, bool, str | None]]  # name -> (server, deferred, condition)


class ToolSearch:
    """The gateway's tool index (module docstring). `tools` is the supervisor's
    `ToolService`; `analyzed` keeps each tool's stemmed fields between rebuilds."""

    def __init__(self, tools: Any) -> None:
        self.tools = tools
        self._built: dict[tuple[tuple[str, ...], tuple[str, ...]], _Built] = {}
        self._words: dict[tuple[str, str], tuple[int, tuple[str, ...]]] = {}  # (server, tool) -> (digest, fields)
        self._lock = anyio.Lock()

    async def built(self, include: Sequence[str] = (), exclude: Sequence[str] = ()) -> _Built:
        """The index over the tools `listing(include, exclude)` gives, built again if what
        it depends on changed (one per set of session globs; at most 8 kept). One build at a
        time, on the loop in slices of `SLICE` tools (5,000 tools: ~1 s of CPU must not stall
        the supervisor); not in a thread, where the GIL made it 4× as long and glibc's arena
        kept ~25 MiB more RSS (bench/bench_search.py)."""
        slot = (tuple(include), tuple(exclude))
        built = self._built.get(slot)
        if built is not None and self.tools.same_listing(built.key, self.tools.listing_key()):
            return built
        async with self._lock:
            key = self.tools.listing_key()
            built = self._built.get(slot)
            if built is not None and self.tools.same_listing(built.key, key):
                return built
            # Only what the index reads, at once: the rows' schemas are let go before the build.
            rows = [_Row.of(r) for r in self.tools.listing(include=include, exclude=exclude)]
            built = await self._build(key, rows)
            if len(self._built) >= 8:
                self._built.clear()
            self._built[slot] = built
            log.debug("tool search: index of %d tools built", len(rows))
            return built

    async def _build(self, key: tuple[Any, ...], rows: list[_Row]) -> _Built:
        from monad_cli.search import ToolDoc, ToolIndex, analyze

        docs: list[tuple[str, tuple[str, ...]]] = []
        words: dict[tuple[str, str], tuple[int, tuple[str, ...]]] = {}
        for i, row in enumerate(rows):
            if i % SLICE == SLICE - 1:
                await anyio.sleep(0)
            # What the words come from, as a hash: a tool whose text changed is read again.
            digest = hash((row.description, row.title, row.params))
            known = self._words.get((row.server, row.tool))
            if known is not None and known[0] == digest:
                fields = known[1]
            else:
                fields = analyze(ToolDoc(name=row.name, server=row.server, tool=row.tool, description=row.description,
                                         title=row.title, input_schema={"properties": row.params_schema}))
            words[(row.server, row.tool)] = (digest, fields)
            docs.append((row.name, fields))
        self._words = words  # the last build's: what the next one most likely meets again
        meta = {r.name: (r.server, r.deferred, r.condition) for r in rows}
        steps = ToolIndex.steps(docs, SLICE)
        while True:
            try:
                next(steps)
            except StopIteration as done:
                return _Built(key, done.value, meta)
            await anyio.sleep(0)

    def describe(self, name: str) -> dict[str, Any] | None:
        """A hit's `{name, server, description, inputSchema}` from its server's last
        tools/list (None: no longer exposed)."""
        entry = self.tools.name_map().by_exposed.get(name)
        actor = self.tools.servers.get(entry.server) if entry is not None else None
        tool = next((t for t in actor.tools if t.name == entry.tool), None) if actor is not None else None
        if tool is None:
            return None
        wire = dump_tool(tool)
        return {"name": name, "server": entry.server, "description": wire.get("description", ""),
                "inputSchema": wire.get("inputSchema", {"type": "object"})}


def query_arguments(arguments: Mapping[str, Any]) -> tuple[str, int]:
    """`find_tool`'s (query, limit). Raises ValueError (one line, for the tool's error result)."""
    query = arguments.get("query")
    if not isinstance(query, str) or not query.strip():
        raise ValueError("find_tool: `query` must be a non-empty string: the task, in plain words")
    limit = arguments.get("limit", DEFAULT_LIMIT)
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise ValueError(f"find_tool: `limit` must be an integer from 1 to {MAX_LIMIT}")
    return query[:MAX_QUERY_CHARS], limit


__all__ = ["CALL_TOOL", "DEFAULT_LIMIT", "FIND_TOOL", "MAX_FOUND", "FoundTools", "ToolSearch",
           "call_tool_tool", "estimate_tokens", "find_tool_tool", "query_arguments"]
