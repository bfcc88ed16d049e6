"""The 2025-11-25 shape of tasks (MCP 2025-11-25 basic/utilities/tasks, SEP-1686) behind
the same rows as SEP-2663.

A 2025-11-25 server declares `capabilities.tasks.requests.tools.call` and marks each tool
`execution.taskSupport` (`required`, `optional`, `forbidden`). Unlike SEP-2663:

- `tools/call` carries `task: {ttl}` and is answered `{task: {taskId, status, ttl,
  pollInterval, ...}}`;
- `tasks/get` answers the bare Task; the payload comes from `tasks/result`, which blocks
  until the task ends and returns what `tools/call` would have (result or JSON-RPC error);
- input: an `input_required` task's server sends `elicitation/create` requests tagged
  `_meta["io.modelcontextprotocol/related-task"]`, maybe only on a pending `tasks/result`
  ("Input Required Status": the requestor SHOULD call it preemptively);
- `tasks/cancel` refuses a terminal task with -32602; `tasks/list` pages through every
  task; `notifications/tasks/status` is optional.

`LegacyTaskWire` hands the loops (`tasks.connection`) SEP-2663 shapes: `normalize_task`
renames `ttl` and `pollInterval`, `get` merges `tasks/get` and `tasks/result` into a
DetailedTask, waiting elicitations (`ElicitationInbox`) become `inputRequests`, and a
`failed` task whose payload is a tool result is `completed` with it (SEP-2663's tool error).

The SDK's `ClientSession` validates every `tools/call` answer as a `CallToolResult`, so the
task-augmented call goes on monad's own lane (`OwnRequests`: sessions/direct.py); the
`tasks/*` requests, unknown to the SDK's tables at 2025-11-25, go through the session's
public `send_request`, unvalidated (`legacy_request`).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, cast

import anyio
import mcp_types as types
from mcp import Client, MCPError
from mcp_types import INVALID_PARAMS
from pydantic import BaseModel, ConfigDict

log = logging.getLogger("monad.tasks")

RELATED_TASK_META = "io.modelcontextprotocol/related-task"
REQUESTED_TTL_MS = 3_600_000  # what monad asks for; a server MAY override it ("Creating Tasks")
LIST_PAGES = 100
TERMINAL_PAYLOAD = ("completed", "failed")  # statuses whose payload `tasks/result` holds


def normalize_task(task: Mapping[str, Any]) -> dict[str, Any]:
    """A 2025-11-25 Task (wire JSON) in SEP-2663 spelling: `ttl` → `ttlMs`, `pollInterval` →
    `pollIntervalMs`, everything else as it came. Raises `ValueError` without a string
    `taskId` and `status`."""
    if not isinstance(task.get("taskId"), str) or not isinstance(task.get("status"), str):
        raise ValueError("not a task: `taskId` and `status` must be strings")
    out = {k: v for k, v in task.items() if k not in ("ttl", "pollInterval", "_meta")}
    if "ttl" in task and "ttlMs" not in task:
        out["ttlMs"] = task["ttl"]
    if "pollInterval" in task and "pollIntervalMs" not in task:
        out["pollIntervalMs"] = task["pollInterval"]
    return out


def related_task_id(meta: Mapping[str, Any] | None) -> str | None:
    """The taskId of `_meta["io.modelcontextprotocol/related-task"]`, or None."""
    related = (meta or {}).get(RELATED_TASK_META)
    task_id = related.get("taskId") if isinstance(related, Mapping) else None
    return task_id if isinstance(task_id, str) else None


def speaks_legacy_tasks(client: Client) -> bool:
    """Whether the connection is a 2025-11-25 one whose server takes task-augmented
    `tools/call` (`capabilities.tasks.requests.tools.call`, "Capability Negotiation")."""
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    caps = client.server_capabilities
    tasks = caps.tasks if caps is not None else None
    tools = tasks.requests.tools if tasks is not None and tasks.requests is not None else None
    return client.protocol_version not in MODERN_PROTOCOL_VERSIONS and tools is not None and tools.call is not None


class OwnRequests(Protocol):
    """monad's own requests on a live connection (sessions/direct.py `DirectLane.request`):
    the answer's `result`, unvalidated; raises `MCPError`."""

    async def request(self, method: str, params: dict[str, Any], version: str, *, timeout: float | None = None,
                      on_ack: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]: ...


