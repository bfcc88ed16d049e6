"""The link from this supervisor's local journal to a fleet's shared PostgreSQL journal
(docs/fleet.md).

The local SQLite journal stays the journal every write goes to; it is also the queue. A
row of a shipped table (`tables.SHIPPED_TABLES`) is queued while `rev > shipped`. One
thread, `FleetLink`, ships queued rows: it reads them in id order, upserts them into the
shared journal in one PostgreSQL transaction, keyed by `uid` (`ON CONFLICT (uid) DO
UPDATE … WHERE rev is newer`), and only after that commit marks them shipped locally. A
crash or a lost connection between the two ships the same rows again: the upsert makes
the second write a no-op, so no row is lost and none is written twice. While the database
is down the rows wait on disk (nothing is held in memory) and `status()` says `degraded`
and why; the thread retries with backoff (0.5 s doubling to 10 s) and flushes in order
when it is back.

The first connection migrates the shared journal with the same ordered list as the local
one, inside a transaction holding `pg_advisory_xact_lock(LOCK_KEY)`: supervisors starting
at the same moment queue on the lock, and the later ones find every migration recorded.

`pull_trust` reads the other supervisors' "always" approvals and vetted tool sets from the
shared journal and keeps a local copy (so they still apply when the database is away
later). psycopg is imported only here, and only when a PostgreSQL URL is configured.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from sqlalchemy import text
from sqlmodel import SQLModel

from monad_cli.errors import ConfigError
from monad_cli.journal.settings import JournalSettings
from monad_cli.journal.tables import SHIPPED_TABLES

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

    from monad_cli.journal.db import Journal

log = logging.getLogger("monad.journal")
# One key for every monad journal: migrations of one database are serialized, whoever runs them.
LOCK_KEY = int.from_bytes(b"monadjnl", "big") >> 1
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
        self._thread = threading.Thread(target=self._run, name="monad-journal-link", daemon=True)

    # -- lifecycle ---------------------------------------------------------------------
    def start(self) -> None:
        require_driver(self.settings)
        self._count()
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

    def status(self) -> dict[str, Any]:
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
            try:
                self._count()
            except Exception:  # the count is for status only: never let it end the link
                log.exception("counting queued journal rows failed")
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

    def _ship(self, engine: Engine) -> int:
        """Ship up to `batch` queued rows of each table in one transaction; returns the most
        rows any table had (== batch: call again)."""
        from sqlalchemy.dialects.postgresql import insert

        queued: dict[str, tuple[list[str], list[tuple[Any, ...]]]] = {}
        for table in SHIPPED_TABLES:
            cols = _columns(table)
            rows = self._local(f"SELECT id, {', '.join(cols)} FROM {table} WHERE rev > shipped ORDER BY id "
                               f"LIMIT ?", (self.batch,))
            if rows:
                queued[table] = (cols, rows)
        with engine.begin() as conn:
            if not queued:
                conn.execute(text("SELECT 1"))  # the idle round's check that the link is up
            for table, (cols, rows) in queued.items():
                t = SQLModel.metadata.tables[table]
                values = []
                for row in rows:
                    v = dict(zip(cols, row[1:], strict=True))
                    v["shipped"] = v["rev"]
                    values.append(v)
                stmt = insert(t).values(values)
                # Idempotent: a row shipped again (crash after this commit, before the local
                # mark) changes nothing; an older revision never overwrites a newer one.
                stmt = stmt.on_conflict_do_update(
                    index_elements=["uid"], set_={c: stmt.excluded[c] for c in cols if c != "uid"},
                    where=t.c.rev < stmt.excluded.rev)
                conn.execute(stmt)
        for table, (cols, rows) in queued.items():
            rev_at = cols.index("rev") + 1
            self._local_write(f"UPDATE {table} SET shipped = ? WHERE id = ? AND shipped < ?",
                              [(row[rev_at], row[0], row[rev_at]) for row in rows])
        n = sum(len(rows) for _, rows in queued.values())
        with self._lock:
            self._shipped_total += n
        return max((len(rows) for _, rows in queued.values()), default=0)

    def _count(self) -> None:
        total = 0
        oldest: float | None = None
        for table in SHIPPED_TABLES:
            ((count, first),) = self._local(f"SELECT count(*), min({_TIME_COLUMN[table]}) FROM {table} "
                                            f"WHERE rev > shipped")
            total += int(count)
            if first is not None and (oldest is None or first < oldest):
                oldest = float(first)
        with self._lock:
            self._queued, self._oldest = total, oldest

    # -- shared trust ------------------------------------------------------------------
    def pull_trust(self, after: dict[str, int]) -> dict[str, list[dict[str, Any]]] | None:
        """Rows of `TRUST_TABLES` other supervisors wrote to the shared journal after the
        shared ids in `after` (`id` is the shared journal's), copied into the local journal
        (once, by uid, marked shipped). None when the link is not up. Blocking: run it in a
        thread."""
        engine = self._engine
        if engine is None or self.status()["state"] != "ok":
            return None
        out: dict[str, list[dict[str, Any]]] = {}
        with engine.connect() as conn:
            for table in TRUST_TABLES:
                cols = _columns(table)
                result = conn.execute(text(f"SELECT id, {', '.join(cols)} FROM {table} WHERE id > :after AND NOT "
                                           f"(host = :host AND home = :home) ORDER BY id LIMIT 1000"),
                                      {"after": after.get(table, 0), "host": self.settings.host,
                                       "home": self.settings.home})
                rows = [dict(r._mapping) for r in result]
                if rows:
                    self._local_write(f"INSERT INTO {table} ({', '.join(cols)}) VALUES "
                                      f"({', '.join('?' for _ in cols)}) ON CONFLICT (uid) DO NOTHING",
                                      [[r["rev"] if c == "shipped" else r[c] for c in cols] for r in rows])
                out[table] = rows
        return out
