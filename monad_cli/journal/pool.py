"""The journal's own connections: the standard library's `sqlite3`, pooled, with the
journal's connection settings (`journal.db` says which and why).

The journal's writes and the reads of a supervisor's start go through these, so a
supervisor reaches its servers without importing SQLAlchemy (~0.2 s); the ORM's engine,
made on first use (`Journal.engine`), has its own pool with the same settings.

Standard library only.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

BUSY_TIMEOUT_MS = 5000
# The statements every new connection runs, the ORM engine's included (`journal.db`).
# `auto_vacuum` first: it takes effect only on a file with no table yet, and before WAL mode
# is set (`journal.retention` gives pruned space back with `PRAGMA incremental_vacuum`; on an
# older file it waits for the one `VACUUM` that converts it).
PRAGMAS = ("PRAGMA auto_vacuum=INCREMENTAL", "PRAGMA journal_mode=WAL", f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}",
           "PRAGMA synchronous=NORMAL", "PRAGMA foreign_keys=ON")


def configure(conn: sqlite3.Connection) -> None:
    """Autocommit (every transaction is an explicit `BEGIN IMMEDIATE`) and the `PRAGMAS`."""
    conn.isolation_level = None
    cur = conn.cursor()
    for pragma in PRAGMAS:
        cur.execute(pragma)
    cur.close()


class SqlitePool:
    """Connections to the SQLite file at `path`, each used by one thread at a time (from
    `checkout` to `give_back`) and kept for the next; at most `keep` idle ones stay open."""

    def __init__(self, path: Path, *, keep: int = 4) -> None:
        self.path = path
        self.keep = keep
        self._idle: list[sqlite3.Connection] = []
        self._lock = threading.Lock()

    def checkout(self) -> sqlite3.Connection:
        """A configured connection for this thread's use until `give_back`. Raises `sqlite3.Error`."""
        with self._lock:
            conn = self._idle.pop() if self._idle else None
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_MS / 1000, check_same_thread=False)
            configure(conn)
        return conn

    def give_back(self, conn: sqlite3.Connection) -> None:
        """Back to the pool: rolled back first if a transaction was left open (closed if
        that fails), closed if `keep` idle ones are there already."""
        try:
            if conn.in_transaction:
                conn.rollback()
        except sqlite3.Error:
            conn.close()
            return
        with self._lock:
            if len(self._idle) < self.keep:
                self._idle.append(conn)
                return
        conn.close()

    @contextmanager
    def connection(self) -> Iterator[sqlite3.Connection]:
        """`checkout`, then `give_back` whatever happens."""
        conn = self.checkout()
        try:
            yield conn
        finally:
            self.give_back(conn)

    def read(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """Every row of one query (no transaction of its own: WAL readers see the last commit)."""
        with self.connection() as conn:
            return list(conn.execute(sql, params))

    def change(self, sql: str, params: tuple[Any, ...] = ()) -> int:
        """One statement in its own `BEGIN IMMEDIATE` transaction; returns the rows it changed."""
        with self.connection() as conn:
            cur = conn.cursor()
            cur.execute("BEGIN IMMEDIATE")
            try:
                changed = cur.execute(sql, params).rowcount
                cur.execute("COMMIT")
            except BaseException:
                cur.execute("ROLLBACK")
                raise
            return changed

    def close(self) -> None:
        """Close the idle connections (one checked out now is closed when it comes back)."""
        with self._lock:
            idle, self._idle, self.keep = self._idle, [], 0
        for conn in idle:
            conn.close()
