"""The journal's read paths for the CLI, on the standard library's `sqlite3` alone.

`monad journal` only reads, and SQLModel's import alone costs about 0.5 s, so the reads go
through a read-only connection (`mode=ro`: this process can never write, migrate or
checkpoint the file, whatever it runs). The schema stays owned by the SQLModel tables
(`journal/tables.py`) and the migrations (`journal/migrations.py`); the rows come back in
the shapes of `Event.as_dict` and `ToolCall.as_dict`, and a test holds the two to the same
answers. A journal that does not have a table yet (an older file, one never migrated) reads
as empty; the writer adds the table on its next open.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import Any
from urllib.parse import quote

BUSY_TIMEOUT_MS = 5000  # as the writers: wait out a checkpoint instead of failing


def connect_readonly(path: Path) -> sqlite3.Connection:
    """A read-only connection to the journal at `path` (SQLite URI `mode=ro`). Raises
    `sqlite3.OperationalError` when the file cannot be opened."""
    conn = sqlite3.connect(f"file:{quote(str(path))}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_MS / 1000)
    conn.row_factory = sqlite3.Row
    conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    return conn


def _select(path: Path, table: str, *, server: str | None, since: float | None, limit: int,
            kinds: Iterable[str] | None = None, host: str | None = None) -> list[sqlite3.Row]:
    where: list[str] = []
    args: list[Any] = []
    for column, value in (("server", server), ("host", host)):
        if value:
            where.append(f"{column} = ?")
            args.append(value)
    if since is not None:
        where.append("ts >= ?")
        args.append(since)
    kinds = list(kinds or [])
    if kinds:
        where.append(f"kind IN ({', '.join('?' for _ in kinds)})")
        args.extend(kinds)
    sql = f"SELECT * FROM {table}" + (f" WHERE {' AND '.join(where)}" if where else "") + \
        " ORDER BY id DESC LIMIT ?"
    conn = connect_readonly(path)
    try:
        if conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)).fetchone() is None:
            return []
        if host and not _has_column(conn, table, "host"):
            return []  # a journal from before rows named their host: none is this host's
        rows = conn.execute(sql, [*args, limit]).fetchall()
    finally:
        conn.close()
    return list(reversed(rows))


def _has_column(conn: sqlite3.Connection, table: str, column: str) -> bool:
    return any(r["name"] == column for r in conn.execute(f"PRAGMA table_info({table})"))


def _origin(r: sqlite3.Row) -> dict[str, Any]:
    # A journal the supervisor has not migrated yet has no origin columns: None, as rows
    # written before them have.
    keys = r.keys()
    return {"host": r["host"] if "host" in keys else None, "home": r["home"] if "home" in keys else None}


def events(path: Path, *, server: str | None = None, since: float | None = None,
           kinds: Iterable[str] | None = None, host: str | None = None, limit: int = 1000) -> list[dict[str, Any]]:
    """The newest `limit` event rows, oldest first: `Journal.events`' answer, read-only."""
    return [{"id": r["id"], "ts": r["ts"], "server": r["server"], "kind": r["kind"], "state": r["state"],
             "reason": r["reason"], "detail": json.loads(r["detail"]) if r["detail"] else None, **_origin(r)}
            for r in _select(path, "events", server=server, since=since, limit=limit, kinds=kinds, host=host)]


def calls(path: Path, *, server: str | None = None, since: float | None = None, host: str | None = None,
          limit: int = 200) -> list[dict[str, Any]]:
    """The newest `limit` tool calls, oldest first: `journal.tools.calls`' answer, read-only."""
    return [{"id": r["id"], "ts": r["ts"], "server": r["server"], "tool": r["tool"], "exposed": r["exposed"],
             "argsDigest": r["args_digest"], "via": r["via"], "decision": r["decision"],
             "decidedBy": r["decided_by"], "outcome": r["outcome"], "durationMs": r["duration_ms"],
             "error": r["error"], **_origin(r)}
            for r in _select(path, "tool_calls", server=server, since=since, limit=limit, host=host)]


def damaged(path: Path, exc: sqlite3.Error) -> str | None:
    """One line for a journal file SQLite cannot read as a database (`file is not a
    database`, `database disk image is malformed`): the file and what to do. None for
    other errors (a lock, a full disk), which are not the file's fault."""
    if isinstance(exc, sqlite3.OperationalError) or not isinstance(exc, sqlite3.DatabaseError):
        return None
    return (f"the journal `{path}` is damaged ({exc}); move it aside (`mv {path} {path}.damaged`) and "
            f"monad starts a new one")

