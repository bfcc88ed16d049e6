"""Folding a task snapshot into its row: a pure function (stdlib only).

A snapshot is the wire JSON of a task as a server reports it: a DetailedTask, the params of
`notifications/tasks`, or a `CreateTaskResult` (SEP-2663 "Task Creation", "Getting Tasks",
"Task Status Notifications"). `fold_snapshot` says what it changes in the row and what to
do next; the manager writes, journals and acts on it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from monad_cli.core.task_states import TERMINAL, TaskState, can_transition, parse_state

PENDING_RESULT = "result"  # `pendingKind`: a terminal snapshot waits to be read
PENDING_INPUT = "input"  # `pendingKind`: new input requests wait for an answer


class _Row(Protocol):
    """The columns of a `TaskRow` the view reads (JSON columns as stored text)."""

    id: str
    tool: str
    state: str
    pending_kind: str | None
    input_requests: str | None
    answered_keys: str | None


@dataclass(frozen=True)
class RowView:
    """What the fold reads of a row, decoded: `input_requests` the outstanding ones (key →
    request), `answered_keys` those monad answered (a server may list them again until it
    has processed the answer)."""

    id: str
    tool: str
    state: str
    pending_kind: str | None = None
    input_requests: Mapping[str, Any] = field(default_factory=dict)
    answered_keys: frozenset[str] = frozenset()

    @classmethod
    def of(cls, row: _Row) -> RowView:
        """The view of a `TaskRow` (its JSON columns decoded)."""
        return cls(id=row.id, tool=row.tool, state=row.state, pending_kind=row.pending_kind,
                   input_requests=json.loads(row.input_requests or "{}") or {},
                   answered_keys=frozenset(json.loads(row.answered_keys or "[]")))


@dataclass(frozen=True)
class Fold:
    """What a snapshot does to its row: `changes`, the columns to set (JSON columns as Python
    values; empty: none); `journal`, a journal row's text (the state changed) or None;
    `poll_now`, a bare Task whose payload `tasks/get` must fetch at once; `ended`, terminal."""

    changes: dict[str, Any] = field(default_factory=dict)
    journal: str | None = None
    poll_now: bool = False
    ended: bool = False

    @property
    def state(self) -> str | None:
        """The state the row moves to (None: unchanged)."""
        return self.changes.get("state")

    @property
    def deliver(self) -> str | None:
        """`result` or `input` when the fold leaves a delivery pending for a reader, else None."""
        return self.changes.get("pending_kind") if self.changes.get("delivery_pending") else None


IGNORE = Fold()


def fold_snapshot(row: RowView, snap: Mapping[str, Any], now: float, *, source: str = "tasks/get") -> Fold:
    """Fold `snap` (wire JSON of a task) into `row`; `now` is the epoch-seconds clock and
    `source` names where the snapshot came from (for the journal text).

    - a terminal row is never changed (terminal is sticky), nor is a row whose state cannot
      move to the snapshot's status (`states.TRANSITIONS`), nor one an unknown status names;
    - `completed` without `result`, or `failed` without `error`, is a bare Task (a
      `CreateTaskResult`, a notification that carries only the status): nothing is recorded,
      the DetailedTask is fetched instead (`poll_now`);
    - `input_required`: the outstanding requests are the snapshot's minus those already
      answered; a key not seen before leaves an `input` delivery pending, no request left
      withdraws it;
    - terminal: result and error recorded, `terminal_at = now`, a `result` delivery pending
      (it replaces a pending `input` one);
    - `working`: no requests outstanding, a pending `input` delivery withdrawn.
    """
    status = parse_state(snap.get("status"))
    if status is None or row.state in TERMINAL or not can_transition(row.state, status):
        return IGNORE
    if (status == TaskState.COMPLETED and "result" not in snap) or (status == TaskState.FAILED
                                                                      and "error" not in snap):
        return Fold(poll_now=True)
    changes: dict[str, Any] = {"state": status, "status_message": snap.get("statusMessage")}
    if "ttlMs" in snap:
        changes["ttl_ms"] = snap.get("ttlMs")
    if isinstance(snap.get("pollIntervalMs"), int):
        changes["poll_interval_ms"] = snap["pollIntervalMs"]
    if status == TaskState.INPUT_REQUIRED:
        requests = snap.get("inputRequests")
        requests = requests if isinstance(requests, Mapping) else {}
        outstanding = {k: v for k, v in requests.items() if k not in row.answered_keys}
        changes["input_requests"] = outstanding
        if set(outstanding) - set(row.input_requests):
            changes.update(delivery_pending=True, pending_kind=PENDING_INPUT)
        elif not outstanding and row.pending_kind == PENDING_INPUT:
            changes.update(delivery_pending=False, pending_kind=None)
    elif status in TERMINAL:
        changes.update(result=snap.get("result"), error=snap.get("error"), terminal_at=now,
                       input_requests=None, delivery_pending=True, pending_kind=PENDING_RESULT)
    else:
        changes["input_requests"] = None
        if row.pending_kind == PENDING_INPUT:
            changes.update(delivery_pending=False, pending_kind=None)
    journal = f"task {row.id[:12]} ({row.tool}) {status} via {source}" if status != row.state else None
    return Fold(changes=changes, journal=journal, ended=status in TERMINAL)
