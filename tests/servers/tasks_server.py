"""A SEP-2663 (`io.modelcontextprotocol/tasks`) test server on the SDK's extension API.

    python tasks_server.py [--http PORT] [--path /mcp] [--poll-ms MS] [--ttl-ms MS]
                           [--no-notify] [--log FILE] [--name NAME]

`TasksServerExtension` (an `Extension`) intercepts `tools/call` of the task tools when the
request declares the extension and answers `resultType: "task"`; `tasks/get`,
`tasks/update`, `tasks/cancel` are `MethodBinding`s. `subscriptions/listen` is replaced
(the SDK's handler knows no `taskIds`) so `notifications/tasks` go to listeners of those
ids, unless `--no-notify` (then the ack honors no task ids and nothing is pushed).

Task tools:
- `slow(seconds, label)`: says `sleeping <seconds> s` (statusMessage), sleeps, completes
  with text `slept <seconds> <label>`; annotated `idempotentHint: true`, since a call resent
  with the same invocation id joins its task instead of running again;
- `ask(unsafe, mode)`: asks for a form {name: string, age: integer, ratio: number, subscribe:
  boolean} (with `unsafe`, the form also names `__proto__`), or with `mode=url` asks the
  person to open a sign-in URL (URL-mode elicitation; `url` overrides it); completes with
  the answer as JSON text;
- `fail(kind, message)`: `kind=error` → task `failed` with a JSON-RPC error; `kind=tool`
  → `completed` with `isError: true`.
`quick(text)` is never a task. `--ack JSON` is the answer of `tasks/update` and `tasks/cancel`
(default `{"resultType": "complete"}`). With `--log`, every run, dedupe, get, update and cancel is
a JSON line, so tests can count them (one run per invocation id).
"""

from __future__ import annotations

import gc

if __name__ == "__main__":  # a server process: no cyclic collection while the SDK is imported
    gc.disable()

import argparse
import datetime
import json
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from typing import Any, Literal

import anyio
import mcp_types as types
from mcp.server import MCPServer
from mcp.server.extension import Extension, MethodBinding
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import SUBSCRIPTION_ID_META_KEY

EXT = "io.modelcontextprotocol/tasks"
INVOCATION = "dev.monad/invocationId"
TASK_TOOLS = {"slow", "ask", "fail"}
# The fixture names the official conformance `tasks-*` server scenarios call, mapped to ours.
ALIASES: dict[str, tuple[str, dict[str, Any]]] = {
    "slow_compute": ("slow", {}),
    "failing_job": ("fail", {"kind": "tool", "message": "failing_job failed"}),
    "protocol_error_job": ("fail", {"kind": "error", "message": "protocol_error_job failed"}),
}
CAPS_META = "io.modelcontextprotocol/clientCapabilities"


def now_iso() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat().replace("+00:00", "Z")


class TaskIdParams(types.RequestParams):
    task_id: str


class UpdateParams(types.RequestParams):
    task_id: str
    input_responses: dict[str, Any]


class TaskNotification(types.Notification[dict[str, Any], Literal["notifications/tasks"]]):
    method: Literal["notifications/tasks"] = "notifications/tasks"


class ServerTask:
    def __init__(self, tool: str, args: dict[str, Any], invocation: str | None, cfg: argparse.Namespace) -> None:
        self.task_id = uuid.uuid4().hex + uuid.uuid4().hex  # unguessable (ext-tasks "Security")
        self.tool, self.args, self.invocation = tool, args, invocation
        self.status = "working"
        self.status_message: str | None = None
        self.created = self.updated = now_iso()
        self.ttl_ms, self.poll_ms = cfg.ttl_ms, cfg.poll_ms
        self.result: dict[str, Any] | None = None
        self.error: dict[str, Any] | None = None
        self.input_requests: dict[str, Any] = {}
        self.responses: dict[str, Any] = {}
        self.answered = anyio.Event()
        self.scope = anyio.CancelScope()

    def detailed(self) -> dict[str, Any]:
        d: dict[str, Any] = {"taskId": self.task_id, "status": self.status, "createdAt": self.created,
                             "lastUpdatedAt": self.updated, "ttlMs": self.ttl_ms, "pollIntervalMs": self.poll_ms}
        if self.status_message:
            d["statusMessage"] = self.status_message
        if self.status == "completed":
            d["result"] = self.result
        elif self.status == "failed":
            d["error"] = self.error
        elif self.status == "input_required":
            d["inputRequests"] = self.input_requests
        return d


