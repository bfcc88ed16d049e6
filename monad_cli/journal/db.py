"""journal.db: SQLite in WAL mode through SQLModel, migrated once, on open; in a fleet, also
the queue of rows for the shared PostgreSQL journal (`journal.fleet`, docs/fleet.md).

Every connection: `journal_mode=WAL`, `busy_timeout=5000`, `synchronous=NORMAL` (an app
crash loses nothing committed; a power loss may lose the last commits, which the journal
accepts: it records what happened, it is not the only copy of anything), and every write
transaction starts with `BEGIN IMMEDIATE` so two writers queue on the busy timeout instead
of failing mid-transaction with SQLITE_BUSY when a read lock cannot be upgraded (SQLite
"Transaction": deferred transactions upgrade lazily).
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import event, text
from sqlmodel import Session, SQLModel, col, create_engine, select

from monad_cli.journal.migrations import MIGRATIONS
from monad_cli.journal.settings import JournalSettings
from monad_cli.journal.tables import Event, Migration

if TYPE_CHECKING:
    from monad_cli.journal.fleet import FleetLink


def new_uid() -> str:
    """A row's identity across journals (the idempotency key of its upserts)."""
    return uuid.uuid4().hex


def migrate(conn: Any) -> list[str]:
    """Apply the migrations not yet recorded on `conn` (a SQLAlchemy connection inside a
    transaction), in list order, each with its row in `migrations`; returns their names."""
    applied: list[str] = []
    SQLModel.metadata.create_all(conn, tables=[Migration.__table__])  # type: ignore[attr-defined]
    done = {row[0] for row in conn.execute(text("SELECT name FROM migrations"))}
    for name, fn in MIGRATIONS:
        if name in done:
            continue
        fn(conn)
        conn.execute(text("INSERT INTO migrations (name, applied_at) VALUES (:n, :t)"),
                     {"n": name, "t": time.time()})
        applied.append(name)
    return applied


