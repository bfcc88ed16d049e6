"""`[journal] keep` on a fleet's shared PostgreSQL journal (docs/fleet.md "Retention"):
`events` and `tool_calls` rows older than `keep` are deleted there too (never a call still
`running`); `approvals` and `vetted_tool_sets` are trust, not history, and are kept.

Whose rows: by default only the rows this supervisor wrote (its `host` and `home`), so one
machine's short `keep` never deletes the team's history; that is what each supervisor's
daily round does. `every_host` (`monad journal prune --every-host`, a person's decision)
applies `keep` to every host's rows, e.g. those of machines that left the fleet.

Deletes run in batches of `BATCH` rows, each its own transaction, so the supervisors that
ship rows meanwhile wait at most one batch. PostgreSQL's autovacuum makes the space of the
deleted rows reusable; nothing here rewrites a table. A row shipped later than it was
written (a supervisor offline for longer than `keep`) is pruned at the next round.

Plain psycopg, no SQLAlchemy: `monad journal prune` stays quick.
"""

from __future__ import annotations

import time
from typing import Any

from monad_cli.core.errors import Unavailable
from monad_cli.core.redact import redact_text
from monad_cli.journal.settings import JournalSettings

BATCH = 10_000
# table → extra condition; `ts` is indexed in both (journal.tables).
PRUNED: dict[str, str] = {"events": "", "tool_calls": " AND outcome != 'running'"}


def prune_shared(settings: JournalSettings, *, keep_s: float, every_host: bool = False,
                 now: float | None = None) -> dict[str, Any]:
    """Delete the shared journal's rows older than `keep_s` seconds before `now` (epoch s;
    default now): this supervisor's (`settings.host`, `settings.home`), or with
    `every_host` everyone's. Returns `{"deleted": {table: n}, "cutoff": epoch s, "scope":
    "this host" | "every host"}`. Raises `Unavailable` (one line, the password as `***`)
    when the database cannot be reached or refuses."""
    import psycopg

    cutoff = (time.time() if now is None else now) - keep_s
    deleted: dict[str, int] = {}
    try:
        with psycopg.connect(settings.conninfo, connect_timeout=5, autocommit=True) as conn:
            tables = {r[0] for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = "
                                                 "current_schema()").fetchall()}
            for table, extra in PRUNED.items():
                if table not in tables:
                    continue  # no supervisor has migrated this database yet
                where = f"ts < %s{extra}"
                params: list[Any] = [cutoff]
                if not every_host:
                    where += " AND host = %s AND home = %s"
                    params += [settings.host, settings.home]
                total = 0
                while True:
                    with conn.transaction():
                        n = conn.execute(f"DELETE FROM {table} WHERE id IN (SELECT id FROM {table} WHERE {where} "
                                         f"LIMIT {BATCH})", params).rowcount
                    total += max(n, 0)
                    if n < BATCH:
                        break
                deleted[table] = total
    except psycopg.Error as e:
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        raise Unavailable(redact_text(f"the shared journal {settings.shown} ({settings.source}) cannot be pruned: "
                                      f"{first}", settings.secrets)) from None
    return {"deleted": deleted, "cutoff": cutoff, "scope": "every host" if every_host else "this host"}