class State:
    def __init__(self, cfg: argparse.Namespace) -> None:
        self.cfg = cfg
        self.tasks: dict[str, ServerTask] = {}
        self.by_invocation: dict[str, ServerTask] = {}
        self.listeners: list[tuple[set[str], Any]] = []
        self.tg: anyio.abc.TaskGroup | None = None

    def log(self, event: str, **fields: Any) -> None:
        if self.cfg.log:
            with open(self.cfg.log, "a") as f:
                f.write(json.dumps({"event": event, **fields}) + "\n")

    def set_status(self, t: ServerTask, status: str, **fields: Any) -> None:
        if t.status in ("completed", "failed", "cancelled"):
            return
        t.status = status
        for k, v in fields.items():
            setattr(t, k, v)
        t.updated = now_iso()
        snap = t.detailed()
        for ids, send in list(self.listeners):
            if t.task_id in ids:
                with suppress(anyio.WouldBlock, anyio.ClosedResourceError):
                    send.send_nowait(snap)

    def get(self, task_id: str) -> ServerTask:
        t = self.tasks.get(task_id)
        if t is None:
            raise MCPError(types.INVALID_PARAMS, f"Failed to retrieve task: Task not found ({task_id[:8]})")
        return t


def text_result(text: str, *, is_error: bool = False) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": is_error}


FORM = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"},
                                        "ratio": {"type": "number"}, "subscribe": {"type": "boolean"}},
        "required": ["name", "age"]}


async def work(state: State, t: ServerTask) -> None:
    with t.scope:
        if t.tool == "slow":
            state.set_status(t, "working", status_message=f"sleeping {t.args.get('seconds', 1)} s")
            await anyio.sleep(float(t.args.get("seconds", 1)))
            state.set_status(t, "completed", result=text_result(f"slept {t.args.get('seconds', 1)} "
                                                                f"{t.args.get('label', '')}".strip()))
        elif t.tool == "ask":
            schema = json.loads(json.dumps(FORM))
            if t.args.get("unsafe"):
                schema["properties"]["__proto__"] = {"type": "string"}
            key = "profile"
            request = {"method": "elicitation/create",
                       "params": {"mode": "form", "message": "Tell me about you", "requestedSchema": schema}}
            if t.args.get("mode") == "url":
                key, eid = "signin", uuid.uuid4().hex
                url = t.args.get("url") or f"https://calendar.example.com/connect?elicitationId={eid}"
                request = {"method": "elicitation/create",
                           "params": {"mode": "url", "message": "Sign in to the example calendar",
                                      "url": url, "elicitationId": eid}}
            state.set_status(t, "input_required", input_requests={key: request},
                             status_message=f"waiting for your {key}")
            await t.answered.wait()
            answer = t.responses[key]
            state.set_status(t, "working", input_requests={}, status_message=None)
            await anyio.sleep(0.05)
            state.set_status(t, "completed", result=text_result(json.dumps(answer, sort_keys=True)))
        elif t.tool == "fail":
            await anyio.sleep(0.2)
            message = str(t.args.get("message", "it broke"))
            if t.args.get("kind") == "tool":
                state.set_status(t, "completed", result=text_result(message, is_error=True))
            else:
                state.set_status(t, "failed", error={"code": types.INTERNAL_ERROR, "message": message},
                                 status_message=f"Tool execution failed: {message}")


