"""The supervisor's task manager: every tool call that may become a task (SEP-2663, or the
2025-11-25 core tasks: `tasks.legacy`).

Per server it keeps at most `max_active` (8) tasks in flight (`submitting`, `working`,
`input_required`) and `max_queued` (64) waiting; more is refused (`QueueFull`). This is its
API side (start, show, list, answer, cancel, the resolver of tasks returned to a plain
`Client.call_tool`); the per-connection loops are `tasks.connection`.

Results are never handed to anyone implicitly: a terminal snapshot, or new input requests,
set `deliveryPending`; whoever reads it with `deliver` takes the delivery exactly once
(`TaskStore.take_delivery`).
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from functools import partial
from typing import Any, Protocol

import anyio
import mcp_types as types
from mcp import Client, MCPError
from mcp.client import ClaimContext, ClientRequestContext

from monad_cli.core import task_forms as forms
from monad_cli.core.errors import InvalidInput, NotConnected, NotFound, QueueFull
from monad_cli.core.messages import server_not_defined
from monad_cli.core.task_states import TERMINAL, TaskState
from monad_cli.daemon.tasks.connection import ServerTasks, unknown_reason
from monad_cli.daemon.tasks.ledger import TaskLedger
from monad_cli.daemon.tasks.legacy import InputGone, OwnRequests
from monad_cli.daemon.tasks.protocol import CreateTaskResult, TasksExtension, dump, flatten
from monad_cli.daemon.tasks.snapshot import PENDING_INPUT
from monad_cli.daemon.tasks.views import TaskReader
from monad_cli.daemon.trust.call import ToolCall
from monad_cli.daemon.trust.inputs import current_caller
from monad_cli.journal.db import Journal

log = logging.getLogger("monad.tasks")

MAX_ACTIVE = 8
MAX_QUEUED = 64
CLEANUP_EVERY_S = 3600.0


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
    def lane(self) -> OwnRequests | None:
        """monad's own requests on the live connection (sessions/direct.py), with `client`."""

    @property
    def state(self) -> str: ...

    @property
    def reason(self) -> str | None: ...

    @property
    def tools(self) -> Sequence[types.Tool]:
        """Its last tools/list (read for each tool's 2025-11-25 `execution.taskSupport`)."""

    def in_use(self) -> AbstractAsyncContextManager[None]:
        """Start an idle on-demand server and hold it up for the block (ServerActor.in_use)."""


