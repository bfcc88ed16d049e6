"""The reading side of the task manager: rows as the API shows them. It needs no SDK;
`TaskManager` (tasks.manager) adds everything that sends."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anyio

from monad_cli.core.errors import InvalidInput, NotFound
from monad_cli.core.task_forms import describe_request
from monad_cli.core.task_states import OPEN, TERMINAL, TaskState
from monad_cli.daemon.tasks.ledger import TaskLedger
from monad_cli.daemon.tasks.store import row_dict

if TYPE_CHECKING:
    from monad_cli.journal.schema import TaskRow

RELATED_TASK_META = "io.modelcontextprotocol/related-task"


class TaskReader:
    """Finds rows (`resolve_id`), shows them (`view`, `show`, `list_tasks`) and waits for
    their changes, over one `TaskLedger`."""

    def __init__(self, ledger: TaskLedger) -> None:
        self.ledger = ledger
        self.store = ledger.store

    def resolve_id(self, ref: str) -> TaskRow:
        """The row `ref` names: a full id, a unique id prefix, or the server's taskId."""
        rows = self.store.find(ref)
        if not rows:
            raise NotFound(f"task `{ref}` is not known (see `monad tasks`)")
        if len(rows) > 1:
            raise InvalidInput(f"task `{ref}` is ambiguous ({', '.join(r.id[:12] for r in rows)}); give more of the id")
        return rows[0]

    def view(self, row: TaskRow) -> dict[str, Any]:
        """The API shape; a completed task's result keeps the task id in its `_meta`, and
        `inputs` describes each outstanding input request (a form's fields, a URL and its
        host, or why monad cannot show it: `forms.describe_request`)."""
        d = row_dict(row)
        d["inputs"] = [describe_request(k, v) for k, v in (d.get("inputRequests") or {}).items()] \
            if row.state == TaskState.INPUT_REQUIRED else []
        if isinstance(d.get("result"), dict) and row.task_id:
            meta = dict(d["result"].get("_meta") or {})
            d["result"]["_meta"] = {**meta, RELATED_TASK_META: {"taskId": row.task_id}}
        return d

    async def show(self, ref: str, *, wait: float = 0.0, deliver: bool = False) -> dict[str, Any]:
        """The row; with `wait`, first wait up to `wait` s for it to need attention (a terminal
        state or outstanding input). With `deliver`, take a pending delivery (`delivered`)."""
        row = self.resolve_id(ref)
        with anyio.move_on_after(max(0.0, wait)):
            while wait > 0:
                row = self.store.get(row.id) or row
                if row.state in TERMINAL or (row.state == TaskState.INPUT_REQUIRED
                                             and row.input_requests not in (None, "{}")):
                    break
                await self.ledger.wait_change(row.id, wait)
        row = self.store.get(row.id) or row
        delivered = deliver and row.delivery_pending and self.store.take_delivery(row.id)
        if delivered:
            self.ledger.note(row.server, row.state, f"task {row.id[:12]} {row.pending_kind} delivered", row.id)
            row = self.store.get(row.id) or row
        out = self.view(row)
        out["delivered"] = bool(delivered)
        return out

    def list_tasks(self, *, server: str | None = None, state: str | None = None) -> list[dict[str, Any]]:
        """Rows for `monad tasks`: state `active` (not terminal), `pending` (deliveryPending),
        `done` (terminal), or None for all."""
        filters: dict[str | None, dict[str, Any]] = {
            "active": {"states": OPEN}, "pending": {"pending": True}, "done": {"states": TERMINAL}, None: {}}
        if state not in filters:
            raise InvalidInput(f"--state must be active, pending or done, got {state!r}")
        return [self.view(r) for r in self.store.rows(server=server, **filters[state])]
