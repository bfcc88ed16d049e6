"""The caller's client capabilities in a 2026-07-28 request monad makes for it (`AgentStamp`).

At 2026-07-28 there is no handshake: every request carries the client's capabilities in
`params._meta["io.modelcontextprotocol/clientCapabilities"]` (MCP spec, basic "_meta"
envelope), and a server asks only what they allow (an elicitation when `elicitation` is
declared, in the modes it names; sampling; roots). Behind monad the client is monad's one
session per server, whose `mcp.Client` offers all three, so without this a server would ask
an agent that declared none and only learn from monad's refusal. A request made for a caller
(the gateway's agents, `monad mcp call`, the Studio) must carry that caller's own.

Why a wrapper around the session's stamp: the SDK (mcp 2.3) builds the envelope in
`mcp.client.session._make_modern_stamp`, installs it as `ClientSession._stamp` when it adopts
a 2026-07-28 era (`adopt()`, at connect and again on a later `server/discover`), and calls it
on every request in `send_request`, overwriting that key. No public argument of
`call_tool`/`read_resource`/`get_prompt`/`complete` reaches it (a `_meta` passed in is
overwritten). So `ensure(session)` wraps whatever `_stamp` the session holds, once per
adoption (an `AgentStamp` is not wrapped again): the SDK's stamp runs first, then the key is
replaced by the caller's capabilities when `trust.inputs.agent_capabilities` is set (the
actor sets it for the length of a call made for a caller: `InputRouter.serving`). The SDK
calls the stamp in the requesting task, so the context variable is the caller's; the
2026-07-28 input_required retries the SDK sends within the same call are stamped the same way.
Monad's own requests (listings, pings, subscriptions/listen) leave it unset and keep monad's.
A handshake-era session's stamp writes no `_meta` (its capabilities were fixed at
`initialize`): nothing is replaced. tests/daemon/test_agent_stamp.py holds this to the SDK.

What is forwarded: `elicitation` (with its modes), `sampling` and `roots` as the caller
declared them (`roots` without `listChanged`: monad does not relay a caller's
notifications/roots/list_changed); every other key (extensions, tasks, experimental) stays
monad's, as the session that will handle them is monad's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mcp_types import CLIENT_CAPABILITIES_META_KEY

from monad_cli.daemon.trust.inputs import FORWARDED_CAPABILITIES, current_caller

Stamp = Callable[[dict[str, Any], Any], None]


def for_caller(own: dict[str, Any], caller: dict[str, Any]) -> dict[str, Any]:
    """`own` (monad's client capabilities, wire shape) with FORWARDED_CAPABILITIES replaced
    by `caller`'s: a new dict (the SDK's is shared by every request of the session)."""
    caps = {k: v for k, v in own.items() if k not in FORWARDED_CAPABILITIES}
    for key in FORWARDED_CAPABILITIES:
        if isinstance(value := caller.get(key), dict):
            caps[key] = {k: v for k, v in value.items() if k != "listChanged"} if key == "roots" else value
    return caps


class AgentStamp:
    """The SDK session's request stamp, then the caller's capabilities (module docstring).
    `own` is monad's own capabilities as the SDK's stamp last wrote them (None until then)."""

    __slots__ = ("inner", "own")

    def __init__(self, inner: Stamp) -> None:
        self.inner = inner
        self.own: dict[str, Any] | None = None

    def __call__(self, data: dict[str, Any], opts: Any) -> None:
        self.inner(data, opts)
        meta = (data.get("params") or {}).get("_meta")
        if isinstance(meta, dict) and isinstance(own := meta.get(CLIENT_CAPABILITIES_META_KEY), dict):
            self.own = own
            self.restamp(meta)

    def restamp(self, meta: dict[str, Any]) -> None:
        """Put the current caller's capabilities (or monad's own, outside a call made for a
        caller) into an envelope `meta` (also the stdio direct lane's, sessions/direct.py)."""
        if self.own is None:
            return
        caller = current_caller()
        caps = caller.capabilities if caller is not None else None
        meta[CLIENT_CAPABILITIES_META_KEY] = self.own if caps is None else for_caller(self.own, caps)


def ensure(session: Any) -> AgentStamp | None:
    """Wrap `session._stamp` (an `mcp.ClientSession`) in an `AgentStamp` unless it already
    is one; the stamp in place, or None when the SDK has no `_stamp` (an SDK that changed:
    tests/daemon/test_agent_stamp.py fails first)."""
    stamp = getattr(session, "_stamp", None)
    if isinstance(stamp, AgentStamp):
        return stamp
    if not callable(stamp):
        return None
    wrapped = AgentStamp(stamp)
    # The SDK's stamp only writes into what it is given: a ping's envelope shows monad's own
    # capabilities now, for the direct lane's first call (which the SDK's stamp never sees).
    probe: dict[str, Any] = {"method": "ping", "params": {}}
    stamp(probe, {})
    if isinstance(own := probe["params"].get("_meta", {}).get(CLIENT_CAPABILITIES_META_KEY), dict):
        wrapped.own = own
    session._stamp = wrapped
    return wrapped


__all__ = ["AgentStamp", "ensure", "for_caller"]
