"""Control API routes for what one server offers besides tools: its resources, resource
templates and prompts (MCP spec, server/resources and server/prompts), for the Studio's
server pane and any caller of the control API.

    GET  /v1/mcp-servers/{name}/resources        {resources: [Resource], templates: [ResourceTemplate],
                                                  offers: {resources, prompts} | null}
    POST /v1/mcp-servers/{name}/resources/read   {uri} → ReadResourceResult (`contents`: each
                                                  {uri, mimeType?, text | blob (base64)})
    GET  /v1/mcp-servers/{name}/prompts          {prompts: [Prompt], offers}
    POST /v1/mcp-servers/{name}/prompts/get      {name, arguments?: {str: str}} → GetPromptResult
                                                  ({description?, messages: [{role, content}]})

Items are in the server's own names and wire shapes, through the gateway's `Catalog`
(gateway/catalog.py), the path an agent's reads and gets take: an idle on-demand server is
listed from its cached lists and started for a read or a get; each is journaled
(`resource.read`, `prompt.get`, with `via`); the server's questions during one are refused.
`offers`: which of the two the live session's server declared (null while not connected). A
caller that disconnects cancels its read or get. Errors: 404 for an unknown server, or a
resource the server does not have (MCP -32002); 400 (`invalid_input`) for bad params; 502
(`tool_call_failed`) for any other failure of the server (a bad shape included), scrubbed.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from mcp.shared.exceptions import MCPError
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from monad_cli.core.errors import InvalidInput, MonadError, NotFound, ToolCallFailed
from monad_cli.daemon.gateway.catalog import RESOURCE_NOT_FOUND
from monad_cli.daemon.http import read_json_body, until_disconnect, via
from monad_cli.daemon.port import actor_named

if TYPE_CHECKING:
    from monad_cli.daemon.port import DaemonPort

INVALID_PARAMS = -32602  # JSON-RPC 2.0


def _wire(result: Any) -> Any:
    return result.model_dump(by_alias=True, mode="json", exclude_none=True) if result is not None else {}


async def _upstream(request: Request, work: Callable[[], Awaitable[Any]]) -> Any:
    """`work()` until the caller goes away; the server's MCP error as the API's kinds."""
    try:
        return await until_disconnect(request, work)
    except MCPError as e:  # the catalog's messages name the server and are scrubbed already
        kind: type[MonadError] = (NotFound if e.error.code == RESOURCE_NOT_FOUND else
                                  InvalidInput if e.error.code == INVALID_PARAMS else ToolCallFailed)
        raise kind(f"{e.error.message} (MCP error {e.error.code})") from None


def feature_routes(sup: DaemonPort) -> list[Route]:
    def server_of(request: Request) -> str:
        return actor_named(sup, request.path_params["name"]).name

    def only(name: str) -> Callable[[str], bool]:
        return lambda server: server == name

    def offers(name: str) -> dict[str, bool] | None:
        caps = sup.actors[name].capabilities
        return None if caps is None else {"resources": caps.resources is not None,
                                          "prompts": caps.prompts is not None}

    async def resources(request: Request) -> JSONResponse:
        name = server_of(request)
        # The server's failure to list, in one line (502), not a 500 with pydantic's traceback.
        listed = await _upstream(request, lambda: sup.catalog.resources(only(name), tag=False, strict=True))
        templates = await _upstream(request, lambda: sup.catalog.templates(only(name), tag=False, strict=True))
        return JSONResponse({"resources": listed, "templates": templates, "offers": offers(name)})

    async def read(request: Request) -> JSONResponse:
        name = server_of(request)
        body = await read_json_body(request)
        uri = body.get("uri")
        if not isinstance(uri, str) or not uri:
            raise InvalidInput('expected {"uri": "..."} (the resource\'s URI, a string)')
        result = await _upstream(request, lambda: sup.catalog.read(uri, only(name), via=via(request), single=name))
        return JSONResponse(_wire(result))

    async def prompts(request: Request) -> JSONResponse:
        name = server_of(request)
        listed = await _upstream(request, lambda: sup.catalog.prompts(only(name), single=name, strict=True))
        return JSONResponse({"prompts": listed, "offers": offers(name)})

    async def get(request: Request) -> JSONResponse:
        name = server_of(request)
        body = await read_json_body(request)
        prompt, arguments = body.get("name"), body.get("arguments") or {}
        if not isinstance(prompt, str) or not prompt:
            raise InvalidInput('expected {"name": "...", "arguments": {...}} (the prompt\'s name, a string)')
        if not isinstance(arguments, dict) or not all(isinstance(v, str) for v in arguments.values()):
            raise InvalidInput("prompt arguments must be an object of strings (MCP spec, server/prompts)")
        result = await _upstream(request, lambda: sup.catalog.get_prompt(
            prompt, arguments, only(name), via=via(request), single=name))
        return JSONResponse(_wire(result))

    return [
        Route("/v1/mcp-servers/{name}/resources", resources),
        Route("/v1/mcp-servers/{name}/resources/read", read, methods=["POST"]),
        Route("/v1/mcp-servers/{name}/prompts", prompts),
        Route("/v1/mcp-servers/{name}/prompts/get", get, methods=["POST"]),
    ]
