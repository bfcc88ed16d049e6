"""A server's questions during an agent's call, asked of that agent (`AgentQuestions`).

The actor routes each `elicitation/create`, `sampling/createMessage` and `roots/list` a
server sends during a call to that call's `InputHandler` (sessions/inputs.py). The gateway's
asks on the agent request's own channel (on streamable HTTP, the POST's response stream):
the agent whose call it is, no other. The agent must have declared the capability (MCP
spec, client/elicitation, client/sampling, client/roots; URL mode needs `elicitation.url`,
a form `elicitation.form` or 2025-06-18's bare `elicitation: {}`), else the question is
refused naming it. A 2026-07-28 agent is asked in `input_required` rounds (gateway/rounds.py).

Every question ends: answered; withdrawn by the server (its notifications/cancelled
cancels the wait, and the request to the agent is withdrawn in turn); or after `timeout`
seconds (`--approval-timeout`): an elicitation answered `cancel` (client/elicitation
"Response Actions"), anything else refused. Each leaves a journal event `question`: server,
method, the call's id, outcome; never the answer's content.
"""

from __future__ import annotations

import logging
import math
from functools import partial
from typing import Any

import anyio
import mcp_types as types
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ServerMessageMetadata
from mcp_types import methods
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from monad_cli.daemon.gateway.catalog import level_at_least, quiet_deprecated
from monad_cli.daemon.sessions.framing import encode_line
from monad_cli.daemon.trust.inputs import FORWARDED_CAPABILITIES, InputRefused, QuestionTimedOut

log = logging.getLogger("monad.gateway")
ELICITATION_COMPLETE = "notifications/elicitation/complete"
LOGGER = "monad"  # the `logger` of the gateway's own log messages to an agent

# `client_capabilities` of a declaration (a raw dict), by the dict's identity: a handshake-era
# connection's capabilities are one dict for all of its calls, so validated and dumped once.
_forwarded: dict[int, tuple[dict[str, Any], dict[str, Any]]] = {}
_KINDS: dict[str, tuple[str, Any, Any]] = {
    "elicitation/create": ("elicitation", types.ElicitRequest, types.ElicitResult),
    "sampling/createMessage": ("sampling", types.CreateMessageRequest, types.CreateMessageResult),
    "roots/list": ("roots", types.ListRootsRequest, types.ListRootsResult),
}


def declared(capabilities: types.ClientCapabilities | None, method: str, params: dict[str, Any] | None) -> str | None:
    """The capability `method` (with `params`) needs that `capabilities` lacks, or None."""
    name = _KINDS[method][0]
    given = getattr(capabilities, name, None)  # None when `capabilities` is
    if given is None:
        return name
    if name == "elicitation":
        url_mode = (params or {}).get("mode") == "url"
        if url_mode and given.url is None:
            return "elicitation.url"
        if not url_mode and given.url is not None and given.form is None:
            return "elicitation.form"  # an agent that named only `url` takes no forms
    return None


