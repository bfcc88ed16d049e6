"""What the CLI and the supervisor agree on about the Studio (docs/studio.md): its port.
Stdlib only."""

from __future__ import annotations

import os

# The Studio's port unless `monad studio --port N` says otherwise (docs/studio.md). Fixed, so
# a bookmark or an open tab finds the page again after `monad daemon stop` and `monad studio`;
# chosen away from the ports other local MCP tools default to (Inspector 6274/6277).
DEFAULT_PORT = 8720
PORT_ENV = "MONAD_STUDIO_PORT"


def default_port() -> int:
    """`$MONAD_STUDIO_PORT` if set to a port number, else `DEFAULT_PORT`. Raises ValueError."""
    raw = os.environ.get(PORT_ENV, "").strip()
    if not raw:
        return DEFAULT_PORT
    port = int(raw)
    if not 0 <= port <= 65535:
        raise ValueError(raw)
    return port
