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

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
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

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        if scope["type"] != "http":
            return
        request, port, page = Request(scope), self.port(), self.page_port()
        headers, host = request.headers, request.query_params.get("host", "")
        response: Response
        if headers.get("host") not in (f"127.0.0.1:{port}", f"localhost:{port}"):
            response = _refusal(403, "this sandbox answers only at its own loopback address")
        elif scope["method"] not in ("GET", "HEAD") or scope["path"] != PROXY_PATH:
            response = _refusal(404, "not found")
        elif headers.get("sec-fetch-dest") != "iframe" or headers.get("sec-fetch-site") != "same-site":
            response = _refusal(403, "the MCP App sandbox opens only as a frame of the monad Studio page")
        elif not page or host not in (f"http://127.0.0.1:{page}", f"http://localhost:{page}"):
            response = _refusal(403, "the MCP App sandbox serves only the monad Studio page on this machine")
        else:
            body = self.template.replace(_SLOT, json.dumps(host).encode())
            # uvicorn sends no body to a HEAD.
            response = Response(body, media_type="text/html", headers={
                # Only frame-ancestors: fetch directives here would be inherited by the app's
                # srcdoc document and narrow the policy the app declared (proxy.html).
                "content-security-policy": f"frame-ancestors {host}", "x-content-type-options": "nosniff",
                "referrer-policy": "no-referrer", "cache-control": "no-store",
                "cross-origin-resource-policy": "same-site"})
        await response(scope, receive, send)


def _refusal(status: int, message: str) -> Response:
    return PlainTextResponse(message, status, headers={
        "cache-control": "no-store", "x-content-type-options": "nosniff",
        "content-security-policy": "default-src 'none'; frame-ancestors 'none'"})
