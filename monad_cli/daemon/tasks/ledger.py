"""The task rows and every change to them, shared by the manager's API and its loops.

`TaskLedger` writes rows (through `TaskStore`), journals what happened (`task` events), wakes
whoever waits on a row, and tells its `listeners` (the Studio's Task cards) the row id. It
sends nothing: the loops and the API decide, the ledger records.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import anyio

from monad_cli.core.task_states import ACTIVE, TERMINAL, TaskState
from monad_cli.daemon.tasks.snapshot import PENDING_RESULT, Fold, RowView, fold_snapshot
from monad_cli.daemon.tasks.store import TaskStore
from monad_cli.journal.db import Journal

if TYPE_CHECKING:
    from monad_cli.journal.schema import TaskRow

log = logging.getLogger("monad.tasks")


class TaskLedger:
    """Rows, journal events and waiters for one supervisor's tasks; `clock` is epoch seconds."""

    def __init__(self, journal: Journal, *, clock: Callable[[], float]) -> None:
        self.journal = journal
        self.clock = clock
        self.store = TaskStore(journal, clock=clock)
        self._events: dict[str, anyio.Event] = {}
        self.listeners: list[Callable[[str], None]] = []

    def _tell(self, row_id: str) -> None:
        for listener in list(self.listeners):
            try:
                listener(row_id)
            except Exception:  # a page listening must never fail a task
                log.exception("task listener failed")

    def note(self, server: str | None, state: str, reason: str, row_id: str | None = None) -> None:
        """A `task` journal event; a failed write is logged, never raised (the row is the record)."""
        try:
            self.journal.record("task", server=server, state=str(state), reason=reason,
                                detail={"id": row_id} if row_id else None)
        except Exception:
            log.exception("journal write failed")
        if row_id:
            self._tell(row_id)

    def counts(self, server: str) -> tuple[int, int]:
        """(active, queued) rows of `server`."""
        by_state = self.store.count_by_state(server, ACTIVE | {TaskState.QUEUED})
        queued = by_state.get(str(TaskState.QUEUED), 0)
        return sum(by_state.values()) - queued, queued

    def fold(self, server: str, snap: Mapping[str, Any], *, source: str) -> tuple[TaskRow, Fold] | None:
        """Fold a snapshot into the row of `server` with its `taskId`: the row before the fold
        and what it did, or None (no such row)."""
        task_id = snap.get("taskId")
        if not isinstance(task_id, str):
            return None
        row = self.store.by_task_id(server, task_id)
        if row is None:
            return None
        result = fold_snapshot(RowView.of(row), snap, self.clock(), source=source)
        if result.changes:
            self.store.update(row.id, **result.changes)
            if result.journal:
                self.note(server, str(result.state), result.journal, row.id)
            self.changed(row.id)
        return row, result

    def finish(self, row_id: str, state: TaskState, message: str | None, *, result: Any = None,
               error: Any = None, deliver: bool = True) -> TaskRow | None:
        """End the row in terminal `state` (monad decided), a `result` delivery pending unless
        not `deliver`. The row, or None if it had already ended (terminal is sticky)."""
        assert state in TERMINAL
        current = self.store.get(row_id)
        if current is None or current.state in TERMINAL:
            return None
        row = self.store.update(row_id, state=state, status_message=message, result=result, error=error,
                                terminal_at=self.clock(), input_requests=None, delivery_pending=deliver,
                                pending_kind=PENDING_RESULT if deliver else None)
        if row is not None:
            self.note(row.server, state, f"task {row_id[:12]} ({row.tool}) {state}"
                                         f"{': ' + message if message else ''}", row_id)
        self.changed(row_id)
        return row

    def expired(self, row: TaskRow) -> bool:
        """Whether the row outlived its `ttlMs` (counted from when monad created the row)."""
        return row.ttl_ms is not None and self.clock() > row.created_at + row.ttl_ms / 1000

    # -- waiters --------------------------------------------------------------------------
    def changed(self, row_id: str) -> None:
        """Wake every `wait_change` of the row."""
        ev = self._events.pop(row_id, None)
        if ev is not None:
            ev.set()
        self._tell(row_id)

    async def wait_change(self, row_id: str, timeout: float) -> None:
        """Return when the row changes, or after `timeout` seconds."""
        ev = self._events.get(row_id)
        if ev is None:
            ev = self._events[row_id] = anyio.Event()
        with anyio.move_on_after(timeout):
            await ev.wait()
