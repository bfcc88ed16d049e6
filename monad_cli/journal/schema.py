"""The journal's schema, written once: every migration, in order, as the SQL it runs (llm's
pattern: named, recorded once). The same list makes a new SQLite file, upgrades an old one,
and migrates a fleet's shared PostgreSQL journal (`journal.fleet`, under an advisory lock).

Tables (docs/supervisor.md "Journal", docs/fleet.md):

- `migrations`: the names applied, each once;
- `events`: state changes, config errors, supervisor and task events;
- `tool_calls`: one row per call, written before the call (outcome `running`) and updated
  after it, so a crash between the two leaves a visible gap; arguments only as a digest;
- `approvals`: "always" approvals, keyed to (server, definition hash, tool);
- `tool_sets`: every tool set a server advertised, by hash (a pin mismatch says what changed);
- `tasks`: one row per tool call started through the task manager (`TaskRow`);
- `server_lists`: each server's last lists, served while an on-demand server is stopped;
- `vetted_tool_sets`: tool sets a pin accepted, per definition hash, shared by a fleet.

Shipped rows (`SHIPPED_TABLES`) end with the origin columns: `uid` (the row's identity
across journals: the key of every upsert), `host` and `home` (who wrote it) and `rev` (in a
fleet, one more than the table's highest on every write, so rev order is commit order; 0
for rows never shipped).

A released migration is never renamed, reordered or edited (a journal that recorded it
would not run the new text): a change is a new entry at the end. The statements speak the
SQL that SQLite and PostgreSQL share; `{serial}` is the one word they spell differently (an
id a new row gets by itself). A migration for one of them names it (`{dialect: statements}`):
the other records its name with nothing to run. Standard library only: a supervisor opens its journal with
`sqlite3` alone (docs/supervisor.md "Start").
"""

from __future__ import annotations

import time
from dataclasses import dataclass, fields
from typing import Any, Protocol

SHIPPED_TABLES = ("events", "tool_calls", "approvals", "vetted_tool_sets")
# The word for "an integer id a new row gets by itself": SQLite's rowid alias, PostgreSQL's sequence.
SERIAL = {"sqlite": "INTEGER", "postgresql": "SERIAL"}


def _origin(table: str) -> tuple[str, ...]:
    """The origin columns and their indexes (uid: the upsert's key; rev: "what is still
    queued" above the link's cursor; host: `monad journal --host`)."""
    return (*(f"ALTER TABLE {table} ADD COLUMN {c}" for c in ("uid VARCHAR", "host VARCHAR", "home VARCHAR",
                                                             "rev INTEGER NOT NULL DEFAULT 0")),
            f"CREATE UNIQUE INDEX ix_{table}_uid ON {table} (uid)", f"CREATE INDEX ix_{table}_rev ON {table} (rev)",
            f"CREATE INDEX ix_{table}_host ON {table} (host)")


