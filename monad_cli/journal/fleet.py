"""The link from this supervisor's local journal to a fleet's shared PostgreSQL journal
(docs/fleet.md).

The local SQLite journal stays the journal every write goes to; it is also the queue. In a
fleet each write of a shipped table (`tables.SHIPPED_TABLES`) gives its row the next `rev`
of that table inside the write's transaction, so rev order is commit order. One thread,
`FleetLink`, ships the rows whose `rev` is above its cursor: it reads them in rev order,
upserts them into the shared journal in one PostgreSQL transaction, keyed by `uid` (`ON
CONFLICT (uid) DO UPDATE … WHERE the incoming rev is newer`), and only after that commit
moves its cursor (kept in `journal.cursor.json` beside the journal). A crash or a lost
connection between the two ships the same rows again: the upsert makes the second write a
no-op, so no row is lost and none is written twice. The link never writes the local
journal's shipped tables, so it never holds the write lock a tool call waits for. While
the database is down the rows wait on disk (nothing is held in memory), `status()` says
`degraded` and why, and the thread retries with backoff (0.5 s doubling to 10 s) and
flushes in order when it is back.

The first connection migrates the shared journal with the same ordered list as the local
one, inside a transaction holding `pg_advisory_xact_lock(LOCK_KEY)`: supervisors starting
at the same moment queue on the lock, and the later ones find every migration recorded.

`pull_trust` reads the fleet's "always" approvals and vetted tool sets from the shared
journal and keeps a local copy (`rev = 0`: never shipped back), so they still apply when
the database is away later. psycopg is imported only here, and only for a PostgreSQL URL.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from sqlalchemy import text
from sqlmodel import SQLModel

from monad_cli.core.errors import ConfigError
from monad_cli.journal.settings import JournalSettings
from monad_cli.journal.tables import SHIPPED_TABLES

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

    from monad_cli.journal.db import Journal

log = logging.getLogger("monad.journal")
# One key for every monad journal: migrations of one database are serialized, whoever runs them.
LOCK_KEY = int.from_bytes(b"monadjnl", "big") >> 1
CURSOR_FILE = "journal.cursor.json"
# The time column of each shipped table, for "oldest queued".
_TIME_COLUMN = {"events": "ts", "tool_calls": "ts", "approvals": "created", "vetted_tool_sets": "created"}
TRUST_TABLES = ("approvals", "vetted_tool_sets")
RETRY_FIRST_S, RETRY_MAX_S = 0.5, 10.0


def require_driver(settings: JournalSettings) -> None:
    """Raise `ConfigError` when a PostgreSQL URL is configured but psycopg is missing."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        raise ConfigError(f"the journal URL ({settings.source}) is PostgreSQL but psycopg is not installed; "
                          f"install it with `pip install 'monad-cli[postgres]'`", field="journal.url") from None


def _columns(table: str) -> list[str]:
    return [c.name for c in SQLModel.metadata.tables[table].columns if c.name != "id"]


def describe(exc: BaseException) -> str:
    """One line for a failed link: the driver's own first line, without SQLAlchemy's wrapper."""
    inner = getattr(exc, "orig", None) or exc
    first = (str(inner).strip().splitlines() or [type(inner).__name__])[0]
    return f"{type(inner).__name__}: {first}"[:300]