def declared(ctx: Any, meta: dict[str, Any] | None = None) -> bool:
    """The client declared the extension: for the session, or on this request's `_meta`."""
    caps = ctx.session.client_capabilities
    if caps and caps.extensions and EXT in caps.extensions:
        return True
    per_request = (meta or {}).get(CAPS_META) or {}
    return EXT in (per_request.get("extensions") or {})


def require_declared(ctx: Any, meta: dict[str, Any] | None) -> None:
    if not declared(ctx, meta):
        raise MCPError(-32021, f"Client did not declare required extension {EXT!r}",
                       data={"requiredCapabilities": {"extensions": {EXT: {}}}})


class TasksServerExtension(Extension):
    identifier = EXT

    def __init__(self, state: State) -> None:
        self.state = state

    def methods(self) -> list[MethodBinding]:
        return [MethodBinding("tasks/get", TaskIdParams, self.get),
                MethodBinding("tasks/update", UpdateParams, self.update),
                MethodBinding("tasks/cancel", TaskIdParams, self.cancel)]

    async def intercept_tool_call(self, params: types.CallToolRequestParams, ctx: Any, call_next: Any) -> Any:
        name, preset = ALIASES.get(params.name, (params.name, {}))
        if name not in TASK_TOOLS or not declared(ctx, params.meta):
            return await call_next(ctx)
        st = self.state
        invocation = (params.meta or {}).get(INVOCATION)
        if invocation and invocation in st.by_invocation:
            t = st.by_invocation[invocation]
            st.log("dedupe", invocationId=invocation, taskId=t.task_id)
        else:
            t = ServerTask(name, {**preset, **(params.arguments or {})}, invocation, st.cfg)
            st.tasks[t.task_id] = t
            if invocation:
                st.by_invocation[invocation] = t
            st.log("run", invocationId=invocation, taskId=t.task_id, tool=t.tool, args=t.args)
            assert st.tg is not None
            st.tg.start_soon(work, st, t)
        snap = t.detailed()
        for k in ("result", "error", "inputRequests"):
            snap.pop(k, None)
        return {"resultType": "task", **snap}

    async def get(self, ctx: Any, params: TaskIdParams) -> dict[str, Any]:
        require_declared(ctx, params.meta)
        t = self.state.get(params.task_id)
        self.state.log("get", taskId=t.task_id)
        return {"resultType": "complete", **t.detailed()}

    async def update(self, ctx: Any, params: UpdateParams) -> dict[str, Any]:
        require_declared(ctx, params.meta)
        t = self.state.get(params.task_id)
        self.state.log("update", taskId=t.task_id, inputResponses=params.input_responses)
        for key, value in params.input_responses.items():
            if key in t.input_requests and key not in t.responses:  # ignore unknown keys (spec)
                t.responses[key] = value
        if t.input_requests and all(k in t.responses for k in t.input_requests):
            t.answered.set()
        return dict(self.state.cfg.ack)

    async def cancel(self, ctx: Any, params: TaskIdParams) -> dict[str, Any]:
        require_declared(ctx, params.meta)
        t = self.state.get(params.task_id)
        self.state.log("cancel", taskId=t.task_id)
        if t.status not in ("completed", "failed", "cancelled"):
            t.scope.cancel()
            self.state.set_status(t, "cancelled", status_message="cancelled at the client's request")
        return dict(self.state.cfg.ack)


