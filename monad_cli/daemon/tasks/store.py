"""Queries over the `tasks` journal table (`journal.schema.TaskRow`): one row per tool call
started through the task manager, and the only place rows change state.

Every state change goes through `TaskStore.update`, which checks it against
`core.task_states.TRANSITIONS`, so a stale reader cannot move a row another task has ended.
Terminal rows are deleted 7 days after they ended. Times are epoch seconds from the
manager's clock; JSON columns hold wire JSON, scrubbed like every journal value. Plain SQL
on the journal's own connections (`Journal.pool`).

A write the journal's disk cannot take (`journal.db.is_disk_fault`) never stops a task's
loop: a change of an existing row is held in memory (`held`: the latest value of each
column, at most `HOLD_ROWS` rows, more counted in `lost`), applied to every row read, and
written in one transaction once the disk takes writes (`retry`). A new row cannot be held
(nothing could find it): `insert` raises `DiskFull` (HTTP 507), counted in `refused`.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from collections.abc import Callable, Collection
from typing import Any

from pydantic.alias_generators import to_camel

from monad_cli.core.errors import DiskFull
from monad_cli.core.task_states import INITIAL, OPEN, IllegalTransition, check_transition
from monad_cli.journal.db import RETRY_S, Journal, is_disk_fault
from monad_cli.journal.schema import TASK_COLUMNS, TaskRow

RETENTION_S = 7 * 24 * 3600
# Rows whose changes wait in memory while the journal's file takes no writes (a few hundred
# bytes each); the task manager's limits keep far fewer rows open.
HOLD_ROWS = 1000
log = logging.getLogger("monad.tasks")


_JSON_COLS = ("arguments", "correlation", "result", "error", "input_requests", "answered_keys")
_INTERNAL_COLS = ("server_created_at", "submitted")  # the supervisor's own bookkeeping, not shown


def row_dict(row: TaskRow) -> dict[str, Any]:
    """The API shape of a row: its columns in camelCase, JSON columns decoded, `answeredKeys` a list."""
    d = {to_camel(k): (json.loads(v) if v else None) if k in _JSON_COLS else v
         for k, v in dataclasses.asdict(row).items() if k not in _INTERNAL_COLS}
    d["answeredKeys"] = d["answeredKeys"] or []
    return d


class TaskStore:
    """Queries over the `tasks` table of an open `Journal`."""

    def __init__(self, journal: Journal, *, clock: Callable[[], float]) -> None:
        self.journal = journal
        self.clock = clock
        self.held: dict[str, dict[str, Any]] = {}  # row id → column values not yet written
        self.fault: str | None = None  # why the last write failed, while rows are held
        self.fault_since: float | None = None  # epoch s
        self.lost = 0  # changes that did not fit in `HOLD_ROWS`
        self.refused = 0  # new rows refused (DiskFull)
        self._last_try = -float("inf")

    # -- a disk that takes no writes ------------------------------------------------------
    def status(self) -> dict[str, Any]:
        """`{state: ok|degraded, reason, heldRows, lost, refused, heldSince}`."""
        return {"state": "degraded" if self.fault else "ok", "reason": self.fault, "heldRows": len(self.held),
                "lost": self.lost, "refused": self.refused, "heldSince": self.fault_since}

    def _faulted(self, exc: Exception) -> None:
        """Note a write the disk did not take; re-raises `exc` when it is no disk fault."""
        if not is_disk_fault(exc):
            raise exc
        if self.fault is None:
            self.fault_since = time.time()
            log.error("tasks store: cannot write the journal (%s); holding task changes in memory "
                      "(at most %d rows)", exc, HOLD_ROWS)
        self.fault = f"cannot write the tasks of `{self.journal.path}`: {exc}"

    def _hold(self, id: str, values: dict[str, Any]) -> None:
        if id in self.held or len(self.held) < HOLD_ROWS:
            self.held.setdefault(id, {}).update(values)
        else:
            self.lost += 1

    def _overlay(self, row: TaskRow) -> TaskRow:
        """`row` with its held changes applied: what it is, not yet what is written."""
        if row.id in self.held:
            for k, v in self.held[row.id].items():
                setattr(row, k, v)
        return row

    def retry(self, *, force: bool = True) -> bool:
        """Write the held changes (one transaction); whether none are held now. Without
        `force`, at most once per `RETRY_S` (before each write, while held)."""
        if not self.held:
            return True
        now = time.monotonic()
        if not force and now - self._last_try < RETRY_S:
            return False
        self._last_try = now
        held = dict(self.held)
        try:
            with self.journal.pool.transaction() as cur:
                for id, values in held.items():
                    cur.execute(f"UPDATE tasks SET {', '.join(f'{k} = ?' for k in values)} WHERE id = ?",
                                (*values.values(), id))
        except Exception as exc:  # noqa: BLE001 - `_faulted` re-raises all but a disk fault
            self._faulted(exc)
            return False
        for id, values in held.items():
            if self.held.get(id) == values:
                del self.held[id]
        if not self.held:
            since = time.time() - (self.fault_since or time.time())
            lost = f"; {self.lost} change(s) did not fit in memory and are lost" if self.lost else ""
            log.warning("tasks store: writable again; %d held task row(s) written%s", len(held), lost)
            self.journal.record("journal", state="ok", reason=f"the tasks store could not be written for {since:.0f} "
                                                              f"s; {len(held)} held task row(s) written{lost}")
            self.fault = self.fault_since = None
        return not self.held

    def _json(self, value: Any) -> str | None:
        return None if value is None else self.journal.scrub(json.dumps(value))

    def insert(self, *, id: str, server: str, tool: str, arguments: Any, correlation: Any, state: str,
               adopted: bool = False, task_id: str | None = None) -> TaskRow:
        """A new row in `state` (one of `states.INITIAL`). Raises `IllegalTransition` otherwise."""
        if state not in INITIAL:
            raise IllegalTransition(f"a task row cannot start in state {state}")
        now = self.clock()
        row = TaskRow(id=id, server=server, tool=tool, arguments=self._json(arguments),
                      correlation=self._json(correlation), state=str(state), created_at=now, updated_at=now,
                      adopted=adopted, task_id=task_id, submitted=task_id is not None)
        values = dataclasses.astuple(row)
        try:
            self.journal.pool.change(f"INSERT INTO tasks ({TASK_COLUMNS}) VALUES ({', '.join('?' * len(values))})",
                                     values)
        except Exception as exc:  # noqa: BLE001 - `_faulted` re-raises all but a disk fault
            self._faulted(exc)
            self.refused += 1
            raise DiskFull(f"cannot start a task of `{tool}` on server `{server}`: the journal's disk takes no "
                           f"writes ({exc}); nothing was sent to the server. Free space on the disk of "
                           f"`{self.journal.path}` and try again") from None
        return row

    def _select(self, where: str, params: tuple[Any, ...] = (), *, tail: str = "") -> list[TaskRow]:
        """Rows `WHERE where`, each with its held changes applied."""
        rows = self.journal.pool.read(f"SELECT {TASK_COLUMNS} FROM tasks WHERE {where}{tail}", params)
        return [self._overlay(TaskRow.of(r)) for r in rows]

    def get(self, id: str) -> TaskRow | None:
        return next(iter(self._select("id = ?", (id,))), None)

    def by_task_id(self, server: str, task_id: str) -> TaskRow | None:
        """The row of `server`'s task `task_id`: the open one if any, else the newest. Two rows
        share a taskId when a caller reused an invocation id and the server deduplicated."""
        rows = self._select("server = ? AND task_id = ?", (server, task_id), tail=" ORDER BY created_at DESC")
        return next((r for r in rows if r.state in OPEN), rows[0] if rows else None)

    def find(self, prefix: str) -> list[TaskRow]:
        """Rows whose id (or server taskId) is `prefix` or starts with it."""
        exact = self.get(prefix)
        if exact is not None:
            return [exact]
        like = prefix.replace("%", "").replace("_", r"\_") + "%"
        return self._select("id LIKE ? ESCAPE '\\' OR task_id LIKE ? ESCAPE '\\'", (like, like), tail=" LIMIT 5")

    def update(self, id: str, **fields: Any) -> TaskRow | None:
        """Set columns (JSON columns take Python values) and `updated_at`; the row, or None. A
        `state` the row cannot move to raises `IllegalTransition`, and nothing is written."""
        row = self.get(id)  # the transition is checked against what it is, held changes included
        if row is None:
            return None
        if "state" in fields:
            check_transition(row.state, fields["state"])
            fields["state"] = str(fields["state"])  # a TaskState: store its plain name
        values = {k: self._json(v) if k in _JSON_COLS else v for k, v in fields.items()}
        values["updated_at"] = self.clock()
        for k, v in values.items():
            setattr(row, k, v)
        if self.held and not self.retry(force=False):
            self._hold(id, values)  # the disk still takes no writes: behind the others
            return row
        try:
            self.journal.pool.change(f"UPDATE tasks SET {', '.join(f'{k} = ?' for k in values)} WHERE id = ?",
                                     (*values.values(), id))
        except Exception as exc:  # noqa: BLE001 - `_faulted` re-raises all but a disk fault
            self._faulted(exc)
            self._hold(id, values)
        return row

    def take_delivery(self, id: str) -> bool:
        """Atomically turn `deliveryPending` off; True only for the one caller that did it."""
        if self.held and not self.retry(force=False):
            return self._take_held(id)
        try:
            return bool(self.journal.pool.change(
                "UPDATE tasks SET delivery_pending = 0, deliveries = deliveries + 1, delivered_at = ? "
                "WHERE id = ? AND delivery_pending = 1", (self.clock(), id)))
        except Exception as exc:  # noqa: BLE001 - `_faulted` re-raises all but a disk fault
            self._faulted(exc)
            return self._take_held(id)

    def _take_held(self, id: str) -> bool:
        """`take_delivery` while the disk takes no writes: decided on the held row."""
        row = self.get(id)
        if row is None or not row.delivery_pending:
            return False
        self._hold(id, {"delivery_pending": False, "deliveries": row.deliveries + 1, "delivered_at": self.clock()})
        return True

    def rows(self, *, server: str | None = None, states: Collection[str] | None = None,
             pending: bool | None = None, limit: int = 500) -> list[TaskRow]:
        where: list[str] = ["1 = 1"]
        params: list[Any] = []
        if server:
            where.append("server = ?")
            params.append(server)
        if states:
            where.append(f"state IN ({', '.join('?' * len(states))})")
            params += [str(s) for s in states]
        if pending is not None:
            where.append("delivery_pending = ?")
            params.append(pending)
        found = self._select(" AND ".join(where), (*params, limit), tail=" ORDER BY created_at DESC LIMIT ?")
        # Held changes may have moved a row out of what was asked for (a task ended meanwhile).
        wanted = {str(state) for state in states} if states else None
        return [r for r in found if (wanted is None or r.state in wanted)
                and (pending is None or r.delivery_pending == pending)]

    def count_by_state(self, server: str, states: Collection[str]) -> dict[str, int]:
        """How many rows of `server` are in each of `states` (states without rows left out)."""
        names = tuple(str(s) for s in states)
        rows = self.journal.pool.read(f"SELECT state, count(*) FROM tasks WHERE server = ? AND state IN "
                                      f"({', '.join('?' * len(names))}) GROUP BY state", (server, *names))
        return {str(state): int(n) for state, n in rows}

    def open_rows(self) -> list[TaskRow]:
        """Every non-terminal row, oldest first (the resume order)."""
        states = tuple(str(s) for s in OPEN)
        rows = self._select(f"state IN ({', '.join('?' * len(states))})", states, tail=" ORDER BY created_at")
        return [r for r in rows if r.state in OPEN]

    def cleanup(self, *, retention_s: float = RETENTION_S) -> int:
        """Delete terminal rows that ended more than `retention_s` ago; returns how many."""
        cutoff = self.clock() - retention_s
        try:
            return self.journal.pool.change("DELETE FROM tasks WHERE terminal_at IS NOT NULL AND terminal_at < ?",
                                            (cutoff,))
        except Exception as exc:  # a full disk: the next hourly cleanup tries again
            if not is_disk_fault(exc):
                raise
            log.warning("tasks store: cleanup skipped: %s", exc)
            return 0
