"""One server's tasks over its live connection: submit, poll, listen, answer, cancel.

Each connection gets the wire its server speaks, SEP-2663 (`protocol.Sep2663Wire`) or the
2025-11-25 core tasks (`legacy.LegacyTaskWire`); the loops see only SEP-2663 snapshots.
`ServerTasks` keeps the in-memory side of one server's tasks (the journal holds the durable
part, through `TaskLedger`). While the server has a live `mcp.Client`, one task group runs:

- the submitter: queued calls go out as `tools/call` as slots free up (≤ `max_active`);
- a poll loop: `tasks/get` for every open task at the server's `pollIntervalMs` (SEP-2663
  "Task Polling"), with bounded exponential backoff on transient failures;
- on SEP-2663, a listen loop so `notifications/tasks` arrive as they happen; on 2025-11-25,
  a `tasks/list` resync when a connection starts, and the server's task-related
  `elicitation/create` requests held as input requests (`on_elicitation`).

On a new connection (reconnect, restart, a supervisor back after `kill -9`) the open rows
are resumed. A call sent whose answer was lost (no task id) is sent again, same invocation
id, only when its tool says that is safe (`resend_safe`), at most `MAX_RESENDS` times;
otherwise its row ends `failed`: whether the server acted on it is unknown (`_answer_lost`).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import anyio
import mcp_types as types
from mcp import Client, MCPError
from mcp.client import ClientRequestContext
from mcp_types import CONNECTION_CLOSED, INVALID_PARAMS, INVALID_REQUEST

from monad_cli.core.task_states import TERMINAL, TaskState
from monad_cli.daemon.tasks.ledger import TaskLedger
from monad_cli.daemon.tasks.legacy import (
    ElicitationInbox,
    LegacyTaskWire,
    OwnRequests,
    related_task_id,
    speaks_legacy_tasks,
)
from monad_cli.daemon.tasks.protocol import (
    INVOCATION_META_KEY,
    TASKS_EXTENSION,
    Sep2663Wire,
    error_object,
    flatten,
    listen_for_tasks,
)
from monad_cli.journal.schema import TaskRow

log = logging.getLogger("monad.tasks")
LISTEN_BACKOFF_CAP_S = 30.0  # seconds between re-listens for task notifications, at most

DEFAULT_POLL_MS = 1000
MIN_POLL_MS = 50
MAX_POLL_MS = 300_000
BACKOFF_INITIAL_S = 0.5
BACKOFF_CAP_S = 30.0
REQUEST_TIMEOUT_S = 30.0  # tasks/get, tasks/update, tasks/cancel: small requests


TaskWire = Sep2663Wire | LegacyTaskWire
ELICITATION_ROW_WAIT_S = 2.0  # an input request may overtake the answer that names its task
# A sent call whose answer was lost goes out again at most this many times, and only when its
# tool says that is safe: a call that ended its server's session that often is a poison call.
MAX_RESENDS = 2
LOST_REASON_WAIT_S = 12.0  # how long to wait for the words of why a session ended (the actor's 10 s)
SUPERVISOR_GONE = "the supervisor stopped before its answer came (`monad daemon stop`, a signal or a crash)"


def resend_safe(hints: types.ToolAnnotations | None) -> str | None:
    """Which annotation makes sending a call again harmless (MCP spec, server/tools "Tool
    Annotations": `readOnlyHint`, `idempotentHint`), or None. A server that lies about them
    could run its own tool twice anyway: trusted as the tool service trusts them for a
    lapsed authorization, bounded by `MAX_RESENDS`."""
    if hints is not None and hints.read_only_hint:
        return "readOnlyHint"
    return "idempotentHint" if hints is not None and hints.idempotent_hint else None


def lost_message(why: str) -> str:
    """The row's line for a sent call whose answer was lost, not sent again (the gateway's
    words for a cut call)."""
    return (f"sent, and its answer was lost: {why}; whether the server acted on it is unknown, so it is not "
            f"sent again; call it again if that is safe")


async def unknown_reason(client: Client) -> str | None:
    return None


def poll_seconds(poll_ms: int | None) -> float:
    """The poll period for a server's `pollIntervalMs`, clamped to 50 ms … 5 min."""
    ms = poll_ms if isinstance(poll_ms, int) and poll_ms > 0 else DEFAULT_POLL_MS
    return min(max(ms, MIN_POLL_MS), MAX_POLL_MS) / 1000


