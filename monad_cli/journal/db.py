"""journal.db: SQLite in WAL mode through SQLModel, with named migrations.

Every connection: `journal_mode=WAL`, `busy_timeout=5000`, `synchronous=NORMAL` (an app
crash loses nothing committed; a power loss may lose the last commits, which the journal
accepts - JR-1), and every write transaction starts with `BEGIN IMMEDIATE` (JR-2) so two
writers queue on the busy timeout instead of failing mid-transaction.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from sqlalchemy import event, text
from sqlmodel import Field, Session, SQLModel, col, create_engine, select


class Migration(SQLModel, table=True):
    __tablename__ = "migrations"
    name: str = Field(primary_key=True)
    applied_at: float


class Event(SQLModel, table=True):
    """One journal row: a state change, a config error, a supervisor event."""

    __tablename__ = "events"
    id: int | None = Field(default=None, primary_key=True)
    ts: float = Field(index=True)
    server: str | None = Field(default=None, index=True)
    kind: str  # state | config-error | config | daemon
    state: str | None = None
    reason: str | None = None
    detail: str | None = None  # JSON

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "ts": self.ts, "server": self.server, "kind": self.kind,
                "state": self.state, "reason": self.reason,
                "detail": json.loads(self.detail) if self.detail else None}


def _m0001_events(conn: Any) -> None:
    SQLModel.metadata.create_all(conn, tables=[Event.__table__])  # type: ignore[attr-defined]


# Named migrations, applied in order, each recorded in `migrations` once (llm's pattern).
# Later features append here; a name is never reused or edited once released.
MIGRATIONS: list[tuple[str, Callable[[Any], None]]] = [
    ("0001_events", _m0001_events),
]


def register_migration(name: str, fn: Callable[[Any], None]) -> None:
    """Feature modules add their tables here (before `Journal` opens)."""
    if name not in {n for n, _ in MIGRATIONS}:
        MIGRATIONS.append((name, fn))


class Journal:
    """Open (creating and migrating) the journal at `path`.

    `scrub` is applied to every free-text value before it is written (secret redaction).
    """

    def __init__(self, path: Path, *, scrub: Callable[[str], str] = lambda s: s) -> None:
        self.path = path
        self.scrub = scrub
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
        self.migrate()

    def migrate(self) -> list[str]:
        """Apply pending named migrations; returns the names applied."""
        applied: list[str] = []
        with self.engine.begin() as conn:
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

    def record(self, kind: str, *, server: str | None = None, state: str | None = None,
               reason: str | None = None, detail: dict[str, Any] | None = None) -> None:
        row = Event(ts=time.time(), server=server, kind=kind, state=state,
                    reason=self.scrub(reason) if reason else reason,
                    detail=self.scrub(json.dumps(detail)) if detail else None)
        with Session(self.engine) as s:
            s.add(row)
            s.commit()

    def events(self, *, server: str | None = None, since: float | None = None,
               kinds: Iterable[str] | None = None, limit: int = 1000) -> list[dict[str, Any]]:
        q = select(Event)
        if server:
            q = q.where(Event.server == server)
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
        self.engine.dispose()