class Journal:
    """The journal at `path`: opened, created if missing, and migrated once, on open (every
    entry of `journal.migrations.MIGRATIONS` not yet recorded, in the list's order; their
    names are in `applied`).

    Owns the SQLite engine and its connection settings, the schema, and the `events` rows
    (`record`, `events`); the other tables' queries live beside their users
    (`journal.tools`, `tasks.store`) and run on `engine`. `scrub` is applied to every
    free-text value before it is written. It must never decide anything about servers,
    calls or tasks (it stores what the services tell it), never write a value that has not
    been through `scrub`, and never import the supervisor.

    `settings` name this supervisor's origin (`host`, `home`: stamped on every row) and, in
    a fleet, the shared journal: then every write of a shipped table gives its row the next
    `rev` (`rev_sql`) and `start_link()` starts the `FleetLink` that ships rows above its
    cursor; without a URL rows get `rev = 0` (nothing to send anywhere). Local rows stay
    the complete record of this supervisor either way, and every write here is local: none
    waits on the network.
    """

    def __init__(self, path: Path, *, scrub: Callable[[str], str] = lambda s: s,
                 settings: JournalSettings | None = None) -> None:
        self.path = path
        self.scrub = scrub
        self.settings = settings or JournalSettings(home=str(path.parent), host="localhost")
        self.host, self.home = self.settings.host, self.settings.home
        self.link: FleetLink | None = None
        self.engine = create_engine(f"sqlite:///{path}", connect_args={"check_same_thread": False,
                                                                        "timeout": 5.0})

        @event.listens_for(self.engine, "connect")
        def _on_connect(dbapi_conn: Any, _rec: Any) -> None:
            dbapi_conn.isolation_level = None  # we issue BEGIN ourselves
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA busy_timeout=5000")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.close()

        @event.listens_for(self.engine, "begin")
        def _on_begin(conn: Any) -> None:
            conn.exec_driver_sql("BEGIN IMMEDIATE")

        path.parent.mkdir(parents=True, exist_ok=True)
        self.applied = self._migrate()
        # Write-behind statements (`defer`): written before the next write transaction, by
        # `flush`, or at `close`, whichever comes first. Writers are not only the event loop
        # (the fleet link's thread journals its state, the Studio reads calls in worker
        # threads, and reads flush): each transaction takes the queue under the lock, so no
        # statement is written twice or dropped by another's bookkeeping.
        self.deferred: list[tuple[str, tuple[Any, ...]]] = []
        self._deferred_lock = threading.Lock()

    def write(self, sql: str, params: tuple[Any, ...]) -> int | None:
        """The deferred statements, then `sql`, in one `BEGIN IMMEDIATE` transaction on a
        pooled DB-API connection; returns the row id it inserted, if any, and wakes the link.

        The tool-call writes sit on every call's path: the ORM costs ~1 ms per call, Core
        ~0.4 ms, the driver ~0.05 ms. The pool's connect hook set WAL and busy_timeout.
        """
        return self._transaction([(sql, params)])[0]

    def defer(self, sql: str, params: tuple[Any, ...]) -> None:
        """Queue `sql` for the next write transaction (or `flush`): a write-behind row."""
        with self._deferred_lock:
            self.deferred.append((sql, params))

    def flush(self) -> int:
        """Write the deferred statements now, in one transaction; returns how many."""
        return self._transaction([])[1]

    def _transaction(self, statements: list[tuple[str, tuple[Any, ...]]]) -> tuple[int | None, int]:
        """(row id, deferred statements written): the queue, then `statements`, committed."""
        with self._deferred_lock:
            queued = self.deferred[:]
            del self.deferred[:]
        if not queued and not statements:
            return None, 0
        try:
            raw = self.engine.raw_connection()
            try:
                cur = raw.cursor()
                cur.execute("BEGIN IMMEDIATE")
                try:
                    for sql, params in [*queued, *statements]:
                        cur.execute(sql, params)
                    cur.execute("COMMIT")
                except BaseException:
                    cur.execute("ROLLBACK")
                    raise
                row_id = cur.lastrowid
            finally:
                raw.close()  # back to the pool
        except BaseException:
            with self._deferred_lock:  # not written: they wait for the next transaction, first
                self.deferred[:0] = queued
            raise
        self.wrote()
        return row_id, len(queued)

    def _migrate(self) -> list[str]:
        """Apply the pending migrations in one transaction; returns the names applied."""
        with self.engine.begin() as conn:
            return migrate(conn)

    def origin(self) -> tuple[str, str, str]:
        """(uid, host, home) of a new row (`tables.ORIGIN_COLUMNS` without `rev`)."""
        return new_uid(), self.host, self.home

    def rev_sql(self, table: str) -> str:
        """The SQL for a written row's `rev`: in a fleet one above the table's highest,
        evaluated inside the write's `BEGIN IMMEDIATE` transaction (so rev order is commit
        order: the link's cursor never skips a row); 0 without a fleet (never shipped)."""
        return f"(SELECT coalesce(max(rev), 0) + 1 FROM {table})" if self.settings.fleet else "0"

    def wrote(self) -> None:
        """A shipped table changed: wake the link (a flag set, no I/O)."""
        if self.link is not None:
            self.link.wake()

    def start_link(self) -> FleetLink | None:
        """In a fleet, start shipping queued rows to the shared journal (a background
        thread; the database may be down: it retries). Returns the link, or None."""
        if not self.settings.fleet or self.link is not None:
            return self.link
        from monad_cli.journal.fleet import FleetLink

        self.link = FleetLink(self, self.settings)
        self.link.start()
        return self.link

    def status(self) -> dict[str, Any]:
        """`{backend, state, reason, queued, oldestQueued, host, home, url|path}`: `state` is
        `ok`, `connecting` or `degraded` (the shared journal is unreachable; rows queue)."""
        if self.link is not None:
            return self.link.status()
        return {"backend": "sqlite", "path": str(self.path), "state": "ok", "reason": None, "queued": 0,
                "oldestQueued": None, "host": self.host, "home": self.home}

    def record(self, kind: str, *, server: str | None = None, state: str | None = None,
               reason: str | None = None, detail: dict[str, Any] | None = None) -> None:
        # The driver, not the ORM: 50 servers starting write ~150 of these (~1 ms each by ORM).
        self.write(f"INSERT INTO events (ts, server, kind, state, reason, detail, uid, host, home, rev) "
                   f"VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, {self.rev_sql('events')})",
                   (time.time(), server, kind, state, self.scrub(reason) if reason else reason,
                    self.scrub(json.dumps(detail)) if detail else None, *self.origin()))

    def events(self, *, server: str | None = None, since: float | None = None,
               kinds: Iterable[str] | None = None, host: str | None = None,
               limit: int = 1000) -> list[dict[str, Any]]:
        q = select(Event)
        if server:
            q = q.where(Event.server == server)
        if host:
            q = q.where(Event.host == host)
        if since is not None:
            q = q.where(Event.ts >= since)
        if kinds:
            q = q.where(col(Event.kind).in_(list(kinds)))
        q = q.order_by(col(Event.id).desc()).limit(limit)
        with Session(self.engine) as s:
            rows = list(s.exec(q))
        return [r.as_dict() for r in reversed(rows)]

    def quick_check(self) -> str:
        with self.engine.connect() as conn:
            return str(conn.execute(text("PRAGMA quick_check")).scalar())

    def close(self) -> None:
        """Write the deferred statements, stop the link (one last flush, bounded in time) and
        close the local file."""
        self.flush()
        if self.link is not None:
            self.link.stop()
        self.engine.dispose()
