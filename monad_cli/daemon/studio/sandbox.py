"""The MCP Apps sandbox proxy's port: a second loopback listener, another origin than the
Studio page (ext-apps spec 2026-01-26 "Sandbox proxy": the host and the sandbox MUST have
different origins). It serves one thing, `sandbox/proxy.html`, and only as a frame of the
Studio page. Its locks, in order, for every request:

1. `Host` must be `127.0.0.1:PORT` or `localhost:PORT` of this listener (DNS rebinding) → 403;
2. only `GET`/`HEAD` of `/sandbox/proxy.html` → else 404 (there is no API here);
3. the browser must say it loads a frame of a page of the same site (`Sec-Fetch-Dest:
   iframe`, `Sec-Fetch-Site: same-site`), so a tab opening it, or another site framing it, is
   refused → 403;
4. `?host=ORIGIN` must be the Studio page's own origin (`http://127.0.0.1:P` or
   `http://localhost:P`, P the Studio's current port) → 403. It is written into the proxy,
   which then talks to that origin only;
5. the answer carries `Content-Security-Policy: frame-ancestors <that origin>` (no other
   page may frame it), `nosniff`, `Referrer-Policy: no-referrer`, `no-store`.

No cookie is read or set: the proxy holds nothing, and the app inside it gets nothing from it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from urllib.parse import parse_qs

from starlette.types import Receive, Scope, Send

PROXY_PATH = "/sandbox/proxy.html"
PROXY_FILE = Path(__file__).resolve().parent / "sandbox" / "proxy.html"
_SLOT = b"__MONAD_HOST_ORIGIN__"


class SandboxProxy:
    """ASGI app of the sandbox port. `port()`: this listener's port; `page_port()`: the Studio
    page's current port (None while it serves none)."""

    def __init__(self, *, port: Callable[[], int], page_port: Callable[[], int | None],
                 template: Path = PROXY_FILE) -> None:
        self.port = port
        self.page_port = page_port
        self.template = template.read_bytes()
        assert self.template.count(_SLOT) == 1

    def page_origins(self) -> set[str]:
        p = self.page_port()
        return {f"http://127.0.0.1:{p}", f"http://localhost:{p}"} if p else set()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        if scope["type"] != "http":
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        port = self.port()
        if headers.get("host") not in (f"127.0.0.1:{port}", f"localhost:{port}"):
            await _answer(send, 403, "this sandbox answers only at its own loopback address")
            return
        if scope["method"] not in ("GET", "HEAD") or scope["path"] != PROXY_PATH:
            await _answer(send, 404, "not found")
            return
        if headers.get("sec-fetch-dest") != "iframe" or headers.get("sec-fetch-site") != "same-site":
            await _answer(send, 403, "the MCP App sandbox opens only as a frame of the monad Studio page")
            return
        host = (parse_qs(scope.get("query_string", b"").decode("latin-1")).get("host") or [""])[0]
        if host not in self.page_origins():
            await _answer(send, 403, "the MCP App sandbox serves only the monad Studio page on this machine")
            return
        body = self.template.replace(_SLOT, json.dumps(host).encode())
        await send({"type": "http.response.start", "status": 200, "headers": [
            (b"content-type", b"text/html; charset=utf-8"),
            (b"content-length", str(len(body)).encode()),
            # Only frame-ancestors: fetch directives here would be inherited by the app's
            # srcdoc document and narrow the policy the app declared (proxy.html).
            (b"content-security-policy", f"frame-ancestors {host}".encode()),
            (b"x-content-type-options", b"nosniff"),
            (b"referrer-policy", b"no-referrer"),
            (b"cache-control", b"no-store"),
            (b"cross-origin-resource-policy", b"same-site"),
        ]})
        await send({"type": "http.response.body", "body": b"" if scope["method"] == "HEAD" else body})


async def _answer(send: Send, status: int, message: str) -> None:
    body = message.encode()
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode()),
        (b"cache-control", b"no-store"), (b"x-content-type-options", b"nosniff"),
        (b"content-security-policy", b"default-src 'none'; frame-ancestors 'none'")]})
    await send({"type": "http.response.body", "body": body})
