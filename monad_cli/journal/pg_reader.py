"""`monad journal` on a fleet's shared PostgreSQL journal: plain psycopg, no SQLAlchemy (the
CLI stays quick), rows in the same shapes as `Event.as_dict` / `ToolCall.as_dict`.

Rows are ordered by their time (`ts`): in the shared journal ids follow the order rows
were shipped, which for a supervisor that was offline is later than they happened.
"""

from __future__ import annotations

import json
from typing import Any

from monad_cli.core.errors import Unavailable
from monad_cli.core.redact import redact_text
from monad_cli.journal.settings import JournalSettings

_EVENT_COLS = ("id", "ts", "server", "kind", "state", "reason", "detail", "host", "home")
_CALL_COLS = ("id", "ts", "server", "tool", "exposed", "args_digest", "via", "decision", "decided_by", "outcome",
              "duration_ms", "error", "host", "home")
_CALL_KEYS = ("id", "ts", "server", "tool", "exposed", "argsDigest", "via", "decision", "decidedBy", "outcome",
              "durationMs", "error", "host", "home")


def _query(settings: JournalSettings, table: str, cols: tuple[str, ...], *, server: str | None,
           since: float | None, host: str | None, limit: int) -> list[tuple[Any, ...]]:
    import psycopg

    where: list[str] = []
    params: list[Any] = []
    for col, value in (("server", server), ("host", host)):
        if value:
            where.append(f"{col} = %s")
            params.append(value)
    if since is not None:
        where.append("ts >= %s")
        params.append(since)
    sql = (f"SELECT {', '.join(cols)} FROM {table}{' WHERE ' + ' AND '.join(where) if where else ''} "
           f"ORDER BY ts DESC, id DESC LIMIT %s")
    try:
        with psycopg.connect(settings.conninfo, connect_timeout=5) as conn:
            rows = conn.execute(sql, [*params, limit]).fetchall()
    except psycopg.Error as e:
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        if isinstance(e, psycopg.errors.UndefinedTable):
            return []  # no supervisor has migrated this database yet
        raise Unavailable(redact_text(f"the shared journal {settings.shown} ({settings.source}) cannot be read: "
                                      f"{first}", settings.secrets)) from None
    return list(reversed(rows))


def events(settings: JournalSettings, *, server: str | None = None, since: float | None = None,
           host: str | None = None, limit: int = 200) -> list[dict[str, Any]]:
    rows = _query(settings, "events", _EVENT_COLS, server=server, since=since, host=host, limit=limit)
    out = [dict(zip(_EVENT_COLS, r, strict=True)) for r in rows]
    for r in out:
        r["detail"] = json.loads(r["detail"]) if r["detail"] else None
    return out


def calls(settings: JournalSettings, *, server: str | None = None, since: float | None = None,
          host: str | None = None, limit: int = 200) -> list[dict[str, Any]]:
    rows = _query(settings, "tool_calls", _CALL_COLS, server=server, since=since, host=host, limit=limit)
    return [dict(zip(_CALL_KEYS, r, strict=True)) for r in rows]