def listen_handler(state: State) -> Any:
    async def listen(ctx: Any, params: types.SubscriptionsListenRequestParams) -> types.SubscriptionsListenResult:
        sid = ctx.request_id
        extra = params.notifications.model_extra or {}
        wanted = [] if state.cfg.no_notify else [t for t in extra.get("taskIds") or [] if t in state.tasks]
        honored = types.SubscriptionFilter(taskIds=wanted) if wanted else types.SubscriptionFilter()
        meta = {SUBSCRIPTION_ID_META_KEY: sid}
        send, recv = anyio.create_memory_object_stream[dict[str, Any]](1000)
        entry = (set(wanted), send)
        state.listeners.append(entry)
        state.log("listen", taskIds=wanted)
        try:
            await ctx.session.send_notification(
                types.SubscriptionsAcknowledgedNotification(
                    params=types.SubscriptionsAcknowledgedNotificationParams(notifications=honored, _meta=meta)),
                related_request_id=sid)
            async for snap in recv:
                await ctx.session.send_notification(TaskNotification(params={**snap, "_meta": meta}),
                                                    related_request_id=sid)
        finally:
            state.listeners.remove(entry)
            send.close()
            recv.close()
        return types.SubscriptionsListenResult(_meta=meta)

    return listen


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--http", type=int, default=None)
    ap.add_argument("--path", default="/mcp")
    ap.add_argument("--name", default="tasks-server")
    ap.add_argument("--poll-ms", type=int, default=200)
    ap.add_argument("--ttl-ms", type=int, default=600_000)
    ap.add_argument("--no-notify", action="store_true")
    ap.add_argument("--log", default=None)
    ap.add_argument("--ack", type=json.loads, default={"resultType": "complete"},
                    help="the JSON answer of tasks/update and tasks/cancel (a malformed one, for tests)")
    cfg = ap.parse_args()
    state = State(cfg)

    @asynccontextmanager
    async def lifespan(_server: Any) -> AsyncIterator[dict[str, Any]]:
        async with anyio.create_task_group() as tg:
            state.tg = tg  # task work outlives the tools/call that created it
            yield {}
            tg.cancel_scope.cancel()

    mcp = MCPServer(cfg.name, extensions=[TasksServerExtension(state)], lifespan=lifespan)

    async def slow(seconds: float = 1.0, label: str = "") -> str:
        """Sleep `seconds`, then answer (a task when the client declares the extension)."""
        await anyio.sleep(seconds)
        return f"slept {seconds} {label}".strip()

    def ask(unsafe: bool = False, mode: str = "form", url: str = "") -> str:
        """Ask for a profile form, or (mode=url) to open a sign-in URL (only as a task)."""
        raise ValueError("ask needs the tasks extension")

    def fail(kind: str = "error", message: str = "it broke") -> str:
        """Fail: kind=error → a failed task; kind=tool → a tool error."""
        raise ValueError(message)

    def quick(text: str) -> str:
        """Answer at once, never as a task."""
        return text

    async def slow_compute(seconds: float = 1.0, label: str = "") -> str:
        """Conformance fixture: `slow` under the name the scenarios call."""
        return await slow(seconds, label)

    def failing_job() -> str:
        """Conformance fixture: a tool error (a completed task with isError)."""
        raise ValueError("failing_job failed")

    def protocol_error_job() -> str:
        """Conformance fixture: a protocol error (a failed task)."""
        raise ValueError("protocol_error_job failed")

    # `slow` deduplicates on the invocation id (a resent call joins its task), so sending it
    # again is harmless: it says so (MCP spec, server/tools "Tool Annotations").
    resend_safe = types.ToolAnnotations(idempotent_hint=True)
    for fn in (slow, ask, fail, quick, slow_compute, failing_job, protocol_error_job):
        mcp.add_tool(fn, structured_output=False,
                     annotations=resend_safe if fn in (slow, slow_compute) else None)
    mcp._lowlevel_server.add_request_handler("subscriptions/listen", types.SubscriptionsListenRequestParams,
                                             listen_handler(state))
    if cfg.http is not None:
        mcp.run("streamable-http", host="127.0.0.1", port=cfg.http, streamable_http_path=cfg.path)
    else:
        mcp.run()


if __name__ == "__main__":
    # The SDK's import made ~1e5 lasting objects (pydantic models): kept out of every later
    # collection (`gc.freeze`), ~0.3 s of CPU less at each of hundreds of server starts a run.
    gc.freeze()
    gc.enable()
    main()
