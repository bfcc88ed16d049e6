"""Every journal migration, in the order they apply (llm's pattern: named, recorded once).

`Journal` runs the pending ones when it opens, in this list's order, each in the same
transaction as its row in `migrations`. The schema therefore does not depend on which
modules happen to be imported. A released name is never renamed, reordered or edited (a
journal that recorded it would not run the new code); a change is a new entry at the end.
The same list migrates the SQLite journal and a shared PostgreSQL one (`journal.fleet`
runs it under an advisory lock, so supervisors starting together migrate it once).

The early entries create tables from the current models, so on a fresh journal they
already have the columns later entries add: those entries add only what is missing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

# How the origin columns are added to a table that predates them. Rows already there stay
# local: `rev = 0` (they have no uid to be written idempotently elsewhere).
_ORIGIN_DDL = (("uid", "VARCHAR"), ("host", "VARCHAR"), ("home", "VARCHAR"), ("rev", "INTEGER NOT NULL DEFAULT 0"))


def _create(*models: str) -> Callable[[Any], None]:
    """Create the tables of these `journal.tables` models (by class name). SQLModel is
    imported when a migration runs, not with this list: naming the migrations is cheap
    (`Journal` reads the names on every open; `journal/fresh.py`)."""

    def migrate(conn: Any) -> None:
        from sqlmodel import SQLModel

        from monad_cli.journal import tables

        SQLModel.metadata.create_all(conn, tables=[getattr(tables, m).__table__ for m in models])

    return migrate


def _origin_indexes(conn: Any, table: str) -> None:
    from sqlalchemy import text

    # uid: the idempotency key of every upsert into the shared journal; rev: "what is still
    # queued" (above the link's cursor) and the next rev stay cheap however long it grows.
    conn.execute(text(f"CREATE UNIQUE INDEX IF NOT EXISTS ix_{table}_uid ON {table} (uid)"))
    conn.execute(text(f"CREATE INDEX IF NOT EXISTS ix_{table}_rev ON {table} (rev)"))
    conn.execute(text(f"CREATE INDEX IF NOT EXISTS ix_{table}_host ON {table} (host)"))


def add_origin_columns(*tables: str) -> Callable[[Any], None]:
    def migrate(conn: Any) -> None:
        from sqlalchemy import inspect, text

        for table in tables:
            have = {c["name"] for c in inspect(conn).get_columns(table)}
            for name, ddl in _ORIGIN_DDL:
                if name not in have:
                    conn.execute(text(f"ALTER TABLE {table} ADD COLUMN {name} {ddl}"))
            _origin_indexes(conn, table)

    return migrate


def _create_vetted(conn: Any) -> None:
    _create("VettedToolSet")(conn)
    _origin_indexes(conn, "vetted_tool_sets")


def _running_calls_index(conn: Any) -> None:
    from sqlalchemy import text

    # A supervisor's start finds the calls its predecessor left `running` (`tools.interrupt_running`):
    # with a million rows a full scan costs ~0.1 s; this partial index holds only those few.
    conn.execute(text("CREATE INDEX IF NOT EXISTS ix_tool_calls_running ON tool_calls (id) "
                      "WHERE outcome = 'running'"))


def _add_columns(table: str, names: tuple[str, ...]) -> Callable[[Any], None]:
    """Add these nullable VARCHAR columns to `table` where it lacks them."""

    def migrate(conn: Any) -> None:
        from sqlalchemy import inspect, text

        have = {c["name"] for c in inspect(conn).get_columns(table)}
        for name in names:
            if name not in have:
                conn.execute(text(f"ALTER TABLE {table} ADD COLUMN {name} VARCHAR"))

    return migrate


MIGRATIONS: tuple[tuple[str, Callable[[Any], None]], ...] = (
    ("0001_events", _create("Event")),
    ("0002_tool_calls_approvals_tool_sets", _create("ToolCall", "AlwaysApproval", "ToolSet")),
    # Numbered apart from the core tables when tasks were a separate feature; kept as released.
    ("0100_tasks", _create("TaskRow")),
    ("0200_origin_columns", add_origin_columns("events", "tool_calls", "approvals")),
    ("0201_vetted_tool_sets", _create_vetted),
    ("0300_running_calls_index", _running_calls_index),
    ("0301_server_lists", _create("ServerLists")),
    ("0302_server_lists_items", _add_columns("server_lists", ("prompts", "resources", "templates"))),
    ("0303_approvals_tool_hash", _add_columns("approvals", ("tool_hash",))),
)
