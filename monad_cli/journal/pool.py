"""The way into a SQLite journal: the standard library's `sqlite3`, pooled, with the journal's
connection settings (`journal.db` says which and why). Every read and write of the local
journal goes through a `SqlitePool`, the supervisor's and the CLI's (`readonly`: `monad
journal` can never write, migrate or checkpoint the file); `journal.pg` is the same shape
for a fleet's shared PostgreSQL journal.

Standard library only: a supervisor opens its journal before anything heavy is imported.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

BUSY_TIMEOUT_MS = 5000
# The statements every new writing connection runs (`journal.db` says why).
# `auto_vacuum` first: it takes effect only on a file with no table yet, and before WAL mode
# is set (`journal.retention` gives pruned space back with `PRAGMA incremental_vacuum`; on an
# older file it waits for the one `VACUUM` that converts it).
PRAGMAS = ("PRAGMA auto_vacuum=INCREMENTAL", "PRAGMA journal_mode=WAL", f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}",
           "PRAGMA synchronous=NORMAL", "PRAGMA foreign_keys=ON")


def configure(conn: sqlite3.Connection) -> None:
    """Autocommit (every transaction is an explicit `BEGIN IMMEDIATE`) and the `PRAGMAS`."""
    conn.isolation_level = None
    for pragma in PRAGMAS:
        conn.execute(pragma)


class SqlitePool:
    """Connections to the SQLite file at `path`, each used by one thread at a time (from
    `checkout` to `give_back`) and kept for the next; at most `keep` idle ones stay open.
    `readonly`: opened `mode=ro`, with only the busy timeout set (a reader changes nothing).
    `autocheckpoint`: SQLite's default, a commit that grows the WAL past 1000 pages copies it
    back into the file, fsync included, in the committing thread; False: `checkpoint` is
    called from elsewhere (the supervisor: from a worker thread, never inside a call)."""

    dialect = "sqlite"

    def __init__(self, path: Path, *, keep: int = 4, readonly: bool = False, autocheckpoint: bool = True) -> None:
        self.path = path
        self.keep = keep
        self.readonly = readonly
        self.autocheckpoint = autocheckpoint
        self._idle: list[sqlite3.Connection] = []
        self._lock = threading.Lock()

    def checkout(self) -> sqlite3.Connection:
        """A configured connection for this thread's use until `give_back`. Raises `sqlite3.Error`."""
        with self._lock:
            conn = self._idle.pop() if self._idle else None
        if conn is None and self.readonly:
            from urllib.parse import quote

            conn = sqlite3.connect(f"file:{quote(str(self.path))}?mode=ro", uri=True,
                                   timeout=BUSY_TIMEOUT_MS / 1000, check_same_thread=False)
            conn.isolation_level = None
            conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        elif conn is None:
            conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_MS / 1000, check_same_thread=False)
            configure(conn)
            if not self.autocheckpoint:
                conn.execute("PRAGMA wal_autocheckpoint=0")
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

    def read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Every row of one query (no transaction of its own: WAL readers see the last commit)."""
        with self.connection() as conn:
            return list(conn.execute(sql, params))

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Cursor]:
        """A cursor inside one `BEGIN IMMEDIATE` transaction, committed at the end of the block
        (rolled back if it raises: SQLite may have rolled back already, as on SQLITE_FULL, and
        the first error is the one raised)."""
        with self.connection() as conn:
            cur = conn.cursor()
            cur.execute("BEGIN IMMEDIATE")
            try:
                yield cur
                cur.execute("COMMIT")
            except BaseException:
                with suppress(sqlite3.Error):
                    cur.execute("ROLLBACK")
                raise

    def run(self, statements: Sequence[tuple[str, Sequence[Any]]]) -> int | None:
        """`statements` in one `BEGIN IMMEDIATE` transaction, committed, as `transaction`
        does them (rolled back if one raises; the first error is the one raised); returns
        the row id the last `INSERT` gave, if any. One call without context managers: every
        tool call's intent row is written this way."""
        conn = self.checkout()
        try:
            cur = conn.cursor()
            cur.execute("BEGIN IMMEDIATE")
            try:
                for sql, params in statements:
                    cur.execute(sql, params)
                row_id = cur.lastrowid
                cur.execute("COMMIT")
            except BaseException:
                with suppress(sqlite3.Error):
                    cur.execute("ROLLBACK")
                raise
            return row_id
        finally:
            self.give_back(conn)

    def checkpoint(self) -> tuple[int, int, int]:
        """`PRAGMA wal_checkpoint(PASSIVE)`: as much of the WAL as no reader still needs copied
        back into the file, without waiting for a writer or a reader; (busy, WAL frames,
        frames copied) as SQLite says ("Write-Ahead Logging", checkpointing). Blocking (it
        fsyncs): call it from a worker thread."""
        with self.connection() as conn:
            row = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        return int(row[0]), int(row[1]), int(row[2])

    def change(self, sql: str, params: Sequence[Any] = ()) -> int:
        """One statement in its own `BEGIN IMMEDIATE` transaction; returns the rows it changed."""
        with self.transaction() as cur:
            return int(cur.execute(sql, params).rowcount)

    def columns(self, table: str) -> list[str]:
        """`table`'s columns in order ([] when the file has no such table yet)."""
        return [row[1] for row in self.read(f"PRAGMA table_info({table})")]

    def close(self) -> None:
        """Close the idle connections (one checked out now is closed when it comes back)."""
        with self._lock:
            idle, self._idle, self.keep = self._idle, [], 0
        for conn in idle:
            conn.close()