class TaskManager(TaskReader):
    """Owns one supervisor's tasks: the `tasks` rows (through a `TaskLedger` on `journal`),
    the per-server bounds, and one `ServerTasks` loop per server.

    `servers` maps a name to its live link (the supervisor's actors; read only), `redact`
    scrubs messages, `request_timeout(name)`: a server's `tools/call` deadline in seconds
    (None: none), `lost_reason(name, client)`: why that session ended under a request (None:
    unknown), `clock`: epoch seconds. The supervisor calls `on_actor_state` on every state
    change and passes `client_extensions(name)` and `elicitation_callback(name)` to each new
    `mcp.Client`.

    It never opens, closes or reconnects a session (it only sends on the live client it was
    told about), never sends a call that has no row yet, and never hands a result to anyone
    who did not ask for it.
    """

    def __init__(self, journal: Journal, servers: Mapping[str, ServerLink], *, redact: Callable[[str], str],
                 request_timeout: Callable[[str], float | None] = lambda name: None,
                 lost_reason: Callable[[str, Client], Awaitable[str | None]] | None = None,
                 clock: Callable[[], float] = time.time, max_active: int = MAX_ACTIVE,
                 max_queued: int = MAX_QUEUED) -> None:
        self.links = servers
        self.redact = redact
        self.request_timeout = request_timeout
        self.lost_reason = lost_reason
        super().__init__(TaskLedger(journal, clock=clock))
        self.max_active = max_active
        self.max_queued = max_queued
        self.servers: dict[str, ServerTasks] = {}
        self._tg: anyio.abc.TaskGroup | None = None

    # -- wiring into the supervisor ---------------------------------------------------------
    def client_extensions(self, name: str) -> list[Any]:
        """The `extensions=` of server `name`'s next `mcp.Client` (one per connection)."""

        async def on_notification(params: dict[str, Any]) -> None:
            self._server(name).apply(params, source="notification")

        return [TasksExtension(on_notification=on_notification, resolve=partial(self._resolve_claimed, name))]

    def elicitation_callback(self, name: str) -> Callable[[ClientRequestContext, types.ElicitRequestParams],
                                                          Any]:
        """The `elicitation_callback=` of server `name`'s next `mcp.Client` (a 2025-11-25 task's
        input requests: `ServerTasks.on_elicitation`)."""

        async def elicit(ctx: ClientRequestContext, params: types.ElicitRequestParams
                         ) -> types.ElicitResult | types.ErrorData:
            return await self._server(name).on_elicitation(ctx, params)

        return elicit

    def _tool(self, server: str, tool: str) -> types.Tool | None:
        """The tool as server `server` last listed it."""
        link = self.links.get(server)
        return next((t for t in getattr(link, "tools", None) or () if t.name == tool), None)

    def _task_support(self, server: str, tool: str) -> str | None:
        t = self._tool(server, tool)
        return t.execution.task_support if t is not None and t.execution is not None else None

    def on_actor_state(self, link: ServerLink) -> None:
        """State listener: track the live client of every server."""
        st = self._server(link.name)
        client = link.client if link.live else None
        if client is not st.client:
            st.client, st.lane = client, link.lane if client is not None else None
            st.poke()

    def _server(self, name: str) -> ServerTasks:
        st = self.servers.get(name)
        if st is None:
            st = self.servers[name] = ServerTasks(name, self.ledger, max_active=self.max_active,
                                                  request_timeout=lambda: self.request_timeout(name),
                                                  redact=self.redact,
                                                  task_support=lambda tool: self._task_support(name, tool),
                                                  annotations=lambda tool: getattr(self._tool(name, tool),
                                                                                   "annotations", None),
                                                  lost_reason=unknown_reason if self.lost_reason is None
                                                  else partial(self.lost_reason, name))
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
            tg.start_soon(self._write_held)
            while True:
                await anyio.sleep(CLEANUP_EVERY_S)
                self._cleanup()

    async def _write_held(self) -> None:
        """While the journal's disk takes no writes, retry the held changes every `RETRY_S`."""
        from monad_cli.journal.db import RETRY_S

        while True:
            await anyio.sleep(RETRY_S)
            if self.store.held:
                try:
                    self.store.retry()
                except Exception:  # never the task loops' end: the next second tries again
                    log.exception("tasks store: writing held changes failed")

    def _cleanup(self) -> None:
        removed = self.store.cleanup()
        if removed:
            self.ledger.note(None, "cleanup", f"removed {removed} task records older than 7 days")

    # -- starting calls ------------------------------------------------------------------
    def counts(self, server: str) -> tuple[int, int]:
        """(active, queued) rows of `server`."""
        return self.ledger.counts(server)

    async def start(self, server: str, tool: str, arguments: dict[str, Any] | None, *,
                    correlation: dict[str, Any] | None = None, submit_wait: float = 15.0,
                    sent: bool = False) -> dict[str, Any]:
        """Start `tools/call` of `tool` (the server's own name) through the task manager.

        Writes the row (`queued`) before anything is sent, then returns its API shape once
        the call left `submitting` (with `sent`: once it is `submitting`), or stays `queued`
        (every slot busy), or after `submit_wait` seconds. Raises `NotFound` (no such
        server), `NotConnected`, `QueueFull`.
        """
        link = self.links.get(server)
        if link is None:
            raise NotFound(server_not_defined(server, self.links))
        # An idle on-demand server starts here; once the task is open, the task holds it up.
        async with link.in_use():
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
                    if row.state not in (TaskState.QUEUED, TaskState.SUBMITTING) or \
                            (sent and row.state == TaskState.SUBMITTING):
                        break
                    if row.state == TaskState.QUEUED and self.counts(server)[0] >= self.max_active:
                        break
                    await self.ledger.wait_change(row_id, 1.0)
            row = self.store.get(row_id)
            assert row is not None
            return self.view(row)

    async def detach(self, server: str, tool: str, arguments: dict[str, Any] | None, *,
                     correlation: dict[str, Any] | None = None) -> dict[str, Any]:
        """A detached call (`monad mcp call --detach`): `start`, returning once the call is
        sent (a tool that is no task answers only at its end; its caller must not wait)."""
        return await self.start(server, tool, arguments, correlation=correlation, sent=True)

    # -- input and cancel ---------------------------------------------------------------------
    async def answer(self, ref: str, answers: dict[str, Any]) -> dict[str, Any]:
        """Answer outstanding input requests (`answers`: inputRequests key → answer, see
        `forms.build_response`) with `tasks/update`. Raises `InvalidInput`, `NotConnected`."""
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
        wire = st.wire if st else None
        if wire is None or not row.task_id:
            raise NotConnected(f"server `{row.server}` is not connected; answer again once it is "
                               f"(`monad mcp status {row.server}`)")
        try:
            await wire.answer(row.task_id, responses)
        except InputGone as e:
            raise NotConnected(f"task `{row.id[:12]}`: input request {e} no longer waits for an answer (the "
                               f"connection to `{row.server}` ended); the server asks again once it is back "
                               f"(`monad tasks show {row.id[:12]}`)") from None
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
        connection; a call sent with no task (yet) ends `cancelled` at once, freeing its slot,
        and its server is sent `notifications/cancelled` (MCP spec, basic/utilities/
        cancellation) when it still awaits the answer. Idempotent."""
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
        elif row.task_id and st is not None:
            await st.send_cancel(row.id)
        elif not row.task_id:  # `submitting`: sent, its answer not here yet
            told = st is not None and row.id in st.sending
            how = ("the server was told (notifications/cancelled)" if told else
                   "the server could not be told (no connection awaits its answer)")
            self.ledger.finish(row.id, TaskState.CANCELLED, f"cancelled after it was sent; {how}; whether it "
                                                             f"acted on it is unknown", deliver=False)
            if st is not None:
                st.abandon(row.id)  # after the row ended: the answer it cuts off changes nothing
                st.ended(row.id)
        return self.view(self.store.get(row.id) or row)

    # -- servers that went away ---------------------------------------------------------------
    async def server_removed(self, name: str, *, timeout: float = 5.0) -> int:
        """Server `name` left the config: its open rows end `cancelled` first (so the server's
        own answer cannot replace the reason), then each task it holds is sent `tasks/cancel`
        (at most `timeout` s in all, journaled). Call before its session is closed. Returns
        how many rows ended."""
        rows = [r for r in self.store.open_rows() if r.server == name]
        st = self.servers.get(name)
        wire = st.wire if st is not None else None
        told = wire is not None and wire.cancels
        how = ("; tasks/cancel sent to it" if told else
               "; the server declares no tasks.cancel, so its work may go on" if wire is not None else
               "; the server could not be told (not connected)")
        for row in rows:
            self.ledger.finish(row.id, TaskState.CANCELLED,
                               f"server removed from the config{how if row.task_id else ''}")
            if st is not None:
                st.ended(row.id)
        if wire is not None and told:
            with anyio.move_on_after(timeout):
                for row in rows:
                    if not row.task_id:
                        continue
                    try:
                        await wire.cancel(row.task_id)
                        outcome = "tasks/cancel acknowledged"
                    except Exception as exc:  # noqa: BLE001 - the row has ended either way
                        outcome = f"tasks/cancel failed: {self.redact(str(flatten(exc)[0]))}"
                    self.ledger.note(name, TaskState.CANCELLED, f"task {row.id[:12]} {outcome}", row.id)
        return len(rows)

    def close_orphans(self, defined: Collection[str]) -> int:
        """Open rows of servers no longer defined (removed while no supervisor ran) end
        `cancelled`; returns how many."""
        rows = [r for r in self.store.open_rows() if r.server not in defined]
        for row in rows:
            self.ledger.finish(row.id, TaskState.CANCELLED, "server removed from the config (while the "
                                                             "supervisor was not running)")
        return len(rows)

    # -- tasks returned to a plain Client.call_tool -------------------------------------------
    async def _resolve_claimed(self, server: str, created: CreateTaskResult, ctx: ClaimContext
                               ) -> types.CallToolResult:
        """The SDK's resolver: journal the task, wait for its end, return the tool result.

        The row starts `submitting` (`created` is folded in next); its correlation is the
        tool service's call running in this task (`current_caller`). Cancelling the caller
        cancels the task. A task that does not end `completed` raises `MCPError`.
        """
        row_id = uuid.uuid4().hex
        caller = current_caller()
        correlation = caller.correlation() if isinstance(caller, ToolCall) else None
        self.store.insert(id=row_id, server=server, tool=ctx.tool_name, arguments=None, correlation=correlation,
                          state=TaskState.SUBMITTING, adopted=True, task_id=created.task_id)
        self.ledger.note(server, created.status, f"task {row_id[:12]} `{ctx.tool_name}` adopted from tools/call",
                         row_id)
        st = self._server(server)
        st.apply(dump(created), source="tools/call")
        st.watch(row_id, created.poll_interval_ms)
        return await self._await_end(row_id)

    async def run_call(self, server: str, tool: str, arguments: dict[str, Any] | None, *,
                       correlation: dict[str, Any] | None = None) -> types.CallToolResult:
        """A waited-for call of a tool that must run as a task (2025-11-25 `taskSupport:
        "required"`): `start`, followed to its `CallToolResult`. Raises what `start` does, and
        `MCPError` for a task that did not complete."""
        row = await self.start(server, tool, arguments, correlation=correlation, submit_wait=0)
        return await self._await_end(row["id"])

    async def _await_end(self, row_id: str) -> types.CallToolResult:
        """Wait for the row's end and take its result; cancelling the caller cancels the task."""
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
        if self.store.take_delivery(row_id):  # the caller gets it now: listeners see it taken
            self.ledger.changed(row_id)
        if row.state == TaskState.COMPLETED and row.result:
            return types.CallToolResult.model_validate(self.view(row)["result"])
        err = json.loads(row.error) if row.error else {}
        raise MCPError(code=int(err.get("code", types.INTERNAL_ERROR)),
                       message=str(err.get("message") or row.status_message or f"task {row.state}"),
                       data=err.get("data"))
