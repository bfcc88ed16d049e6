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

import hmac
import logging
import socket
from typing import Any

import anyio

from monad_cli.core.errors import Conflict
from monad_cli.core.paths import Paths
from monad_cli.daemon.gateway.session import GatewaySession
from monad_cli.daemon.http import bearer_token
from monad_cli.daemon.serving import AppServer

log = logging.getLogger("monad.gateway")


def gateway_token(paths: Paths) -> str:
    """The HTTP gateway's bearer token (`run/gateway.token`): created once, 0600, reused."""
    paths.ensure()
    return bearer_token(paths.gateway_token)


class BearerGuard:
    """ASGI wrapper: every HTTP request needs `Authorization: Bearer <gateway token>`."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(given, self.expected):
                body = b'{"error": "missing or wrong bearer token (see run/gateway.token)"}'
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"application/json"),
                                        (b"www-authenticate", b'Bearer realm="monad"')]})
                await send({"type": "http.response.body", "body": body})
                return
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
                     until: anyio.Event) -> None:
    """Serve the session's streamable HTTP app on `sock` until `until` is set."""
    app = BearerGuard(session.server.streamable_http_app(host="127.0.0.1", streamable_http_path="/mcp"), token)
    # lifespan on: the SDK's app runs its session manager's task group in it; cut: an agent's
    # open event stream ends with the listener (Ctrl-C on `monad mcp serve --http`).
    server = AppServer(app, lifespan="on", timeout_graceful_shutdown=2, cut=True)
    try:
        await server.start(sock)
        await until.wait()
    finally:
        with anyio.CancelScope(shield=True):
            await server.stop()
        sock.close()


__all__ = ["BearerGuard", "bind_loopback", "gateway_token", "serve_http"]
