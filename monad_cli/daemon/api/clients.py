"""Control API routes for the agents (MCP clients) on this machine: the Studio's Agents page
(docs/studio.md "Agents"), through the same code as `monad mcp connect` (`clients.connector`).

    GET  /v1/clients                       {clients: [row]}: each known client but the
                                           project ones (`.mcp.json`, Aura's), whether it is
                                           connected, the file `connect` changes and the
                                           entry it writes there (`connector.client_row`)
    POST /v1/clients/{name}/connect        {replace?} → what `monad mcp connect NAME
                                           [--replace]` returns, then `client` (the row after)
    POST /v1/clients/{name}/disconnect     → what `monad mcp connect NAME --remove` returns,
                                           then `client`

Only a client's usual file is ever changed: the page cannot name a path. Each change is a
journal row (`kind = "client"`, `detail.via`, `detail.file`). The files are read and written
in a worker thread, which also imports `clients.connector` (there, not when the routes are
built): every agent's file format, ~50 ms of CPU most supervisors never spend.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anyio
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from monad_cli.core.errors import InvalidInput, NotFound
from monad_cli.daemon.http import door, read_json_body, via

if TYPE_CHECKING:
    from monad_cli.daemon.port import DaemonPort


def _check_connectable(name: str) -> None:
    """Raises `NotFound` unless `name` is a client `connect` can change (not a project one)."""
    from monad_cli.clients.registry import CLIENTS

    if name not in CLIENTS or CLIENTS[name].project:
        raise NotFound(f"no agent `{name}` to connect here (see GET /v1/clients)")


def _rows() -> list[dict[str, Any]]:
    from monad_cli.clients import connector

    return connector.client_rows()


def client_routes(port: DaemonPort) -> list[Route]:
    async def listing(request: Request) -> JSONResponse:
        return JSONResponse({"clients": await anyio.to_thread.run_sync(_rows)})

    async def change(request: Request) -> JSONResponse:  # `…/connect` and `…/disconnect`
        name, remove = request.path_params["name"], request.url.path.endswith("/disconnect")
        await anyio.to_thread.run_sync(_check_connectable, name)
        body = await read_json_body(request)
        replace = body.get("replace", False)
        if not isinstance(replace, bool):
            raise InvalidInput("`replace` must be true or false")

        def work() -> dict[str, Any]:
            from monad_cli.clients import connector

            result = connector.connect_client(name, None, remove=remove, replace=replace)
            return {**result, "client": connector.client_row(name)}

        result = await anyio.to_thread.run_sync(work)
        if result["changed"] and port.journal is not None:
            what = "disconnected" if remove else "connected"
            port.journal.record("client", reason=f"{what} {result['client']['title']} (`{result['file']}`) "
                                f"{door(request)}", detail={"via": via(request), "action": what, "client": name,
                                                            "file": result["file"], "replaced": result["replaced"]})
        return JSONResponse(result)

    return [Route("/v1/clients", listing),
            Route("/v1/clients/{name}/connect", change, methods=["POST"]),
            Route("/v1/clients/{name}/disconnect", change, methods=["POST"])]


__all__ = ["client_routes"]