class _Raw(BaseModel):
    """Any answer, as it came (`legacy_request`)."""

    model_config = ConfigDict(extra="allow")


async def legacy_request(client: Client, method: str, params: dict[str, Any], *,
                         timeout: float | None) -> dict[str, Any]:
    """One `tasks/*` request through `ClientSession.send_request`; its answer as a dict,
    unvalidated. Raises `MCPError`."""
    request = types.Request[dict[str, Any], str](method=method, params=params)
    raw = await client.session.send_request(request, _Raw, request_read_timeout_seconds=timeout)
    return raw.model_extra or {}


@dataclass
class _Asked:
    request: dict[str, Any]
    answered: anyio.Event = field(default_factory=anyio.Event)
    answer: dict[str, Any] | None = None


class InputGone(LookupError):
    """An answer for an elicitation that is no longer waiting (its connection ended)."""


class ElicitationInbox:
    """The `elicitation/create` requests of one server's tasks that wait for a person, by
    taskId and input key (monad's, unique for the row's life: an answered key is never
    mistaken for a new question after a reconnect)."""

    def __init__(self) -> None:
        self.asked: dict[str, dict[str, _Asked]] = {}

    def requests(self, task_id: str) -> dict[str, dict[str, Any]]:
        """The unanswered requests of `task_id`, key → input request (wire JSON)."""
        return {k: a.request for k, a in self.asked.get(task_id, {}).items() if a.answer is None}

    async def ask(self, task_id: str, request: dict[str, Any], on_asked: Callable[[], None]
                  ) -> dict[str, Any]:
        """Hold `request` until `answer` gives its `ElicitResult` (wire JSON) and return it;
        `on_asked()` runs once it is listed. Cancelling the caller withdraws it."""
        key = f"elicitation-{uuid.uuid4().hex[:8]}"
        asked = self.asked.setdefault(task_id, {})[key] = _Asked(request)
        try:
            on_asked()
            await asked.answered.wait()
            assert asked.answer is not None
            return asked.answer
        finally:
            waiting = self.asked.get(task_id, {})
            waiting.pop(key, None)
            if not waiting:
                self.asked.pop(task_id, None)

    def answer(self, task_id: str, responses: Mapping[str, dict[str, Any]]) -> None:
        """Answer waiting requests of `task_id` (key → `ElicitResult`). Raises `InputGone`
        naming a key nobody waits for any more; nothing is answered then."""
        waiting = self.asked.get(task_id, {})
        gone = [k for k in responses if k not in waiting or waiting[k].answer is not None]
        if gone:
            raise InputGone(", ".join(gone))
        for key, result in responses.items():
            waiting[key].answer = dict(result)
            waiting[key].answered.set()


