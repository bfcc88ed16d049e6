"""journal.db: SQLite in WAL mode, migrated once, on open; in a fleet, also the queue of
rows for the shared PostgreSQL journal (`journal.fleet`, docs/fleet.md).

Every read and write, the open and its migrations (`journal.schema`) go through the standard
library's `sqlite3` (`journal.pool`): a supervisor opens its journal without importing
anything heavy, and its servers connect without waiting for it.

Every connection: `journal_mode=WAL`, `busy_timeout=5000`, `synchronous=NORMAL` (an app
crash loses nothing committed; a power loss may lose the last commits, which the journal
accepts: it records what happened, it is not the only copy of anything), and every write
transaction starts with `BEGIN IMMEDIATE` so two writers queue on the busy timeout instead
of failing mid-transaction with SQLITE_BUSY when a read lock cannot be upgraded (SQLite
"Transaction": deferred transactions upgrade lazily).

A write the file cannot take (its disk is full, fails with an I/O error, or stays locked
past the busy timeout) is held, not raised: the statements stay in memory, in order, up to
`HOLD_MAX`, and go out with the next write transaction that succeeds (the supervisor
retries every `RETRY_S`; `CallLog.write_outcomes`).
Meanwhile `status()` says `degraded`, how many rows wait and how many did not fit (`lost`,
counted, never silent); once the file takes writes again an `events` row says what happened.
So a full disk costs the journal its durability for a while, never a call.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from monad_cli.journal import reader
from monad_cli.journal.pool import SqlitePool
from monad_cli.journal.schema import FLEET_INDEXES, migrate
from monad_cli.journal.settings import JournalSettings

if TYPE_CHECKING:
    from monad_cli.journal.fleet import FleetLink

log = logging.getLogger("monad.journal")
# Statements held in memory while the file takes no writes (~300 bytes each: about 6 MiB).
# Two per tool call: about 10,000 calls' rows.
HOLD_MAX = 20_000
RETRY_S = 1.0
# The primary result codes of a write the file could not take (sqlite3's `sqlite_errorcode`,
# low byte), with what to say: anything else is a bug in a statement, raised as before.
_HOLD_CODES = {
    5: "another process holds it locked (SQLITE_BUSY), e.g. `monad journal prune` converting an old journal",
    6: "it is locked (SQLITE_LOCKED)",
    10: "is its disk failing or full? (SQLITE_IOERR)",
    13: "its disk is full (SQLITE_FULL)",
    14: "it cannot be opened (SQLITE_CANTOPEN); is its disk full?",
}


def is_disk_fault(exc: BaseException) -> bool:
    """True for an SQLite error that says the file could not be written (disk full, I/O)."""
    code = getattr(exc, "sqlite_errorcode", None)  # Python 3.11+ sets it on every sqlite3.Error
    return isinstance(exc, sqlite3.Error) and isinstance(code, int) and (code & 0xFF) in _HOLD_CODES


def new_uid() -> str:
    """A row's identity across journals (the idempotency key of its upserts): the 32 hex
    digits of a random (version 4) UUID, RFC 9562 §5.4. Written from the random bytes
    directly: `uuid.uuid4().hex` builds a `UUID` object on every tool call's intent row, ~4x
    the cost."""
    h = os.urandom(16).hex()
    return f"{h[:12]}4{h[13:16]}{'89ab'[int(h[16], 16) & 3]}{h[17:]}"


class Journal:
    """The journal at `path`: opened, created if missing, and migrated once, on open (the
    entries of `journal.schema.MIGRATIONS` not yet recorded, in order; names in `applied`).

    Owns the connections (`pool`), the schema and the `events` rows (`record`, `events`);
    the other tables' queries live beside their users (`journal.tools`, `tasks.store`) and
    run on `pool`. Every free-text value goes through `scrub` before it is written. It never
    decides anything about servers, calls or tasks, and never imports the supervisor.

    `settings` name this supervisor's origin (`host`, `home`: stamped on every row) and, in
    a fleet, the shared journal: every write of a shipped table then gives its row the next
    `rev` (`rev_sql`) and `start_link()` starts the `FleetLink` that ships rows above its
    cursor; without a URL rows get `rev = 0`. Every write here is local: none waits on the
    network, and local rows stay the complete record either way.
    """

    def __init__(self, path: Path, *, scrub: Callable[[str], str] = lambda s: s,
                 settings: JournalSettings | None = None, checkpoints: bool = True) -> None:
        self.path = path
        self.scrub = scrub
        self.settings = settings or JournalSettings(home=str(path.parent), host="localhost")
        self.host, self.home = self.settings.host, self.settings.home
        self.link: FleetLink | None = None
        # `checkpoints=False`: no write copies the WAL back into the file itself (SQLite's
        # autocheckpoint, with its fsync, every ~150 tool calls inside one of them); whoever
        # opened it calls `checkpoint` from a worker thread (daemon/retention.py).
        self.pool = SqlitePool(path, autocheckpoint=checkpoints)
        self.commits = 0  # write transactions committed: what `checkpoint` has to copy back
        path.parent.mkdir(parents=True, exist_ok=True)
        # 0600 from the start, as every file of the home that may hold a person's data: SQLite
        # creates the file (umask: 0644) and its -wal/-shm with the database file's mode.
        with contextlib.suppress(FileExistsError):
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        try:
            self.applied = self._migrate()
        except sqlite3.DatabaseError as e:
            from monad_cli.core.errors import MonadError  # here: the journal alone imports no core
            from monad_cli.journal.reader import damaged

            hint = damaged(path, e)
            if hint is None:
                raise
            raise MonadError(hint) from None
        # Write-behind statements (`defer`): written before the next write transaction, by
        # `flush`, or at `close`, whichever comes first. Writers are not only the event loop
        # (the fleet link's thread journals its state, the Studio reads calls in worker
        # threads, and reads flush): each transaction takes the queue under the lock, so no
        # statement is written twice or dropped by another's bookkeeping.
        self.deferred: list[tuple[str, tuple[Any, ...]]] = []
        # When the oldest statement now in `deferred` was queued (`time.monotonic()`; None: the
        # queue is empty): the supervisor's flush waits until it is ~20 ms old, and a call's
        # intent row that comes first takes it along (`CallLog.write_outcomes`).
        self.deferred_since: float | None = None
        self._deferred_lock = threading.Lock()
        # Told each write transaction's seconds (the supervisor's telemetry); None: not timed.
        self.on_write: Callable[[float], None] | None = None
        # A disk fault (`is_disk_fault`): why, since when, and the statements that did not fit.
        self.fault: str | None = None
        self.fault_since: float | None = None
        self.lost = 0
        self._lost_reported = 0
        self._next_ids: dict[str, int] = {}

    def next_id(self, table: str) -> int:
        """A new row id for `table`, taken before the row is written (so a held row's later
        `UPDATE … WHERE id = ?` names it). Only this process inserts into the tables it
        numbers this way (`tool_calls`: the supervisor's calls)."""
        with self._deferred_lock:
            last = self._next_ids.get(table)
            if last is None:
                last = int(self.pool.read(f"SELECT coalesce(max(id), 0) FROM {table}")[0][0])
            self._next_ids[table] = last + 1
            return last + 1

    def write(self, sql: str, params: tuple[Any, ...]) -> int | None:
        """The deferred statements, then `sql`, in one `BEGIN IMMEDIATE` transaction on a
        pooled connection; returns the row id it inserted, if any, and wakes the link. On
        every call's path: the driver costs ~0.05 ms a write (an ORM cost ~1 ms)."""
        return self._transaction([(sql, params)])[0]

    def defer(self, sql: str, params: tuple[Any, ...]) -> None:
        """Queue `sql` for the next write transaction (or `flush`): a write-behind row."""
        with self._deferred_lock:
            if not self.deferred:
                self.deferred_since = time.monotonic()
            self.deferred.append((sql, params))

    def flush(self) -> int:
        """Write the deferred statements now, in one transaction; returns how many. While
        rows are held (a disk fault) this is the retry."""
        return self._transaction([], attempt=True)[1]

    def _transaction(self, statements: list[tuple[str, tuple[Any, ...]]], *,
                     attempt: bool = False) -> tuple[int | None, int]:
        """(row id, deferred statements written): the queue, then `statements`, committed.
        On a disk fault `statements` join the queue (bounded, `HOLD_MAX`) and nothing is
        raised; while the fault lasts only `flush` (`attempt`) tries the disk again, so a
        write costs no more than an append."""
        with self._deferred_lock:
            if self.fault is not None and not attempt and statements:
                self._hold(statements, None)
                return None, 0
            queued, since = self.deferred[:], self.deferred_since
            del self.deferred[:]
            self.deferred_since = None
        if not queued and not statements:
            return None, 0
        on_write = self.on_write
        started = time.perf_counter() if on_write is not None else 0.0
        try:
            row_id = self.pool.run([*queued, *statements])
        except BaseException as exc:
            held = is_disk_fault(exc)
            with self._deferred_lock:  # not written: they wait for the next transaction, first
                self.deferred[:0] = queued
                if queued:
                    self.deferred_since = since
                if held:
                    self._hold(statements, exc)
            if held:
                return None, 0
            raise
        if on_write is not None:
            on_write(time.perf_counter() - started)
        self.commits += 1
        self.wrote()
        if self.fault is not None:
            self._recovered(len(queued))
        return row_id, len(queued)

    def _hold(self, statements: list[tuple[str, tuple[Any, ...]]], exc: BaseException | None) -> None:
        """Keep `statements` after the queue, up to `HOLD_MAX`; count the rest (lock held).
        `exc`: the disk's error (None: held because an earlier one still stands)."""
        room = max(0, HOLD_MAX - len(self.deferred))
        if statements[:room] and not self.deferred:
            self.deferred_since = time.monotonic()
        self.deferred.extend(statements[:room])
        self.lost += len(statements) - min(room, len(statements))
        if exc is None:
            return
        if self.fault is None:
            self.fault_since = time.time()
            log.error("journal %s: cannot write (%s); holding rows in memory (at most %d)", self.path, exc,
                      HOLD_MAX)
        code = getattr(exc, "sqlite_errorcode", 0) & 0xFF
        self.fault = f"cannot write `{self.path}`: {_HOLD_CODES.get(code, str(exc))}"

    def _recovered(self, written: int) -> None:
        """The file took a write again: say so in the journal itself, with what was lost."""
        since, lost = self.fault_since, self.lost - self._lost_reported
        self.fault = self.fault_since = None
        self._lost_reported = self.lost
        what = f"{written} held row(s) written" + (f"; {lost} row(s) did not fit in memory and are lost"
                                                   if lost else "")
        log.warning("journal %s: writable again; %s", self.path, what)
        self.record("journal", state="ok", reason=f"the journal could not be written for "
                                                  f"{time.time() - (since or time.time()):.0f} s; {what}")

    def checkpoint(self) -> int:
        """Copy the WAL back into the file (`SqlitePool.checkpoint`, PASSIVE); returns the
        frames copied. Blocking (it fsyncs): call it from a worker thread."""
        return self.pool.checkpoint()[2]

    def retry(self) -> bool:
        """While held: try the held rows again (one transaction). Returns whether the journal
        is writable now."""
        if self.fault is None:
            return True
        self.flush()
        return self.fault is None

    def _migrate(self) -> list[str]:
        """Apply the pending migrations in one `BEGIN IMMEDIATE` transaction (another opener
        waits, then finds them recorded); returns the names applied. In a fleet, also the
        indexes its link and `rev_sql` read (`schema.FLEET_INDEXES`: made once, on the first
        open in a fleet; a lone supervisor's calls do without them)."""
        with self.pool.transaction() as cur:
            applied = migrate(cur, "sqlite")
            if self.settings.fleet:
                for statement in FLEET_INDEXES:
                    cur.execute(statement)
            return applied

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
        """`{backend, state, reason, queued, oldestQueued, held, lost, host, home, url|path}`:
        `state` is `ok`, `connecting` or `degraded` (the shared journal is unreachable: rows
        queue on disk; or the local file takes no writes: `held` rows wait in memory, `lost`
        did not fit since the supervisor started)."""
        if self.link is not None:
            out = self.link.status()
        else:
            out = {"backend": "sqlite", "path": str(self.path), "state": "ok", "reason": None, "queued": 0,
                   "oldestQueued": None, "host": self.host, "home": self.home}
        with self._deferred_lock:
            held = len(self.deferred) if self.fault is not None else 0
        out.update(held=held, lost=self.lost)
        if self.fault is not None:
            out.update(state="degraded", reason=self.scrub(self.fault), heldSince=self.fault_since)
        return out

    def record(self, kind: str, *, server: str | None = None, state: str | None = None,
               reason: str | None = None, detail: dict[str, Any] | None = None, later: bool = False) -> None:
        """One event row. `later`: queued for the next write transaction (`defer`) instead of
        written now: a batch of events (the gateway's reads and gets) is one transaction when
        only its last is written now."""
        sql = (f"INSERT INTO events (ts, server, kind, state, reason, detail, uid, host, home, rev) "
               f"VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, {self.rev_sql('events')})")
        params = (time.time(), server, kind, state, self.scrub(reason) if reason else reason,
                  self.scrub(json.dumps(detail)) if detail else None, *self.origin())
        if later:
            self.defer(sql, params)
        else:
            self.write(sql, params)

    def events(self, *, server: str | None = None, since: float | None = None,
               kinds: Iterable[str] | None = None, host: str | None = None,
               limit: int = 1000) -> list[dict[str, Any]]:
        """The newest `limit` event rows, oldest first (`journal.reader.events`)."""
        return reader.events(self.pool, server=server, since=since, kinds=kinds, host=host, limit=limit)

    def quick_check(self) -> str:
        """SQLite's `PRAGMA quick_check` verdict: `ok`, or what is damaged."""
        return str(self.pool.read("PRAGMA quick_check")[0][0])

    def close(self) -> None:
        """Write the deferred statements, stop the link (one last flush, bounded in time) and
        close the local file. Rows still held (a disk fault) are counted in the log: nothing
        else can keep them."""
        self.flush()
        if self.fault is not None:
            log.error("journal %s: closed with %d row(s) unwritten (%s)", self.path, len(self.deferred), self.fault)
        if self.link is not None:
            self.link.stop()
        self.pool.close()
