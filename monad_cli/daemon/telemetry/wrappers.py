"""Telemetry as wrappers around the call path, installed by the supervisor when it is on.

Nothing on the call path knows whether telemetry is on: the supervisor (the composition
root) builds `Wrappers(recorder)` once telemetry has started and installs each wrapper at
its seam; while telemetry is off nothing is installed and nothing here is imported. Each
wrapper is a few lines around the inner step, reading what the step learned from the
request object it was handed (trust/call.py's `ToolCall`), as toolhive's backend telemetry
decorates its backend client:

- `calls` wraps `ToolService`'s path: a SERVER span for a call that is not inside a gateway
  request's own span, monad's attributes on the current span, and `monad.tool.calls`;
- `approvals` wraps the gate's wait for a person: the `approval {tool}` span and its metric;
- `requests` wraps each server session's requests (sessions/requests.py): the CLIENT span
  of every upstream request, its context into a `tools/call`'s `_meta` (SEP-414) for monad's
  own lane (the SDK's session injects the current span's itself);
- `events` hears each session's lifecycle (sessions/actor.py `SessionEvents`): the
  `connect {server}` span, session durations and restarts;
- `gateway` (gateway/session.py `GatewayWrappers`): the SERVER span of a `tools/call` the
  gateway's stdio lane answers, the SDK server path's middleware, and session durations.

The recorder's methods these call: `call`, `call_ended`, `approval`,
`client_request`, `inject`, `request_id`, `result`, `server_request`, `middleware`,
`connecting`, `connected`, `session_ended`, `restarted`, `gateway_session_ended`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

from monad_cli.daemon.gateway.direct import LaneCall, LaneHandler
from monad_cli.daemon.gateway.session import GatewayWrappers
from monad_cli.daemon.sessions.actor import SessionEvents
from monad_cli.daemon.sessions.requests import Requests, Send, address
from monad_cli.daemon.telemetry.recorder import OTHER, Recorder

if TYPE_CHECKING:
    from mcp_types import CallToolResult

    from monad_cli.daemon.sessions.actor import ServerActor
    from monad_cli.daemon.trust.call import ApprovalWait, CallHandler, ToolCall
    from monad_cli.daemon.trust.gate import Pending
    from monad_cli.daemon.trust.inputs import Caller

T = TypeVar("T")


class Wrappers:
    """Telemetry's wrappers over one `recorder` (see the module docstring)."""

    def __init__(self, recorder: Recorder) -> None:
        self.recorder = recorder

    # -- the tool service ------------------------------------------------------------
    def calls(self, inner: CallHandler) -> CallHandler:
        recorder = self.recorder

        async def traced(call: ToolCall) -> dict[str, Any]:
            with recorder.call(call.exposed, call.via):
                try:
                    return await inner(call)
                finally:
                    # A name no server lists is the agent's invention: its prefix is no server
                    # either, and a label of it would grow /metrics with every new one.
                    server = call.server.name if call.server is not None else OTHER
                    recorder.call_ended(server=server, exposed=call.exposed, via=call.via, outcome=call.outcome,
                                        decision=call.decision, decided_by=call.decided_by, call_id=call.call_id,
                                        arguments=call.arguments)

        return traced

    def approvals(self, inner: ApprovalWait) -> ApprovalWait:
        recorder = self.recorder

        async def traced(call: ToolCall, pending: Pending, timeout: float) -> tuple[bool, str, str]:
            with recorder.approval(call.exposed, call.server_name) as decided:
                answer = await inner(call, pending, timeout)
                decided(answer[1], answer[2])
                return answer

        return traced

    # -- each server's sessions ------------------------------------------------------
    def requests(self, actor: ServerActor, inner: Requests) -> Requests:
        return _TracedRequests(inner, actor, self.recorder)

    def events(self) -> SessionEvents:
        return _SessionEvents(self.recorder)

    # -- the gateway -------------------------------------------------------------------
    def gateway(self) -> GatewayWrappers:
        recorder = self.recorder

        def lane(inner: LaneHandler) -> LaneHandler:
            async def traced(call: LaneCall) -> dict[str, Any]:
                # The SERVER span the SDK's middleware opens on its path, continuing the agent's trace.
                with recorder.server_request("tools/call", call.name, request_id=call.id, protocol_version=call.version,
                                             meta=call.trace, transport="pipe") as op:
                    result = await inner(call)
                    recorder.result(op, result)
                    return result

            return traced

        def middleware(sdk_default: list[Any], transport: str) -> list[Any]:
            # In place of the SDK's own span middleware: monad's opens the SERVER span (a name
            # no agent was listed recorded as `_OTHER`) and records the duration.
            return [recorder.middleware(transport)]

        return GatewayWrappers(lane=lane, middleware=middleware, session_ended=recorder.gateway_session_ended)


def _transport(actor: ServerActor) -> str:
    return actor.spec.transport if actor.spec is not None else "stdio"


class _TracedRequests:
    """The CLIENT span of each of `actor`'s upstream requests."""

    def __init__(self, inner: Requests, actor: ServerActor, recorder: Recorder) -> None:
        self.inner, self.actor, self.recorder = inner, actor, recorder

    async def call_tool(self, call: ToolCall) -> CallToolResult:
        actor, recorder = self.actor, self.recorder
        with recorder.client_request("tools/call", call.tool_name, server=actor.name, transport=_transport(actor),
                                     protocol_version=actor.protocol_version, address=address(actor),
                                     resolved=call.tool is not None) as op:
            recorder.inject(call.meta, op)  # for monad's own lane; the SDK's session injects its own
            result = await self.inner.call_tool(call)
            if call.request_id is not None:
                recorder.request_id(call.request_id, op)
            recorder.result(op, result)
            return result

    async def request(self, send: Send[T], *, caller: Caller | None, method: str | None,
                      target: str | None) -> T:
        if method is None:  # not an MCP request of its own name (a listing page): no span
            return await self.inner.request(send, caller=caller, method=method, target=target)
        actor = self.actor
        with self.recorder.client_request(method, target, server=actor.name, transport=_transport(actor),
                                          protocol_version=actor.protocol_version, address=address(actor)):
            return await self.inner.request(send, caller=caller, method=method, target=target)


class _SessionEvents(SessionEvents):
    """The `connect {server}` span of each connection attempt, session durations, restarts."""

    def __init__(self, recorder: Recorder) -> None:
        self.recorder = recorder
        self.connecting_spans: dict[str, Any] = {}

    def connecting(self, actor: ServerActor) -> None:
        self.connecting_spans[actor.name] = self.recorder.connecting(actor.name, _transport(actor))

    def connected(self, actor: ServerActor, error: str | None) -> None:
        span = self.connecting_spans.pop(actor.name, None)
        if span is not None:
            self.recorder.connected(span, protocol_version=actor.protocol_version if error is None else None,
                                    error=error)

    def session_ended(self, actor: ServerActor, seconds: float, *, error: str | None) -> None:
        self.recorder.session_ended(actor.name, _transport(actor), seconds, error=error)

    def restarting(self, actor: ServerActor, why: str) -> None:
        self.recorder.restarted(actor.name, why)


__all__ = ["Wrappers"]
