"""The HTTP gateway: `monad mcp serve --http`, served by the supervisor itself on loopback.

One listener per `monad mcp serve --http` (its relay connection holds it open; closing it
stops the listener), one `GatewaySession` behind it shared by its HTTP clients: facts,
filters and `load_tools` loads are that command's. The SDK's streamable HTTP app serves
`/mcp` (both eras: 2025-11-25 sessions and 2026-07-28 requests) behind:

- a bind on 127.0.0.1 only, never 0.0.0.0: no other host may call tools;
- `Authorization: Bearer <token>` on every request, the token in `run/gateway.token`
  (0600, ≥ 256 bits, created once and reused), compared in constant time;
- the SDK's DNS-rebinding protection: `Host` must be loopback:port and a present `Origin`
  loopback (MCP spec, basic/transports "Security Warning");
- a request under an id its session still has in flight refused (`OneRequestPerId`).
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
from monad_cli.daemon.serving import AppServer, listen_loopback

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


class OneRequestPerId:
    """ASGI wrapper: a POST carrying a request whose id its session (`Mcp-Session-Id`) still
    has in flight (from its POST until the SDK's app is done with it) is answered HTTP 400
    with `-32600` under that id and never reaches the SDK, whose dispatcher would leave one
    of the two unanswered (MCP basic: "The request ID MUST NOT have been previously used by
    the requestor within the same session"; gateway/wire.py's rule). Ids are compared as
    sent (7 and "7" are two). A body over `MAX_PEEK` bytes is handed on unread (the SDK
    refuses it by its own size limit)."""

    MAX_PEEK = 4 * 1024 * 1024

    def __init__(self, app: Any) -> None:
        self.app = app
        self.held: set[tuple[bytes, str]] = set()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        session = dict(scope.get("headers") or []).get(b"mcp-session-id") if scope["type"] == "http" else None
        if session is None or scope["method"] != "POST":
            return await self.app(scope, receive, send)
        taken: list[Any] = []  # what was read, handed to the app again before the rest
        body, more = b"", True
        while more and len(body) <= self.MAX_PEEK:
            message = await receive()
            taken.append(message)
            if message["type"] != "http.request":
                break
            body += message.get("body", b"")
            more = message.get("more_body", False)

        async def replay() -> Any:
            return taken.pop(0) if taken else await receive()

        request_id = _request_id(body) if not more else None
        key = (session, json.dumps(request_id)) if request_id is not None else None
        if request_id is not None and key in self.held:
            from monad_cli.daemon.gateway.wire import in_flight_line

            answer = in_flight_line(request_id).strip()
            await send({"type": "http.response.start", "status": 400,
                        "headers": [(b"content-type", b"application/json"),
                                    (b"content-length", str(len(answer)).encode())]})
            await send({"type": "http.response.body", "body": answer})
            return None
        if key is not None:
            self.held.add(key)
        try:
            return await self.app(scope, replay, send)
        finally:
            if key is not None:
                self.held.discard(key)


def _request_id(body: bytes) -> int | str | None:
    """The id of the JSON-RPC request `body` holds (an int or a string), else None."""
    try:
        message = json.loads(body)
    except ValueError:
        return None
    if not isinstance(message, dict) or "method" not in message:
        return None
    found = message.get("id")
    return found if isinstance(found, int | str) and not isinstance(found, bool) else None


def bind_loopback(port: int) -> socket.socket:
    """A listening TCP socket on 127.0.0.1:`port` (0: any free port). Raises Conflict when
    the port is taken."""
    try:
        return listen_loopback(port)
    except OSError as e:
        raise Conflict(f"cannot listen on 127.0.0.1:{port}: {e.strerror or e}; pick another --port "
                       f"(0 picks a free one)") from None


async def serve_http(session: GatewaySession, sock: socket.socket, token: str, *,
                     until: anyio.Event, session_idle: float) -> None:
    """Serve the session's streamable HTTP app on `sock` until `until` is set. The SDK's
    session manager ends a streamable HTTP session after `session_idle` seconds without a
    request in flight (its ID then answers 404, and the client starts a new session: MCP
    basic/transports "Session Management"), and keeps at most `MAX_SESSIONS`."""
    app = BearerGuard(OneRequestPerId(session.server.streamable_http_app(
        host="127.0.0.1", streamable_http_path="/mcp", session_idle_timeout=session_idle,
        max_sessions=MAX_SESSIONS)), token)
    # lifespan on: the SDK's app runs its session manager's task group in it; cut: an agent's
    # open event stream ends with the listener (Ctrl-C on `monad mcp serve --http`).
    server = AppServer(app, what=f"the HTTP gateway on port {sock.getsockname()[1]}", lifespan="on",
                       timeout_graceful_shutdown=2, cut=True)
    await server.serve(sock, until)


__all__ = ["BearerGuard", "OneRequestPerId", "bind_loopback", "gateway_token", "serve_http"]
