"""`GET /metrics` on a loopback listener, protected as the HTTP gateway's listener is
(`gateway/http.py`): a bind on 127.0.0.1 only, and `Authorization: Bearer <token>` on every
request, the token in `run/metrics.token` (0600, ≥ 256 bits, created once and reused),
compared in constant time. Prometheus reads it with `authorization: {credentials_file: …}`
(docs/telemetry.md "Scrape config")."""

from __future__ import annotations

import logging
import socket
from collections.abc import Callable
from typing import Any

import anyio

from monad_cli.daemon.bounds import authenticated
from monad_cli.daemon.http import bearer_matches, bearer_refusal, empty_token_message
from monad_cli.daemon.serving import AppServer, listen_loopback

log = logging.getLogger("monad.telemetry")
TOKEN_FILE = "run/metrics.token"
# The Prometheus text exposition format that `prometheus_client.generate_latest` writes.
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class MetricsApp:
    """ASGI: `GET /metrics` with the bearer token → the exposition text; 401 without it,
    404 for any other path, 405 for any other method."""

    def __init__(self, text: Callable[[], bytes], token: str) -> None:
        self.text = text
        self.token = token
        self.refusal = (bearer_refusal(token, TOKEN_FILE) + "\n").encode()
        if not token:
            log.warning("/metrics: %s", empty_token_message(TOKEN_FILE))

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        given = dict(scope.get("headers") or []).get(b"authorization", b"")
        if not bearer_matches(given, self.token):
            await self._answer(send, 401, self.refusal, [(b"www-authenticate", b'Bearer realm="monad"')])
            return
        authenticated()
        if scope["path"] != "/metrics":
            await self._answer(send, 404, b"only /metrics is served here\n")
        elif scope["method"] not in ("GET", "HEAD"):
            await self._answer(send, 405, b"GET /metrics\n", [(b"allow", b"GET, HEAD")])
        else:
            await self._answer(send, 200, self.text(), content_type=CONTENT_TYPE.encode())

    @staticmethod
    async def _answer(send: Any, status: int, body: bytes, headers: list[tuple[bytes, bytes]] | None = None, *,
                      content_type: bytes = b"text/plain; charset=utf-8") -> None:
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", content_type), *(headers or [])]})
        await send({"type": "http.response.body", "body": body})


def bind(port: int) -> socket.socket:
    """A listening socket on 127.0.0.1:`port` (0: any free port; never 0.0.0.0). Raises
    `ConfigError` naming the setting when the port is taken (not `Conflict`: to the starter
    that means another supervisor won the start)."""
    from monad_cli.core.errors import ConfigError

    try:
        return listen_loopback(port)
    except OSError as e:
        raise ConfigError(f"cannot listen on 127.0.0.1:{port} for /metrics: {e.strerror or e}; change "
                          f"`telemetry.prometheus_port` in settings.toml (0 picks a free port)",
                          file="settings.toml", field="telemetry.prometheus_port") from None


async def serve_metrics(text: Callable[[], bytes], sock: socket.socket, token: str, *, until: anyio.Event) -> None:
    """Serve `GET /metrics` on `sock` until `until` is set (the supervisor's one uvicorn runner,
    daemon/serving.py)."""
    server = AppServer(MetricsApp(text, token), what=f"/metrics on port {sock.getsockname()[1]}",
                       timeout_graceful_shutdown=1)
    await server.serve(sock, until)


__all__ = ["MetricsApp", "bind", "serve_metrics"]
