"""Queries over the `tasks` journal table (`journal.tables.TaskRow`): one row per tool call
started through the task manager, and the only place rows change state.

Every state change goes through `TaskStore.update`, which checks it against
`tasks.states.TRANSITIONS` inside the write transaction, so a stale reader cannot move a
row that another task has already ended. Terminal rows are deleted 7 days after they
ended (`cleanup`).

Times are epoch seconds from the manager's clock (injectable for tests). JSON columns
hold wire JSON (camelCase), scrubbed of known secrets like every journal value.

A supervisor reads the open rows and the counts of a server's rows each time it connects
one, and cleans up at its start: the counts and the cleanup are plain SQL on the journal's
own connections, and so are the open rows while there are none (the usual case), so a
start does not load the ORM (SQLModel, ~0.2 s to import) for them (`Journal.engine`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, Any

from monad_cli.core.task_states import INITIAL, OPEN, IllegalTransition, check_transition
from monad_cli.journal.db import Journal

if TYPE_CHECKING:
    from monad_cli.journal.tables import TaskRow

RETENTION_S = 7 * 24 * 3600

_JSON_COLS = ("arguments", "correlation", "result", "error", "input_requests", "answered_keys")


def row_dict(row: TaskRow) -> dict[str, Any]:
    """The API shape of a row (camelCase, JSON columns decoded)."""
    d = row.model_dump()
    for c in _JSON_COLS:
        d[c] = json.loads(d[c]) if d[c] else None
    return {
        "id": d["id"], "server": d["server"], "tool": d["tool"], "arguments": d["arguments"],
        "correlation": d["correlation"], "taskId": d["task_id"], "state": d["state"],
        "statusMessage": d["status_message"], "createdAt": d["created_at"], "updatedAt": d["updated_at"],
        "terminalAt": d["terminal_at"], "ttlMs": d["ttl_ms"], "pollIntervalMs": d["poll_interval_ms"],
        "result": d["result"], "error": d["error"], "inputRequests": d["input_requests"],
        "answeredKeys": d["answered_keys"] or [], "deliveryPending": d["delivery_pending"],
        "pendingKind": d["pending_kind"], "deliveries": d["deliveries"], "deliveredAt": d["delivered_at"],
        "cancelRequested": d["cancel_requested"], "recoveries": d["recoveries"], "retries": d["retries"],
        "adopted": d["adopted"],
    }


class TaskStore:
    """Queries over the `tasks` table of an open `Journal`."""

    def __init__(self, journal: Journal, *, clock: Callable[[], float]) -> None:
        self.journal = journal
        self.clock = clock

    def _json(self, value: Any) -> str | None:
        return None if value is None else self.journal.scrub(json.dumps(value))

    def insert(self, *, id: str, server: str, tool: str, arguments: Any, correlation: Any, state: str,
               adopted: bool = False, task_id: str | None = None) -> TaskRow:
        """A new row in `state` (one of `states.INITIAL`). Raises `IllegalTransition` otherwise."""
        from sqlmodel import Session

        from monad_cli.journal.tables import TaskRow

        if state not in INITIAL:
            raise IllegalTransition(f"a task row cannot start in state {state}")
        now = self.clock()
        row = TaskRow(id=id, server=server, tool=tool, arguments=self._json(arguments),
                      correlation=self._json(correlation), state=str(state), created_at=now, updated_at=now,
                      adopted=adopted, task_id=task_id, submitted=task_id is not None)
        with Session(self.journal.engine, expire_on_commit=False) as s:
            s.add(row)
            s.commit()
        return row

    def get(self, id: str) -> TaskRow | None:
        from sqlmodel import Session

        from monad_cli.journal.tables import TaskRow

        with Session(self.journal.engine, expire_on_commit=False) as s:
            return s.get(TaskRow, id)

    def by_task_id(self, server: str, task_id: str) -> TaskRow | None:
        """The row of `server`'s task `task_id`: the open one if any, else the newest. Two rows
        share a taskId when a caller reused an invocation id and the server deduplicated."""
        from sqlmodel import Session, col, select

        from monad_cli.journal.tables import TaskRow

        with Session(self.journal.engine, expire_on_commit=False) as s:
            q = select(TaskRow).where(TaskRow.server == server, TaskRow.task_id == task_id)
            rows = list(s.exec(q.order_by(col(TaskRow.created_at).desc())))
        return next((r for r in rows if r.state in OPEN), rows[0] if rows else None)

    def find(self, prefix: str) -> list[TaskRow]:
        """Rows whose id (or server taskId) is `prefix` or starts with it."""
        from sqlmodel import Session, col, select

        from monad_cli.journal.tables import TaskRow

        with Session(self.journal.engine, expire_on_commit=False) as s:
            exact = s.get(TaskRow, prefix)
            if exact is not None:
                return [exact]
            like = prefix.replace("%", "").replace("_", r"\_") + "%"
            q = select(TaskRow).where(col(TaskRow.id).like(like, escape="\\") |
                                      col(TaskRow.task_id).like(like, escape="\\")).limit(5)
            return list(s.exec(q))

    def update(self, id: str, **fields: Any) -> TaskRow | None:
        """Set columns (JSON columns take Python values) and `updated_at`; returns the row,
        or None if there is none. A `state` must be allowed from the row's current state
        (`states.TRANSITIONS`), else `IllegalTransition` is raised and nothing is written."""
        from sqlmodel import Session

        from monad_cli.journal.tables import TaskRow

        with Session(self.journal.engine, expire_on_commit=False) as s:
            row = s.get(TaskRow, id)
            if row is None:
                return None
            if "state" in fields:
                check_transition(row.state, fields["state"])
                fields["state"] = str(fields["state"])  # a TaskState: store its plain name
            for k, v in fields.items():
                setattr(row, k, self._json(v) if k in _JSON_COLS else v)
            row.updated_at = self.clock()
            s.add(row)
            s.commit()
            return row

    def take_delivery(self, id: str) -> bool:
        """Atomically turn `deliveryPending` off; True only for the one caller that did it."""
        from sqlalchemy import text

        with self.journal.engine.begin() as conn:
            res = conn.execute(text("UPDATE tasks SET delivery_pending = 0, deliveries = deliveries + 1, "
                                    "delivered_at = :t WHERE id = :id AND delivery_pending = 1"),
                               {"t": self.clock(), "id": id})
            return bool(res.rowcount)

    def rows(self, *, server: str | None = None, states: Collection[str] | None = None,
             pending: bool | None = None, limit: int = 500) -> list[TaskRow]:
        from sqlmodel import Session, col, select

        from monad_cli.journal.tables import TaskRow

        q = select(TaskRow)
        if server:
            q = q.where(TaskRow.server == server)
        if states:
            q = q.where(col(TaskRow.state).in_([str(s) for s in states]))
        if pending is not None:
            q = q.where(TaskRow.delivery_pending == pending)
        q = q.order_by(col(TaskRow.created_at).desc()).limit(limit)
        with Session(self.journal.engine, expire_on_commit=False) as s:
            return list(s.exec(q))

    def count_by_state(self, server: str, states: Collection[str]) -> dict[str, int]:
        """How many rows of `server` are in each of `states` (states without rows left out)."""
        names = tuple(str(s) for s in states)
        rows = self.journal.pool.read(f"SELECT state, count(*) FROM tasks WHERE server = ? AND state IN "
                                      f"({', '.join('?' * len(names))}) GROUP BY state", (server, *names))
        return {str(state): int(n) for state, n in rows}

    def open_rows(self) -> list[TaskRow]:
        """Every non-terminal row, oldest first (the resume order)."""
        states = tuple(str(s) for s in OPEN)
        if not self.journal.pool.read(f"SELECT 1 FROM tasks WHERE state IN ({', '.join('?' * len(states))}) LIMIT 1",
                                      states):
            return []  # the usual answer, without the ORM
        from sqlmodel import Session, col, select

        from monad_cli.journal.tables import TaskRow

        with Session(self.journal.engine, expire_on_commit=False) as s:
            q = select(TaskRow).where(col(TaskRow.state).in_([str(s) for s in OPEN])).order_by(col(TaskRow.created_at))
            return list(s.exec(q))

    def cleanup(self, *, retention_s: float = RETENTION_S) -> int:
        """Delete terminal rows that ended more than `retention_s` ago; returns how many."""
        cutoff = self.clock() - retention_s
        return self.journal.pool.change("DELETE FROM tasks WHERE terminal_at IS NOT NULL AND terminal_at < ?",
                                        (cutoff,))
