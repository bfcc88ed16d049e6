"""The journal's growth: rows older than `[journal] keep` (default 90 days) are deleted, and
the file gives the space back (docs/supervisor.md "The journal's growth").

What is pruned: `events`, `tool_calls` (never one still `running`) and finished `tasks`
(`terminal_at` set). What is kept whatever its age: approvals, pins and seen tool sets (they
are trust, not history), and in a fleet every row not yet shipped to the shared journal
(`rev` above the link's cursor, `journal.cursor.json`): pruning never loses a row the shared
journal has not got. The shared journal itself is not pruned from here.

Deletes run in batches of `BATCH` rows, each its own `BEGIN IMMEDIATE` transaction, so the
supervisor's writers wait at most one batch (~10 ms) and never the whole prune. Then the
space is reclaimed: a journal with `auto_vacuum = INCREMENTAL` (every journal made since
this module: `pool.PRAGMAS` sets it before the first table) frees its free pages with
`PRAGMA incremental_vacuum`; an older one is converted once by a full `VACUUM` (which
rewrites the file, needing as much free space again as the file takes).

Standard library only: `monad journal prune` runs it without SQLAlchemy.
"""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from typing import Any

BATCH = 10_000
# table → (time column, extra condition); the time column is indexed in every one.
PRUNED: dict[str, tuple[str, str]] = {
    "events": ("ts", ""),
    "tool_calls": ("ts", " AND outcome != 'running'"),
    "tasks": ("terminal_at", " AND terminal_at IS NOT NULL"),
}
SHIPPED = ("events", "tool_calls")  # pruned tables that a fleet ships (`tables.SHIPPED_TABLES`)
CURSOR_FILE = "journal.cursor.json"  # `journal.fleet.CURSOR_FILE`


def shipped_cursor(journal_path: Path) -> dict[str, int] | None:
    """The fleet link's cursor (highest `rev` shipped per table), or None without a fleet's file."""
    try:
        data = json.loads(journal_path.with_name(CURSOR_FILE).read_text())
    except (OSError, ValueError):
        return None
    return {k: int(v) for k, v in data.items() if isinstance(v, int)} if isinstance(data, dict) else None


def prune(conn: sqlite3.Connection, *, keep_s: float, now: float | None = None, fleet: bool = False,
          cursor: dict[str, int] | None = None) -> dict[str, int]:
    """Delete the rows older than `keep_s` seconds before `now` (epoch seconds; default now)
    from the pruned tables; returns how many per table. `conn` is in autocommit mode (the
    journal's `pool.configure`). `fleet`: keep rows above `cursor`'s rev (none shipped yet
    when `cursor` is None)."""
    cutoff = (time.time() if now is None else now) - keep_s
    counts: dict[str, int] = {}
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    for table, (column, extra) in PRUNED.items():
        if table not in tables:
            continue
        where = f"{column} < ?{extra}"
        args: list[Any] = [cutoff]
        if fleet and table in SHIPPED:
            where += " AND rev <= ?"
            args.append((cursor or {}).get(table, 0))
        total = 0
        while True:
            conn.execute("BEGIN IMMEDIATE")
            try:
                n = conn.execute(f"DELETE FROM {table} WHERE rowid IN (SELECT rowid FROM {table} WHERE {where} "
                                 f"LIMIT {BATCH})", args).rowcount
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            total += n
            if n < BATCH:
                break
        counts[table] = total
    return counts


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


def prune_file(path: Path, *, keep_s: float, fleet: bool = False, now: float | None = None) -> dict[str, Any]:
    """`prune` then `reclaim` on the journal file at `path` (the CLI's `monad journal prune`):
    `{"deleted": {table: n}, "reclaimed": {...}, "cutoff": epoch seconds}`."""
    from monad_cli.journal.pool import configure

    conn = sqlite3.connect(path, timeout=5.0)
    try:
        configure(conn)
        cursor = shipped_cursor(path) if fleet else None
        deleted = prune(conn, keep_s=keep_s, now=now, fleet=fleet, cursor=cursor)
        reclaimed = reclaim(conn)
    finally:
        conn.close()
    return {"deleted": deleted, "reclaimed": reclaimed, "cutoff": (time.time() if now is None else now) - keep_s}