class AgentQuestions:
    """The `InputHandler` of one agent request: `ctx`, the SDK's request context, or for a
    call on the stdio direct lane `lane` (its `DirectCalls`, which asks on the connection;
    neither: nobody to ask). The journal gets one `question` event per question."""

    def __init__(self, ctx: Any, journal: Any, *, protocol_version: str, server: str | None = None,
                 what: str | None = None, lane: Any = None, round: Any = None,
                 capabilities: Any = None, log: Any = None, timeout: float | None = None) -> None:
        self.ctx = ctx
        self.log = log  # a 2026-07-28 request that asked for log messages: its `RequestLog` (features.py)
        self.timeout = timeout  # seconds a question waits for the agent's answer (None: no bound)
        self.lane = lane  # a direct-lane call's `DirectCalls` (gateway/direct.py): its `ask`
        self.round = round  # a 2026-07-28 agent's call: its `input_required` rounds (gateway/rounds.py)
        self.raw_capabilities = capabilities  # a 2026-07-28 request's envelope `clientCapabilities`
        self.journal = journal
        self.protocol_version = protocol_version
        self.server = server  # whose question it is, when known before it comes
        self.what = what  # the exposed tool, prompt or resource URI the request is about
        self.url_elicitations: set[str] = set()  # the `elicitationId`s of URL-mode questions sent to the agent

    def _note(self, method: str, outcome: str, call_id: int | None, **detail: Any) -> None:
        try:
            self.journal.record("question", server=self.server, detail={
                "method": method, "outcome": outcome, "callId": call_id, "about": self.what, **detail})
        except Exception:  # a journal that cannot be written must not fail the question
            log.exception("journal write failed")

    def _refuse(self, method: str, why: str, call_id: int | None) -> InputRefused:
        self._note(method, "refused", call_id, reason=why)
        return InputRefused(why)

    def _capabilities(self) -> types.ClientCapabilities | None:
        if self.raw_capabilities is None and self.ctx is not None:
            caps: types.ClientCapabilities | None = self.ctx.session.client_capabilities
            return caps
        raw = self.raw_capabilities
        if raw is None and self.lane is not None:
            raw = self.lane.capabilities
        try:
            return types.ClientCapabilities.model_validate(raw) if raw is not None else None
        except ValidationError:
            return None

    def client_capabilities(self) -> dict[str, Any]:
        """What the agent declared of the capabilities monad relays questions under
        (`trust.inputs.FORWARDED_CAPABILITIES`), wire shape, `{}` for none: a 2026-07-28
        server sees these in the request made for this agent (sessions/stamp.py)."""
        raw = self.raw_capabilities
        if raw is None and self.ctx is None and self.lane is not None:
            raw = self.lane.capabilities  # one dict, the connection's `initialize`, for all its calls
        cached = _forwarded.get(id(raw)) if raw is not None else None
        if cached is not None and cached[0] is raw:
            return dict(cached[1])
        caps = self._capabilities()
        if caps is None:
            return {}
        wire = caps.model_dump(by_alias=True, mode="json", exclude_none=True)
        out = {k: wire[k] for k in FORWARDED_CAPABILITIES if isinstance(wire.get(k), dict)}
        if raw is not None:
            if len(_forwarded) > 256:
                _forwarded.clear()
            _forwarded[id(raw)] = (raw, out)  # the entry holds `raw`: its id is not reused while cached
        return dict(out)

    async def __call__(self, request: dict[str, Any], *, key: str | None = None,
                       call_id: int | None = None) -> dict[str, Any]:
        method = request.get("method", "")
        params = request.get("params")
        if method not in _KINDS:
            raise self._refuse(method, f"the gateway does not relay `{method}` requests", call_id)
        missing = declared(self._capabilities(), method, params)
        if missing is not None:
            raise self._refuse(method, f"the agent did not declare the `{missing}` capability", call_id)
        if self.protocol_version in MODERN_PROTOCOL_VERSIONS and self.round is None:
            raise self._refuse(method, f"the agent speaks {self.protocol_version}, where a server's question is an "
                                       f"input_required result, which this request cannot carry", call_id)
        _, request_type, result_type = _KINDS[method]
        body = {"method": method, **({"params": params} if params else {})}
        if method == "elicitation/create" and (params or {}).get("mode") == "url":
            elicitation_id = (params or {}).get("elicitationId")
            if isinstance(elicitation_id, str):
                self.url_elicitations.add(elicitation_id)
        result = None
        try:
            # Every question ends: answered, withdrawn by the server (its notifications/cancelled
            # cancels this task, and the agent is told in turn), or out of time. A request to the
            # agent that is cut here is withdrawn from it (notifications/cancelled: the SDK's on
            # `ctx`, the lane's own), so nothing stays pending on either side.
            with anyio.move_on_after(self.timeout if self.timeout is not None else math.inf):
                if self.round is not None:
                    result = result_type.model_validate(await self.round.ask(body, key))
                elif self.ctx is not None:
                    result = await self.ctx.session.send_request(
                        request_type.model_validate(body), result_type,
                        metadata=ServerMessageMetadata(related_request_id=self.ctx.request_id))
                else:
                    result = result_type.model_validate(await self.lane.ask(method, params))
        except QuestionTimedOut:
            result = None
        except anyio.get_cancelled_exc_class():  # withdrawn, or the request it came in ended
            self._note(method, "cancelled", call_id)
            raise
        except MCPError as e:
            raise self._refuse(method, f"the agent answered with an error: {e.error.message}", call_id) from None
        except InputRefused as e:
            raise self._refuse(method, str(e), call_id) from None
        except ValidationError:
            raise self._refuse(method, f"the agent's answer is not a {method} result", call_id) from None
        if result is None:  # nobody answered in time
            why = f"the agent did not answer within {self.timeout:g} s"
            if method != "elicitation/create":
                raise self._refuse(method, why, call_id)
            # An elicitation the person left unanswered: `cancel`, "dismissed without making an
            # explicit choice" (client/elicitation "Response Actions").
            self._note(method, "timeout", call_id, action="cancel", reason=why)
            return {"action": "cancel"}
        answer: dict[str, Any] = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        self._note(method, "answered", call_id, **({"action": answer.get("action")} if "action" in answer else {}))
        return answer

    async def tell(self, level: str, text: str, *, threshold: str | None = None) -> bool:
        """One log message to the agent on this request's own channel: `notifications/message`
        (MCP spec, server/utilities/logging) with logger `monad`, at `level`, unless the agent
        asked for a higher level (`threshold`: its `logging/setLevel`; at 2026-07-28 the
        request's own `_meta` logLevel, without which that era allows none). True when sent."""
        if threshold is not None and not level_at_least(level, threshold):
            return False
        try:
            if self.ctx is not None:  # the SDK applies a 2026-07-28 request's opt-in itself
                await quiet_deprecated(partial(self.ctx.session.send_log_message, level, text, LOGGER,
                                               related_request_id=self.ctx.request_id))
            elif self.lane is not None:
                await self._notify_lane("notifications/message", {"level": level, "logger": LOGGER, "data": text})
            elif self.log is not None and level_at_least(level, self.log.level):
                self.log.send.send_nowait({"level": level, "logger": LOGGER, "data": text})
            else:
                return False
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, anyio.WouldBlock):
            return False  # the agent is gone (its call ends with it) or its queue is full
        return True

    async def elicitation_complete(self, elicitation_id: str) -> bool:
        """Tell the agent the URL-mode elicitation `elicitation_id` it was sent is complete:
        `notifications/elicitation/complete` with `{"elicitationId": ...}` (MCP spec 2025-11-25,
        client/elicitation), on the question's channel. True when sent; False for an id this
        handler did not send, a version without it (before 2025-11-25, and 2026-07-28), or an
        agent that went away."""
        if elicitation_id not in self.url_elicitations or self.round is not None:
            return False
        if (ELICITATION_COMPLETE, self.protocol_version) not in methods.SERVER_NOTIFICATIONS:
            return False
        self.url_elicitations.discard(elicitation_id)
        try:
            if self.ctx is not None:
                await self.ctx.session.send_elicit_complete(elicitation_id, related_request_id=self.ctx.request_id)
            elif self.lane is not None:
                await self._notify_lane(ELICITATION_COMPLETE, {"elicitationId": elicitation_id})
            else:
                return False
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            return False  # the agent is gone; its call ends with the connection
        return True

    async def _notify_lane(self, method: str, params: dict[str, Any]) -> None:
        """A notification to a direct-lane call's agent: one line on its relay connection."""
        await self.lane.send(encode_line({"jsonrpc": "2.0", "method": method, "params": params}))


__all__ = ["AgentQuestions", "declared"]
