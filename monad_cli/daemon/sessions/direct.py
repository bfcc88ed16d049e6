"""A plain tools/call, resources/read or prompts/get on a stdio session, written and read as
JSON-RPC lines past the SDK's client machinery (the upstream half of the gateway's direct
lane, `gateway/direct.py`).

The SDK's `Client.call_tool` costs ~0.36 ms of CPU per call on its own (its request model,
the dispatcher's pending-response stream, request clock and cancel scopes, the response's
hop through a memory stream, the result's validation; bench/README.md, issue 15); the same
request as a line costs ~0.07 ms. This lane writes the request itself, on the session's own
stdin writer (so the transport's bookkeeping, `Exchange`, knows it), takes its answer out of
the stdout reader before the SDK sees it (after the transport's repairs, size limit and
stray-line handling), and checks the result with the SDK's own per-version validation.

A read or a get costs the SDK the same machinery, so the lane takes them too (`read`,
`get`; one request path, `request`, for all three methods).

The SDK's session stays the reference, and everything else goes to it (`DirectLane.call`,
`read` and `get` return None and the caller sends the request through the SDK): a call with
progress or a request timeout, a tool with an `outputSchema` (the SDK checks structured
content), a session whose era stamp has not been seen yet, and any answer that is not a
complete result of its method (`CallToolResult`, `ReadResourceResult`, `GetPromptResult`):
an `input_required` round is sent again through the SDK, which runs the rounds (a
2026-07-28 server asks before it acts), and any other shape is refused, never sent twice; a
tool that may answer with a task stays with the SDK's task support. A 2026-07-28 request
carries the envelope the SDK's stamp last wrote, with the client capabilities of this
request's caller (sessions/stamp.py), never those of the request seen last. Ids come from
the SDK's own allocator, so the server sees one sequence. With telemetry on, the current
span's W3C trace context goes into the request's `_meta` (SEP-414), as the SDK's dispatcher
puts it there on its path. A cancelled request tells the server (notifications/cancelled);
the session's end fails every request in flight `-32000 Connection closed`, as the SDK does.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import anyio
import mcp_types as types
from mcp.shared.exceptions import MCPError
from mcp_types import (
    CONNECTION_CLOSED,
    PROTOCOL_VERSION_META_KEY,
    JSONRPCError,
    JSONRPCRequest,
    JSONRPCResponse,
    methods,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from monad_cli.daemon.sessions.stamp import AgentStamp
from monad_cli.daemon.telemetry import TELEMETRY

log = logging.getLogger("monad.transport")

CALL = "tools/call"
READ = "resources/read"
GET = "prompts/get"
# Each method's result model and the spec section that defines it.
_RESULTS: dict[str, tuple[Any, str]] = {
    CALL: (types.CallToolResult, "server/tools"),
    READ: (types.ReadResourceResult, "server/resources"),
    GET: (types.GetPromptResult, "server/prompts"),
}
_ENVELOPE_PREFIX = "io.modelcontextprotocol/"
_CANCEL_WRITE_S = 1.0


class _Waiter:
    __slots__ = ("answer", "event")

    def __init__(self) -> None:
        self.event = anyio.Event()
        self.answer: JSONRPCResponse | JSONRPCError | None = None


class DirectLane:
    """One stdio connection's lane. `send(line, request_id, method)` writes a request line
    and `cancel(line, request_id)` the cancellation of one (the transport's
    `StdinWriter.send_line`, which records both in its `Exchange`)."""

    def __init__(self, send: Callable[[bytes, Any, str], Awaitable[None]],
                 cancel: Callable[[bytes, Any], Awaitable[None]]) -> None:
        self.send = send
        self.cancel = cancel
        self.allocate: Callable[[], int] | None = None  # the SDK dispatcher's id allocator (`attach`)
        self.session: Any = None  # the SDK's session (`attach`): its stamp says whose capabilities
        self.stamp: dict[str, Any] | None = None  # the 2026-07-28 envelope of the SDK's requests
        self.pending: dict[str, _Waiter] = {}
        self.closed = False
        self.taken: dict[str, int] = {}  # requests the lane carried, by method (logged at the end)
        self.extended = False  # the server declares extensions: their result shapes are the SDK's

    def attach(self, client: Any) -> None:
        """Share the SDK session's id sequence (its dispatcher's allocator); without one the
        lane stays off. A server that declares extensions (the tasks extension answers a call
        with a task, which the SDK's claim follows) keeps every call on the SDK's session."""
        dispatcher = getattr(getattr(client, "session", None), "_dispatcher", None)
        self.session = getattr(client, "session", None)
        allocate = getattr(dispatcher, "_allocate_id", None)
        self.allocate = allocate if callable(allocate) else None
        caps = getattr(client, "server_capabilities", None)
        self.extended = bool(getattr(caps, "extensions", None))

    # -- the transport's side ----------------------------------------------------------
    def sent(self, message: Any) -> None:
        """An SDK message on its way to the server: a request's envelope is the stamp ours carry."""
        if isinstance(message, JSONRPCRequest) and isinstance(message.params, dict):
            meta = message.params.get("_meta")
            if isinstance(meta, dict) and PROTOCOL_VERSION_META_KEY in meta:
                self.stamp = {k: v for k, v in meta.items() if k.startswith(_ENVELOPE_PREFIX)}

    def resolve(self, message: Any) -> bool:
        """True: `message` answers one of the lane's requests (the SDK never sees it)."""
        if not self.pending or not isinstance(message, JSONRPCResponse | JSONRPCError) or message.id is None:
            return False
        waiter = self.pending.pop(str(message.id), None)
        if waiter is None:
            return False
        waiter.answer = message
        waiter.event.set()
        return True

    def close(self) -> None:
        """The connection ended: every call in flight fails as the SDK's would."""
        self.closed = True
        for key, waiter in list(self.pending.items()):
            waiter.answer = JSONRPCError(jsonrpc="2.0", id=key, error=types.ErrorData(
                code=CONNECTION_CLOSED, message="Connection closed"))
            waiter.event.set()
        self.pending.clear()

    # -- one request -----------------------------------------------------------------------
    async def call(self, tool: str, arguments: dict[str, Any] | None, version: str | None,
                   tools: Sequence[types.Tool], *, span: Any = None) -> Any:
        """The call's `CallToolResult`, or None: not one for this lane (send it through the
        SDK). `tools` is the session's listing: the tool must be in it without an
        `outputSchema`. `span`: the call's CLIENT span (telemetry on; None: the current one),
        whose context goes upstream. Raises MCPError for an error answer, pydantic.ValidationError for a
        result that does not conform to `version` (as the SDK does)."""
        if not any(t.name == tool and t.output_schema is None and not _may_be_a_task(t) for t in tools):
            # Unlisted (the SDK lists again), structured content the SDK checks, or a tool that
            # may answer with a task (the SDK's task support follows it).
            return None
        params: dict[str, Any] = {"name": tool}
        if arguments is not None:
            params["arguments"] = arguments
        return await self.request(CALL, params, version, span=span)

    async def read(self, uri: str, version: str | None) -> Any:
        """resources/read of `uri` (MCP server/resources): its `ReadResourceResult`, or None
        (send it through the SDK); raises as `call` does."""
        return await self.request(READ, {"uri": uri}, version)

    async def get(self, name: str, arguments: dict[str, str] | None, version: str | None) -> Any:
        """prompts/get of `name` with `arguments` (MCP server/prompts): its `GetPromptResult`,
        or None (send it through the SDK); raises as `call` does. Arguments that are not all
        strings are the SDK's to refuse."""
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            if not all(isinstance(v, str) for v in arguments.values()):
                return None
            params["arguments"] = arguments
        return await self.request(GET, params, version)

    async def request(self, method: str, params: dict[str, Any], version: str | None, *,
                      span: Any = None) -> Any:
        """`method` (CALL, READ or GET) with `params` (the wire shape, no `_meta`) on the
        lane (`span`: its CLIENT span, telemetry on; None: the current one): its result
        model, or None when the lane cannot take it (closed, not attached, the era not
        known, a server with extensions, no 2026-07-28 stamp seen yet, params that are not
        JSON) or when a 2026-07-28 server answered `input_required` (the SDK
        sends it again and runs the rounds). Raises MCPError for an error answer or the
        connection's end, pydantic.ValidationError or ValueError for a result of a shape
        `version` does not define."""
        if self.closed or self.allocate is None or version is None or self.extended or method not in _RESULTS:
            return None
        if version in MODERN_PROTOCOL_VERSIONS:
            if self.stamp is None:
                return None
            params["_meta"] = meta = dict(self.stamp)
            # The stamp seen last may carry another caller's capabilities: this call's own
            # (sessions/stamp.py), as the SDK's stamp would put them.
            if isinstance(agent := getattr(self.session, "_stamp", None), AgentStamp):
                agent.restamp(meta)
        request_id = self.allocate()
        key = str(request_id)
        if (recorder := TELEMETRY.recorder) is not None:
            # The caller's CLIENT span goes into `_meta` (SEP-414), as the SDK's dispatcher does.
            meta = params.setdefault("_meta", {})
            recorder.inject(meta, span)
            if not meta:
                del params["_meta"]
            recorder.request_id(request_id, span)
        try:
            line = json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params},
                              ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode() + b"\n"
        except (TypeError, ValueError):
            return None  # not JSON as Python holds it (NaN, a surrogate): the SDK's to refuse
        waiter = self.pending[key] = _Waiter()
        self.taken[method] = self.taken.get(method, 0) + 1
        try:
            try:
                await self.send(line, request_id, method)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):  # the server's stdin is gone
                raise MCPError(code=CONNECTION_CLOSED, message="Connection closed") from None
            await waiter.event.wait()
        except anyio.get_cancelled_exc_class():
            if self.pending.pop(key, None) is not None and not self.closed:  # the server still works on it
                body = {"jsonrpc": "2.0", "method": "notifications/cancelled",
                        "params": {"requestId": request_id,
                                   "reason": "the caller cancelled the " + ("call" if method == CALL else "request")}}
                with (anyio.move_on_after(_CANCEL_WRITE_S, shield=True),
                      contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError)):
                    await self.cancel(json.dumps(body, separators=(",", ":")).encode() + b"\n", request_id)
            raise
        except BaseException:
            self.pending.pop(key, None)
            raise
        answer = waiter.answer
        if isinstance(answer, JSONRPCError):
            raise MCPError.from_error_data(answer.error)
        assert answer is not None
        return self._result(method, answer.result, version)

    @staticmethod
    def _result(method: str, raw: dict[str, Any], version: str) -> Any:
        """The answer as `method`'s result model; None for an `input_required` round (2026-07-28).

        Before 2026-07-28 a `resultType` means nothing: the version's own surface drops it
        and every later field, as the SDK does. At 2026-07-28, `input_required` is the one
        shape handed back: the caller sends the call again through the SDK, which runs the
        rounds; a server asks before it acts and keeps what it needs in `requestState`
        (MCP 2026-07-28, "Multi Round-Trip Requests"), so the first ask is only asked again.
        Any other shape is refused: it is never sent twice. A negative `ttlMs` (2026-07-28
        caching) is taken as 0, as the SDK's `send_request` does."""
        model, section = _RESULTS[method]
        if version not in MODERN_PROTOCOL_VERSIONS:
            with contextlib.suppress(KeyError):  # a version the surface does not list: the SDK skips it too
                raw = methods.serialize_server_result(method, version, raw)
            return model.model_validate(raw, by_name=False)
        result_type = raw.get("resultType", "complete")
        if result_type == "input_required":
            return None
        if result_type != "complete":
            raise ValueError(f"the server answered a `{result_type}` result, which is not a {method} result "
                             f"monad takes (MCP 2026-07-28 {section})")
        ttl = raw.get("ttlMs")
        if isinstance(ttl, int | float) and not isinstance(ttl, bool) and ttl < 0:
            raw["ttlMs"] = 0
        with contextlib.suppress(KeyError):
            methods.validate_server_result(method, version, raw)
        return model.model_validate(raw, by_name=False)


def _may_be_a_task(tool: types.Tool) -> bool:
    """The tool's server may answer a call with a task (2025-11-25 "Tool-Level Negotiation")."""
    execution = tool.execution
    return execution is not None and execution.task_support in ("optional", "required")


__all__ = ["DirectLane"]
