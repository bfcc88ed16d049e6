"""monad's own requests on one server connection, beside the SDK's session (`DirectLane`).

The transport is monad's own (the SDK's public `Transport` seam), so monad can write a
request on it and take the answer out before the SDK's session sees it (`Exchange.received`).
Its ids are `monad-N`: strings never meeting the integer ids the SDK's dispatcher mints (as
its `CallOptions.request_id` advises). Two kinds of request go this way:

- a plain `tools/call` on a stdio session (`call`), what an agent sends over and over: the
  SDK's `Client.call_tool` costs ~0.36 ms of CPU a call (request model, pending-response
  stream, request clock, cancel scopes, a memory-stream hop, validation; bench/README.md,
  issue 15), a line ~0.07 ms. The answer is checked with the SDK's per-version validation
  (`mcp_types.methods`). The SDK keeps the rest: progress or a request timeout, a tool with
  an `outputSchema` or that may answer with a task, a server declaring extensions, a
  2026-07-28 session whose envelope is not seen yet; an `input_required` answer is sent
  again through the SDK (it runs the rounds; a 2026-07-28 server asks before it acts), any
  other non-complete shape is refused, never sent twice;
- requests the SDK's session has no public call for (`request`, any transport): a
  2025-11-25 task-augmented `tools/call` (the session refuses its `CreateTaskResult`) and a
  `subscriptions/listen` with the tasks extension's `taskIds` (daemon/tasks/ sends them).

A 2026-07-28 request carries the SDK's last envelope with its caller's capabilities
(sessions/stamp.py) and, on HTTP, the SDK's headers (`Mcp-Protocol-Version`, `Mcp-Method`,
`Mcp-Name`). A cancelled request tells the server (notifications/cancelled); the connection's
end fails every request in flight `-32000 Connection closed`, as the SDK does.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, cast

import anyio
import mcp_types as types
from mcp.shared.exceptions import MCPError
from mcp.shared.inbound import MCP_METHOD_HEADER, MCP_NAME_HEADER, MCP_PROTOCOL_VERSION_HEADER, encode_header_value
from mcp.shared.subscriptions import SUBSCRIPTION_ID_META_KEY
from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT, JSONRPCError, JSONRPCNotification, JSONRPCResponse, methods
from mcp_types.version import KNOWN_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from pydantic import TypeAdapter

from monad_cli.daemon.sessions.stamp import Envelope

if TYPE_CHECKING:
    from monad_cli.daemon.trust.call import ToolCall

log = logging.getLogger("monad.transport")

CALL = "tools/call"
ACKNOWLEDGED = "notifications/subscriptions/acknowledged"
CANCELLED = "notifications/cancelled"
_CANCEL_WRITE_S = 1.0


class Wire(Protocol):
    """How the lane writes on its connection's transport: `request(body, headers)` a
    request (wire JSON; `headers`: HTTP headers, ignored elsewhere), `notify(body)` a
    notification (a cancellation). A body Python's JSON cannot hold (NaN, a surrogate)
    raises ValueError or TypeError before anything is written."""

    async def request(self, body: dict[str, Any], headers: dict[str, str]) -> None: ...

    async def notify(self, body: dict[str, Any]) -> None: ...


class _Waiter:
    __slots__ = ("answer", "event", "on_ack")

    def __init__(self, on_ack: Callable[[dict[str, Any]], None] | None) -> None:
        self.event = asyncio.Event()  # asyncio's: anyio's wraps one, and is made through its backend lookup
        self.answer: JSONRPCResponse | JSONRPCError | None = None
        self.on_ack = on_ack


class DirectLane:
    """One connection's own requests (see the module docstring). `wire` writes them;
    `envelope` is the connection's (the SDK's last stamp); `fast`: plain tools/calls take
    the lane (a stdio connection)."""

    def __init__(self, wire: Wire, envelope: Envelope, *, fast: bool = False) -> None:
        self.wire = wire
        self.envelope = envelope
        self.fast = fast
        self.pending: dict[str, _Waiter] = {}
        self.closed = False
        self.attached = False  # the session is up (`attach`)
        self.extended = False  # the server declares extensions: their result shapes are the SDK's
        self.taken: dict[str, int] = {}  # requests the lane carried, by method (logged at the end)
        self._ids = itertools.count(1)

    def attach(self, client: Any) -> None:
        """The SDK's session is up: plain calls may take the lane, unless the server declares
        extensions (the tasks extension answers a call with a task, which the SDK's claim
        follows)."""
        self.attached = True
        caps = getattr(client, "server_capabilities", None)
        self.extended = bool(getattr(caps, "extensions", None))

    # -- what the server sends (`Exchange.received`) -----------------------------------
    def resolve(self, message: Any) -> bool:
        """True: `message` is the lane's (an answer to one of its requests, the
        acknowledgement of its listen stream, the server's cancellation of one of its
        requests) and the SDK never sees it."""
        if not self.pending:
            return False
        if isinstance(message, JSONRPCResponse | JSONRPCError) and message.id is not None:
            return self._answer(str(message.id), message)
        if isinstance(message, JSONRPCNotification) and message.method == ACKNOWLEDGED:
            meta = (message.params or {}).get("_meta")
            waiter = self.pending.get(str(meta.get(SUBSCRIPTION_ID_META_KEY))) if isinstance(meta, dict) else None
            if waiter is None or waiter.on_ack is None:
                return False
            waiter.on_ack(message.params or {})
            return True
        if isinstance(message, JSONRPCNotification) and message.method == CANCELLED:
            # The server gave up one of the lane's requests (a listen stream it tears down).
            key = str((message.params or {}).get("requestId"))
            return self._answer(key, JSONRPCError(jsonrpc="2.0", id=key, error=types.ErrorData(
                code=types.INTERNAL_ERROR, message="the server cancelled the request")))
        return False

    def _answer(self, key: str, answer: JSONRPCResponse | JSONRPCError) -> bool:
        """Wake the request `key` waits in with `answer`; False: no such request waits."""
        waiter = self.pending.pop(key, None)
        if waiter is not None:
            waiter.answer = answer
            waiter.event.set()
        return waiter is not None

    def close(self) -> None:
        """The connection ended: every request in flight fails as the SDK's would."""
        self.closed = True
        for key in list(self.pending):
            self._answer(key, JSONRPCError(jsonrpc="2.0", id=key, error=types.ErrorData(
                code=CONNECTION_CLOSED, message="Connection closed")))

    # -- a plain tools/call ----------------------------------------------------------------
    async def call(self, call: ToolCall, version: str | None, tools: Sequence[types.Tool]) -> Any:
        """`call`'s `CallToolResult` (`call.request_id`: the id it went under), or None: not
        for this lane (the SDK sends it). The tool must be in `tools` (the session's listing)
        without an `outputSchema`. `_meta`: `call.meta` (trace context), at 2026-07-28 with
        the envelope for `call.capabilities`. Raises MCPError for an error answer,
        pydantic.ValidationError for a result not conforming to `version` (as the SDK)."""
        assert call.tool is not None
        name = call.tool.name
        if (not self.fast or self.closed or not self.attached or self.extended or version is None
                or not any(t.name == name and t.output_schema is None and not _may_be_a_task(t) for t in tools)):
            # Unlisted (the SDK lists again), structured content the SDK checks, or a tool that
            # may answer with a task (the SDK's task support follows it).
            return None
        meta = dict(call.meta)
        if version in MODERN_PROTOCOL_VERSIONS:
            envelope = self.envelope.for_request(call.capabilities)
            if envelope is None:
                return None
            meta.update(envelope)
        params: dict[str, Any] = {"name": name}
        if call.arguments is not None:
            params["arguments"] = call.arguments
        if meta:
            params["_meta"] = meta
        try:
            raw = await self._send(CALL, params, version, on_id=lambda request_id: setattr(call, "request_id",
                                                                                         request_id))
        except _NotJSON:
            return None  # not JSON as Python holds it (NaN, a surrogate): the SDK's to refuse
        return _call_result(raw, version)

    # -- a request the SDK's session has no public call for ------------------------------
    async def request(self, method: str, params: dict[str, Any], version: str, *,
                      timeout: float | None = None,
                      on_ack: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
        """`method` with `params` (wire shape; at 2026-07-28 the envelope is added, with
        monad's own capabilities): the answer's `result`, unvalidated. `timeout` (s): then
        the server is told and MCPError(-32001) raised; `on_ack(params)`: called with the
        params of the `notifications/subscriptions/acknowledged` the server sends for this
        request (a `subscriptions/listen`). Raises MCPError for an error answer or the
        connection's end."""
        if self.closed:
            raise MCPError(code=CONNECTION_CLOSED, message="Connection closed")
        if version in MODERN_PROTOCOL_VERSIONS and (envelope := self.envelope.for_request(None)) is not None:
            params = {**params, "_meta": {**params.get("_meta", {}), **envelope}}
        try:
            with anyio.fail_after(timeout):
                return await self._send(method, params, version, on_ack=on_ack)
        except TimeoutError:
            raise MCPError(code=REQUEST_TIMEOUT, message=f"Request {method!r} timed out") from None
        except _NotJSON as e:
            raise MCPError(code=types.INVALID_PARAMS, message=f"{method}: the request is not JSON ({e})") from None

    async def _send(self, method: str, params: dict[str, Any], version: str, *,
                    on_id: Callable[[str], None] | None = None,
                    on_ack: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
        request_id = f"monad-{next(self._ids)}"
        if on_id is not None:
            on_id(request_id)
        headers = {MCP_PROTOCOL_VERSION_HEADER: version}
        if version in MODERN_PROTOCOL_VERSIONS:
            headers[MCP_METHOD_HEADER] = method
            if method == CALL:
                headers[MCP_NAME_HEADER] = encode_header_value(params["name"])
        waiter = self.pending[request_id] = _Waiter(on_ack)
        self.taken[method] = self.taken.get(method, 0) + 1
        try:
            try:
                await self.wire.request({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params},
                                        headers)
            except (TypeError, ValueError) as e:
                raise _NotJSON(str(e)) from None
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):  # the server's side is gone
                raise MCPError(code=CONNECTION_CLOSED, message="Connection closed") from None
            await waiter.event.wait()
        except BaseException as e:
            if self.pending.pop(request_id, None) is not None and not self.closed and not isinstance(e, _NotJSON):
                # The server may still work on it (the caller left, a timeout): tell it.
                await self._cancel(request_id, method)
            raise
        answer = waiter.answer
        if isinstance(answer, JSONRPCError):
            raise MCPError.from_error_data(answer.error)
        assert answer is not None
        return answer.result

    async def _cancel(self, request_id: str, method: str) -> None:
        body = {"jsonrpc": "2.0", "method": CANCELLED,
                "params": {"requestId": request_id,
                           "reason": "the caller cancelled the " + ("call" if method == CALL else "request")}}
        with (anyio.move_on_after(_CANCEL_WRITE_S, shield=True),
              contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError)):
            await self.wire.notify(body)


