"""Queries over the journal's `tool_calls`, `approvals` ("always", keyed to server,
definition hash and tool, so an edited command or URL asks again), `tool_sets`,
`vetted_tool_sets` and `server_lists` (what each table holds: `journal/schema.py`).

Every write stamps the origin columns and its `rev` and wakes the fleet link
(`Journal.write`); in a fleet the row is then queued locally until the link ships it
(docs/fleet.md). Every query is plain SQL on the journal's own connections (`Journal.pool`).
"""

from __future__ import annotations

import hashlib
import json
import time
from typing import Any, NamedTuple

from monad_cli.journal import reader
from monad_cli.journal.db import Journal

# `json.dumps` with these options builds an encoder per call; one kept writes the same text.
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), default=str)


def args_digest(arguments: Any) -> str:
    """`sha256:` + 16 hex of the canonical JSON arguments: comparable, never the values."""
    body = _CANONICAL.encode(arguments or {})
    return "sha256:" + hashlib.sha256(body.encode()).hexdigest()[:16]


def start_call(j: Journal, *, server: str, tool: str, exposed: str, arguments: Any, via: str,
               decision: str | None = None, decided_by: str | None = None) -> int:
    """The intent row (outcome `running`), committed before the call; returns its id. It holds
    the approval `decision` and who made it, so a call the supervisor's death interrupts keeps
    them (`interrupt_running` changes only the outcome). In a fleet the row is only queued
    here: the link ships it from its own thread, so no call waits on the network. The id is
    taken first (`Journal.next_id`), so a row the disk cannot take now is held with its id and
    its outcome follows it (`Journal` "held")."""
    row_id = j.next_id("tool_calls")
    j.write(f"INSERT INTO tool_calls (id, ts, server, tool, exposed, args_digest, via, outcome, decision, "
            f"decided_by, uid, host, home, rev) VALUES (?, ?, ?, ?, ?, ?, ?, 'running', ?, ?, ?, ?, ?, "
            f"{j.rev_sql('tool_calls')})",
            (row_id, time.time(), server, tool, exposed, args_digest(arguments), via, decision, decided_by,
             *j.origin()))
    return row_id


def finish_call(j: Journal, call_id: int, *, outcome: str, decision: str | None = None,
                decided_by: str | None = None, duration_ms: float | None = None, error: str | None = None,
                defer: bool = False) -> None:
    """The outcome of the call `call_id`, written after the side effect. `defer`: queued for
    the journal's next write transaction (the next call's intent, or `Journal.flush`, which
    the supervisor runs within ~20 ms), so the answer need not wait for a commit. Its `rev`
    is taken when the statement runs, inside that transaction, so a deferred row is ordered
    by its commit like any other (`Journal.rev_sql`)."""
    sql = (f"UPDATE tool_calls SET outcome = ?, decision = ?, decided_by = ?, duration_ms = ?, error = ?, "
           f"rev = {j.rev_sql('tool_calls')} WHERE id = ?")
    params = (outcome, decision, decided_by, duration_ms, j.scrub(error)[:500] if error else None, call_id)
    if defer:
        j.defer(sql, params)
    else:
        j.write(sql, params)


def interrupt_running(j: Journal) -> int:
    """Calls left `running` by a supervisor that died become `interrupted` (never retried:
    whether the server acted on them is unknown); returns how many."""
    ids = [row[0] for row in j.pool.read("SELECT id FROM tool_calls WHERE outcome = 'running'")]
    for call_id in ids:  # one write each: every row gets its own rev
        j.write(f"UPDATE tool_calls SET outcome = 'interrupted', error = 'the supervisor stopped during the call', "
                f"rev = {j.rev_sql('tool_calls')} WHERE id = ? AND outcome = 'running'", (call_id,))
    return len(ids)


def calls(j: Journal, *, server: str | None = None, since: float | None = None, host: str | None = None,
          limit: int = 200) -> list[dict[str, Any]]:
    """The newest `limit` tool calls, oldest first (`journal.reader.calls`), outcomes this
    process still holds in its queue included."""
    j.flush()
    return reader.calls(j.pool, server=server, since=since, host=host, limit=limit)


class Approval(NamedTuple):
    """An `approvals` row, as a supervisor's start reads them."""

    server: str
    definition_hash: str
    tool: str
    decided_by: str
    host: str | None
    home: str | None
    tool_hash: str | None = None


class Vetted(NamedTuple):
    """A `vetted_tool_sets` row, as a supervisor's start reads them."""

    server: str
    definition_hash: str
    hash: str
    decided_by: str
    host: str | None
    home: str | None


def all_always(j: Journal) -> list[Approval]:
    rows = j.pool.read("SELECT server, definition_hash, tool, decided_by, host, home, tool_hash FROM approvals "
                       "ORDER BY id")
    return [Approval(*row) for row in rows]


def add_always(j: Journal, server: str, definition_hash: str, tool: str, decided_by: str,
               tool_hash: str | None = None) -> None:
    """An "always" approval of `tool` as `tool_hash` defines it (a later row for the same
    tool, approved again after it changed, wins when the rows are read in order)."""
    if j.pool.read("SELECT 1 FROM approvals WHERE server = ? AND definition_hash = ? AND tool = ? "
                   "AND tool_hash IS ? LIMIT 1", (server, definition_hash, tool, tool_hash)):
        return
    j.write(f"INSERT INTO approvals (server, definition_hash, tool, created, decided_by, uid, host, home, rev, "
            f"tool_hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, {j.rev_sql('approvals')}, ?)",
            (server, definition_hash, tool, time.time(), decided_by, *j.origin(), tool_hash))