MIGRATIONS: tuple[tuple[str, tuple[str, ...] | dict[str, tuple[str, ...]]], ...] = (
    ("0001_events", (
        "CREATE TABLE events (id {serial} NOT NULL, ts FLOAT NOT NULL, server VARCHAR, kind VARCHAR NOT NULL, "
        "state VARCHAR, reason VARCHAR, detail VARCHAR, PRIMARY KEY (id))",
        "CREATE INDEX ix_events_ts ON events (ts)", "CREATE INDEX ix_events_server ON events (server)")),
    ("0002_tool_calls_approvals_tool_sets", (
        "CREATE TABLE tool_calls (id {serial} NOT NULL, ts FLOAT NOT NULL, server VARCHAR NOT NULL, "
        "tool VARCHAR NOT NULL, exposed VARCHAR NOT NULL, args_digest VARCHAR NOT NULL, via VARCHAR NOT NULL, "
        "decision VARCHAR, decided_by VARCHAR, outcome VARCHAR NOT NULL, duration_ms FLOAT, error VARCHAR, "
        "PRIMARY KEY (id))",
        "CREATE INDEX ix_tool_calls_ts ON tool_calls (ts)", "CREATE INDEX ix_tool_calls_server ON tool_calls (server)",
        "CREATE TABLE approvals (id {serial} NOT NULL, server VARCHAR NOT NULL, definition_hash VARCHAR NOT NULL, "
        "tool VARCHAR NOT NULL, created FLOAT NOT NULL, decided_by VARCHAR NOT NULL, PRIMARY KEY (id))",
        "CREATE INDEX ix_approvals_server ON approvals (server)",
        "CREATE TABLE tool_sets (server VARCHAR NOT NULL, hash VARCHAR NOT NULL, tools VARCHAR NOT NULL, "
        "seen FLOAT NOT NULL, PRIMARY KEY (server, hash))")),
    # Numbered apart from the core tables when tasks were a separate feature; kept as released.
    ("0100_tasks", (
        "CREATE TABLE tasks (id VARCHAR NOT NULL, server VARCHAR NOT NULL, tool VARCHAR NOT NULL, "
        "arguments VARCHAR, correlation VARCHAR, task_id VARCHAR, state VARCHAR NOT NULL, status_message VARCHAR, "
        "created_at FLOAT NOT NULL, updated_at FLOAT NOT NULL, terminal_at FLOAT, server_created_at VARCHAR, "
        "ttl_ms INTEGER, poll_interval_ms INTEGER, result VARCHAR, error VARCHAR, input_requests VARCHAR, "
        "answered_keys VARCHAR, delivery_pending BOOLEAN NOT NULL, pending_kind VARCHAR, "
        "deliveries INTEGER NOT NULL, delivered_at FLOAT, cancel_requested BOOLEAN NOT NULL, "
        "recoveries INTEGER NOT NULL, retries INTEGER NOT NULL, submitted BOOLEAN NOT NULL, "
        "adopted BOOLEAN NOT NULL, PRIMARY KEY (id))",
        *(f"CREATE INDEX ix_tasks_{c} ON tasks ({c})"
          for c in ("delivery_pending", "task_id", "terminal_at", "state", "server", "created_at")))),
    # Rows already there stay local: `rev = 0`, no uid (never shipped).
    ("0200_origin_columns", (*_origin("events"), *_origin("tool_calls"), *_origin("approvals"))),
    ("0201_vetted_tool_sets", (
        "CREATE TABLE vetted_tool_sets (id {serial} NOT NULL, server VARCHAR NOT NULL, "
        "definition_hash VARCHAR NOT NULL, hash VARCHAR NOT NULL, created FLOAT NOT NULL, "
        "decided_by VARCHAR NOT NULL, PRIMARY KEY (id))",
        "CREATE INDEX ix_vetted_tool_sets_server ON vetted_tool_sets (server)", *_origin("vetted_tool_sets"))),
    # A supervisor's start finds the calls its predecessor left `running` (`tools.interrupt_running`):
    # with a million rows a full scan costs ~0.1 s; this partial index holds only those few.
    ("0300_running_calls_index", ("CREATE INDEX ix_tool_calls_running ON tool_calls (id) WHERE outcome = 'running'",)),
    ("0301_server_lists", (
        "CREATE TABLE server_lists (server VARCHAR NOT NULL, definition_hash VARCHAR NOT NULL, "
        "tool_hash VARCHAR NOT NULL, tools VARCHAR NOT NULL, listed_at FLOAT NOT NULL, PRIMARY KEY (server))",)),
    ("0302_server_lists_items", tuple(f"ALTER TABLE server_lists ADD COLUMN {c} VARCHAR"
                                      for c in ("prompts", "resources", "templates"))),
    # The tool definition an "always" approval approved (gate.tool_definition_hash); NULL in a
    # row written before tools were hashed, bound by the gate on first use.
    ("0303_approvals_tool_hash", ("ALTER TABLE approvals ADD COLUMN tool_hash VARCHAR",)),
    # In the local file the origin indexes of the rows a fleet only ships (never pulls back by
    # uid, never filters by host) cost every tool call's intent row three of its seven B-tree
    # writes; the shared journal keeps them all, a fleet member its `rev` ones (`FLEET_INDEXES`).
    ("0304_local_origin_indexes", {"sqlite": tuple(f"DROP INDEX IF EXISTS ix_{table}_{column}"
                                                   for table in ("tool_calls", "events")
                                                   for column in ("uid", "rev", "host"))}),
)
# What a fleet member's local file needs besides (`Journal` makes them when it opens in a
# fleet): the link finds unshipped rows by `rev`, and each write takes the next `rev` from it.
FLEET_INDEXES = tuple(f"CREATE INDEX IF NOT EXISTS ix_{table}_rev ON {table} (rev)"
                      for table in ("tool_calls", "events"))
