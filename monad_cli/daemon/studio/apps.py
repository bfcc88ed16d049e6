"""MCP Apps (extension `io.modelcontextprotocol/ui`, ext-apps spec 2026-01-26): the Studio's
host side in the supervisor. The page renders the app (static/js/apphost.js, behind the
sandbox proxy: sandbox.py); everything an app asks for comes here.

    GET  /v1/studio/apps/resource?name=EXPOSED   the app of a tool → {server, tool, name, uri,
         html (wrapped behind its policy), policy, csp (approved), dropped, permissions, prefersBorder}
    POST /v1/studio/apps/request                 {name, message, hostContext?, confirmed?}
         → the JSON-RPC response to hand the app: {jsonrpc, id, result | error}

Every request an app makes (`message`, as the page received it) is validated as a JSON-RPC
2.0 request, answered, and journaled (`kind = "app"`, `detail.method`, `detail.outcome`):

- `ui/initialize` → protocolVersion, hostInfo, hostCapabilities (the CSP sources granted,
  no permissions: camera, microphone and the like are never granted), the page's
  hostContext plus `toolInfo`;
- `tools/call` → only a tool of the app's own server whose visibility includes "app"
  (trust/visibility.py), through `ToolService.call(via="app")` and its approval gate (a
  refusal is a JSON-RPC error to the app); a call of a tool the server does not have gets
  its `tool_calls` rows too (`refused`, `monad (not_found)`);
- `resources/read` → a resource of the app's own server, through the gateway's catalog
  (gateway/catalog.py: journaled `resource.read`, `via: app`), as an agent's read;
- `ui/open-link` → only an http(s) URL without credentials, and only once the person
  confirmed it in the page's dialog (`confirmed: true`); declined → an error;
- `ui/request-display-mode` → `inline` (the only mode); `ping` → `{}`;
- anything else (`ui/message`, `ui/update-model-context`: monad has no conversation) →
  -32601; a malformed message → -32600.
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from mcp.client import advertise
from mcp.shared.exceptions import MCPError

from monad_cli import __version__
from monad_cli.core.errors import CallRefused, InvalidInput, MonadError, NotFound
from monad_cli.daemon.studio import csp
from monad_cli.daemon.trust.call import ToolCall
from monad_cli.daemon.trust.visibility import resource_uri

if TYPE_CHECKING:
    from mcp.client import ClientExtension
    from mcp_types import ReadResourceResult

    from monad_cli.daemon.gateway.catalog import Catalog
    from monad_cli.daemon.trust.service import ToolService
    from monad_cli.journal.db import Journal

log = logging.getLogger("monad.studio")
EXTENSION_ID = "io.modelcontextprotocol/ui"
APP_MIME = "text/html;profile=mcp-app"
APPS_PROTOCOL = "2026-01-26"
MAX_HTML = 4 * 1024 * 1024
MAX_URL = 2048
HOST_CONTEXT_KEYS = ("theme", "styles", "displayMode", "availableDisplayModes", "containerDimensions", "locale",
                     "timeZone", "userAgent", "platform", "deviceCapabilities", "safeAreaInsets")
APPROVAL_TIMEOUT_S = 120.0
INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, INTERNAL, REFUSED = -32600, -32601, -32602, -32603, -32000
_MONAD_KEYS = ("callId", "server", "tool", "name", "decidedBy", "serverStderr")


def apps_extension() -> ClientExtension:
    """What monad's `mcp.Client` advertises: `capabilities.extensions["io.modelcontextprotocol/ui"]
    = {"mimeTypes": ["text/html;profile=mcp-app"]}` (spec "Client<>Server Capability
    Negotiation"), so a server may offer its tools' UIs."""
    return advertise(EXTENSION_ID, {"mimeTypes": [APP_MIME]})


class RpcError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


def link_problem(url: Any) -> str | None:
    """Why `url` may not be opened (None: it may): only http(s), with a host, no credentials,
    no whitespace or control characters."""
    if not isinstance(url, str) or not url or len(url) > MAX_URL:
        return "the link must be a URL of at most 2048 characters"
    if any(c.isspace() or ord(c) < 0x20 or ord(c) == 0x7F for c in url):
        return "the link contains spaces or control characters"
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        return f"only http and https links are opened (this one is {parts.scheme or 'relative'})"
    if not parts.hostname:
        return "the link has no host"
    if parts.username is not None or parts.password is not None:
        return "a link with a user name or password is not opened"
    return None


def _check_message(message: Any) -> tuple[Any, str, dict[str, Any]]:
    """(id, method, params) of a JSON-RPC 2.0 request, or RpcError(-32600)."""
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        raise RpcError(INVALID_REQUEST, "not a JSON-RPC 2.0 message")
    rid = message.get("id")
    if isinstance(rid, bool) or not isinstance(rid, str | int) or (isinstance(rid, str) and len(rid) > 128):
        raise RpcError(INVALID_REQUEST, "a request needs an id (a string or a number)")
    method = message.get("method")
    if not isinstance(method, str) or not method or len(method) > 128:
        raise RpcError(INVALID_REQUEST, "a request needs a method name")
    params = message.get("params", {})
    if not isinstance(params, dict):
        raise RpcError(INVALID_REQUEST, "params must be an object")
    return rid, method, params


def _rpc_error(exc: MonadError) -> RpcError:
    if isinstance(exc, NotFound | InvalidInput):
        return RpcError(INVALID_PARAMS, exc.message)
    if isinstance(exc, CallRefused):
        return RpcError(REFUSED, exc.message)
    return RpcError(INTERNAL, exc.message)


class AppHost:
    """Owns the answers to MCP Apps' requests and their journal rows."""

    def __init__(self, tools: ToolService, catalog: Catalog, journal: Journal, *,
                 scrub: Callable[[str], str]) -> None:
        self.tools = tools
        self.catalog = catalog
        self.journal = journal
        self.scrub = scrub
        # The CSP sources each app was last served with, by (server, uri): what `ui/initialize`
        # tells the app it was granted (hostCapabilities.sandbox.csp).
        self.granted: dict[tuple[str, str], dict[str, list[str]]] = {}

    def _app_tool(self, exposed: str) -> tuple[str, Any, str]:
        """(server, tool, ui:// uri) of a tool that has an app. Raises NotFound."""
        actor, tool = self.tools.resolve(exposed)
        uri = resource_uri(tool.meta)
        if uri is None:
            raise NotFound(f"tool `{exposed}` has no MCP App (no `_meta.ui.resourceUri`)")
        return actor.name, tool, uri

    async def _read(self, server: str, uri: str, *, via: str) -> ReadResourceResult:
        """resources/read of `uri` on `server`, the path an agent's read takes (journaled
        `resource.read` with `via`). Raises MCPError, its message scrubbed, naming the server."""
        result: ReadResourceResult = await self.catalog.read(uri, lambda name: name == server, via=via,
                                                             single=server)
        return result

    async def resource(self, exposed: str) -> dict[str, Any]:
        """The app of tool `exposed`, read with `resources/read` from its server (spec "UI
        Resource Format"). Raises NotFound, InvalidInput (not an app resource), MonadError."""
        server, tool, uri = self._app_tool(exposed)
        try:
            result = await self._read(server, uri, via="studio")
        except MCPError as e:  # "server `NAME`: …", scrubbed
            raise MonadError(f"{e.error.message} (reading `{uri}`)") from None
        except MonadError:
            raise
        except Exception as exc:  # noqa: BLE001 - the server's failure, said in one line
            raise MonadError(self.scrub(f"server `{server}` could not read `{uri}`: {exc}")) from None
        contents = [c for c in result.contents if str(c.uri) == uri] or list(result.contents)
        if not contents:
            raise InvalidInput(f"server `{server}` returned nothing for `{uri}`")
        item = contents[0].model_dump(by_alias=True, exclude_none=True, mode="json")
        if item.get("mimeType") != APP_MIME:
            raise InvalidInput(f"`{uri}` of server `{server}` is `{item.get('mimeType')}`, not {APP_MIME}")
        page = item.get("text")
        if page is None and isinstance(item.get("blob"), str):
            page = base64.b64decode(item["blob"]).decode("utf-8", "replace")
        if not isinstance(page, str) or len(page) > MAX_HTML:
            raise InvalidInput(f"`{uri}` of server `{server}` is not an HTML document of at most 4 MiB")
        ui = (item.get("_meta") or {}).get("ui") or {}
        approved, dropped = csp.approve(ui.get("csp"))
        self.granted[(server, uri)] = approved
        text = csp.policy(approved)
        if dropped:
            log.warning("MCP App %s of %s: CSP sources dropped: %s", uri, server, ", ".join(dropped))
        log.info("MCP App %s of %s under CSP: %s", uri, server, text)  # the spec's audit trail
        return {"server": server, "tool": tool.name, "name": exposed, "uri": uri, "html": csp.wrap(page, text),
                "policy": text, "csp": approved, "dropped": dropped, "permissions": {},
                "prefersBorder": ui.get("prefersBorder") if isinstance(ui.get("prefersBorder"), bool) else None}

    async def request(self, body: dict[str, Any]) -> dict[str, Any]:
        """Answer one request of the app of tool `body["name"]`; always a JSON-RPC response."""
        exposed = body.get("name")
        if not isinstance(exposed, str):
            raise InvalidInput('expected {"name": "server__tool", "message": {...}}')
        server, tool, uri = self._app_tool(exposed)
        message = body.get("message")
        rid = message.get("id") if isinstance(message, dict) else None
        method = message.get("method") if isinstance(message, dict) else None
        detail = ""
        try:
            rid, method, params = _check_message(message)
            detail, result = await self._answer(server, tool, method, params, body)
            outcome = "ok"
            answer: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "result": result}
        except RpcError as e:
            outcome = ("rejected: " if e.code == INVALID_REQUEST else "refused: ") + e.message
            answer = {"jsonrpc": "2.0", "id": rid if isinstance(rid, str | int) and not isinstance(rid, bool)
                      else None, "error": {"code": e.code, "message": self.scrub(e.message)}}
        shown = method if isinstance(method, str) else "(malformed)"
        self.journal.record("app", server=server,
                            reason=f"MCP App of `{exposed}`: {shown[:128]}{detail} → {outcome}"[:500],
                            detail={"via": "studio", "tool": exposed, "uri": uri, "method": shown[:128],
                                    "outcome": "ok" if outcome == "ok" else outcome.split(":", 1)[0]})
        return answer

    async def _answer(self, server: str, tool: Any, method: str, params: dict[str, Any],
                      body: dict[str, Any]) -> tuple[str, Any]:
        """(what to add to the journal's reason, the result) of one valid request."""
        if method == "ui/initialize":
            return "", self._initialize(tool, body, self.granted.get((server, resource_uri(tool.meta) or ""), {}))
        if method == "ping":
            return "", {}
        if method == "ui/request-display-mode":
            return "", {"mode": "inline"}
        if method == "tools/call":
            return await self._call(server, params)
        if method == "resources/read":
            target = params.get("uri")
            if not isinstance(target, str):
                raise RpcError(INVALID_PARAMS, "resources/read needs a uri")
            try:
                read = await self._read(server, target, via="app")
            except MCPError as e:
                raise RpcError(e.error.code, e.error.message) from None
            except MonadError as e:
                raise _rpc_error(e) from None
            except Exception as exc:  # noqa: BLE001 - the server's failure goes back to the app
                raise RpcError(INTERNAL, f"server `{server}` could not read `{target}`: {exc}") from None
            return f" `{target[:200]}`", read.model_dump(by_alias=True, exclude_none=True, mode="json")
        if method == "ui/open-link":
            problem = link_problem(params.get("url"))
            if problem:
                raise RpcError(INVALID_PARAMS, problem)
            if body.get("confirmed") is not True:
                raise RpcError(REFUSED, "the person declined to open the link")
            return f" {params['url'][:300]}", {}
        raise RpcError(METHOD_NOT_FOUND, f"`{method}` is not supported by the monad Studio")

    def _initialize(self, tool: Any, body: dict[str, Any], granted: dict[str, list[str]]) -> dict[str, Any]:
        given = body.get("hostContext")
        context = {k: given[k] for k in HOST_CONTEXT_KEYS if k in given} if isinstance(given, dict) else {}
        if len(json.dumps(context, default=str)) > 16 * 1024:
            context = {}
        context["toolInfo"] = {"tool": tool.model_dump(by_alias=True, exclude_none=True, mode="json")}
        return {"protocolVersion": APPS_PROTOCOL, "hostInfo": {"name": "monad Studio", "version": __version__},
                "hostCapabilities": {"openLinks": {}, "serverTools": {}, "serverResources": {}, "logging": {},
                                     "sandbox": {"permissions": {}, "csp": granted}},
                "hostContext": context}

    async def _call(self, server: str, params: dict[str, Any]) -> tuple[str, Any]:
        name, arguments = params.get("name"), params.get("arguments") or {}
        if not isinstance(name, str) or not isinstance(arguments, dict):
            raise RpcError(INVALID_PARAMS, 'tools/call needs {"name": ..., "arguments": {...}}')
        exposed = self.tools.name_map().exposed_name(server, name)
        if exposed is None:
            # Still a call attempt: it gets its rows (`refused`, `monad (not_found)`) like any refused call.
            reason = f"server `{server}` has no tool `{name[:100]}`"
            self.tools.refuse(f"{server}__{name[:100]}", arguments, via="app", reason=reason, unknown=True)
            raise RpcError(INVALID_PARAMS, reason)
        try:
            out = await self.tools.call(ToolCall(exposed, arguments, via="app", app_of=server,
                                                 approval={"mode": "wait", "timeout": APPROVAL_TIMEOUT_S}))
        except MonadError as e:
            raise _rpc_error(e) from None
        return f" `{name[:100]}`", {k: v for k, v in out.items() if k not in _MONAD_KEYS}
