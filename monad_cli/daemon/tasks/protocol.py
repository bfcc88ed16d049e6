"""SEP-2663 wire shapes and the SDK client extension that declares them (supervisor side).

The SDK 2.3 has the hooks (`ClientExtension`, `ResultClaim`, `NotificationBinding`) but no
tasks implementation, so this module supplies the models (`CreateTaskResult`: the flat
`resultType: "task"` answer; `tasks/get`, `tasks/update`, `tasks/cancel` requests with
`name_param = "taskId"`, so the SDK sets `Mcp-Name` on HTTP, SEP-2663 "Streamable HTTP:
Routing Headers"; `DetailedTask`), `TasksExtension` (declared in the client capabilities,
claims `resultType: "task"` on `tools/call`, binds `notifications/tasks`),
`listen_for_tasks`, and `Sep2663Wire`, the interface the loops use for either shape
(`tasks.legacy.LegacyTaskWire` is the other).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any, Literal, cast

import anyio
import mcp_types as types
from mcp import Client, MCPError
from mcp.client import ClaimContext, ClientExtension, NotificationBinding, ResultClaim
from pydantic import BaseModel, ConfigDict, Field

from monad_cli.daemon.tasks.legacy import OwnRequests, normalize_task

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
# Our own _meta key for the invocation id: the spec defines none, so it lives under a
# prefix we own (spec "_meta" naming: reverse-DNS prefix, then a name).
INVOCATION_META_KEY = "dev.monad/invocationId"


class Task(types.Result):
    """The fields every task shape carries (SEP-2663 "Task"): times ISO 8601, extra keys kept,
    `status` a plain string (an unknown one is the fold's to ignore, not a reason to reject
    the answer)."""

    model_config = ConfigDict(extra="allow")  # merged with `Result`'s camelCase aliases
    task_id: str
    status: str
    status_message: str | None = None
    created_at: str | None = None
    last_updated_at: str | None = None
    ttl_ms: int | None = None
    poll_interval_ms: int | None = None


class CreateTaskResult(Task):
    """`tools/call` answered with a task handle (SEP-2663 "Task Creation")."""

    result_type: Literal["task"] = Field(alias="resultType")


class DetailedTask(Task):
    """A `tasks/get` answer or `notifications/tasks` params: the task and exactly one of
    `result`, `error`, `inputRequests` by status (SEP-2663 "Getting Tasks")."""

    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    input_requests: dict[str, Any] | None = None


class TaskNotificationParams(types.NotificationParams):
    model_config = ConfigDict(extra="allow")
    task_id: str
    status: str


class TaskIdParams(types.RequestParams):
    task_id: str


class UpdateTaskParams(types.RequestParams):
    task_id: str
    input_responses: dict[str, Any]


class GetTaskRequest(types.Request[TaskIdParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    name_param = "taskId"


class UpdateTaskRequest(types.Request[UpdateTaskParams, Literal["tasks/update"]]):
    method: Literal["tasks/update"] = "tasks/update"
    name_param = "taskId"


class CancelTaskRequest(types.Request[TaskIdParams, Literal["tasks/cancel"]]):
    method: Literal["tasks/cancel"] = "tasks/cancel"
    name_param = "taskId"


class AckResult(types.Result):
    """The acknowledgement of `tasks/update` and `tasks/cancel`, read for nothing: any keys
    taken (`EmptyResult` would refuse a server's odd `resultType`)."""

    model_config = ConfigDict(extra="allow")


def flatten(exc: BaseException) -> list[BaseException]:
    """The leaves of an exception group (the SDK's task groups wrap errors), or `[exc]`."""
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for sub in exc.exceptions for leaf in flatten(sub)]
    return [exc]


def error_object(exc: BaseException) -> dict[str, Any]:
    """A JSON-RPC error object (`code`, `message`, `data`?) for the row's `error`."""
    if isinstance(exc, MCPError):
        return exc.error.model_dump(exclude_none=True)
    return {"code": types.INTERNAL_ERROR, "message": str(exc) or type(exc).__name__}


def dump(model: BaseModel) -> dict[str, Any]:
    """Wire (camelCase) JSON of a model, without unset Nones."""
    return model.model_dump(by_alias=True, mode="json", exclude_none=True)


class TasksExtension(ClientExtension):
    """The client side of `io.modelcontextprotocol/tasks`, one instance per connection.
    `on_notification(params)` receives every `notifications/tasks` (wire JSON), and every
    2025-11-25 `notifications/tasks/status` in the same spelling; `resolve(created, ctx)`
    finishes a task returned to a plain `Client.call_tool` with its `CallToolResult`.
    """

    identifier = TASKS_EXTENSION

    def __init__(self, *, on_notification: Callable[[dict[str, Any]], Awaitable[None]],
                 resolve: Callable[[CreateTaskResult, ClaimContext], Awaitable[types.CallToolResult]]) -> None:
        self._on_notification = on_notification
        self._resolve = resolve

    def claims(self) -> Sequence[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=CreateTaskResult, resolve=self._resolve)]

    def notifications(self) -> Sequence[NotificationBinding[Any]]:
        async def handler(params: TaskNotificationParams) -> None:
            await self._on_notification(dump(params))

        async def legacy_handler(params: TaskNotificationParams) -> None:
            await self._on_notification(normalize_task(dump(params)))

        return [NotificationBinding(method="notifications/tasks", params_type=TaskNotificationParams,
                                    handler=handler),
                NotificationBinding(method="notifications/tasks/status", params_type=TaskNotificationParams,
                                    handler=legacy_handler)]


