"""Who answers a server's requests for input during a request monad makes for a caller
(stdlib only).

A server may ask before it answers a `tools/call` (or `resources/read`, `prompts/get`): an
`elicitation/create` on a legacy session, or on 2026-07-28 an `InputRequiredResult`
(SEP-2322, multi-round-trip requests). The request's `Caller` names the `InputHandler`
that answers; the session routes each question to its own request's handler
(sessions/inputs.py). The SDK calls one `elicitation_callback` for every request, in the
requesting task: `serving(caller)`, entered by the session around each request, is the one
bridge, so `current_caller()` in an SDK callback is that request's caller (None: monad's
own, or the receive task). Nothing else about a call travels this way (trust/call.py).
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Protocol

# The client capabilities a caller's questions are relayed under (MCP spec, client/elicitation,
# client/sampling, client/roots): what a 2026-07-28 server sees in the `_meta` of a request
# monad makes for that caller is the caller's own of these, never monad's.
FORWARDED_CAPABILITIES = ("elicitation", "sampling", "roots")

# What a person answering on a terminal or a page (`monad mcp call`, the Studio's Try form)
# can answer: a form's typed fields and a URL to open; no model (sampling), no roots.
PERSON_CAPABILITIES: dict[str, Any] = {"elicitation": {"form": {}, "url": {}}}


class InputRefused(Exception):
    """The handler cannot answer (no person, an unsupported kind); the message says why, in
    one line, and goes back to the server as the request's error."""


class QuestionTimedOut(InputRefused):
    """Nobody answered the question within its time (the gateway's `--approval-timeout`)."""


class InputHandler(Protocol):
    """Answer one input request, wire shape (`{"method": "elicitation/create", "params":
    {...}}`); `key`: the key a 2026-07-28 server gave it in its `inputRequests` (None: a
    legacy request), so a gateway relaying it asks under the same key; `call_id`: the
    `tool_calls` row of its call, once journaled. The answer is the result's wire shape
    (`{"action": "accept", "content": {...}}`, `"decline"`, `"cancel"`). Raises
    `InputRefused`."""

    async def __call__(self, request: dict[str, Any], *, key: str | None = None,
                       call_id: int | None = None) -> dict[str, Any]: ...


@dataclass(eq=False, kw_only=True)
class Caller:
    """Who an upstream request is made for (a `ToolCall`, or a gateway's own for
    resources/read, prompts/get, completion/complete).

    `inputs` answers the server's questions (None: refused, saying so); `capabilities`: what
    the caller declared of FORWARDED_CAPABILITIES, wire shape (`{"elicitation": {"form": {},
    "url": {}}}`; `{}`: none), which a 2026-07-28 server sees in the envelope instead of
    monad's (sessions/stamp.py; None: monad's own). `meta`: keys the upstream `_meta` carries
    besides monad's envelope (an agent's own, gateway/meta.py; W3C trace context, SEP-414)."""

    inputs: InputHandler | None = None
    capabilities: dict[str, Any] | None = None
    meta: dict[str, Any] = field(default_factory=dict)


_caller: ContextVar[Caller | None] = ContextVar("monad_caller", default=None)


class serving:  # a context manager, named as the generator it was (a class: ~7k instructions less a use)
    """`with serving(caller):` the block is a request made for `caller` (see the module docstring)."""

    __slots__ = ("caller", "token")

    def __init__(self, caller: Caller | None) -> None:
        self.caller = caller

    def __enter__(self) -> None:
        self.token = _caller.set(self.caller)

    def __exit__(self, *exc: object) -> None:
        _caller.reset(self.token)


def current_caller() -> Caller | None:
    """The caller of the request running in this task (`serving`), or None."""
    return _caller.get()


__all__ = ["FORWARDED_CAPABILITIES", "PERSON_CAPABILITIES", "Caller", "InputHandler", "InputRefused",
           "QuestionTimedOut", "current_caller", "serving"]