def bind_always(j: Journal, server: str, definition_hash: str, tool: str, tool_hash: str) -> None:
    """An "always" row written before tools were hashed binds to the definition it first met."""
    j.write("UPDATE approvals SET tool_hash = ? WHERE server = ? AND definition_hash = ? AND tool = ? "
            "AND tool_hash IS NULL", (tool_hash, server, definition_hash, tool))


def remove_always(j: Journal, server: str, tool: str | None = None) -> None:
    """Forget `server`'s "always" approvals of `tool` (of every tool when None)."""
    if tool is None:
        j.write("DELETE FROM approvals WHERE server = ?", (server,))
    else:
        j.write("DELETE FROM approvals WHERE server = ? AND tool = ?", (server, tool))


def all_vetted(j: Journal) -> list[Vetted]:
    rows = j.pool.read("SELECT server, definition_hash, hash, decided_by, host, home FROM vetted_tool_sets "
                       "ORDER BY id")
    return [Vetted(*row) for row in rows]


def add_vetted(j: Journal, server: str, definition_hash: str, digest: str, decided_by: str) -> None:
    """Record that `digest` was accepted for `server` as defined by `definition_hash` (once)."""
    if j.pool.read("SELECT 1 FROM vetted_tool_sets WHERE server = ? AND definition_hash = ? AND hash = ? LIMIT 1",
                   (server, definition_hash, digest)):
        return
    j.write(f"INSERT INTO vetted_tool_sets (server, definition_hash, hash, created, decided_by, uid, host, home, "
            f"rev) VALUES (?, ?, ?, ?, ?, ?, ?, ?, {j.rev_sql('vetted_tool_sets')})",
            (server, definition_hash, digest, time.time(), decided_by, *j.origin()))


def remember_tool_set(j: Journal, server: str, digest: str, canonical: list[dict[str, Any]]) -> None:
    """Record (or mark seen again) a tool set a server advertised; every connect does it."""
    j.write("INSERT INTO tool_sets (server, hash, tools, seen) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (server, hash) DO UPDATE SET seen = excluded.seen",
            (server, digest, json.dumps(canonical), time.time()))


def tool_set(j: Journal, server: str, digest: str) -> list[dict[str, Any]] | None:
    """The tool set `server` advertised with hash `digest` (canonical view), if it was seen."""
    rows = j.pool.read("SELECT tools FROM tool_sets WHERE server = ? AND hash = ?", (server, digest))
    return json.loads(rows[0][0]) if rows else None


ITEM_KINDS = ("prompts", "resources", "templates")


class CachedLists(NamedTuple):
    """A `server_lists` row: the tools in wire shape, their hash, when they were listed, and
    the prompts, resources and resource templates in wire shape (`items`: kind -> list; a
    kind missing: not learned from this definition yet)."""

    definition_hash: str
    tool_hash: str
    tools: list[dict[str, Any]]
    listed_at: float
    items: dict[str, list[dict[str, Any]]]

    @property
    def complete(self) -> bool:
        """Every list is known (tools and `ITEM_KINDS`)."""
        return all(kind in self.items for kind in ITEM_KINDS)


def save_lists(j: Journal, server: str, definition_hash: str, tool_hash: str, tools: list[dict[str, Any]]) -> None:
    """Keep `server`'s lists (every connect and re-listing); replaces the previous row. No
    secret is in them: a server's lists passed the supervisor's scrubber as they arrived
    (daemon/scrubber.py). The other lists (`save_items`) are kept while the definition stays
    the same."""
    keep = "CASE WHEN server_lists.definition_hash = excluded.definition_hash THEN server_lists.{0} ELSE NULL END"
    j.write("INSERT INTO server_lists (server, definition_hash, tool_hash, tools, listed_at) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT (server) DO UPDATE SET "
            + "".join(f"{kind} = {keep.format(kind)}, " for kind in ITEM_KINDS)
            + "definition_hash = excluded.definition_hash, "
            "tool_hash = excluded.tool_hash, tools = excluded.tools, listed_at = excluded.listed_at",
            (server, definition_hash, tool_hash, json.dumps(tools), time.time()))


def save_items(j: Journal, server: str, items: dict[str, list[dict[str, Any]]]) -> None:
    """Keep `server`'s prompts, resources and templates (`items`: kind in `ITEM_KINDS` ->
    wire dumps) beside its tools (`save_lists` first: no row, nothing kept)."""
    kinds = [k for k in ITEM_KINDS if k in items]
    if kinds:
        j.write(f"UPDATE server_lists SET {', '.join(f'{k} = ?' for k in kinds)} WHERE server = ?",
                (*(json.dumps(items[k]) for k in kinds), server))


def cached_lists(j: Journal, server: str) -> CachedLists | None:
    """`server`'s last lists, or None if it never listed (plain SQL: read while it starts)."""
    rows = j.pool.read("SELECT definition_hash, tool_hash, tools, listed_at, prompts, resources, templates "
                       "FROM server_lists WHERE server = ?", (server,))
    if not rows:
        return None
    definition_hash, tool_hash, tools, listed_at, *others = rows[0]
    try:
        listed = json.loads(tools)
        items = {kind: json.loads(text) for kind, text in zip(ITEM_KINDS, others, strict=True) if text is not None}
    except ValueError:  # not JSON (a row written by hand): learn them again
        return None
    return CachedLists(definition_hash, tool_hash, listed, listed_at, items)
