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
the database is away later. The shared journal is reached through `journal.pg` (psycopg),
the local one through its `SqlitePool`.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from typing import TYPE_CHECKING, Any

from monad_cli.core.errors import ConfigError
from monad_cli.journal.pg import PgDatabase, describe
from monad_cli.journal.schema import SHIPPED_TABLES, migrate
from monad_cli.journal.settings import JournalSettings

if TYPE_CHECKING:
    from monad_cli.journal.db import Journal

log = logging.getLogger("monad.journal")
# One key for every monad journal: migrations of one database are serialized, whoever runs them.
LOCK_KEY = int.from_bytes(b"monadjnl", "big") >> 1
CURSOR_FILE = "journal.cursor.json"
# The time column of each shipped table, for "oldest queued".
_TIME_COLUMN = {"events": "ts", "tool_calls": "ts", "approvals": "created", "vetted_tool_sets": "created"}
TRUST_TABLES = ("approvals", "vetted_tool_sets")
RETRY_FIRST_S, RETRY_MAX_S = 0.5, 10.0


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
        self.applied: list[str] | None = None
        self.shared = PgDatabase(settings, connect_timeout=connect_timeout)
        self._connected = False
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
        # Each shipped table's columns but `id` (the shared journal numbers its own rows).
        self.columns = {t: [c for c in journal.pool.columns(t) if c != "id"] for t in SHIPPED_TABLES}
        self.cursor = self._load_cursor()
        self._thread = threading.Thread(target=self._run, name="monad-journal-link", daemon=True)

    # -- lifecycle ---------------------------------------------------------------------
    def start(self) -> None:
        """Start the thread. Raises `ConfigError` when psycopg is not installed."""
        try:
            import psycopg  # noqa: F401
        except ImportError:
            raise ConfigError(f"the journal URL ({self.settings.source}) is PostgreSQL but psycopg is not installed; "
                              f"install it with `pip install 'monad-cli[postgres]'`", field="journal.url") from None
        self._thread.start()

    def wake(self) -> None:
        self._wake.set()

    def stop(self, timeout: float = 3.0) -> None:
        """One last flush (bounded by `timeout` seconds), then close the connections."""
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout)
        self.shared.close()

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
                if not self._connected:
                    self._connect()
                while self._ship() >= self.batch:
                    pass
                self._set("ok", None)
                failed = False
            except Exception as exc:  # noqa: BLE001 - a failing link only degrades the journal
                self._set("degraded", self.journal.scrub(describe(exc)))
                self._connected = False  # `shared` dropped its connection; the next round makes one
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

    def _connect(self) -> None:
        """Connect and migrate the shared journal, serialized by its advisory lock."""
        with self.shared.transaction() as cur:
            cur.execute("SELECT pg_advisory_xact_lock(?)", (LOCK_KEY,))
            applied = migrate(cur, "postgresql")
        if applied:
            log.info("shared journal: applied migrations %s", ", ".join(applied))
        self.applied = applied
        self._connected = True

    def _load_cursor(self) -> dict[str, int]:
        """The highest rev shipped per table. A cursor above the journal's highest rev (the
        journal was replaced) starts over at 0: shipping again is harmless, skipping is not."""
        try:
            saved = json.loads(self.cursor_path.read_text())
        except (OSError, ValueError):
            saved = {}
        cursor = {}
        for table in SHIPPED_TABLES:
            ((top,),) = self.journal.pool.read(f"SELECT coalesce(max(rev), 0) FROM {table}")
            value = saved.get(table, 0) if isinstance(saved, dict) else 0
            cursor[table] = value if isinstance(value, int) and 0 <= value <= int(top) else 0
        return cursor

    def _save_cursor(self, cursor: dict[str, int]) -> None:
        # Atomic replace; a cursor lost in a crash only ships rows again (idempotent).
        tmp = self.cursor_path.with_name(f".{CURSOR_FILE}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(cursor))
        os.replace(tmp, self.cursor_path)

    def _upsert(self, table: str) -> str:
        """`INSERT … ON CONFLICT (uid) DO UPDATE … WHERE newer` for `table`.

        Idempotent: a row shipped again (a crash after the shared commit, before the cursor
        moved) changes nothing, and an older revision never overwrites a newer one."""
        cols = self.columns[table]
        return (f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({', '.join('?' for _ in cols)}) "
                f"ON CONFLICT (uid) DO UPDATE SET {', '.join(f'{c} = excluded.{c}' for c in cols if c != 'uid')} "
                f"WHERE {table}.rev < excluded.rev")

    def _ship(self) -> int:
        """Ship up to `batch` queued rows of each table in one transaction; returns the most
        rows any table had (== batch: call again)."""
        queued: dict[str, list[tuple[Any, ...]]] = {}
        for table in SHIPPED_TABLES:
            # Autocommit reads: never the write lock a tool call is waiting for.
            rows = self.journal.pool.read(f"SELECT {', '.join(self.columns[table])} FROM {table} WHERE rev > ? "
                                          f"ORDER BY rev LIMIT ?", (self.cursor[table], self.batch))
            if rows:
                queued[table] = rows
        with self.shared.transaction() as cur:
            if not queued:
                cur.execute("SELECT 1")  # the idle round's check that the link is up
            for table, rows in queued.items():
                # One statement, many parameter sets: the driver sends the batch; little
                # Python runs here, so the link thread seldom holds the GIL a call waits for.
                cur.executemany(self._upsert(table), rows)
        if queued:
            moved = {**self.cursor, **{table: int(rows[-1][self.columns[table].index("rev")])
                                       for table, rows in queued.items()}}
            self._save_cursor(moved)
            self.cursor = moved
        n = sum(len(rows) for rows in queued.values())
        with self._lock:
            self._shipped_total += n
        return max((len(rows) for rows in queued.values()), default=0)

    def _count(self) -> None:
        counts = [self.journal.pool.read(f"SELECT count(*), min({_TIME_COLUMN[table]}) FROM {table} WHERE rev > ?",
                                         (self.cursor[table],))[0] for table in SHIPPED_TABLES]
        with self._lock:
            self._queued = sum(int(count) for count, _ in counts)
            self._oldest = min((float(first) for _, first in counts if first is not None), default=None)

    # -- shared trust ------------------------------------------------------------------
    def pull_trust(self, after: dict[str, int]) -> dict[str, list[dict[str, Any]]] | None:
        """Rows of `TRUST_TABLES` in the shared journal after the shared ids in `after` (`id`
        is the shared journal's), each copied into the local journal once (by uid; this
        supervisor's own rows are there already) with `rev = 0`, so it is never shipped
        back. None when the link is not up. Blocking: run it in a thread."""
        if not self._connected or self.state() != "ok":
            return None
        out: dict[str, list[dict[str, Any]]] = {}
        for table in TRUST_TABLES:
            cols = self.columns[table]
            rows = [dict(zip(["id", *cols], row, strict=True)) for row in self.shared.read(
                f"SELECT id, {', '.join(cols)} FROM {table} WHERE id > ? ORDER BY id LIMIT 1000",
                (after.get(table, 0),))]
            if rows:
                with self.journal.pool.transaction() as cur:
                    cur.executemany(f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({', '.join('?' for _ in cols)}) "
                                    f"ON CONFLICT (uid) DO NOTHING",
                                    [[0 if c == "rev" else r[c] for c in cols] for r in rows])
            out[table] = rows
        return out
