"""The supervisor's task manager: every tool call that may become a SEP-2663 task.

One `TaskManager` per supervisor. Per server it keeps at most `max_active` (8) tasks in
flight (`submitting`, `working`, `input_required`) and `max_queued` (64) waiting; more is
refused (`QueueFull`). This module is its API side (start, show, list, answer, cancel, the
resolver of tasks returned to a plain `Client.call_tool`); each server's per-connection
loops (submit, poll, listen) are in `tasks.connection`, the rows and their changes in
`tasks.ledger`, the states in `tasks.states`.

Results are never handed to anyone implicitly: a terminal snapshot, or new input
requests, set `deliveryPending` in the journal; whoever reads it with `deliver`
(`monad tasks show ID`, a waiting caller, `Client.call_tool`'s resolver) takes the
delivery exactly once (`TaskStore.take_delivery`).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import anyio
import mcp_types as types
from mcp import Client, MCPError
from mcp.client import ClaimContext

from monad_cli.errors import InvalidInput, NotConnected, NotFound, QueueFull
from monad_cli.journal.db import Journal
from monad_cli.journal.tables import TaskRow
from monad_cli.tasks import forms
from monad_cli.tasks.connection import REQUEST_TIMEOUT_S, ServerTasks
from monad_cli.tasks.ledger import TaskLedger
from monad_cli.tasks.protocol import CreateTaskResult, TasksExtension, dump, update_task
from monad_cli.tasks.snapshot import PENDING_INPUT
from monad_cli.tasks.states import OPEN, TERMINAL, TaskState
from monad_cli.tasks.store import row_dict

MAX_ACTIVE = 8
MAX_QUEUED = 64
CLEANUP_EVERY_S = 3600.0
RELATED_TASK_META = "io.modelcontextprotocol/related-task"


class ServerLink(Protocol):
    """What the task manager reads of one server (the supervisor's actor for it)."""

    @property
    def name(self) -> str: ...

    @property
    def live(self) -> bool:
        """Connected, with a `client` to send on."""

    @property
    def client(self) -> Client | None: ...

    @property
    def state(self) -> str: ...

    @property
    def reason(self) -> str | None: ...


class TaskManager:
    """Owns one supervisor's tasks: the `tasks` rows (through a `TaskLedger` on `journal`),
    the per-server bounds, and one `ServerTasks` loop per server.

    It is handed what it uses, built once the journal is open: `servers` maps a server
    name to its live link (the supervisor's actors; read, never changed), `redact` scrubs
    secrets from messages, `request_timeout(name)` is a server's `tools/call` deadline in
    seconds (None: none), `clock` is epoch seconds (injectable). The supervisor calls
    `on_actor_state` on every state change and passes `client_extensions(name)` to each
    new `mcp.Client`.

    It must never open, close or reconnect a session (the actors own them; it only sends
    on the live client it was told about), never send a call that has no row yet, never
    hand a result to anyone who did not ask for it, and never import the supervisor.
    """

    def __init__(self, journal: Journal, servers: Mapping[str, ServerLink], *, redact: Callable[[str], str],
                 request_timeout: Callable[[str], float | None] = lambda name: None,
                 clock: Callable[[], float] = time.time, max_active: int = MAX_ACTIVE,
                 max_queued: int = MAX_QUEUED) -> None:
        self.links = servers
        self.redact = redact
        self.request_timeout = request_timeout
        self.clock = clock
        self.ledger = TaskLedger(journal, clock=clock)
        self.store = self.ledger.store
        self.max_active = max_active
        self.max_queued = max_queued
        self.servers: dict[str, ServerTasks] = {}
        self._tg: anyio.abc.TaskGroup | None = None

    # -- wiring into the supervisor ---------------------------------------------------------
    def client_extensions(self, name: str) -> list[Any]:
        """The `extensions=` of server `name`'s next `mcp.Client` (one per connection)."""

        async def on_notification(params: dict[str, Any]) -> None:
            self._server(name).apply(params, source="notification")

        async def resolve(created: CreateTaskResult, ctx: ClaimContext) -> types.CallToolResult:
            return await self._resolve_claimed(name, created, ctx)

        return [TasksExtension(on_notification=on_notification, resolve=resolve)]

    def on_actor_state(self, link: ServerLink) -> None:
        """State listener: track the live client of every server."""
        st = self._server(link.name)
        client = link.client if link.live else None
        if client is not st.client:
            st.client = client
            st.poke()

    def _server(self, name: str) -> ServerTasks:
        st = self.servers.get(name)
        if st is None:
            st = self.servers[name] = ServerTasks(name, self.ledger, max_active=self.max_active,
                                                  request_timeout=lambda: self.request_timeout(name),
                                                  redact=self.redact)
        if not st.loop_started and self._tg is not None:
            st.loop_started = True
            self._tg.start_soon(st.run)
        return st

    async def run(self) -> None:
        """Run until cancelled: resume the journal's open rows, clean up old ones hourly."""
        async with anyio.create_task_group() as tg:
            self._tg = tg
            self._cleanup()
            for row in self.store.open_rows():
                self._server(row.server)
            for link in list(self.links.values()):
                self.on_actor_state(link)
            while True:
                await anyio.sleep(CLEANUP_EVERY_S)
                self._cleanup()

    def _cleanup(self) -> None:
        removed = self.store.cleanup()
        if removed:
            self.ledger.note(None, "cleanup", f"removed {removed} task records older than 7 days")

    # -- starting calls ------------------------------------------------------------------
    def counts(self, server: str) -> tuple[int, int]:
        """(active, queued) rows of `server`."""
        return self.ledger.counts(server)

    async def start(self, server: str, tool: str, arguments: dict[str, Any] | None, *,
                    correlation: dict[str, Any] | None = None, submit_wait: float = 15.0) -> dict[str, Any]:
        """Start `tools/call` of `tool` (the server's own tool name) through the task manager.

        Writes the row (state `queued`) before anything is sent, then returns once the
        call has left `submitting` (a task was created, or a plain result came back), or
        stays `queued` because all `max_active` slots are busy, or after `submit_wait`
        seconds. Returns the row (API shape). Raises `NotFound` (no such server),
        `NotConnected`, `QueueFull`.
        """
        link = self.links.get(server)
        if link is None:
            raise NotFound(f"server `{server}` is not defined (see `monad mcp list`)")
        if not link.live:
            raise NotConnected(f"server `{server}` is {link.state}"
                               f"{': ' + link.reason if link.reason else ''}; see `monad mcp status {server}`")
        active, queued = self.counts(server)
        if active >= self.max_active and queued >= self.max_queued:
            raise QueueFull(f"server `{server}` already has {active} active and {queued} queued tasks "
                            f"(limits {self.max_active} and {self.max_queued}); wait for some to finish "
                            f"(`monad tasks --server {server}`)")
        row_id = uuid.uuid4().hex
        self.store.insert(id=row_id, server=server, tool=tool, arguments=arguments or {},
                          correlation=correlation, state=TaskState.QUEUED)
        self.ledger.note(server, TaskState.QUEUED, f"task {row_id[:12]} `{tool}` accepted", row_id)
        self._server(server).poke()
        with anyio.move_on_after(submit_wait):
            while True:
                row = self.store.get(row_id)
                assert row is not None
                if row.state not in (TaskState.QUEUED, TaskState.SUBMITTING):
                    break
                if row.state == TaskState.QUEUED and self.counts(server)[0] >= self.max_active:
                    break
                await self.ledger.wait_change(row_id, 1.0)
        row = self.store.get(row_id)
        assert row is not None
        return self.view(row)

    # -- reading ---------------------------------------------------------------------------
    def resolve_id(self, ref: str) -> TaskRow:
        """The row `ref` names: a full id, a unique id prefix, or the server's taskId."""
        rows = self.store.find(ref)
        if not rows:
            raise NotFound(f"task `{ref}` is not known (see `monad tasks`)")
        if len(rows) > 1:
            raise InvalidInput(f"task `{ref}` is ambiguous ({', '.join(r.id[:12] for r in rows)}); give more of the id")
        return rows[0]

    def view(self, row: TaskRow) -> dict[str, Any]:
        """The API shape; a completed task's result keeps the task id in its `_meta`."""
        d = row_dict(row)
        if isinstance(d.get("result"), dict) and row.task_id:
            meta = dict(d["result"].get("_meta") or {})
            meta[RELATED_TASK_META] = {"taskId": row.task_id}
            d["result"]["_meta"] = meta
        return d

    async def wait_change(self, row_id: str, timeout: float) -> None:
        """Return when the row changes, or after `timeout` seconds."""
        await self.ledger.wait_change(row_id, timeout)

    async def show(self, ref: str, *, wait: float = 0.0, deliver: bool = False) -> dict[str, Any]:
        """The row; with `wait`, first wait up to `wait` s for it to need attention (a terminal
        state or outstanding input). With `deliver`, take a pending delivery (`delivered`)."""
        row = self.resolve_id(ref)
        deadline = anyio.current_time() + max(0.0, wait)
        while wait > 0:
            row = self.store.get(row.id) or row
            if row.state in TERMINAL or (row.state == TaskState.INPUT_REQUIRED
                                         and row.input_requests not in (None, "{}")):
                break
            left = deadline - anyio.current_time()
            if left <= 0:
                break
            await self.ledger.wait_change(row.id, left)
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
        if state == "active":
            rows = self.store.rows(server=server, states=OPEN)
        elif state == "pending":
            rows = self.store.rows(server=server, pending=True)
        elif state == "done":
            rows = self.store.rows(server=server, states=TERMINAL)
        elif state is None:
            rows = self.store.rows(server=server)
        else:
            raise InvalidInput(f"--state must be active, pending or done, got {state!r}")
        return [self.view(r) for r in rows]

    # -- input and cancel ---------------------------------------------------------------------
    async def answer(self, ref: str, answers: dict[str, Any]) -> dict[str, Any]:
        """Answer outstanding input requests: `answers` maps an inputRequests key to an answer
        (see `forms.build_response`). Sends `tasks/update`. Raises `InvalidInput` for a bad
        answer (unsafe or unknown property, wrong type), `NotConnected`."""
        row = self.resolve_id(ref)
        outstanding = json.loads(row.input_requests or "{}")
        if row.state != TaskState.INPUT_REQUIRED or not outstanding:
            raise InvalidInput(f"task `{row.id[:12]}` is {row.state} and has no outstanding input requests")
        if not isinstance(answers, dict) or not answers:
            raise InvalidInput('expected {"responses": {"<inputRequests key>": {...}}}')
        responses: dict[str, Any] = {}
        for key, answer in answers.items():
            if key not in outstanding:
                raise InvalidInput(f"task `{row.id[:12]}` has no outstanding input request `{key}` "
                                   f"(outstanding: {', '.join(outstanding)})")
            if not isinstance(answer, dict):
                raise InvalidInput(f"the answer to `{key}` must be an object")
            try:
                responses[key] = forms.build_response(outstanding[key], answer)
            except forms.FormError as e:
                raise InvalidInput(f"input `{key}` of task `{row.id[:12]}`: {e}") from None
        st = self.servers.get(row.server)
        client = st.client if st else None
        if client is None or not row.task_id:
            raise NotConnected(f"server `{row.server}` is not connected; answer again once it is "
                               f"(`monad mcp status {row.server}`)")
        await update_task(client.session, row.task_id, responses, timeout=REQUEST_TIMEOUT_S)
        answered = sorted(set(json.loads(row.answered_keys or "[]")) | set(responses))
        left = {k: v for k, v in outstanding.items() if k not in responses}
        fields: dict[str, Any] = {"answered_keys": answered, "input_requests": left}
        if not left and row.pending_kind == PENDING_INPUT:
            fields.update(delivery_pending=False, pending_kind=None)
        self.store.update(row.id, **fields)
        self.ledger.note(row.server, row.state, f"task {row.id[:12]} answered input {', '.join(responses)}",
                         row.id)
        if st is not None:
            st.poll_soon(row.id)  # see the effect soon
        return self.view(self.store.get(row.id) or row)

    async def cancel(self, ref: str) -> dict[str, Any]:
        """Cancel: a queued call never goes out; a task gets `tasks/cancel` now, or on the next
        connection if the server is away. Idempotent; a terminal task is returned as is."""
        row = self.resolve_id(ref)
        if row.state in TERMINAL:
            return self.view(row)
        self.store.update(row.id, cancel_requested=True)  # intent first: survives a crash
        self.ledger.note(row.server, row.state, f"task {row.id[:12]} cancel requested", row.id)
        st = self.servers.get(row.server)
        if row.state == TaskState.QUEUED:
            self.ledger.finish(row.id, TaskState.CANCELLED, "cancelled before it was sent", deliver=False)
            if st is not None:
                st.ended(row.id)
        elif row.task_id and st is not None and st.client is not None:
            await st.send_cancel(st.client, row.id)
        return self.view(self.store.get(row.id) or row)

    # -- tasks returned to a plain Client.call_tool -------------------------------------------
    async def _resolve_claimed(self, server: str, created: CreateTaskResult, ctx: ClaimContext
                               ) -> types.CallToolResult:
        """The SDK's resolver: journal the task, wait for its end, return the tool result.

        The row starts `submitting` (the call is out; its answer, `created`, is folded in
        next), as a row monad sent itself would be. Cancelling the caller cancels the task
        (`tasks/cancel`). A task that does not end `completed` with a result raises
        `MCPError` with the task's error.
        """
        row_id = uuid.uuid4().hex
        self.store.insert(id=row_id, server=server, tool=ctx.tool_name, arguments=None, correlation=None,
                          state=TaskState.SUBMITTING, adopted=True, task_id=created.task_id)
        self.ledger.note(server, created.status, f"task {row_id[:12]} `{ctx.tool_name}` adopted from tools/call",
                         row_id)
        st = self._server(server)
        st.apply(dump(created), source="tools/call")
        st.watch(row_id, created.poll_interval_ms)
        try:
            while True:
                row = self.store.get(row_id)
                assert row is not None
                if row.state in TERMINAL:
                    break
                await self.ledger.wait_change(row_id, 5.0)
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True), anyio.move_on_after(5):
                await self.cancel(row_id)
            raise
        self.store.take_delivery(row_id)
        if row.state == TaskState.COMPLETED and row.result:
            return types.CallToolResult.model_validate(self.view(row)["result"])
        err = json.loads(row.error) if row.error else {}
        raise MCPError(code=int(err.get("code", types.INTERNAL_ERROR)),
                       message=str(err.get("message") or row.status_message or f"task {row.state}"),
                       data=err.get("data"))
