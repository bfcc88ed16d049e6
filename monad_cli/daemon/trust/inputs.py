"""Who answers a server's requests for input during a tool call (stdlib only).

A server may ask the caller something before it answers a `tools/call`: an
`elicitation/create` request on a legacy session, or, on 2026-07-28, an
`InputRequiredResult` whose `inputRequests` the client answers and retries with
(SEP-2322, multi-round-trip requests). The caller of `ToolService.call` passes an
`InputHandler` for its call; the server's session routes each request to the handler of
the call it belongs to, never to another call's.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any, Protocol

# The key a 2026-07-28 server gave the question in its `inputRequests` (the SDK hands it to
# the client's callback as the context's request id), set while the handler runs, so a
# gateway relaying the question to its agent can ask under the same key (None: a legacy
# request, which has none).
input_key: ContextVar[str | None] = ContextVar("monad_input_key", default=None)

# The client capabilities a caller's questions are relayed under (MCP spec, client/elicitation,
# client/sampling, client/roots): what a 2026-07-28 server sees in the `_meta` of a request
# monad makes for that caller is the caller's own of these, never monad's.
FORWARDED_CAPABILITIES = ("elicitation", "sampling", "roots")

# While an upstream request is made for a caller (an agent's tools/call, resources/read,
# prompts/get, completion/complete; a `monad mcp call`): that caller's capabilities among
# FORWARDED_CAPABILITIES, wire shape (`{"elicitation": {"form": {}, "url": {}}}`; `{}`: none).
# None: monad's own request (a listing, a ping, subscriptions/listen), sent with monad's.
# Read by the upstream session's request stamp (daemon/sessions/stamp.py).
agent_capabilities: ContextVar[dict[str, Any] | None] = ContextVar("monad_agent_capabilities", default=None)

# What a person answering on a terminal or a page (`monad mcp call`, the Studio's Try form)
# can answer: a form's typed fields and a URL to open; no model (sampling), no roots.
PERSON_CAPABILITIES: dict[str, Any] = {"elicitation": {"form": {}, "url": {}}}


class InputRefused(Exception):
    """The handler cannot answer (no person, an unsupported kind); the message says why, in
    one line, and goes back to the server as the request's error."""


class InputHandler(Protocol):
    """Answer one input request. `request` is the wire shape, e.g. `{"method":
    "elicitation/create", "params": {"message": ..., "requestedSchema": {...}}}`; the answer
    is the result's wire shape (`{"action": "accept", "content": {...}}`, or `"decline"` /
    `"cancel"`). Raises `InputRefused`."""

    async def __call__(self, request: dict[str, Any]) -> dict[str, Any]: ...

