"""The gateway: an MCP server on the SDK's lowlevel `Server` that forwards to the supervisor.

- tools/list: the supervisor's exposed tools (`GET /v1/tools`), non-deferred servers only,
  under their exposed names (`server__tool`).
- tools/call: `POST /v1/tools/call` with `via: gateway` and approval mode `wait`, so every
  call passes the same approval gate as `monad mcp call`; a call that is not approved
  within `approval_timeout` s, or is denied, is a tool error (`isError: true`) whose text
  says why. A cancelled request aborts the HTTP request, and the supervisor cancels the
  upstream call (notifications/cancelled).
- list changes: a long poll on `GET /v1/tools/changes` publishes `ToolsListChanged` to
  2026-07-28 `subscriptions/listen` streams and sends `notifications/tools/list_changed`
  to every legacy (≤ 2025-11-25) session seen (MCP spec, server/tools "List Changed").
- transports: stdio, or streamable HTTP on 127.0.0.1 only with a bearer token from
  `run/gateway.token` (0600) and the SDK's Host/Origin checks (CA-2).
"""

from __future__ import annotations

import hmac
import logging
import os
import secrets
import socket
import sys
import weakref
from typing import Any

import anyio
import httpx2
import mcp_types as types
from mcp.server import Server
from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from monad_cli import __version__
from monad_cli.paths import Paths

log = logging.getLogger("monad.gateway")
_OUR_KEYS = {"callId", "server", "tool", "name", "decidedBy"}
_SERVER_INFO_META = "io.modelcontextprotocol/serverInfo"


def token_path(paths: Paths) -> Any:
    return paths.run_dir / "gateway.token"


def gateway_token(paths: Paths) -> str:
    """The gateway's bearer token: created once (≥ 256 bits), 0600, reused across runs."""
    path = token_path(paths)
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        pass
    paths.ensure()
    token = secrets.token_urlsafe(32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(token + "\n")
    return token


class Gateway:
    def __init__(self, paths: Paths, *, approval_timeout: float) -> None:
        self.paths = paths
        self.approval_timeout = approval_timeout
        self.bus = InMemorySubscriptionBus()
        self.listen = ListenHandler(self.bus)
        self.legacy_sessions: weakref.WeakSet[Any] = weakref.WeakSet()
        # No read deadline: a call may wait for a person's approval, then run long.
        self.api = httpx2.AsyncClient(transport=httpx2.AsyncHTTPTransport(uds=str(paths.socket)),
                                      base_url="http://monad", timeout=httpx2.Timeout(30.0, read=None))
        self.server: Server[Any] = Server("monad", version=__version__, title="monad gateway",
                                          on_list_tools=self.list_tools, on_call_tool=self.call_tool,
                                          on_subscriptions_listen=self.listen)

    def _remember(self, ctx: Any) -> None:
        if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            self.legacy_sessions.add(ctx.session)

    async def list_tools(self, ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        self._remember(ctx)
        resp = await self.api.get("/v1/tools")
        resp.raise_for_status()
        tools = []
        for row in resp.json()["tools"]:
            if row.get("deferred"):
                continue
            tools.append(types.Tool.model_validate({k: v for k, v in row.items()
                                                    if k not in ("server", "tool", "autoApproved", "deferred")}))
        return types.ListToolsResult(tools=tools)

    async def call_tool(self, ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        self._remember(ctx)
        body = {"name": params.name, "arguments": params.arguments or {}, "via": "gateway",
                "approval": {"mode": "wait", "timeout": self.approval_timeout}}
        resp = await self.api.post("/v1/tools/call", json=body)
        data = resp.json()
        if resp.status_code == 200:
            result = {k: v for k, v in data.items() if k not in _OUR_KEYS}
            meta = {k: v for k, v in (result.pop("_meta", None) or {}).items() if k != _SERVER_INFO_META}
            if meta:  # the upstream server's own identity is not ours to pass on
                result["_meta"] = meta
            return types.CallToolResult.model_validate(result)
        err = data.get("error", {}) if isinstance(data, dict) else {}
        message = err.get("message", f"HTTP {resp.status_code}")
        if resp.status_code == 404:
            raise MCPError(code=types.INVALID_PARAMS, message=message)
        # Refusals, invalid arguments and upstream failures are tool errors the model can read.
        return types.CallToolResult(content=[types.TextContent(type="text", text=message)], is_error=True)

    async def watch_changes(self) -> None:
        """Long-poll the supervisor and tell every client when the exposed tool set changes."""
        since = ""
        while True:
            try:
                resp = await self.api.get("/v1/tools/changes", params={"since": since, "timeout": "30"},
                                          timeout=httpx2.Timeout(30.0, read=60.0))
                signature = resp.json()["signature"]
            except (httpx2.HTTPError, ValueError, KeyError) as exc:
                log.warning("gateway: watching tool changes failed (%s); retrying", exc)
                await anyio.sleep(1.0)
                continue
            if since and signature != since:
                await self.notify_changed()
            since = signature

    async def notify_changed(self) -> None:
        await self.bus.publish(ToolsListChanged())
        for session in list(self.legacy_sessions):
            try:
                await session.send_tool_list_changed()
            except Exception:  # noqa: BLE001 - a gone client must not stop the others
                self.legacy_sessions.discard(session)

    def init_options(self) -> Any:
        return self.server.create_initialization_options(NotificationOptions(tools_changed=True))

    async def serve_stdio(self) -> None:
        from mcp.server.stdio import stdio_server

        async with anyio.create_task_group() as tg:
            tg.start_soon(self.watch_changes)
            async with stdio_server() as (read, write):
                await self.server.run(read, write, self.init_options())
            tg.cancel_scope.cancel()

    async def serve_http(self, port: int) -> None:
        import uvicorn

        token = gateway_token(self.paths)
        app = BearerGuard(self.server.streamable_http_app(host="127.0.0.1", streamable_http_path="/mcp"), token)
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", port))  # loopback only, never 0.0.0.0 (CA-2)
        sock.listen(128)
        bound = sock.getsockname()[1]
        config = uvicorn.Config(app, lifespan="on", log_level="warning", access_log=False)
        server = uvicorn.Server(config)
        sys.stderr.write(f"monad gateway: http://127.0.0.1:{bound}/mcp (bearer token in "
                         f"`{token_path(self.paths)}`)\n")
        sys.stderr.flush()
        async with anyio.create_task_group() as tg:
            tg.start_soon(self.watch_changes)
            await server.serve(sockets=[sock])
            tg.cancel_scope.cancel()


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


def run_gateway(paths: Paths, *, http: bool, port: int, approval_timeout: float) -> None:
    """Serve until stdin closes (stdio) or Ctrl-C (HTTP)."""
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="monad gateway: %(message)s")
    gw = Gateway(paths, approval_timeout=approval_timeout)
    if http:
        anyio.run(gw.serve_http, port)
    else:
        anyio.run(gw.serve_stdio)
