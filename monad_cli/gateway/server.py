"""The gateway: an MCP server on the SDK's lowlevel `Server` that forwards to the supervisor.

- tools/list: the supervisor's exposed tools (`GET /v1/tools`) under their exposed names
  (`server__tool`), as `monad_cli/gateway/policy.py` decides: deferred tools only once
  loaded with the meta-tool `load_tools`, servers whose `condition` does not hold (against
  `--fact`s and this process's environment) and servers left out by `--include-mcps` /
  `--exclude-mcps` not at all. Conditions are re-evaluated on every list and call; loads
  last for this gateway process (docs/filtering.md).
- tools/call: `POST /v1/tools/call` with `via: gateway` and approval mode `wait`, so every
  call passes the same approval gate as `monad mcp call`; a call that is not approved
  within `approval_timeout` s, or is denied, is a tool error (`isError: true`) whose text
  says why. A cancelled request aborts the HTTP request, and the supervisor cancels the
  upstream call (notifications/cancelled).
- list changes: a long poll on `GET /v1/tools/changes` publishes `ToolsListChanged` to
  2026-07-28 `subscriptions/listen` streams and sends `notifications/tools/list_changed`
  to every legacy (≤ 2025-11-25) session seen (MCP spec, server/tools "List Changed").
- transports: stdio, or streamable HTTP on 127.0.0.1 only with a bearer token from
  `run/gateway.token` (0600) and the SDK's Host/Origin checks (MCP spec, basic/transports
  "Security Warning": DNS rebinding).
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

from monad_cli import __version__, render
from monad_cli.control.envelope import decode_error
from monad_cli.errors import MonadError, NotFound
from monad_cli.filters import ServerFilter
from monad_cli.gateway.policy import (
    LOAD_TOOLS,
    LoadedTools,
    check_call,
    load_tools,
    load_tools_tool,
    offers_load_tools,
    server_available,
    visible_tools,
)
from monad_cli.paths import Paths

log = logging.getLogger("monad.gateway")
_OUR_KEYS = {"callId", "server", "tool", "name", "decidedBy"}
_ROW_KEYS = ("server", "tool", "autoApproved", "deferred", "condition")
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
    """One `monad mcp serve` process: an MCP server (the SDK's lowlevel `Server`) whose
    tools are the supervisor's exposed tools, filtered by this process's view (facts,
    server filters, `load_tools` loads, which last as long as the process).

    It owns no MCP client session and no approval: every call goes to the supervisor's
    tool service (`POST /v1/tools/call`, approval mode `wait`), so it passes the same gate
    as `monad mcp call`. It never reads a definition file or a secret, and never answers a
    call itself except the local `load_tools` meta-tool.
    """

    def __init__(self, paths: Paths, *, approval_timeout: float, facts: dict[str, str] | None = None,
                 server_filter: ServerFilter | None = None, environ: dict[str, str] | None = None) -> None:
        self.paths = paths
        self.approval_timeout = approval_timeout
        self.facts = dict(facts or {})
        self.server_filter = server_filter
        self.environ = dict(os.environ if environ is None else environ)
        self.loaded = LoadedTools()
        self.bus = InMemorySubscriptionBus()
        self.listen = ListenHandler(self.bus)
        self.legacy_sessions: weakref.WeakSet[Any] = weakref.WeakSet()
        self._signature: str | None = None  # the exposed set's signature, from the long poll
        self._rows_cache: tuple[str | None, list[dict[str, Any]]] | None = None
        # No read deadline: a call may wait for a person's approval, then run long.
        self.api = httpx2.AsyncClient(transport=httpx2.AsyncHTTPTransport(uds=str(paths.socket)),
                                      base_url="http://monad", timeout=httpx2.Timeout(30.0, read=None))
        self.server: Server[Any] = Server("monad", version=__version__, title="monad gateway",
                                          on_list_tools=self.list_tools, on_call_tool=self.call_tool,
                                          on_subscriptions_listen=self.listen)

    def _remember(self, ctx: Any) -> None:
        # `ctx.session` is built per request; the SDK exposes no public handle on the
        # long-lived per-client Connection, whose standalone channel carries notifications.
        if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            conn = getattr(ctx.session, "_connection", None)
            if conn is not None:
                self.legacy_sessions.add(conn)

    async def _rows(self) -> list[dict[str, Any]]:
        """The supervisor's `/v1/tools` rows, reused while the long poll reports no change
        (every tools/call needs them; fetching them each time costs a round trip)."""
        cached = self._rows_cache
        if cached is not None and self._signature is not None and cached[0] == self._signature:
            return cached[1]
        resp = await self.api.get("/v1/tools")
        data = _answer(resp)
        rows = list(data["tools"])
        self._rows_cache = (data.get("signature"), rows)
        return rows

    def _policy(self, rows: list[dict[str, Any]]) -> dict[str, Any]:
        """The policy's inputs from `/v1/tools` rows. The supervisor already decided
        which tools are deferred (server flag or tools.toml glob); exposed names are
        `[A-Za-z0-9_-]` only, so each deferred name is an exact-match glob."""
        by_server: dict[str, list[str]] = {}
        conditions: dict[str, str | None] = {}
        for row in rows:
            by_server.setdefault(row["server"], []).append(row["name"])
            conditions[row["server"]] = row.get("condition")
        return dict(tools_by_server=by_server, deferred_servers=(),
                    deferred_globs=[r["name"] for r in rows if r.get("deferred")], conditions=conditions,
                    facts=self.facts, environ=self.environ, server_filter=self.server_filter)

    async def list_tools(self, ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        self._remember(ctx)
        rows = await self._rows()
        policy = self._policy(rows)
        by_server = policy.pop("tools_by_server")
        shown = set(visible_tools(by_server, loaded=self.loaded, **policy))
        tools = [types.Tool.model_validate({k: v for k, v in row.items() if k not in _ROW_KEYS})
                 for row in rows if row["name"] in shown]
        available = {s: names for s, names in by_server.items()
                     if server_available(s, conditions=policy["conditions"], facts=self.facts,
                                         environ=self.environ, server_filter=self.server_filter)}
        if offers_load_tools(available, deferred_servers=(), deferred_globs=policy["deferred_globs"]):
            tools.append(types.Tool.model_validate(load_tools_tool(
                available, deferred_servers=(), deferred_globs=policy["deferred_globs"])))
        return types.ListToolsResult(tools=tools)

    async def _load_tools(self, arguments: dict[str, Any]) -> types.CallToolResult:
        """The `load_tools` meta-tool: local to the gateway (no upstream call, no approval)."""
        policy = self._policy(await self._rows())
        try:
            result = load_tools(self.loaded, servers=arguments.get("servers") or [],
                                tools=arguments.get("tools") or [], **policy)
        except ValueError as e:
            return types.CallToolResult(content=[types.TextContent(type="text", text=str(e))], is_error=True)
        self.loaded = result.loaded
        if result.changed:
            await self.notify_changed()
        failed = not result.added and bool(result.unknown_servers or result.unmatched_globs or result.hidden)
        return types.CallToolResult(content=[types.TextContent(type="text", text=result.summary())],
                                    is_error=failed)

    async def call_tool(self, ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        self._remember(ctx)
        if params.name == LOAD_TOOLS:
            return await self._load_tools(params.arguments or {})
        policy = self._policy(await self._rows())
        by_server = policy.pop("tools_by_server")
        if any(params.name in names for names in by_server.values()):
            refused = check_call(params.name, by_server, conditions=policy["conditions"], facts=self.facts,
                                 environ=self.environ, server_filter=self.server_filter)
            if refused:
                return types.CallToolResult(content=[types.TextContent(type="text", text=refused)], is_error=True)
        body = {"name": params.name, "arguments": params.arguments or {}, "via": "gateway",
                "approval": {"mode": "wait", "timeout": self.approval_timeout}}
        resp = await self.api.post("/v1/tools/call", json=body)
        try:
            data = _answer(resp)
        except NotFound as e:  # no such tool: a protocol error (MCP spec, server/tools "Error Handling")
            raise MCPError(code=types.INVALID_PARAMS, message=e.message) from None
        except MonadError as e:
            # Refusals, invalid arguments and upstream failures are tool errors the model can read.
            return types.CallToolResult(content=[types.TextContent(type="text", text=e.message)], is_error=True)
        result = {k: v for k, v in data.items() if k not in _OUR_KEYS}
        meta = {k: v for k, v in (result.pop("_meta", None) or {}).items() if k != _SERVER_INFO_META}
        if meta:  # the upstream server's own identity is not ours to pass on
            result["_meta"] = meta
        return types.CallToolResult.model_validate(result)

    async def watch_changes(self) -> None:
        """Long-poll the supervisor and tell every client when the exposed tool set changes."""
        since = ""
        while True:
            try:
                resp = await self.api.get("/v1/tools/changes", params={"since": since, "timeout": "30"},
                                          timeout=httpx2.Timeout(30.0, read=60.0))
                signature = _answer(resp)["signature"]
            except (httpx2.HTTPError, MonadError, ValueError, KeyError) as exc:
                log.warning("gateway: watching tool changes failed (%s); retrying", exc)
                await anyio.sleep(1.0)
                continue
            self._signature = signature
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
        sock.bind(("127.0.0.1", port))  # loopback only, never 0.0.0.0: no other host may call tools
        sock.listen(128)
        bound = sock.getsockname()[1]
        config = uvicorn.Config(app, lifespan="on", log_level="warning", access_log=False)
        server = uvicorn.Server(config)
        render.info(f"monad gateway: http://127.0.0.1:{bound}/mcp (bearer token in `{token_path(self.paths)}`)")
        async with anyio.create_task_group() as tg:
            tg.start_soon(self.watch_changes)
            await server.serve(sockets=[sock])
            tg.cancel_scope.cancel()


def _answer(resp: httpx2.Response) -> Any:
    """The decoded JSON of a control API answer; an error answer raises its kind
    (`control/envelope.py`), as the CLI client does."""
    try:
        data = resp.json() if resp.content else None
    except ValueError:
        data = None
    if resp.status_code >= 400:
        raise decode_error(resp.status_code, data)
    if data is None:
        raise MonadError(f"the supervisor sent a non-JSON answer to {resp.request.method} {resp.request.url.path}")
    return data


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


def run_gateway(paths: Paths, *, http: bool, port: int, approval_timeout: float,
                facts: dict[str, str] | None = None, server_filter: ServerFilter | None = None) -> None:
    """Serve until stdin closes (stdio) or Ctrl-C (HTTP)."""
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="monad gateway: %(message)s")
    gw = Gateway(paths, approval_timeout=approval_timeout, facts=facts, server_filter=server_filter)
    if http:
        anyio.run(gw.serve_http, port)
    else:
        anyio.run(gw.serve_stdio)