class ServerTasks:
    """The tasks of server `name`: its live client (set by the manager), due polls, and the
    loops that serve each connection. `request_timeout()`: seconds a `tools/call` may take
    (None: no deadline); `task_support(tool)`: the tool's 2025-11-25 `execution.taskSupport`;
    `annotations(tool)`: its `ToolAnnotations`; `lost_reason(client)`: why the session of
    `client` ended under a request, in words (each None: unknown)."""

    def __init__(self, name: str, ledger: TaskLedger, *, max_active: int,
                 request_timeout: Callable[[], float | None], redact: Callable[[str], str],
                 task_support: Callable[[str], str | None] = lambda tool: None,
                 annotations: Callable[[str], types.ToolAnnotations | None] = lambda tool: None,
                 lost_reason: Callable[[Client], Awaitable[str | None]] = unknown_reason) -> None:
        self.name = name
        self.ledger = ledger
        self.store = ledger.store
        self.max_active = max_active
        self.request_timeout = request_timeout
        self.redact = redact
        self.task_support = task_support
        self.annotations = annotations
        self.lost_reason = lost_reason
        self.client: Client | None = None
        self.lane: OwnRequests | None = None  # the live connection's own requests (with `client`)
        self.wire: TaskWire | None = None  # the live connection's, while it is served
        self.inbox = ElicitationInbox()  # 2025-11-25 input requests waiting for a person
        self.changed = anyio.Event()  # connection or task set changed
        self.next_poll: dict[str, float] = {}  # row id -> monotonic due time
        self.failures: dict[str, int] = {}  # row id -> consecutive poll failures
        self.in_flight: set[str] = set()
        self.sending: dict[str, anyio.CancelScope] = {}  # row id -> its tools/call awaiting the answer
        self.lost: dict[str, str] = {}  # row id -> why its answer was lost, left `submitting` to be resent
        self.loop_started = False

    def poke(self) -> None:
        """Wake the loops: the connection or the set of tasks changed."""
        self.changed.set()
        self.changed = anyio.Event()

    def poll_soon(self, row_id: str) -> None:
        self.next_poll[row_id] = 0.0
        self.poke()

    def watch(self, row_id: str, poll_ms: int | None) -> None:
        """Poll a task the server just created, after its first poll interval."""
        self.next_poll.setdefault(row_id, time.monotonic() + poll_seconds(poll_ms))
        self.poke()

    def ended(self, row_id: str) -> None:
        """The row is terminal: stop polling it."""
        self.next_poll.pop(row_id, None)
        self.poke()

    def apply(self, snap: Mapping[str, Any], *, source: str) -> None:
        """Fold a snapshot of one of this server's tasks into its row (see `TaskLedger.fold`)."""
        folded = self.ledger.fold(self.name, snap, source=source)
        if folded is None:
            return
        row, result = folded
        if result.poll_now:
            self.poll_soon(row.id)
        elif result.ended:
            self.ended(row.id)

    def finish(self, row_id: str, state: TaskState, message: str | None, **kw: Any) -> None:
        """End the row locally (`TaskLedger.finish`) and stop polling it."""
        self.lost.pop(row_id, None)
        self.ledger.finish(row_id, state, message, **kw)
        self.ended(row_id)

    # -- the loops ------------------------------------------------------------------------
    async def run(self) -> None:
        """Serve every connection of the server, one after the other, until cancelled."""
        while True:
            client = self.client
            if client is None:
                await self.changed.wait()
                continue
            try:
                await self._serve(client)
            except Exception:  # one server's failure must not end its loop for good
                log.exception("task handling for server %s failed; retrying", self.name)
                await anyio.sleep(1.0)

    async def _serve(self, client: Client) -> None:
        """Everything for one connection; returns when the connection changes."""
        self.next_poll.clear()
        self.failures.clear()
        self.in_flight.clear()
        async with anyio.create_task_group() as tg:
            if speaks_legacy_tasks(client):
                assert self.lane is not None
                wire: TaskWire = LegacyTaskWire(client, self.lane, self.inbox, start_soon=tg.start_soon,
                                                on_result_stream_end=self._read_again,
                                                request_timeout=REQUEST_TIMEOUT_S)
            else:
                wire = Sep2663Wire(client, request_timeout=REQUEST_TIMEOUT_S)
            self.wire = wire
            for row in self.store.open_rows():
                if row.server != self.name or row.state == TaskState.QUEUED:
                    continue  # queued rows go out through the submitter
                self.store.update(row.id, recoveries=row.recoveries + 1)
                self.ledger.note(self.name, row.state, f"task {row.id[:12]} resumed after (re)connect", row.id)
                if row.task_id:
                    # The server has the task (a `submitting` row with a taskId waits for the
                    # payload of a task that had already ended): observe it again.
                    self.next_poll[row.id] = 0.0
                    if row.cancel_requested:
                        tg.start_soon(self.send_cancel, row.id)
                else:
                    # Sent, and its answer lost: the server may or may not have acted on it.
                    if self.lost.pop(row.id, None) is not None and not row.cancel_requested:
                        self.store.update(row.id, state=TaskState.QUEUED)  # judged safe to resend
                    else:  # left by a supervisor that stopped or died
                        self._answer_lost(row, SUPERVISOR_GONE, resend_now=True)
            tg.start_soon(self._listen_loop, client)
            tg.start_soon(self._resync, wire)
            tg.start_soon(self._poll_loop, client, tg)
            try:
                while self.client is client:
                    await self.changed.wait()
            finally:
                self.wire = None
            tg.cancel_scope.cancel()

    async def _resync(self, wire: TaskWire) -> None:
        """2025-11-25 `tasks/list` once per connection, folded into the open rows."""
        try:
            listed = await wire.list_tasks()
        except Exception as exc:  # noqa: BLE001 - the polls read each task anyway
            log.info("tasks/list on %s failed: %s", self.name, self.redact(str(flatten(exc)[0])))
            return
        open_ids = self.open_task_ids()
        for snap in listed:
            if snap["taskId"] in open_ids:
                self.apply(snap, source="tasks/list")

    def _read_again(self, task_id: str) -> None:
        row_id = self.open_task_ids().get(task_id)
        if row_id is not None:
            self.poll_soon(row_id)

    def _fill_slots(self, client: Client, tg: anyio.abc.TaskGroup) -> None:
        active, _queued = self.ledger.counts(self.name)
        free = self.max_active - active
        if free <= 0:
            return
        queued = [r for r in self.store.open_rows() if r.server == self.name and r.state == TaskState.QUEUED]
        for row in queued[:free]:
            if row.cancel_requested:
                self.finish(row.id, TaskState.CANCELLED, "cancelled before it was sent")
                continue
            self.store.update(row.id, state=TaskState.SUBMITTING, submitted=True,
                              retries=row.retries + (1 if row.submitted else 0))
            tg.start_soon(self._submit, client, row.id)

    async def _poll_loop(self, client: Client, tg: anyio.abc.TaskGroup) -> None:
        while True:
            changed = self.changed  # taken first: a poke during this pass wakes the wait below
            self._fill_slots(client, tg)
            now = time.monotonic()
            due = [rid for rid, t in self.next_poll.items() if t <= now and rid not in self.in_flight]
            for rid in due:
                self.in_flight.add(rid)
                tg.start_soon(self._poll, client, rid)
            pending = [t for rid, t in self.next_poll.items() if rid not in self.in_flight]
            delay = min(max(0.0, min(pending) - time.monotonic()), 5.0) if pending else 5.0
            with anyio.move_on_after(delay):
                await changed.wait()

    def _answer_lost(self, row: TaskRow, why: str, *, resend_now: bool) -> None:
        """`row` was sent and its answer was lost (`why`), so whether the server acted on it is
        unknown. It goes out again only when `resend_safe` and sent again fewer than
        `MAX_RESENDS` times: `resend_now` queues it, else it stays `submitting` until the next
        connection resumes it. Otherwise it ends `failed` (a cancelled one `cancelled`)."""
        why = self.redact(why)
        if row.cancel_requested:
            self.finish(row.id, TaskState.CANCELLED, f"cancelled after it was sent, and its answer was lost: {why}; "
                                                     f"whether the server acted on it is unknown", deliver=False)
            return
        safe = resend_safe(self.annotations(row.tool))
        resends = row.retries  # a row without a task id counts only its resends there
        if safe is None:
            self.finish(row.id, TaskState.FAILED, lost_message(why),
                        error={"code": CONNECTION_CLOSED, "message": lost_message(why)})
            return
        if resends >= MAX_RESENDS:
            message = (f"sent {resends + 1} times, and each time its answer was lost (last: {why}); not sent "
                       f"again: a call that ends its server's session every time is a poison call; whether the "
                       f"server acted on it is unknown; see `monad mcp status {self.name}` before calling it again")
            self.finish(row.id, TaskState.FAILED, message, error={"code": CONNECTION_CLOSED, "message": message})
            return
        self.ledger.note(self.name, row.state, f"task {row.id[:12]} `{row.tool}` answer lost ({why}); sent again "
                         f"({resends + 1} of at most {MAX_RESENDS}): the tool declares {safe}", row.id)
        if resend_now:
            self.store.update(row.id, state=TaskState.QUEUED)
        else:
            self.lost[row.id] = why

    async def _submit(self, client: Client, row_id: str) -> None:
        row = self.store.get(row_id)
        assert row is not None and self.wire is not None
        if row.state != TaskState.SUBMITTING:
            return  # cancelled before this task got to send it
        args = json.loads(row.arguments) if row.arguments else {}
        self.ledger.note(self.name, TaskState.SUBMITTING, f"task {row_id[:12]} `{row.tool}` sent (tools/call)",
                         row_id)
        scope = self.sending[row_id] = anyio.CancelScope()  # `abandon` ends it: the SDK tells the server
        try:
            with scope:
                kind, res = await self.wire.submit(row.tool, args, meta={INVOCATION_META_KEY: row_id},
                                                   task_support=self.task_support(row.tool),
                                                   timeout=self.request_timeout())
        except Exception as exc:  # noqa: BLE001 - every failure is recorded on the row
            leaves = flatten(exc)
            if any(isinstance(e, MCPError) and e.error.code == CONNECTION_CLOSED for e in leaves) \
                    or self.client is not client:
                # Shielded: the connection's task group is being cancelled as its session ended.
                with anyio.CancelScope(shield=True):
                    why = None
                    with anyio.move_on_after(LOST_REASON_WAIT_S):
                        try:
                            why = await self.lost_reason(client)
                        except Exception:  # the row is judged without the words
                            log.exception("why the session of %s ended is unknown", self.name)
                    row = self.store.get(row_id)
                    if row is not None and row.state == TaskState.SUBMITTING and not row.task_id:
                        self._answer_lost(row, why or "the server's session ended (the connection closed)",
                                          resend_now=False)
                return
            leaf = leaves[0]
            self.finish(row_id, TaskState.FAILED, f"tools/call failed: {self.redact(str(leaf))}",
                        error=error_object(leaf))
            return
        finally:
            self.sending.pop(row_id, None)
            self.poke()
        if scope.cancelled_caught:
            return  # abandoned (`monad tasks cancel`): the row has ended
        if kind == "task":
            task_id = str(res["taskId"])
            self.store.update(row_id, task_id=task_id, server_created_at=res.get("createdAt"))
            self.ledger.note(self.name, str(res["status"]), f"task {row_id[:12]} created as server task {task_id}"
                             f"{' (2025-11-25 tasks)' if self.wire.kind == '2025-11-25' else ''}", row_id)
            self.apply(res, source="tools/call")
            self.next_poll.setdefault(row_id, time.monotonic() + poll_seconds(res.get("pollIntervalMs")))
            row = self.store.get(row_id)
            if row is not None and row.cancel_requested:
                await self.send_cancel(row_id)
            self.poke()
            return
        if kind == "result":
            # The server answered synchronously: no task, the row holds the result.
            self.finish(row_id, TaskState.COMPLETED, None, result=res)
            return
        self.finish(row_id, TaskState.FAILED, "the server asked for input before creating a task "
                                              "(multi round-trip), which monad does not answer",
                    error={"code": types.INTERNAL_ERROR, "message": "input_required on tools/call"})

    def abandon(self, row_id: str) -> bool:
        """Stop waiting for the row's `tools/call`, so the SDK sends `notifications/cancelled`
        (MCP spec, basic/utilities/cancellation); False when nothing awaited it here."""
        scope = self.sending.get(row_id)
        if scope is None:
            return False
        scope.cancel()
        return True

    async def _poll(self, client: Client, row_id: str) -> None:
        try:
            row = self.store.get(row_id)
            wire = self.wire
            if row is None or row.state in TERMINAL or not row.task_id or wire is None:
                self.next_poll.pop(row_id, None)
                return
            try:
                snap = await wire.get(row.task_id)
            except Exception as exc:  # noqa: BLE001 - a failed read is judged below, never fatal
                if self.client is not client:
                    return
                self._poll_failed(row_id, row.task_id, flatten(exc))
                return
            self.failures.pop(row_id, None)
            self.apply(snap, source="tasks/get")
            row = self.store.get(row_id)
            if row is None or row.state in TERMINAL:
                self.next_poll.pop(row_id, None)
            else:
                self.next_poll[row_id] = time.monotonic() + poll_seconds(row.poll_interval_ms)
        finally:
            self.in_flight.discard(row_id)
            self.poke()

    def _poll_failed(self, row_id: str, task_id: str, leaves: list[BaseException]) -> None:
        """`tasks/get` failed: the task is gone (-32602), the connection closed, or a
        transient error (retried with bounded exponential backoff, counted on the row)."""
        row = self.store.get(row_id)
        if row is None:
            return
        mcp = next((e for e in leaves if isinstance(e, MCPError)), None)
        if mcp is not None and mcp.error.code == INVALID_PARAMS:
            self.finish(row_id, TaskState.FAILED, f"the server no longer knows task {task_id} "
                        f"(expired, or the server restarted): {mcp.error.message}", error=error_object(mcp))
            return
        if mcp is not None and mcp.error.code == CONNECTION_CLOSED:
            return  # the actor reconnects; the next connection resumes
        if self.ledger.expired(row):
            self.finish(row_id, TaskState.FAILED, f"task {task_id} passed its ttlMs "
                        f"({row.ttl_ms} ms) and the server cannot be read: {leaves[0]}",
                        error=error_object(leaves[0]))
            return
        n = self.failures.get(row_id, 0) + 1
        self.failures[row_id] = n
        self.store.update(row_id, retries=row.retries + 1)
        delay = min(BACKOFF_INITIAL_S * 2 ** (n - 1), BACKOFF_CAP_S)
        log.info("tasks/get %s on %s failed (%s); retry %d in %.1f s", task_id, self.name,
                 self.redact(str(leaves[0])), n, delay)
        self.next_poll[row_id] = time.monotonic() + delay

    async def _listen_loop(self, client: Client) -> None:
        """Keep one `subscriptions/listen` stream (SEP-2663 "Task Status Notifications", the
        `taskIds` filter) over every open task of this server while `client` is its connection.
        It re-listens when the stream ends or new tasks appear, and polls each honored task once
        after the ack (a change before the ack is never notified). Polling serves every task
        anyway; this only makes changes arrive sooner."""
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS

        caps = client.server_capabilities
        exts = (caps.extensions or {}) if caps is not None else {}
        if client.protocol_version not in MODERN_PROTOCOL_VERSIONS or TASKS_EXTENSION not in exts:
            return  # legacy era or no extension: polling only
        backoff = 0.2
        while True:
            notifying, ended = True, False
            ids = self.open_task_ids()
            if not ids:
                await self.changed.wait()
                continue
            try:
                assert self.lane is not None
                async with listen_for_tasks(self.lane, client.protocol_version, sorted(ids)) as (honored, wait_end):
                    backoff = 0.2
                    for task_id in honored:  # changes before the ack were not notified
                        rid = ids.get(task_id)
                        if rid is not None:
                            self.next_poll[rid] = 0.0
                    self.poke()
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
                                await self.changed.wait()
                                now = set(self.open_task_ids())
                                if now - set(ids) or not now:
                                    tg.cancel_scope.cancel()
                                    return

                        if notifying:
                            tg.start_soon(end)
                            tg.start_soon(grown)
            except Exception as exc:  # noqa: BLE001 - polling carries on regardless
                if self.client is not client:
                    return
                log.info("listen for tasks on %s ended: %s; re-listening in %.1f s", self.name,
                         self.redact(str(flatten(exc)[0])), backoff)
                ended = True
            if ended and self.client is client:
                # The stream failed or the server closed it: re-listen, but never in a tight loop.
                await anyio.sleep(backoff)
                backoff = min(backoff * 2, LISTEN_BACKOFF_CAP_S)
            if not notifying:
                # The server acknowledged no taskIds: it does not notify, so polling alone serves
                # this connection (re-asking on every new task would only cost round trips).
                while self.client is client:
                    await self.changed.wait()
                return

    def open_task_ids(self) -> dict[str, str]:
        """Server taskId -> row id of every open row of this server that has one."""
        return {r.task_id: r.id for r in self.store.open_rows() if r.server == self.name and r.task_id}

    async def send_cancel(self, row_id: str) -> bool:
        """`tasks/cancel` for the row's task; True once the server acknowledged it. A failure
        leaves `cancel_requested` for the next connection. An unknown task (-32602) ends the row
        `cancelled` on SEP-2663 (cancel is idempotent); on 2025-11-25 it may mean "already
        terminal", so the task is read again. A server without `tasks.cancel` cannot be asked:
        the row ends `cancelled` here, saying so."""
        row = self.store.get(row_id)
        wire = self.wire
        if row is None or not row.task_id or row.state in TERMINAL or wire is None:
            return False
        if not wire.cancels:
            self.finish(row_id, TaskState.CANCELLED, "cancelled in monad only: the server declares no "
                                                     "`tasks.cancel`, so its work may go on")
            return False
        try:
            snap = await wire.cancel(row.task_id)
        except Exception as exc:  # noqa: BLE001 - retried on the next connection (cancel_requested stays)
            leaf = flatten(exc)[0]
            if isinstance(leaf, MCPError) and leaf.error.code == INVALID_PARAMS:
                if wire.kind == "2025-11-25":
                    self.poll_soon(row_id)
                else:
                    self.finish(row_id, TaskState.CANCELLED, f"the server no longer knows task {row.task_id}")
                return False
            log.info("tasks/cancel %s on %s failed: %s", row.task_id, self.name, self.redact(str(leaf)))
            return False
        self.ledger.note(self.name, row.state, f"task {row_id[:12]} tasks/cancel acknowledged", row_id)
        if snap is not None:
            self.apply(snap, source="tasks/cancel")
        self.poll_soon(row_id)
        return True

    async def on_elicitation(self, ctx: ClientRequestContext, params: types.ElicitRequestParams
                             ) -> types.ElicitResult | types.ErrorData:
        """A server's `elicitation/create` tagged with a task of ours (2025-11-25 "Associating
        Task-Related Messages") waits as that task's input request until a person answers it;
        any other is refused: nobody sits behind the supervisor to answer it."""
        task_id = related_task_id(ctx.meta) or related_task_id(params.meta)
        row = None
        with anyio.move_on_after(ELICITATION_ROW_WAIT_S if task_id else 0):
            while task_id and (row := self.store.by_task_id(self.name, task_id)) is None:
                await anyio.sleep(0.05)
        if task_id is None or row is None or row.state in TERMINAL:
            return types.ErrorData(code=INVALID_REQUEST, message="monad answers elicitation/create only for "
                                   "the input of a running task (see `monad tasks`)")
        request = {"method": "elicitation/create",
                   "params": params.model_dump(by_alias=True, mode="json", exclude_none=True, exclude={"meta"})}

        def listed() -> None:
            current = self.store.get(row.id) or row
            self.apply({"taskId": task_id, "status": "input_required", "statusMessage": current.status_message,
                        "inputRequests": self.inbox.requests(task_id)}, source="elicitation/create")

        answer = await self.inbox.ask(task_id, request, listed)
        self.poll_soon(row.id)
        return types.ElicitResult.model_validate(answer)
