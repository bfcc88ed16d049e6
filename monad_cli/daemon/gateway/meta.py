"""What of an agent's `_meta` reaches the server: the agent's own keys, nothing of the protocol.

An agent may put keys of its own in a request's `_meta` (MCP spec, basic "_meta": a tenant,
a trace id, a tool-use id, W3C trace context per SEP-414). The gateway passes them to the
server on the upstream request it makes for that agent request (`tools/call`,
`resources/read`, `prompts/get`), beside the keys monad adds itself. Left out:

- `progressToken`: a token names a progress channel between two peers; monad asks the
  server for progress under a token of its own and relays it under the agent's
  (basic/utilities/progress);
- keys under a reserved prefix (the spec reserves prefixes whose second label is
  `modelcontextprotocol` or `mcp`: `io.modelcontextprotocol/protocolVersion`, `…/clientInfo`,
  `…/logLevel`, …): they describe the agent's hop, and monad speaks its own to the server;
- `monad/…` keys: monad's own marks on an upstream request (sessions/stamp.py); an agent
  must not set them (the capabilities a server sees are the agent's declared ones).
"""

from __future__ import annotations

from typing import Any

PROGRESS_TOKEN = "progressToken"
OWN_PREFIX = "monad/"
RESERVED_LABELS = frozenset({"modelcontextprotocol", "mcp"})


def _reserved(key: str) -> bool:
    """Whether `key`'s prefix is reserved by the spec ("second label `modelcontextprotocol`
    or `mcp`"; its examples read it either way: `modelcontextprotocol.io/`, `tools.mcp.com/`,
    and the spec's own keys `io.modelcontextprotocol/…`), or is monad's own."""
    prefix, slash, _name = key.partition("/")
    if not slash:
        return False
    labels = prefix.split(".")
    return (len(labels) > 1 and (labels[1] in RESERVED_LABELS or labels[-2] in RESERVED_LABELS)) \
        or key.startswith(OWN_PREFIX)


def agent_meta(meta: Any) -> dict[str, Any]:
    """The keys of a request's `_meta` (any JSON value; not an object: none) that the server
    is sent as the agent sent them (see the module docstring); `{}` when there are none."""
    if not isinstance(meta, dict) or not meta:
        return {}
    return {k: v for k, v in meta.items() if k != PROGRESS_TOKEN and not _reserved(k)}


__all__ = ["agent_meta"]