@asynccontextmanager
async def listen_for_tasks(lane: OwnRequests, version: str, task_ids: Sequence[str], *,
                           ack_timeout: float = 10.0) -> AsyncIterator[tuple[set[str], Callable[[], Awaitable[str]]]]:
    """One `subscriptions/listen` stream for `notifications/tasks` of `task_ids` on monad's
    own `lane` (the SDK's `listen()` has no public way to add `taskIds`, SEP-2663 "Task
    Status Notifications"). Yields `(honored, wait_end)`: the ids the server's ack agreed
    to, and a coroutine function returning `"graceful"` or `"lost"` when the stream ends
    (the notifications arrive through `TasksExtension`). Raises `MCPError` if refused,
    `TimeoutError` without an ack.
    """
    acked, ended = anyio.Event(), anyio.Event()
    honored: set[str] | None = None
    end: list[tuple[str, MCPError | None]] = []

    def on_ack(params: dict[str, Any]) -> None:
        nonlocal honored
        asked = params.get("notifications")
        honored = {str(t) for t in ((asked or {}).get("taskIds") or [])} if isinstance(asked, dict) else set()
        acked.set()

    async def drive() -> None:
        try:
            await lane.request("subscriptions/listen", {"notifications": {"taskIds": list(task_ids)}}, version,
                               on_ack=on_ack)
            end.append(("graceful", None))
        except MCPError as exc:
            end.append(("lost", exc))
        finally:
            ended.set()
            acked.set()

    async def wait_end() -> str:
        await ended.wait()
        return end[0][0] if end else "lost"

    async with anyio.create_task_group() as tg:
        tg.start_soon(drive)
        with anyio.fail_after(ack_timeout):
            await acked.wait()
        if honored is None:
            if end and end[0][1] is not None:
                raise end[0][1]
            raise TimeoutError("the listen stream ended before it was acknowledged")
        try:
            yield honored, wait_end
        finally:
            tg.cancel_scope.cancel()


class Sep2663Wire:
    """SEP-2663 tasks over one live connection: the server decides whether `tools/call`
    becomes a task, input goes back with `tasks/update`, `tasks/cancel` is always there."""

    kind = "sep-2663"
    cancels = True

    def __init__(self, client: Client, *, request_timeout: float) -> None:
        self.client = client
        self.request_timeout = request_timeout

    async def submit(self, tool: str, arguments: dict[str, Any], *, meta: dict[str, Any],
                     task_support: str | None, timeout: float | None) -> tuple[str, dict[str, Any]]:
        """`tools/call`: `("task", snapshot)`, `("result", CallToolResult)`, or `("input", {})`
        for an `input_required` answer before any task (not answered by monad)."""
        res = await self.client.session.call_tool(tool, arguments, read_timeout_seconds=timeout,
                                                  meta=cast(types.RequestParamsMeta, meta),  # an open map
                                                  allow_claimed=True)
        if isinstance(res, CreateTaskResult):
            return "task", dump(res)
        if isinstance(res, types.CallToolResult):
            return "result", dump(res)
        return "input", {}

    async def get(self, task_id: str) -> dict[str, Any]:
        """`tasks/get`: the DetailedTask as wire JSON. Raises `MCPError` (-32602 unknown id)."""
        return dump(await self.client.session.send_request(
            GetTaskRequest(params=TaskIdParams(task_id=task_id)), DetailedTask,
            request_read_timeout_seconds=self.request_timeout))

    async def answer(self, task_id: str, responses: dict[str, Any]) -> None:
        """`tasks/update {taskId, inputResponses}`; the ack is empty."""
        await self.client.session.send_request(
            UpdateTaskRequest(params=UpdateTaskParams(task_id=task_id, input_responses=responses)), AckResult,
            request_read_timeout_seconds=self.request_timeout)

    async def cancel(self, task_id: str) -> dict[str, Any] | None:
        """`tasks/cancel {taskId}` (idempotent); the next poll shows the ending."""
        await self.client.session.send_request(CancelTaskRequest(params=TaskIdParams(task_id=task_id)), AckResult,
                                               request_read_timeout_seconds=self.request_timeout)
        return None

    async def list_tasks(self) -> list[dict[str, Any]]:
        return []  # SEP-2663 has no tasks/list
