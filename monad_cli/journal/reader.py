"""The journal's events and tool calls as every reader gets them, written once over either way
in: the local SQLite file (`pool.SqlitePool`: the supervisor's, or `open_local`'s read-only
one for `monad journal`, which so costs what `status` does) or a fleet's shared PostgreSQL
journal (`pg.PgDatabase`, through `from_shared`).

Rows come newest `limit`, oldest first: the local journal in id order; the shared one in time
order (`ts`), since its ids follow the order rows were shipped, which for a supervisor that
was offline is later than they happened. A journal that lacks a table or the origin columns
(one no supervisor has migrated yet) reads as empty or without `host`/`home`.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:
    from monad_cli.journal.pool import SqlitePool
    from monad_cli.journal.settings import JournalSettings

T = TypeVar("T")
# The columns read and the keys they are answered under (the API's and `--json`'s shape).
EVENT = {"id": "id", "ts": "ts", "server": "server", "kind": "kind", "state": "state", "reason": "reason",
         "detail": "detail", "host": "host", "home": "home"}
CALL = {"id": "id", "ts": "ts", "server": "server", "tool": "tool", "exposed": "exposed", "args_digest": "argsDigest",
        "via": "via", "decision": "decision", "decided_by": "decidedBy", "outcome": "outcome",
        "duration_ms": "durationMs", "error": "error", "host": "host", "home": "home"}


class Database(Protocol):
    """A way into a journal: `pool.SqlitePool` or `pg.PgDatabase` (`?` placeholders both)."""

    dialect: str  # "sqlite" | "postgresql"

    def read(self, sql: str, params: Sequence[Any] = ...) -> list[tuple[Any, ...]]: ...

    def columns(self, table: str) -> list[str]: ...

    def transaction(self) -> AbstractContextManager[Any]: ...


def _select(db: Database, table: str, shape: dict[str, str], *, server: str | None, since: float | None,
            host: str | None, limit: int, kinds: Iterable[str] | None = None) -> list[dict[str, Any]]:
    have = set(db.columns(table))
    if not have or (host and "host" not in have):
        return []  # not migrated yet; or from before rows named their host: none is this host's
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
    cols = [c if c in have else "NULL" for c in shape]
    order = "ts DESC, id DESC" if db.dialect == "postgresql" else "id DESC"
    rows = db.read(f"SELECT {', '.join(cols)} FROM {table}" + (f" WHERE {' AND '.join(where)}" if where else "")
                   + f" ORDER BY {order} LIMIT ?", (*args, limit))
    return [dict(zip(shape.values(), row, strict=True)) for row in reversed(rows)]


def events(db: Database, *, server: str | None = None, since: float | None = None,
           kinds: Iterable[str] | None = None, host: str | None = None, limit: int = 1000) -> list[dict[str, Any]]:
    """The newest `limit` event rows, oldest first: `{id, ts, server, kind, state, reason,
    detail (decoded), host, home}`."""
    out = _select(db, "events", EVENT, server=server, since=since, host=host, limit=limit, kinds=kinds)
    for row in out:
        row["detail"] = json.loads(row["detail"]) if row["detail"] else None
    return out


def calls(db: Database, *, server: str | None = None, since: float | None = None, host: str | None = None,
          limit: int = 200) -> list[dict[str, Any]]:
    """The newest `limit` tool calls, oldest first: `{id, ts, server, tool, exposed, argsDigest,
    via, decision, decidedBy, outcome, durationMs, error, host, home}`."""
    return _select(db, "tool_calls", CALL, server=server, since=since, host=host, limit=limit)


def open_local(path: Path) -> SqlitePool:
    """A read-only way into the journal file at `path` (SQLite URI `mode=ro`)."""
    from monad_cli.journal.pool import SqlitePool

    return SqlitePool(path, keep=1, readonly=True)


def from_shared(settings: JournalSettings, read: Callable[[Database], T]) -> T:
    """`read(db)` on the fleet's shared journal. Raises `Unavailable` in one line (the password
    as `***`) when it cannot be reached or read."""
    import psycopg

    from monad_cli.core.errors import Unavailable
    from monad_cli.core.redact import redact_text
    from monad_cli.journal.pg import PgDatabase, describe

    db = PgDatabase(settings)
    try:
        return read(db)
    except psycopg.Error as e:
        raise Unavailable(redact_text(f"the shared journal {settings.shown} ({settings.source}) cannot be read: "
                                      f"{describe(e).split(': ', 1)[-1]}", settings.secrets)) from None
    finally:
        db.close()


def damaged(path: Path, exc: sqlite3.Error) -> str | None:
    """One line for a journal file SQLite cannot read as a database (`file is not a
    database`, `database disk image is malformed`): the file and what to do. None for
    other errors (a lock, a full disk), which are not the file's fault."""
    if isinstance(exc, sqlite3.OperationalError) or not isinstance(exc, sqlite3.DatabaseError):
        return None
    return (f"the journal `{path}` is damaged ({exc}); move it aside (`mv {path} {path}.damaged`) and "
            f"monad starts a new one")


__all__ = ["Database", "calls", "damaged", "events", "from_shared", "open_local"]