_MIGRATIONS_TABLE = ("CREATE TABLE IF NOT EXISTS migrations (name VARCHAR NOT NULL, applied_at FLOAT NOT NULL, "
                     "PRIMARY KEY (name))")


class Cursor(Protocol):
    """What `migrate` needs of a DB-API cursor (`?` placeholders: `journal.pg` translates)."""

    def execute(self, sql: str, params: Any = ...) -> Any: ...

    def fetchall(self) -> list[Any]: ...


def migrate(cur: Cursor, dialect: str) -> list[str]:
    """Apply the migrations not yet recorded, in list order, inside the caller's transaction
    (SQLite: `BEGIN IMMEDIATE`, so a second opener waits and then finds them recorded;
    PostgreSQL: after `pg_advisory_xact_lock`); returns the names applied."""
    cur.execute(_MIGRATIONS_TABLE)
    cur.execute("SELECT name FROM migrations")
    done = {row[0] for row in cur.fetchall()}
    applied = []
    for name, statements in MIGRATIONS:
        if name in done:
            continue
        for statement in statements.get(dialect, ()) if isinstance(statements, dict) else statements:
            cur.execute(statement.format(serial=SERIAL[dialect]))
        cur.execute("INSERT INTO migrations (name, applied_at) VALUES (?, ?)", (name, time.time()))
        applied.append(name)
    return applied


@dataclass
class TaskRow:
    """One tool call started through the task manager (SEP-2663 tasks): a `tasks` row.

    The row is written before anything is sent, so a supervisor killed at any point leaves
    a row that says what to do next: `queued` → submit, `submitting` → resend `tools/call`
    with the same invocation id (retry-safe servers deduplicate on it), `working` /
    `input_required` → observe again, `cancel_requested` → finish the `tasks/cancel`.
    `state` is a `monad_cli.core.task_states.TaskState` name. Times are epoch seconds; JSON
    columns hold wire JSON (camelCase), scrubbed of known secrets like every journal value.
    Its fields are the table's columns, in their order (tests/journal/test_schema.py).
    """

    id: str  # monad's id; also the invocation id sent in _meta
    server: str
    tool: str
    arguments: str | None = None  # JSON
    correlation: str | None = None  # JSON: who started it and why (caller-supplied)
    task_id: str | None = None  # the server's taskId
    state: str = ""
    status_message: str | None = None
    created_at: float = 0.0
    updated_at: float = 0.0
    terminal_at: float | None = None
    server_created_at: str | None = None
    ttl_ms: int | None = None
    poll_interval_ms: int | None = None
    result: str | None = None  # JSON CallToolResult
    error: str | None = None  # JSON error object
    input_requests: str | None = None  # JSON: outstanding inputRequests
    answered_keys: str | None = None  # JSON list: keys already answered (dedupe across polls)
    delivery_pending: bool = False
    pending_kind: str | None = None  # "result" | "input"
    deliveries: int = 0
    delivered_at: float | None = None
    cancel_requested: bool = False
    recoveries: int = 0
    retries: int = 0
    submitted: bool = False  # tools/call written at least once
    adopted: bool = False  # a task returned to a plain call_tool (no arguments known)

    @classmethod
    def of(cls, values: tuple[Any, ...]) -> TaskRow:
        """The row from `SELECT {TASK_COLUMNS}` (SQLite's booleans come back as 0 and 1)."""
        typed: list[Any] = [bool(v) if f.type == "bool" else v for f, v in zip(fields(cls), values, strict=True)]
        return cls(*typed)


TASK_COLUMNS = ", ".join(f.name for f in fields(TaskRow))

__all__ = ["MIGRATIONS", "SERIAL", "SHIPPED_TABLES", "TASK_COLUMNS", "TaskRow", "migrate"]
