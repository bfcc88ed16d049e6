"""The caller's client capabilities in a 2026-07-28 request monad makes for it (`Envelope`).

At 2026-07-28 every request carries the client's capabilities in
`params._meta["io.modelcontextprotocol/clientCapabilities"]` (MCP spec, basic "_meta"
envelope), and a server asks only what they allow. monad's `mcp.Client` offers elicitation,
sampling and roots: without this a server would ask an agent that declared none.

The SDK (mcp 2.3) writes the envelope on every request and overwrites that key of a `_meta`
passed in, so monad rewrites it where requests leave, its own transports (`Exchange.sent`).
A request made for a caller carries the caller's capabilities under `CALLER` in its `meta=`
(`caller_meta`); `Envelope.sent` takes that key out and, when the SDK wrote an envelope, puts
them in it. monad's own requests keep monad's; a handshake-era request carries no envelope.

Forwarded: `elicitation` (with its modes), `sampling` and `roots` (without `listChanged`:
monad does not relay a caller's roots/list_changed); other keys (extensions, tasks,
experimental) stay monad's, as the session handling them is.
"""

from __future__ import annotations

from typing import Any

from mcp_types import CLIENT_CAPABILITIES_META_KEY, PROTOCOL_VERSION_META_KEY, JSONRPCRequest

from monad_cli.daemon.trust.inputs import FORWARDED_CAPABILITIES, Caller

CALLER = "monad/callerCapabilities"  # `_meta` key of the caller's capabilities, up to the transport
ENVELOPE_PREFIX = "io.modelcontextprotocol/"


def for_caller(own: dict[str, Any], caller: dict[str, Any]) -> dict[str, Any]:
    """`own` (monad's client capabilities, wire shape) with FORWARDED_CAPABILITIES replaced
    by `caller`'s: a new dict (the SDK's is shared by every request of the session)."""
    caps = {k: v for k, v in own.items() if k not in FORWARDED_CAPABILITIES}
    for key in FORWARDED_CAPABILITIES:
        if isinstance(value := caller.get(key), dict):
            caps[key] = {k: v for k, v in value.items() if k != "listChanged"} if key == "roots" else value
    return caps


def caller_meta(caller: Caller | None, meta: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """The `_meta` to hand the SDK for a request made for `caller`: `meta` (None: none) plus
    the caller's capabilities under `CALLER`; None when there is nothing to carry."""
    if caller is None or caller.capabilities is None:
        return meta or None
    return {**(meta or {}), CALLER: caller.capabilities}


class Envelope:
    """One connection's 2026-07-28 envelope, as the SDK's stamp last wrote it (`stamp`: the
    envelope's keys; `own`: monad's capabilities in it; None until a request showed them)."""

    __slots__ = ("own", "stamp")

    def __init__(self) -> None:
        self.stamp: dict[str, Any] | None = None
        self.own: dict[str, Any] | None = None

    def sent(self, message: Any) -> None:
        """A message on its way to the server (see the module docstring): the caller's
        capabilities in place of monad's, `CALLER` taken out, the envelope kept."""
        if not isinstance(message, JSONRPCRequest) or not isinstance(message.params, dict):
            return
        meta = message.params.get("_meta")
        if not isinstance(meta, dict):
            return
        caller = meta.pop(CALLER, None)
        if PROTOCOL_VERSION_META_KEY in meta:
            own = meta.get(CLIENT_CAPABILITIES_META_KEY)
            if isinstance(own, dict):
                self.own = own
                self.stamp = {k: v for k, v in meta.items() if k.startswith(ENVELOPE_PREFIX)}
                if isinstance(caller, dict):
                    meta[CLIENT_CAPABILITIES_META_KEY] = for_caller(own, caller)
        elif caller is not None and not meta:
            del message.params["_meta"]  # only `CALLER` was there: the request as the SDK made it

    def for_request(self, capabilities: dict[str, Any] | None) -> dict[str, Any] | None:
        """The envelope a 2026-07-28 request of monad's own lane carries: the SDK's last, with
        `capabilities` (a caller's; None: monad's own) in it; None before any was seen."""
        if self.stamp is None:
            return None
        meta = dict(self.stamp)
        if capabilities is not None and self.own is not None:
            meta[CLIENT_CAPABILITIES_META_KEY] = for_caller(self.own, capabilities)
        return meta
