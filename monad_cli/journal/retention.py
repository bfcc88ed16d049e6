"""The journal's growth: rows older than `[journal] keep` (default 90 days) are deleted, and
the file gives the space back (docs/supervisor.md "The journal's growth", docs/fleet.md
"Retention").

What is pruned: `events`, `tool_calls` (never one still `running`) and finished `tasks`
(`terminal_at` set). What is kept whatever its age: approvals, pins and seen tool sets (they
are trust, not history), and in a fleet every row not yet shipped to the shared journal
(`rev` above the link's cursor, `journal.cursor.json`): pruning never loses a row the shared
journal has not got. The same `prune` runs on the shared journal (`prune_shared`), where only
the rows of one supervisor (`origin`: its host and home) are deleted unless a person asks
for every host's (`monad journal prune --every-host`): one machine's short `keep` never
deletes the team's history.

Deletes run in batches of `BATCH` rows, each its own transaction, so the writers wait at
most one batch (~10 ms) and never the whole prune. Then the local file's space is
reclaimed: a journal with `auto_vacuum = INCREMENTAL` (every journal made since
this module: `pool.PRAGMAS` sets it before the first table) frees its free pages with
`PRAGMA incremental_vacuum`; an older one is converted once by a full `VACUUM` (which
rewrites the file, needing as much free space again as the file takes).

Standard library only (psycopg for the shared journal, imported by `journal.pg`).
"""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from monad_cli.journal.reader import Database
    from monad_cli.journal.settings import JournalSettings

BATCH = 10_000
# table → (time column, extra condition); the time column is indexed in every one.
PRUNED: dict[str, tuple[str, str]] = {
    "events": ("ts", ""),
    "tool_calls": ("ts", " AND outcome != 'running'"),
    "tasks": ("terminal_at", " AND terminal_at IS NOT NULL"),
}
SHIPPED = ("events", "tool_calls")  # pruned tables that a fleet ships (`schema.SHIPPED_TABLES`)
CURSOR_FILE = "journal.cursor.json"  # `journal.fleet.CURSOR_FILE`


def shipped_cursor(journal_path: Path) -> dict[str, int] | None:
    """The fleet link's cursor (highest `rev` shipped per table), or None without a fleet's file."""
    try:
        data = json.loads(journal_path.with_name(CURSOR_FILE).read_text())
    except (OSError, ValueError):
        return None
    return {k: int(v) for k, v in data.items() if isinstance(v, int)} if isinstance(data, dict) else None


def prune(db: Database, *, keep_s: float, now: float | None = None, cursor: dict[str, int] | None = None,
          origin: tuple[str, str] | None = None, tables: tuple[str, ...] = tuple(PRUNED)) -> dict[str, int]:
    """Delete the rows of `tables` older than `keep_s` seconds before `now` (epoch seconds;
    default now); returns how many per table. `cursor` (a fleet's local journal): keep the
    shipped tables' rows above its rev (none shipped yet: `{}`); `origin` (host, home): only
    that supervisor's rows. A table the journal lacks is skipped (not migrated yet)."""
    cutoff = (time.time() if now is None else now) - keep_s
    # SQLite deletes by `rowid` (every table has one, `tasks` too); PostgreSQL's shipped tables by `id`.
    key = "rowid" if db.dialect == "sqlite" else "id"
    counts: dict[str, int] = {}
    for table in tables:
        if not db.columns(table):
            continue
        column, extra = PRUNED[table]
        where = f"{column} < ?{extra}"
        args: list[Any] = [cutoff]
        if cursor is not None and table in SHIPPED:
            where += " AND rev <= ?"
            args.append(cursor.get(table, 0))
        if origin is not None:
            where += " AND host = ? AND home = ?"
            args += list(origin)
        total = 0
        while True:
            with db.transaction() as cur:
                n = cur.execute(f"DELETE FROM {table} WHERE {key} IN (SELECT {key} FROM {table} WHERE {where} "
                                f"LIMIT {BATCH})", args).rowcount
            total += max(n, 0)
            if n < BATCH:
                break
        counts[table] = total
    return counts


def prune_shared(settings: JournalSettings, *, keep_s: float, every_host: bool = False) -> dict[str, Any]:
    """`prune` on the fleet's shared journal: `events` and `tool_calls` (approvals and vetted
    tool sets are trust, kept), this supervisor's rows (`settings.host`, `home`) or with
    `every_host` everyone's. Returns `{"deleted": {table: n}, "cutoff": epoch s, "scope":
    "this host" | "every host"}`. Raises `Unavailable` (one line, the password as `***`)."""
    from monad_cli.journal.reader import from_shared

    now = time.time()
    origin = None if every_host else (settings.host, settings.home)
    deleted = from_shared(settings, lambda db: prune(db, keep_s=keep_s, now=now, origin=origin, tables=SHIPPED))
    return {"deleted": deleted, "cutoff": now - keep_s, "scope": "every host" if every_host else "this host"}


def reclaim(conn: sqlite3.Connection, *, convert: bool = True) -> dict[str, Any]:
    """Give the free pages back to the filesystem: `{"mode": "incremental"|"vacuum"|"none",
    "pages": N free before, "bytes": size before minus after}` (sizes of the main file after
    a WAL checkpoint). `convert`: a journal made before incremental vacuum is rewritten once
    by `VACUUM` (else, `none`: its free pages wait for new rows)."""
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    free = conn.execute("PRAGMA freelist_count").fetchone()[0]
    before = conn.execute("PRAGMA page_count").fetchone()[0]
    if conn.execute("PRAGMA auto_vacuum").fetchone()[0] == 2:
        mode = "incremental"
        conn.executescript("PRAGMA incremental_vacuum;")  # executescript steps it to the end
    elif not convert:
        return {"mode": "none", "pages": int(free), "bytes": 0}
    else:  # made before incremental vacuum: convert once (rewrites the whole file)
        mode = "vacuum"
        conn.execute("PRAGMA auto_vacuum = INCREMENTAL")
        conn.execute("VACUUM")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    after = conn.execute("PRAGMA page_count").fetchone()[0]
    return {"mode": mode, "pages": int(free), "bytes": int((before - after) * page_size)}


def prune_file(path: Path, *, keep_s: float, fleet: bool = False) -> dict[str, Any]:
    """`prune` then `reclaim` on the journal file at `path` (the CLI's `monad journal prune`):
    `{"deleted": {table: n}, "reclaimed": {...}, "cutoff": epoch seconds}`."""
    from monad_cli.journal.pool import SqlitePool

    now = time.time()
    pool = SqlitePool(path, keep=1)
    try:
        deleted = prune(pool, keep_s=keep_s, now=now, cursor=(shipped_cursor(path) or {}) if fleet else None)
        with pool.connection() as conn:
            reclaimed = reclaim(conn)
    finally:
        pool.close()
    return {"deleted": deleted, "reclaimed": reclaimed, "cutoff": now - keep_s}
