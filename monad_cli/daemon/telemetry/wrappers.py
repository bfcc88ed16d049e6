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
- `gateway` (gateway/server.py `GatewayWrappers`): the SERVER span of a `tools/call` the
  gateway's stdio lane answers, the SDK server path's middleware, and session durations.

The recorder's methods these call: `call`, `annotate_call`, `outcome`, `approval`,
`client_request`, `inject`, `request_id`, `result`, `server_request`, `middleware`,
`connecting`, `connected`, `session_ended`, `restarted`, `gateway_session_ended`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from monad_cli.daemon.telemetry.recorder import Recorder

if TYPE_CHECKING:
    from monad_cli.daemon.trust.call import ApprovalWait, CallHandler, ToolCall
    from monad_cli.daemon.trust.gate import Pending


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
                    if call.call_id is not None and call.decision and call.decided_by:
                        recorder.annotate_call(server=call.server_name, exposed=call.exposed, via=call.via,
                                               decision=call.decision, decided_by=call.decided_by,
                                               call_id=call.call_id, arguments=call.arguments)
                    if call.outcome is not None:
                        recorder.outcome(server=call.server_name, outcome=call.outcome,
                                         decision=call.decision or "none", via=call.via)

        return traced

    def approvals(self, inner: ApprovalWait) -> ApprovalWait:
        recorder = self.recorder

        async def traced(call: ToolCall, pending: Pending, timeout: float) -> tuple[bool, str, str]:
            with recorder.approval(call.exposed, call.server_name) as decided:
                answer = await inner(call, pending, timeout)
                decided(answer[1], answer[2])
                return answer

        return traced


__all__ = ["Wrappers"]
