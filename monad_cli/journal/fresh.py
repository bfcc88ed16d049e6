"""A fresh SQLite journal without SQLAlchemy: the schema `journal.migrations.MIGRATIONS`
make on an empty file, as the statements SQLite keeps for it (`sqlite_master.sql`).

SQLAlchemy and SQLModel cost ~0.2 s to import; a supervisor starting on a new MONAD_HOME
(every first start, every test's temporary home) would pay it before its first journal
row only to emit this DDL. `Journal` applies `SCHEMA` to an empty file, records `COVERS`
as applied, and leaves any later migration to the SQLAlchemy path (`journal.db.migrate`).
tests/journal/test_fresh.py keeps the two equal: the same `sqlite_master` statements, byte
for byte (SQLAlchemy's order of one table's indexes varies from run to run, so as a set),
and `COVERS` every migration (a new one: regenerate with `python -m monad_cli.journal.fresh`,
which prints what the migrations make).

Standard library only.
"""

from __future__ import annotations

import sqlite3
import time

COVERS = ("0001_events", "0002_tool_calls_approvals_tool_sets", "0100_tasks", "0200_origin_columns",
          "0201_vetted_tool_sets", "0300_running_calls_index", "0301_server_lists",
          "0302_server_lists_items", "0303_approvals_tool_hash")


def _table(name: str, columns: str, key: str) -> str:
    """SQLAlchemy's CREATE TABLE text for SQLite: one column per line, the key last."""
    body = ", \n\t".join([*(c.strip() for c in columns.split(",")), f"PRIMARY KEY ({key})"])
    return f"CREATE TABLE {name} (\n\t{body}\n)"


def _index(table: str, column: str, *, unique: bool = False) -> str:
    return f"CREATE {'UNIQUE ' if unique else ''}INDEX ix_{table}_{column} ON {table} ({column})"


def _origin(table: str) -> list[str]:
    return [_index(table, "uid", unique=True), _index(table, "rev"), _index(table, "host")]


_ORIGIN = "uid VARCHAR, host VARCHAR, home VARCHAR, rev INTEGER NOT NULL"

SCHEMA: tuple[str, ...] = (
    _table("migrations", "name VARCHAR NOT NULL, applied_at FLOAT NOT NULL", "name"),
    _table("events", "id INTEGER NOT NULL, ts FLOAT NOT NULL, server VARCHAR, kind VARCHAR NOT NULL, "
                     f"state VARCHAR, reason VARCHAR, detail VARCHAR, {_ORIGIN}", "id"),
    _index("events", "ts"), _index("events", "server"),
    _table("tool_calls", "id INTEGER NOT NULL, ts FLOAT NOT NULL, server VARCHAR NOT NULL, tool VARCHAR NOT NULL, "
                         "exposed VARCHAR NOT NULL, args_digest VARCHAR NOT NULL, via VARCHAR NOT NULL, "
                         "decision VARCHAR, decided_by VARCHAR, outcome VARCHAR NOT NULL, duration_ms FLOAT, "
                         f"error VARCHAR, {_ORIGIN}", "id"),
    _index("tool_calls", "ts"), _index("tool_calls", "server"),
    _table("approvals", "id INTEGER NOT NULL, server VARCHAR NOT NULL, definition_hash VARCHAR NOT NULL, "
                        f"tool VARCHAR NOT NULL, created FLOAT NOT NULL, decided_by VARCHAR NOT NULL, {_ORIGIN}, "
                        "tool_hash VARCHAR", "id"),
    _index("approvals", "server"),
    _table("tool_sets", "server VARCHAR NOT NULL, hash VARCHAR NOT NULL, tools VARCHAR NOT NULL, "
                        "seen FLOAT NOT NULL", "server, hash"),
    _table("tasks", "id VARCHAR NOT NULL, server VARCHAR NOT NULL, tool VARCHAR NOT NULL, arguments VARCHAR, "
                    "correlation VARCHAR, task_id VARCHAR, state VARCHAR NOT NULL, status_message VARCHAR, "
                    "created_at FLOAT NOT NULL, updated_at FLOAT NOT NULL, terminal_at FLOAT, "
                    "server_created_at VARCHAR, ttl_ms INTEGER, poll_interval_ms INTEGER, result VARCHAR, "
                    "error VARCHAR, input_requests VARCHAR, answered_keys VARCHAR, delivery_pending BOOLEAN NOT NULL, "
                    "pending_kind VARCHAR, deliveries INTEGER NOT NULL, delivered_at FLOAT, "
                    "cancel_requested BOOLEAN NOT NULL, recoveries INTEGER NOT NULL, retries INTEGER NOT NULL, "
                    "submitted BOOLEAN NOT NULL, adopted BOOLEAN NOT NULL", "id"),
    *(_index("tasks", c) for c in ("delivery_pending", "task_id", "terminal_at", "state", "server", "created_at")),
    *_origin("events"), *_origin("tool_calls"), *_origin("approvals"),
    _table("vetted_tool_sets", "id INTEGER NOT NULL, server VARCHAR NOT NULL, definition_hash VARCHAR NOT NULL, "
                               f"hash VARCHAR NOT NULL, created FLOAT NOT NULL, decided_by VARCHAR NOT NULL, {_ORIGIN}",
           "id"),
    _index("vetted_tool_sets", "server"), *_origin("vetted_tool_sets"),
    "CREATE INDEX ix_tool_calls_running ON tool_calls (id) WHERE outcome = 'running'",
    _table("server_lists", "server VARCHAR NOT NULL, definition_hash VARCHAR NOT NULL, tool_hash VARCHAR NOT NULL, "
                           "tools VARCHAR NOT NULL, listed_at FLOAT NOT NULL, prompts VARCHAR, resources VARCHAR, "
                           "templates VARCHAR", "server"),
)


def is_empty(cur: sqlite3.Cursor) -> bool:
    """True when the database has no schema at all (a new file)."""
    return cur.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 0


def create(cur: sqlite3.Cursor) -> list[str]:
    """Apply `SCHEMA` and record `COVERS` as applied, inside the caller's transaction on an
    empty database (`is_empty`); returns the names recorded."""
    for statement in SCHEMA:
        cur.execute(statement)
    now = time.time()
    cur.executemany("INSERT INTO migrations (name, applied_at) VALUES (?, ?)", [(n, now) for n in COVERS])
    return list(COVERS)


def made_by_migrations() -> list[str]:
    """The `sqlite_master.sql` statements the SQLAlchemy migrations make on an empty file
    (imports SQLAlchemy; for the test and for regenerating `SCHEMA`)."""
    import tempfile
    from pathlib import Path

    from sqlalchemy import create_engine

    from monad_cli.journal.db import migrate

    with tempfile.TemporaryDirectory() as tmp:
        engine = create_engine(f"sqlite:///{Path(tmp) / 'journal.db'}")
        with engine.begin() as conn:
            migrate(conn)
        with engine.connect() as conn:
            rows = conn.exec_driver_sql("SELECT sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY rowid")
            made = [str(r[0]) for r in rows]
        engine.dispose()
    return made


if __name__ == "__main__":
    for statement in made_by_migrations():
        print(repr(statement))
