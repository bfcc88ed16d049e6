"""`GET /metrics` on a loopback listener, protected as the HTTP gateway's listener is
(`gateway/http.py`): a bind on 127.0.0.1 only, and `Authorization: Bearer <token>` on every
request, the token in `run/metrics.token` (0600, ≥ 256 bits, created once and reused),
compared in constant time. Prometheus reads it with `authorization: {credentials_file: …}`
(docs/telemetry.md "Scrape config")."""

from __future__ import annotations

import contextlib
import hmac
import logging
import os
import secrets
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import uvicorn

from monad_cli.daemon.telemetry.prometheus import CONTENT_TYPE

log = logging.getLogger("monad.telemetry")


def metrics_token(path: Path) -> str:
    """The bearer token in `path`: created once (≥ 256 bits), 0600, reused across runs."""
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        pass
    token = secrets.token_urlsafe(32)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # made by another start meanwhile
        return path.read_text().strip()
    with os.fdopen(fd, "w") as f:
        f.write(token + "\n")
    return token


class MetricsApp:
    """ASGI: `GET /metrics` with the bearer token → the exposition text; 401 without it,
    404 for any other path, 405 for any other method."""

    def __init__(self, text: Callable[[], bytes], token: str) -> None:
        self.text = text
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        given = dict(scope.get("headers") or []).get(b"authorization", b"")
        if not hmac.compare_digest(given, self.expected):
            await self._answer(send, 401, b"missing or wrong bearer token (see run/metrics.token)\n",
                               [(b"www-authenticate", b'Bearer realm="monad"')])
        elif scope["path"] != "/metrics":
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


class _Server(uvicorn.Server):
    # The supervisor owns signal handling; uvicorn must not install its own.
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def bind(port: int) -> socket.socket:
    """A listening socket on 127.0.0.1:`port` (0: any free port; never 0.0.0.0). Raises
    `ConfigError` naming the setting when the port is taken (not `Conflict`: to the starter
    that means another supervisor won the start)."""
    from monad_cli.core.errors import ConfigError

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", port))
    except OSError as e:
        sock.close()
        raise ConfigError(f"cannot listen on 127.0.0.1:{port} for /metrics: {e.strerror or e}; change "
                          f"`telemetry.prometheus_port` in settings.toml (0 picks a free port)",
                          file="settings.toml", field="telemetry.prometheus_port") from None
    sock.listen(64)
    sock.setblocking(False)
    return sock


async def serve_metrics(text: Callable[[], bytes], sock: socket.socket, token: str, *, until: anyio.Event) -> None:
    """Serve `GET /metrics` on `sock` until `until` is set."""
    config = uvicorn.Config(MetricsApp(text, token), lifespan="off", log_config=None, access_log=False,
                            timeout_graceful_shutdown=1)
    server = _Server(config)

    async def stop_when_told() -> None:
        await until.wait()
        server.should_exit = True

    async with anyio.create_task_group() as tg:
        tg.start_soon(stop_when_told)
        try:
            await server.serve(sockets=[sock])
        finally:
            tg.cancel_scope.cancel()
            sock.close()


__all__ = ["MetricsApp", "bind", "metrics_token", "serve_metrics"]
