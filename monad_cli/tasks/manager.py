"""The supervisor's task manager: every tool call that may become a SEP-2663 task.

One `TaskManager` per supervisor. Per server it keeps at most `max_active` (8) tasks in
flight (`submitting`, `working`, `input_required`) and `max_queued` (64) waiting; more is
refused (`QueueFull`). For each connection of a server it runs, in one task group:

- a poll loop: `tasks/get` for every open task at the server's `pollIntervalMs`
  (ext-tasks "Task Polling"), with bounded exponential backoff on transient failures;
- a listen loop: `subscriptions/listen` with `taskIds` so `notifications/tasks` arrive as
  they happen; it re-listens when the stream ends or new tasks appear, and polls each
  honored task once after the ack (a change before the ack is not notified);
- the submitter: queued calls go out as slots free up.

When the connection is rebuilt (reconnect, server restart, supervisor restarted after
`kill -9`) the open rows of the journal are resumed: observed again, `submitting` ones
resent with the same invocation id, pending cancellations finished (JR-5).

Results are never handed to anyone implicitly: a terminal snapshot, or new input
requests, set `deliveryPending` in the journal; whoever reads it with `deliver`
(`monad tasks show ID`, a waiting caller, `Client.call_tool`'s resolver) takes the
delivery exactly once (`TaskStore.take_delivery`).
"""

from __future__ import annotations

import json
import logging
import math
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio
import mcp_types as types
from mcp import MCPError
from mcp.client import ClaimContext
from mcp_types import CONNECTION_CLOSED, INVALID_PARAMS

from monad_cli.errors import InvalidInput, NotConnected, NotFound, QueueFull
from monad_cli.tasks import forms
from monad_cli.tasks.protocol import (
    INVOCATION_META_KEY,
    TASKS_EXTENSION,
    TERMINAL,
    CreateTaskResult,
    TasksExtension,
    cancel_task,
    get_task,
    listen_for_tasks,
    update_task,
)
from monad_cli.tasks.store import (
    ACTIVE_STATES,
    QUEUED,
    SUBMITTING,
    TaskRow,
    TaskStore,
    row_dict,
)

if TYPE_CHECKING:
    from monad_cli.supervisor.actor import ServerActor
    from monad_cli.supervisor.supervisor import Supervisor

log = logging.getLogger("monad.tasks")

MAX_ACTIVE = 8
MAX_QUEUED = 64
DEFAULT_POLL_MS = 1000
MIN_POLL_MS = 50
MAX_POLL_MS = 300_000
BACKOFF_INITIAL_S = 0.5
BACKOFF_CAP_S = 30.0
REQUEST_TIMEOUT_S = 30.0
CLEANUP_EVERY_S = 3600.0
RELATED_TASK_META = "io.modelcontextprotocol/related-task"


@dataclass
class _Server:
    """In-memory state of one server's tasks (the journal holds the durable part)."""

    name: str
    client: Any = None
    changed: anyio.Event = field(default_factory=anyio.Event)  # connection or task set changed
    next_poll: dict[str, float] = field(default_factory=dict)  # row id -> monotonic due time
    failures: dict[str, int] = field(default_factory=dict)  # row id -> consecutive poll failures
    in_flight: set[str] = field(default_factory=set)
    honored: set[str] = field(default_factory=set)  # server taskIds notified on the listen stream
    loop_started: bool = False

    def poke(self) -> None:
        self.changed.set()
        self.changed = anyio.Event()


def _flatten(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for sub in exc.exceptions for leaf in _flatten(sub)]
    return [exc]


def _error_obj(exc: BaseException) -> dict[str, Any]:
    if isinstance(exc, MCPError):
        out: dict[str, Any] = {"code": exc.error.code, "message": exc.error.message}
        if exc.error.data is not None:
            out["data"] = exc.error.data
        return out
    return {"code": types.INTERNAL_ERROR, "message": str(exc) or type(exc).__name__}