class _NotJSON(Exception):
    """The request's body is not JSON as Python holds it."""


def _call_result(raw: dict[str, Any], version: str) -> types.CallToolResult | None:
    """The answer as a `CallToolResult`; None for an `input_required` round (2026-07-28).

    Before 2026-07-28 the version's own surface drops `resultType` and every later field, as
    the SDK does. At 2026-07-28 `input_required` is handed back: the SDK sends the call again
    and runs the rounds (a server asks before it acts, keeping its state in `requestState`:
    MCP 2026-07-28, "Multi Round-Trip Requests"). Any other shape is refused (MCPError
    -32603), never sent twice. A negative `ttlMs` is taken as 0, as the SDK's `send_request`."""
    if version not in MODERN_PROTOCOL_VERSIONS:
        with contextlib.suppress(KeyError):  # a version the surface does not list: the SDK skips it too
            raw = methods.serialize_server_result(CALL, version, raw)
        return types.CallToolResult.model_validate(raw, by_name=False)
    result_type = raw.get("resultType", "complete")
    if result_type == "input_required":
        return None
    if result_type != "complete":
        raise MCPError(types.INTERNAL_ERROR, f"the server answered a `{result_type}` result, which is not a "
                                             f"{CALL} result monad takes (MCP 2026-07-28 server/tools)")
    ttl = raw.get("ttlMs")
    if isinstance(ttl, int | float) and not isinstance(ttl, bool) and ttl < 0:
        raw["ttlMs"] = 0
    surface = _surface(version)
    if surface is not None:
        surface.validate_python(raw, by_name=False)
    return types.CallToolResult.model_validate(raw, by_name=False)


_surfaces: dict[str, TypeAdapter[Any] | None] = {}


def _surface(version: str) -> TypeAdapter[Any] | None:
    """The check `methods.validate_server_result(CALL, version, …)` makes, without the dump
    it throws away (~18k instructions a call): a validator of the version's own result type
    (`methods.SERVER_RESULTS`, the table it reads). None: the table has no such row (that
    check's KeyError, which was passed over). An unknown version raises its ValueError."""
    if version in _surfaces:
        return _surfaces[version]
    if version not in KNOWN_PROTOCOL_VERSIONS:
        raise ValueError(f"version must be a known protocol version, got {version!r}")
    model = methods.SERVER_RESULTS.get((CALL, version))
    adapter = _surfaces[version] = TypeAdapter(cast(Any, model)) if model is not None else None
    return adapter


def _may_be_a_task(tool: types.Tool) -> bool:
    """The tool's server may answer a call with a task (2025-11-25 "Tool-Level Negotiation")."""
    execution = tool.execution
    return execution is not None and execution.task_support in ("optional", "required")
