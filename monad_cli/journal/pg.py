"""The way into a fleet's shared PostgreSQL journal: psycopg 3, in the shape of `pool.SqlitePool`
(`read`, `transaction`, `columns`), so the schema (`journal.schema`), the readers
(`journal.reader`) and the pruning (`journal.retention`) are written once for both.

Statements use `?` placeholders, as sqlite3 does; they become psycopg's `%s` here (the
journal's SQL holds no `?` or `%` of its own). One connection, made on first use and shared
by the threads that use it one at a time (the fleet link's, a Studio read's); after a failure
it is dropped and the next use connects again. A hung server cannot hold a thread forever:
every statement has a 15 s timeout. psycopg is imported only here, and only for a
PostgreSQL URL (`pip install 'monad-cli[postgres]'`).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import Any

from monad_cli.journal.settings import JournalSettings

STATEMENT_TIMEOUT_MS = 15_000


def describe(exc: BaseException) -> str:
    """One line for a failed statement or connection: the driver's own first line."""
    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return f"{type(exc).__name__}: {first}"[:300]


class _Cursor:
    """A psycopg cursor taking `?` placeholders."""

    def __init__(self, cur: Any) -> None:
        self.cur = cur

    def execute(self, sql: str, params: Sequence[Any] = ()) -> _Cursor:
        self.cur.execute(sql.replace("?", "%s"), tuple(params))
        return self

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> _Cursor:
        self.cur.executemany(sql.replace("?", "%s"), [tuple(r) for r in rows])
        return self

    def fetchall(self) -> list[tuple[Any, ...]]:
        return list(self.cur.fetchall())

    @property
    def rowcount(self) -> int:
        return int(self.cur.rowcount)


class PgDatabase:
    """The shared journal of `settings` (its URL must be set). `connect_timeout`: seconds for a
    connection attempt. Raises psycopg's errors (`describe` says them in one line)."""

    dialect = "postgresql"

    def __init__(self, settings: JournalSettings, *, connect_timeout: float = 5.0) -> None:
        assert settings.url is not None
        self.settings = settings
        self.connect_timeout = connect_timeout
        self._conn: Any = None
        self._lock = threading.Lock()

    def _connection(self) -> Any:
        import psycopg

        if self._conn is None or self._conn.closed:
            self._conn = psycopg.connect(self.settings.conninfo, autocommit=True,
                                         connect_timeout=max(1, round(self.connect_timeout)),
                                         application_name=f"monad {self.settings.host}"[:60],
                                         options=f"-c statement_timeout={STATEMENT_TIMEOUT_MS}")
        return self._conn

    @contextmanager
    def transaction(self) -> Iterator[_Cursor]:
        """A cursor inside one transaction, committed at the end of the block (rolled back, and
        the connection dropped, if it raises)."""
        with self._lock:
            try:
                conn = self._connection()
                with conn.transaction(), conn.cursor() as cur:
                    yield _Cursor(cur)
            except BaseException:
                self.close()
                raise

    def read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self.transaction() as cur:
            return cur.execute(sql, params).fetchall()

    def columns(self, table: str) -> list[str]:
        """`table`'s columns in order ([] when no supervisor has migrated this database yet)."""
        return [r[0] for r in self.read("SELECT column_name FROM information_schema.columns WHERE table_name = ? "
                                        "AND table_schema = current_schema() ORDER BY ordinal_position", (table,))]

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with suppress(Exception):  # a broken connection may fail to close; it is gone either way
                conn.close()


__all__ = ["PgDatabase", "describe"]