class TaskManager:
    """Owns the `tasks` rows of one supervisor. `clock` is epoch seconds (injectable)."""

    def __init__(self, sup: Supervisor, *, clock: Callable[[], float] = time.time,
                 max_active: int = MAX_ACTIVE, max_queued: int = MAX_QUEUED) -> None:
        assert sup.journal is not None
        self.sup = sup
        self.clock = clock
        self.store = TaskStore(sup.journal, clock=clock)
        self.max_active = max_active
        self.max_queued = max_queued
        self.servers: dict[str, _Server] = {}
        self._events: dict[str, anyio.Event] = {}
        self._tg: anyio.abc.TaskGroup | None = None

    # -- wiring into the supervisor ---------------------------------------------------------
    def client_extensions(self, actor: ServerActor) -> list[Any]:
        """The `extensions=` of the actor's next `mcp.Client` (one per connection)."""
        name = actor.name

        async def on_notification(params: dict[str, Any]) -> None:
            self.apply_snapshot(name, params, source="notification")

        async def resolve(created: CreateTaskResult, ctx: ClaimContext) -> types.CallToolResult:
            return await self._resolve_claimed(name, created, ctx)

        return [TasksExtension(on_notification=on_notification, resolve=resolve)]

    def on_actor_state(self, actor: ServerActor) -> None:
        """Supervisor state listener: track the live client of every server."""
        st = self._server(actor.name)
        client = actor.client if actor.live else None
        if client is not st.client:
            st.client = client
            st.poke()

    def _server(self, name: str) -> _Server:
        st = self.servers.get(name)
        if st is None:
            st = self.servers[name] = _Server(name)
        if not st.loop_started and self._tg is not None:
            st.loop_started = True
            self._tg.start_soon(self._server_loop, st)
        return st

    async def run(self) -> None:
        """Run until cancelled: resume the journal's open rows, clean up old ones hourly."""
        async with anyio.create_task_group() as tg:
            self._tg = tg
            removed = self.store.cleanup()
            if removed:
                self._journal(None, "cleanup", f"removed {removed} task records older than 7 days")
            for row in self.store.open_rows():
                self._server(row.server)
            for name, actor in list(self.sup.actors.items()):
                self._server(name)
                self.on_actor_state(actor)
            while True:
                await anyio.sleep(CLEANUP_EVERY_S)
                removed = self.store.cleanup()
                if removed:
                    self._journal(None, "cleanup", f"removed {removed} task records older than 7 days")

    # -- starting calls ------------------------------------------------------------------
    def counts(self, server: str) -> tuple[int, int]:
        """(active, queued) rows of `server`."""
        rows = self.store.rows(server=server, states=(*ACTIVE_STATES, QUEUED), limit=100_000)
        active = sum(1 for r in rows if r.state in ACTIVE_STATES)
        return active, len(rows) - active

    async def start(self, server: str, tool: str, arguments: dict[str, Any] | None, *,
                    correlation: dict[str, Any] | None = None, submit_wait: float = 15.0) -> dict[str, Any]:
        """Start `tools/call` of `tool` (the server's own tool name) through the task manager.

        Writes the row (state `queued`) before anything is sent, then returns once the
        call has left `submitting` (a task was created, or a plain result came back), or
        stays `queued` because all `max_active` slots are busy, or after `submit_wait`
        seconds. Returns the row (API shape). Raises `NotFound` (no such server),
        `NotConnected`, `QueueFull`.
        """
        actor = self.sup.actors.get(server)
        if actor is None:
            raise NotFound(f"server `{server}` is not defined (see `monad mcp list`)")
        if not actor.live:
            raise NotConnected(f"server `{server}` is {actor.state}"
                               f"{': ' + actor.reason if actor.reason else ''}; see `monad mcp status {server}`")
        active, queued = self.counts(server)
        if active >= self.max_active and queued >= self.max_queued:
            raise QueueFull(f"server `{server}` already has {active} active and {queued} queued tasks "
                            f"(limits {self.max_active} and {self.max_queued}); wait for some to finish "
                            f"(`monad tasks --server {server}`)")
        row_id = uuid.uuid4().hex
        self.store.insert(id=row_id, server=server, tool=tool, arguments=arguments or {},
                          correlation=correlation, state=QUEUED)
        self._journal(server, QUEUED, f"task {row_id[:12]} `{tool}` accepted", row_id)
        st = self._server(server)
        st.poke()
        with anyio.move_on_after(submit_wait):
            while True:
                row = self.store.get(row_id)
                assert row is not None
                if row.state not in (QUEUED, SUBMITTING):
                    break
                if row.state == QUEUED and self.counts(server)[0] >= self.max_active:
                    break
                await self.wait_change(row_id, 1.0)
        row = self.store.get(row_id)
        assert row is not None
        return self.view(row)

    # -- the per-server loop ---------------------------------------------------------------
    async def _server_loop(self, st: _Server) -> None:
        while True:
            client = st.client
            if client is None:
                await st.changed.wait()
                continue
            try:
                await self._serve(st, client)
            except Exception:
                log.exception("task handling for server %s failed; retrying", st.name)
                await anyio.sleep(1.0)

    async def _serve(self, st: _Server, client: Any) -> None:
        """Everything for one connection of a server; returns when the connection changes."""
        st.next_poll.clear()
        st.failures.clear()
        st.in_flight.clear()
        st.honored = set()
        async with anyio.create_task_group() as tg:
            for row in self.store.open_rows():
                if row.server != st.name:
                    continue
                if row.task_id or row.state == SUBMITTING:
                    self.store.update(row.id, recoveries=row.recoveries + 1)
                    self._journal(st.name, row.state, f"task {row.id[:12]} resumed after (re)connect", row.id)
                if row.state == SUBMITTING:
                    # It may or may not exist on the server: resend with the same invocation id.
                    self.store.update(row.id, state=QUEUED)
                elif row.task_id:
                    st.next_poll[row.id] = 0.0
                    if row.cancel_requested:
                        tg.start_soon(self._send_cancel, st, client, row.id)
            tg.start_soon(self._listen_loop, st, client)
            tg.start_soon(self._poll_loop, st, client, tg)
            while st.client is client:
                await st.changed.wait()
            tg.cancel_scope.cancel()

    def _fill_slots(self, st: _Server, client: Any, tg: anyio.abc.TaskGroup) -> None:
        active, _queued = self.counts(st.name)
        free = self.max_active - active
        if free <= 0:
            return
        queued = [r for r in self.store.open_rows() if r.server == st.name and r.state == QUEUED]
        for row in queued[:free]:
            if row.cancel_requested:
                self._finish_local(row.id, "cancelled", "cancelled before it was sent")
                continue
            retry = row.submitted
            self.store.update(row.id, state=SUBMITTING, submitted=True, retries=row.retries + (1 if retry else 0))
            tg.start_soon(self._submit, st, client, row.id)

    async def _poll_loop(self, st: _Server, client: Any, tg: anyio.abc.TaskGroup) -> None:
        while True:
            changed = st.changed  # taken first: a poke during this pass wakes the wait below
            self._fill_slots(st, client, tg)
            now = time.monotonic()
            due = [rid for rid, t in st.next_poll.items() if t <= now and rid not in st.in_flight]
            for rid in due:
                st.in_flight.add(rid)
                tg.start_soon(self._poll, st, client, rid)
            pending = [t for rid, t in st.next_poll.items() if rid not in st.in_flight]
            delay = max(0.0, min(pending) - time.monotonic()) if pending else math.inf
            with anyio.move_on_after(min(delay, 5.0)):
                await changed.wait()

    async def _submit(self, st: _Server, client: Any, row_id: str) -> None:
        row = self.store.get(row_id)
        assert row is not None
        args = json.loads(row.arguments) if row.arguments else {}
        self._journal(st.name, SUBMITTING, f"task {row_id[:12]} `{row.tool}` sent (tools/call)", row_id)
        spec = self.sup.actors[st.name].spec if st.name in self.sup.actors else None
        timeout = spec.request_timeout_ms / 1000 if spec and spec.request_timeout_ms else None
        try:
            res = await client.session.call_tool(row.tool, args, read_timeout_seconds=timeout,
                                                 meta={INVOCATION_META_KEY: row_id}, allow_claimed=True)
        except Exception as exc:  # noqa: BLE001 - every failure is recorded on the row
            leaves = _flatten(exc)
            if any(isinstance(e, MCPError) and e.error.code == CONNECTION_CLOSED for e in leaves) \
                    or st.client is not client:
                return  # left `submitting`: resent on the next connection
            leaf = leaves[0]
            self._finish_local(row_id, "failed", f"tools/call failed: {self.sup.scrub(str(leaf))}",
                               error=_error_obj(leaf))
            return
        finally:
            st.poke()
        if isinstance(res, CreateTaskResult):
            snap = res.model_dump(by_alias=True, mode="json", exclude_none=True)
            self.store.update(row_id, task_id=res.task_id, server_created_at=res.created_at)
            self._journal(st.name, res.status, f"task {row_id[:12]} created as server task {res.task_id}",
                          row_id)
            self.apply_snapshot(st.name, snap, source="tools/call")
            st.next_poll.setdefault(row_id, time.monotonic() + self._poll_s(res.poll_interval_ms))
            row = self.store.get(row_id)
            if row is not None and row.cancel_requested:
                await self._send_cancel(st, client, row_id)
            st.poke()
            return
        if isinstance(res, types.CallToolResult):
            # The server answered synchronously: no task, the row holds the result.
            self._finish_local(row_id, "completed", None, result=res.model_dump(by_alias=True, mode="json",
                                                                                exclude_none=True))
            return
        self._finish_local(row_id, "failed", "the server asked for input before creating a task "
                                             "(multi round-trip), which monad does not answer",
                           error={"code": types.INTERNAL_ERROR, "message": "input_required on tools/call"})

    @staticmethod
    def _poll_s(poll_ms: int | None) -> float:
        ms = poll_ms if isinstance(poll_ms, int) and poll_ms > 0 else DEFAULT_POLL_MS
        return min(max(ms, MIN_POLL_MS), MAX_POLL_MS) / 1000

    async def _poll(self, st: _Server, client: Any, row_id: str) -> None:
        try:
            row = self.store.get(row_id)
            if row is None or row.state in TERMINAL or not row.task_id:
                st.next_poll.pop(row_id, None)
                return
            try:
                snap = await get_task(client.session, row.task_id, timeout=REQUEST_TIMEOUT_S)
            except Exception as exc:  # noqa: BLE001
                if st.client is not client:
                    return
                leaves = _flatten(exc)
                mcp = next((e for e in leaves if isinstance(e, MCPError)), None)
                if mcp is not None and mcp.error.code == INVALID_PARAMS:
                    self._finish_local(row_id, "failed", f"the server no longer knows task {row.task_id} "
                                       f"(expired, or the server restarted): {mcp.error.message}",
                                       error=_error_obj(mcp))
                    st.next_poll.pop(row_id, None)
                    return
                if mcp is not None and mcp.error.code == CONNECTION_CLOSED:
                    return  # the actor reconnects; the next connection resumes
                if self._expired(row):
                    self._finish_local(row_id, "failed", f"task {row.task_id} passed its ttlMs "
                                       f"({row.ttl_ms} ms) and the server cannot be read: {leaves[0]}",
                                       error=_error_obj(leaves[0]))
                    st.next_poll.pop(row_id, None)
                    return
                # Transient: bounded exponential backoff, counted on the row.
                n = st.failures.get(row_id, 0) + 1
                st.failures[row_id] = n
                self.store.update(row_id, retries=row.retries + 1)
                delay = min(BACKOFF_INITIAL_S * 2 ** (n - 1), BACKOFF_CAP_S)
                log.info("tasks/get %s on %s failed (%s); retry %d in %.1f s", row.task_id, st.name,
                         self.sup.scrub(str(leaves[0])), n, delay)
                st.next_poll[row_id] = time.monotonic() + delay
                return
            st.failures.pop(row_id, None)
            self.apply_snapshot(st.name, snap, source="tasks/get")
            row = self.store.get(row_id)
            if row is None or row.state in TERMINAL:
                st.next_poll.pop(row_id, None)
            else:
                st.next_poll[row_id] = time.monotonic() + self._poll_s(row.poll_interval_ms)
        finally:
            st.in_flight.discard(row_id)
            st.poke()

    def _expired(self, row: TaskRow) -> bool:
        return row.ttl_ms is not None and self.clock() > row.created_at + row.ttl_ms / 1000

    async def _listen_loop(self, st: _Server, client: Any) -> None:
        """Keep one `subscriptions/listen` stream covering every open task of the server."""
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS

        caps = client.server_capabilities
        exts = (caps.extensions or {}) if caps is not None else {}
        if client.protocol_version not in MODERN_PROTOCOL_VERSIONS or TASKS_EXTENSION not in exts:
            return  # legacy era or no extension: polling only
        backoff = 0.2
        while True:
            notifying, ended = True, False
            ids = {r.task_id: r.id for r in self.store.open_rows() if r.server == st.name and r.task_id}
            if not ids:
                await st.changed.wait()
                continue
            try:
                async with listen_for_tasks(client.session, sorted(ids)) as (honored, wait_end):
                    st.honored = honored
                    backoff = 0.2
                    for task_id in honored:  # changes before the ack were not notified
                        rid = ids.get(task_id)
                        if rid is not None:
                            st.next_poll[rid] = 0.0
                    st.poke()
                    notifying = bool(honored)
                    async with anyio.create_task_group() as tg:
                        async def end() -> None:
                            nonlocal ended
                            await wait_end()
                            ended = True
                            tg.cancel_scope.cancel()

                        async def grown(ids: dict[str, str] = ids) -> None:
                            # Re-listen for new tasks; close the stream once nothing is left to
                            # hear about (an idle open stream holds an HTTP response open).
                            while True:
                                await st.changed.wait()
                                now = {r.task_id for r in self.store.open_rows()
                                       if r.server == st.name and r.task_id}
                                if now - set(ids) or not now:
                                    tg.cancel_scope.cancel()
                                    return

                        if notifying:
                            tg.start_soon(end)
                            tg.start_soon(grown)
            except Exception as exc:  # noqa: BLE001 - polling carries on regardless
                if st.client is not client:
                    return
                log.info("listen for tasks on %s ended: %s; re-listening in %.1f s", st.name,
                         self.sup.scrub(str(_flatten(exc)[0])), backoff)
                await anyio.sleep(backoff)
                backoff = min(backoff * 2, BACKOFF_CAP_S)
            st.honored = set()
            if ended and st.client is client:
                # The server closed the stream: re-listen, but never in a tight loop.
                await anyio.sleep(backoff)
                backoff = min(backoff * 2, BACKOFF_CAP_S)
            if not notifying:
                # The server acknowledged no taskIds: it does not notify, so polling alone serves
                # this connection (re-asking on every new task would only cost round trips).
                while st.client is client:
                    await st.changed.wait()
                return

    # -- snapshots ------------------------------------------------------------------------
    def apply_snapshot(self, server: str, snap: dict[str, Any], *, source: str) -> None:
        """Fold a DetailedTask (wire JSON from tasks/get, a notification or tools/call) into its row."""
        task_id, status = snap.get("taskId"), snap.get("status")
        if not isinstance(task_id, str) or not isinstance(status, str):
            return
        row = self.store.by_task_id(server, task_id)
        if row is None or row.state in TERMINAL:
            return  # terminal is sticky
        if (status == "completed" and "result" not in snap) or (status == "failed" and "error" not in snap):
            # A bare Task (e.g. a CreateTaskResult for a task that already ended) carries no
            # payload: fetch the DetailedTask instead of recording an empty end.
            st = self.servers.get(server)
            if st is not None:
                st.next_poll[row.id] = 0.0
                st.poke()
            return
        fields: dict[str, Any] = {"state": status, "status_message": snap.get("statusMessage")}
        if "ttlMs" in snap:
            fields["ttl_ms"] = snap.get("ttlMs")
        if isinstance(snap.get("pollIntervalMs"), int):
            fields["poll_interval_ms"] = snap["pollIntervalMs"]
        if status == "input_required":
            answered = set(json.loads(row.answered_keys or "[]"))
            outstanding = {k: v for k, v in (snap.get("inputRequests") or {}).items() if k not in answered}
            known = set(json.loads(row.input_requests or "{}"))
            fields["input_requests"] = outstanding
            if set(outstanding) - known:
                fields.update(delivery_pending=True, pending_kind="input")
            elif not outstanding and row.pending_kind == "input":
                fields.update(delivery_pending=False, pending_kind=None)
        elif status in TERMINAL:
            fields.update(result=snap.get("result"), error=snap.get("error"), terminal_at=self.clock(),
                          input_requests=None, delivery_pending=True, pending_kind="result")
        else:
            fields["input_requests"] = None
            if row.pending_kind == "input":
                fields.update(delivery_pending=False, pending_kind=None)
        self.store.update(row.id, **fields)
        if status != row.state:
            self._journal(server, status, f"task {row.id[:12]} ({row.tool}) {status} via {source}", row.id)
        self._changed(row.id)
        st = self.servers.get(server)
        if st is not None and status in TERMINAL:
            st.next_poll.pop(row.id, None)
            st.poke()

    def _finish_local(self, row_id: str, state: str, message: str | None, *, result: Any = None,
                      error: Any = None, deliver: bool = True) -> None:
        row = self.store.update(row_id, state=state, status_message=message, result=result, error=error,
                                terminal_at=self.clock(), input_requests=None, delivery_pending=deliver,
                                pending_kind="result" if deliver else None)
        if row is not None:
            self._journal(row.server, state, f"task {row_id[:12]} ({row.tool}) {state}"
                                             f"{': ' + message if message else ''}", row_id)
            st = self.servers.get(row.server)
            if st is not None:
                st.next_poll.pop(row_id, None)
                st.poke()
        self._changed(row_id)

    # -- waiting and delivery -------------------------------------------------------------
    def _changed(self, row_id: str) -> None:
        ev = self._events.pop(row_id, None)
        if ev is not None:
            ev.set()

    async def wait_change(self, row_id: str, timeout: float) -> None:
        ev = self._events.get(row_id)
        if ev is None:
            ev = self._events[row_id] = anyio.Event()
        with anyio.move_on_after(timeout):
            await ev.wait()

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

    async def show(self, ref: str, *, wait: float = 0.0, deliver: bool = False) -> dict[str, Any]:
        """The row; with `wait`, first wait up to `wait` s for it to need attention (a terminal
        state or outstanding input). With `deliver`, take a pending delivery (`delivered`)."""
        row = self.resolve_id(ref)
        deadline = anyio.current_time() + max(0.0, wait)
        while wait > 0:
            row = self.store.get(row.id) or row
            if row.state in TERMINAL or (row.state == "input_required" and row.input_requests not in (None, "{}")):
                break
            left = deadline - anyio.current_time()
            if left <= 0:
                break
            await self.wait_change(row.id, left)
        row = self.store.get(row.id) or row
        delivered = deliver and row.delivery_pending and self.store.take_delivery(row.id)
        if delivered:
            self._journal(row.server, row.state, f"task {row.id[:12]} {row.pending_kind} delivered", row.id)
            row = self.store.get(row.id) or row
        out = self.view(row)
        out["delivered"] = bool(delivered)
        return out

    def list_tasks(self, *, server: str | None = None, state: str | None = None) -> list[dict[str, Any]]:
        """Rows for `monad tasks`: state `active` (not terminal), `pending` (deliveryPending),
        `done` (terminal), or None for all."""
        if state == "active":
            rows = self.store.rows(server=server, states=(QUEUED, *ACTIVE_STATES))
        elif state == "pending":
            rows = self.store.rows(server=server, pending=True)
        elif state == "done":
            rows = self.store.rows(server=server, states=tuple(TERMINAL))
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
        if row.state != "input_required" or not outstanding:
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
        if not left and row.pending_kind == "input":
            fields.update(delivery_pending=False, pending_kind=None)
        self.store.update(row.id, **fields)
        self._journal(row.server, row.state, f"task {row.id[:12]} answered input {', '.join(responses)}", row.id)
        if st is not None:
            st.next_poll[row.id] = 0.0  # see the effect soon
            st.poke()
        return self.view(self.store.get(row.id) or row)

    async def cancel(self, ref: str) -> dict[str, Any]:
        """Cancel: a queued call never goes out; a task gets `tasks/cancel` now, or on the next
        connection if the server is away. Idempotent; a terminal task is returned as is."""
        row = self.resolve_id(ref)
        if row.state in TERMINAL:
            return self.view(row)
        self.store.update(row.id, cancel_requested=True)  # intent first: survives a crash
        self._journal(row.server, row.state, f"task {row.id[:12]} cancel requested", row.id)
        if row.state == QUEUED:
            self._finish_local(row.id, "cancelled", "cancelled before it was sent", deliver=False)
        elif row.task_id:
            st = self.servers.get(row.server)
            if st is not None and st.client is not None:
                await self._send_cancel(st, st.client, row.id)
        return self.view(self.store.get(row.id) or row)

    async def _send_cancel(self, st: _Server, client: Any, row_id: str) -> None:
        row = self.store.get(row_id)
        if row is None or not row.task_id or row.state in TERMINAL:
            return
        try:
            await cancel_task(client.session, row.task_id, timeout=REQUEST_TIMEOUT_S)
        except Exception as exc:  # noqa: BLE001 - retried on the next connection (cancel_requested stays)
            leaf = _flatten(exc)[0]
            if isinstance(leaf, MCPError) and leaf.error.code == INVALID_PARAMS:
                self._finish_local(row_id, "cancelled", f"the server no longer knows task {row.task_id}")
                return
            log.info("tasks/cancel %s on %s failed: %s", row.task_id, st.name, self.sup.scrub(str(leaf)))
            return
        self._journal(st.name, row.state, f"task {row_id[:12]} tasks/cancel acknowledged", row_id)
        st.next_poll[row_id] = 0.0
        st.poke()

    # -- tasks returned to a plain Client.call_tool -------------------------------------------
    async def _resolve_claimed(self, server: str, created: CreateTaskResult, ctx: ClaimContext
                               ) -> types.CallToolResult:
        """The SDK's resolver: journal the task, wait for its end, return the tool result.

        Cancelling the caller cancels the task (`tasks/cancel`). A `failed` task raises
        `MCPError` with the task's error.
        """
        row_id = uuid.uuid4().hex
        self.store.insert(id=row_id, server=server, tool=ctx.tool_name, arguments=None, correlation=None,
                          state=created.status, adopted=True, task_id=created.task_id)
        self._journal(server, created.status, f"task {row_id[:12]} `{ctx.tool_name}` adopted from tools/call", row_id)
        self.apply_snapshot(server, created.model_dump(by_alias=True, mode="json", exclude_none=True),
                            source="tools/call")
        st = self._server(server)
        st.next_poll.setdefault(row_id, time.monotonic() + self._poll_s(created.poll_interval_ms))
        st.poke()
        try:
            while True:
                row = self.store.get(row_id)
                assert row is not None
                if row.state in TERMINAL:
                    break
                await self.wait_change(row_id, 5.0)
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True), anyio.move_on_after(5):
                await self.cancel(row_id)
            raise
        self.store.take_delivery(row_id)
        if row.state == "completed" and row.result:
            return types.CallToolResult.model_validate(self.view(row)["result"])
        err = json.loads(row.error) if row.error else {}
        raise MCPError(code=int(err.get("code", types.INTERNAL_ERROR)),
                       message=str(err.get("message") or row.status_message or f"task {row.state}"),
                       data=err.get("data"))

    # -- journal ------------------------------------------------------------------------------
    def _journal(self, server: str | None, state: str, reason: str, row_id: str | None = None) -> None:
        try:
            self.sup.journal.record("task", server=server, state=state, reason=reason,  # type: ignore[union-attr]
                                    detail={"id": row_id} if row_id else None)
        except Exception:
            log.exception("journal write failed")