class LegacyTaskWire:
    """Tasks over one live 2025-11-25 connection. `inbox`: the server's waiting elicitations;
    `start_soon`: the connection's task group (a pending `tasks/result` lives there);
    `on_result_stream_end(task_id)`: a pending `tasks/result` ended: read the task again.
    """

    kind = "2025-11-25"

    def __init__(self, client: Client, lane: OwnRequests, inbox: ElicitationInbox, *,
                 start_soon: Callable[[Callable[[], Coroutine[Any, Any, None]]], object],
                 on_result_stream_end: Callable[[str], None], request_timeout: float) -> None:
        self.client = client
        self.lane = lane
        self.inbox = inbox
        self.start_soon = start_soon
        self.on_result_stream_end = on_result_stream_end
        self.request_timeout = request_timeout
        self.streams: set[str] = set()  # taskIds with a `tasks/result` pending
        caps = client.server_capabilities
        tasks = caps.tasks if caps is not None else None
        self.cancels = tasks is not None and tasks.cancel is not None
        self.lists = tasks is not None and tasks.list is not None

    async def submit(self, tool: str, arguments: dict[str, Any], *, meta: dict[str, Any],
                     task_support: str | None, timeout: float | None) -> tuple[str, dict[str, Any]]:
        """`tools/call`, task-augmented when the tool allows it (`required`, `optional`:
        "Tool-Level Negotiation"): `("task", snapshot)` or `("result", CallToolResult)`.
        Raises `MCPError`."""
        if task_support not in ("required", "optional"):
            res = await self.client.session.call_tool(tool, arguments, read_timeout_seconds=timeout,
                                                      meta=cast(types.RequestParamsMeta, meta))
            return "result", res.model_dump(by_alias=True, mode="json", exclude_none=True)
        raw = await self.lane.request("tools/call", {"name": tool, "arguments": arguments,
                                                     "task": {"ttl": REQUESTED_TTL_MS}, "_meta": meta},
                                      self.client.protocol_version, timeout=timeout)
        if isinstance(raw.get("task"), Mapping):
            return "task", normalize_task(raw["task"])
        return "result", raw  # a server that ran it at once after all

    async def get(self, task_id: str) -> dict[str, Any]:
        """The task as a SEP-2663 DetailedTask: `tasks/get`, the `tasks/result` payload once
        it ended, the waiting elicitations as `inputRequests` (none on `input_required`: a
        `tasks/result` is opened to carry them). Raises `MCPError` (-32602: unknown task)."""
        snap = normalize_task(await legacy_request(self.client, "tasks/get", {"taskId": task_id},
                                                timeout=self.request_timeout))
        asked = self.inbox.requests(task_id)
        status = snap["status"]
        if status in TERMINAL_PAYLOAD:
            await self._payload(task_id, snap)
        elif asked:
            # Asked and not yet answered: whatever the status says, the server waits on us.
            snap.update(status="input_required", inputRequests=asked)
        elif status == "input_required":
            snap["inputRequests"] = {}
            self.open_result_stream(task_id)
        return snap

    async def _payload(self, task_id: str, snap: dict[str, Any]) -> None:
        try:
            payload = await legacy_request(self.client, "tasks/result", {"taskId": task_id},
                                        timeout=self.request_timeout)
        except MCPError as exc:
            if exc.error.code == INVALID_PARAMS and snap["status"] == "completed":
                raise  # it ended and is gone already: the caller judges a forgotten task
            snap.update(status="failed", error=exc.error.model_dump(exclude_none=True))
            return
        if set(payload.get("_meta") or {}) <= {RELATED_TASK_META}:
            payload.pop("_meta", None)  # only the task's own id, which the row has anyway
        # SEP-2663 spells a tool error `completed` + `isError`; 2025-11-25 spells it `failed`.
        snap.update(status="completed", result=payload)

    def open_result_stream(self, task_id: str) -> None:
        """Keep one `tasks/result` pending for `task_id` (the server's channel for its
        input requests); its answer is read again through `get` when it returns."""
        if task_id in self.streams:
            return
        self.streams.add(task_id)

        async def stream() -> None:
            try:
                await legacy_request(self.client, "tasks/result", {"taskId": task_id}, timeout=None)
            except Exception as exc:  # noqa: BLE001 - the next `get` judges the task either way
                log.info("tasks/result %s ended: %s", task_id, exc)
            finally:
                self.streams.discard(task_id)
                self.on_result_stream_end(task_id)

        self.start_soon(stream)

    async def answer(self, task_id: str, responses: Mapping[str, dict[str, Any]]) -> None:
        """Answer the waiting elicitations (they return to the server as the answers of its
        `elicitation/create`). Raises `InputGone`."""
        self.inbox.answer(task_id, responses)

    async def cancel(self, task_id: str) -> dict[str, Any] | None:
        """`tasks/cancel`: the cancelled task as a snapshot. Raises `MCPError` (-32602: unknown
        or already terminal, "Task Cancellation")."""
        raw = await legacy_request(self.client, "tasks/cancel", {"taskId": task_id}, timeout=self.request_timeout)
        try:
            return normalize_task(raw)
        except ValueError:
            return None

    async def list_tasks(self) -> list[dict[str, Any]]:
        """Every task `tasks/list` names (all pages), normalized; [] without `tasks.list`."""
        if not self.lists:
            return []
        out: list[dict[str, Any]] = []
        cursor: str | None = None
        for _ in range(LIST_PAGES):
            raw = await legacy_request(self.client, "tasks/list", {"cursor": cursor} if cursor else {},
                                    timeout=self.request_timeout)
            for task in raw.get("tasks") or []:
                try:
                    out.append(normalize_task(task))
                except (ValueError, AttributeError):
                    continue
            cursor = raw.get("nextCursor")
            if not isinstance(cursor, str) or not cursor:
                break
        return out
