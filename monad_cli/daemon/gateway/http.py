"""The HTTP gateway: `monad mcp serve --http`, served by the supervisor itself on loopback.

One listener per `monad mcp serve --http` (its relay connection holds it open; closing it
stops the listener), one `GatewaySession` behind it shared by its HTTP clients: facts,
filters and `load_tools` loads are that command's. The SDK's streamable HTTP app serves
`/mcp` (both eras: 2025-11-25 sessions and 2026-07-28 requests) behind:

- a bind on 127.0.0.1 only, never 0.0.0.0: no other host may call tools;
- `Authorization: Bearer <token>` on every request, the token in `run/gateway.token`
  (0600, ≥ 256 bits, created once and reused), compared in constant time;
- the SDK's DNS-rebinding protection: `Host` must be loopback:port and a present `Origin`
  loopback (MCP spec, basic/transports "Security Warning").
"""

from __future__ import annotations

import json
import logging
import socket
from typing import Any

import anyio

from monad_cli.core.errors import Conflict
from monad_cli.core.paths import Paths
from monad_cli.daemon.bounds import authenticated
from monad_cli.daemon.gateway.session import GatewaySession
from monad_cli.daemon.http import bearer_matches, bearer_refusal, bearer_token, empty_token_message
from monad_cli.daemon.serving import AppServer

log = logging.getLogger("monad.gateway")
TOKEN_FILE = "run/gateway.token"
MAX_SESSIONS = 100
"""Streamable HTTP sessions one `monad mcp serve --http` listener keeps at once (each MCP
client connection is one; ~37 kB each): a client asking for more gets the SDK's 503."""


def gateway_token(paths: Paths) -> str:
    """The HTTP gateway's bearer token (`run/gateway.token`): created once, 0600, reused."""
    paths.ensure()
    return bearer_token(paths.gateway_token)


class BearerGuard:
    """ASGI wrapper: every HTTP request needs `Authorization: Bearer <gateway token>` (the
    scheme in any case: `bearer_matches`). An empty token (an emptied `run/gateway.token`)
    refuses every request, saying so to the client and, once, in the log."""

    def __init__(self, app: Any, token: str, *, token_file: str = TOKEN_FILE) -> None:
        self.app = app
        self.token = token
        self.refusal = json.dumps({"error": bearer_refusal(token, token_file)}).encode()
        if not token:
            log.warning("HTTP gateway: %s", empty_token_message(token_file))

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not bearer_matches(given, self.token):
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"application/json"),
                                        (b"www-authenticate", b'Bearer realm="monad"')]})
                await send({"type": "http.response.body", "body": self.refusal})
                return
            authenticated()
        await self.app(scope, receive, send)


def bind_loopback(port: int) -> socket.socket:
    """A listening TCP socket on 127.0.0.1:`port` (0: any free port). Raises Conflict when
    the port is taken."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", port))  # loopback only, never 0.0.0.0
    except OSError as e:
        sock.close()
        raise Conflict(f"cannot listen on 127.0.0.1:{port}: {e.strerror or e}; pick another --port "
                       f"(0 picks a free one)") from None
    sock.listen(128)
    sock.setblocking(False)
    return sock


async def serve_http(session: GatewaySession, sock: socket.socket, token: str, *,
                     until: anyio.Event, session_idle: float) -> None:
    """Serve the session's streamable HTTP app on `sock` until `until` is set. The SDK's
    session manager ends a streamable HTTP session after `session_idle` seconds without a
    request in flight (its ID then answers 404, and the client starts a new session: MCP
    basic/transports "Session Management"), and keeps at most `MAX_SESSIONS`."""
    app = BearerGuard(session.server.streamable_http_app(
        host="127.0.0.1", streamable_http_path="/mcp", session_idle_timeout=session_idle,
        max_sessions=MAX_SESSIONS), token)
    # lifespan on: the SDK's app runs its session manager's task group in it; cut: an agent's
    # open event stream ends with the listener (Ctrl-C on `monad mcp serve --http`).
    server = AppServer(app, what=f"the HTTP gateway on port {sock.getsockname()[1]}", lifespan="on",
                       timeout_graceful_shutdown=2, cut=True)
    await server.serve(sock, until)


__all__ = ["BearerGuard", "bind_loopback", "gateway_token", "serve_http"]