class FleetLink:
    """Ships the local journal's queued rows to the shared journal from one daemon thread.

    `interval`: seconds between idle rounds (each checks the connection, so `status` turns
    `degraded` within about that long after the database goes away); `batch`: rows per
    table per round; `connect_timeout`: seconds for a connection attempt. It never writes
    the shared journal from the caller's thread, never drops a queued row, and never
    holds a local write lock while it talks to the network.
    """

    def __init__(self, journal: Journal, settings: JournalSettings, *, interval: float = 5.0, batch: int = 500,
                 connect_timeout: float = 3.0) -> None:
        assert settings.url is not None
        self.journal = journal
        self.settings = settings
        self.interval = interval
        self.batch = batch
        self.connect_timeout = connect_timeout
        self.applied: list[str] | None = None
        self._engine: Engine | None = None
        self._lock = threading.Lock()
        self._state: str = "connecting"
        self._reason: str | None = None
        self._since = time.time()
        self._queued = 0
        self._oldest: float | None = None
        self._shipped_total = 0
        self._wake = threading.Event()
        self._stop = threading.Event()
        self.cursor_path = journal.path.with_name(CURSOR_FILE)
        self.cursor = self._load_cursor()
        self._upserts: dict[str, Any] = {}
        self._thread = threading.Thread(target=self._run, name="monad-journal-link", daemon=True)

    # -- lifecycle ---------------------------------------------------------------------
    def start(self) -> None:
        require_driver(self.settings)
        self._thread.start()

    def wake(self) -> None:
        self._wake.set()

    def stop(self, timeout: float = 3.0) -> None:
        """One last flush (bounded by `timeout` seconds), then close the connections."""
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout)
        if self._engine is not None:
            self._engine.dispose()

    def state(self) -> str:
        """`connecting`, `ok` or `degraded` (without counting anything)."""
        with self._lock:
            return self._state

    def status(self) -> dict[str, Any]:
        """The link's state and the rows queued right now (counted on the rev index)."""
        try:
            self._count()
        except Exception:  # the count is for status only: a busy journal keeps the last one
            log.exception("counting queued journal rows failed")
        with self._lock:
            return {"backend": "postgresql", "url": self.settings.shown, "source": self.settings.source,
                    "state": self._state, "reason": self._reason, "since": self._since, "queued": self._queued,
                    "oldestQueued": self._oldest, "shipped": self._shipped_total, "host": self.settings.host,
                    "home": self.settings.home}

    def _set(self, state: str, reason: str | None) -> None:
        with self._lock:
            changed = state != self._state
            if changed:
                self._state, self._since = state, time.time()
            self._reason = reason
        if not changed:
            return
        # State changes of the link are journal rows too (queued like any other row).
        if state == "degraded":
            log.warning("shared journal unreachable, queueing rows locally: %s", reason)
            self.journal.record("journal", state="degraded", reason=f"shared journal unreachable: {reason}")
        elif state == "ok":
            log.info("shared journal %s: connected", self.settings.shown)
            self.journal.record("journal", state="ok", reason=f"shared journal {self.settings.shown} connected")

    # -- the thread --------------------------------------------------------------------
    def _run(self) -> None:
        delay = RETRY_FIRST_S
        while True:
            stopping = self._stop.is_set()
            self._wake.clear()
            try:
                engine = self._engine or self._connect()
                while self._ship(engine) >= self.batch:
                    pass
                self._set("ok", None)
                failed = False
            except Exception as exc:  # noqa: BLE001 - a failing link only degrades the journal
                self._set("degraded", self.journal.scrub(describe(exc)))
                self._drop_engine()
                failed = True
            if stopping:
                return
            if failed:
                # Writes keep waking the link; while it is down only the backoff paces it.
                if self._stop.wait(delay):
                    return
                delay = min(delay * 2, RETRY_MAX_S)
            else:
                delay = RETRY_FIRST_S
                self._wake.wait(self.interval)

    def _connect(self) -> Engine:
        from sqlalchemy import create_engine

        assert self.settings.url is not None
        engine = create_engine(self.settings.url, pool_pre_ping=True, pool_size=2, max_overflow=2,
                               connect_args={"connect_timeout": max(1, round(self.connect_timeout)),
                                             "application_name": f"monad {self.settings.host}"[:60],
                                             # A hung server must not hold the thread forever.
                                             "options": "-c statement_timeout=15000"})
        try:
            with engine.begin() as conn:
                conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": LOCK_KEY})
                from monad_cli.journal.db import migrate

                applied = migrate(conn)
        except BaseException:
            engine.dispose()
            raise
        if applied:
            log.info("shared journal: applied migrations %s", ", ".join(applied))
        self.applied = applied
        self._engine = engine
        return engine

    def _drop_engine(self) -> None:
        engine, self._engine = self._engine, None
        if engine is not None:
            engine.dispose()

    def _local(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        # Autocommit reads on the raw connection: no BEGIN IMMEDIATE, so the link never
        # takes the write lock a tool call is waiting for.
        raw = self.journal.engine.raw_connection()
        try:
            cur = raw.cursor()
            cur.execute(sql, tuple(params))
            return list(cur.fetchall())
        finally:
            raw.close()

    def _local_write(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        raw = self.journal.engine.raw_connection()
        try:
            cur = raw.cursor()
            cur.execute("BEGIN IMMEDIATE")
            try:
                cur.executemany(sql, [tuple(r) for r in rows])
                cur.execute("COMMIT")
            except BaseException:
                cur.execute("ROLLBACK")
                raise
        finally:
            raw.close()

    def _load_cursor(self) -> dict[str, int]:
        """The highest rev shipped per table. A cursor above the journal's highest rev (the
        journal was replaced) starts over at 0: shipping again is harmless, skipping is not."""
        try:
            saved = json.loads(self.cursor_path.read_text())
        except (OSError, ValueError):
            saved = {}
        cursor = {}
        for table in SHIPPED_TABLES:
            ((top,),) = self._local(f"SELECT coalesce(max(rev), 0) FROM {table}")
            value = saved.get(table, 0) if isinstance(saved, dict) else 0
            cursor[table] = value if isinstance(value, int) and 0 <= value <= int(top) else 0
        return cursor

    def _save_cursor(self, cursor: dict[str, int]) -> None:
        # Atomic replace; a cursor lost in a crash only ships rows again (idempotent).
        tmp = self.cursor_path.with_name(f".{CURSOR_FILE}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(cursor))
        os.replace(tmp, self.cursor_path)

    def _upsert(self, table: str) -> Any:
        """`INSERT … ON CONFLICT (uid) DO UPDATE … WHERE newer` for `table`, built once.

        Idempotent: a row shipped again (a crash after the shared commit, before the cursor
        moved) changes nothing, and an older revision never overwrites a newer one."""
        stmt = self._upserts.get(table)
        if stmt is None:
            from sqlalchemy.dialects.postgresql import insert

            t = SQLModel.metadata.tables[table]
            base = insert(t)
            stmt = self._upserts[table] = base.on_conflict_do_update(
                index_elements=["uid"], set_={c: base.excluded[c] for c in _columns(table) if c != "uid"},
                where=t.c.rev < base.excluded.rev)
        return stmt

    def _ship(self, engine: Engine) -> int:
        """Ship up to `batch` queued rows of each table in one transaction; returns the most
        rows any table had (== batch: call again)."""
        queued: dict[str, tuple[list[str], list[tuple[Any, ...]]]] = {}
        for table in SHIPPED_TABLES:
            cols = _columns(table)
            rows = self._local(f"SELECT {', '.join(cols)} FROM {table} WHERE rev > ? ORDER BY rev LIMIT ?",
                               (self.cursor[table], self.batch))
            if rows:
                queued[table] = (cols, rows)
        with engine.begin() as conn:
            if not queued:
                conn.execute(text("SELECT 1"))  # the idle round's check that the link is up
            for table, (cols, rows) in queued.items():
                # One compiled statement, many parameter sets: the driver sends the batch;
                # little Python runs here, so the link thread seldom holds the GIL a tool
                # call is waiting for.
                conn.execute(self._upsert(table), [dict(zip(cols, row, strict=True)) for row in rows])
        if queued:
            moved = dict(self.cursor)
            for table, (cols, rows) in queued.items():
                moved[table] = int(rows[-1][cols.index("rev")])
            self._save_cursor(moved)
            self.cursor = moved
        n = sum(len(rows) for _, rows in queued.values())
        with self._lock:
            self._shipped_total += n
        return max((len(rows) for _, rows in queued.values()), default=0)

    def _count(self) -> None:
        total = 0
        oldest: float | None = None
        for table in SHIPPED_TABLES:
            ((count, first),) = self._local(f"SELECT count(*), min({_TIME_COLUMN[table]}) FROM {table} "
                                            f"WHERE rev > ?", (self.cursor[table],))
            total += int(count)
            if first is not None and (oldest is None or first < oldest):
                oldest = float(first)
        with self._lock:
            self._queued, self._oldest = total, oldest

    # -- shared trust ------------------------------------------------------------------
    def pull_trust(self, after: dict[str, int]) -> dict[str, list[dict[str, Any]]] | None:
        """Rows of `TRUST_TABLES` in the shared journal after the shared ids in `after` (`id`
        is the shared journal's), each copied into the local journal once (by uid; this
        supervisor's own rows are there already) with `rev = 0`, so it is never shipped
        back. None when the link is not up. Blocking: run it in a thread."""
        engine = self._engine
        if engine is None or self.state() != "ok":
            return None
        out: dict[str, list[dict[str, Any]]] = {}
        with engine.connect() as conn:
            for table in TRUST_TABLES:
                cols = _columns(table)
                result = conn.execute(text(f"SELECT id, {', '.join(cols)} FROM {table} WHERE id > :after "
                                           f"ORDER BY id LIMIT 1000"), {"after": after.get(table, 0)})
                rows = [dict(r._mapping) for r in result]
                if rows:
                    self._local_write(f"INSERT INTO {table} ({', '.join(cols)}) VALUES "
                                      f"({', '.join('?' for _ in cols)}) ON CONFLICT (uid) DO NOTHING",
                                      [[0 if c == "rev" else r[c] for c in cols] for r in rows])
                out[table] = rows
        return out
