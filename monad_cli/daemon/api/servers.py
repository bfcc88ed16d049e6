"""Control API routes for server definitions and their live state (docs/supervisor.md
"Control API").

    GET    /v1/settings/mcp-servers               every definition, redacted, with its file
    POST   /v1/settings/mcp-servers               {name, definition, force?} → a new atom
    GET    /v1/settings/mcp-servers/status        {servers: [status row], problems, journal}
    GET    /v1/settings/mcp-servers/{name}        one definition, redacted, with its field errors
    PATCH  /v1/settings/mcp-servers/{name}        fields to set (null removes one)
    DELETE /v1/settings/mcp-servers/{name}        remove it from its file
    GET    /v1/settings/mcp-servers/{name}/status one status row, in detail
    POST   /v1/mcp-servers/reconnect              every server that can connect
    POST   /v1/mcp-servers/{name}/reconnect
    GET    /v1/mcp-servers/{name}/tools           the server's tools as it listed them

Definitions are written only through `config.edits` (the CLI's locked path), then reconciled
before the answer. Never a secret value in an answer: definitions pass `redact_definition`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anyio
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from monad_cli.config import edits
from monad_cli.config.loader import held_secrets_of
from monad_cli.config.schema import field_errors
from monad_cli.core.errors import Conflict, InvalidInput
from monad_cli.core.order import name_key
from monad_cli.core.redact import redact_definition
from monad_cli.daemon.http import door, read_json_body, via
from monad_cli.daemon.port import actor_named

if TYPE_CHECKING:
    from monad_cli.config.loader import Definitions
    from monad_cli.core.paths import Paths
    from monad_cli.daemon.port import DaemonPort


def definitions_listing(paths: Paths, defs: Definitions) -> list[dict[str, Any]]:
    """`[{name, source, definition}]` of every definition, by name, redacted (a value equal to
    another definition's secret or the env file's too: `held_secrets_of`)."""
    known = held_secrets_of(paths, defs.raw.values())
    return [{"name": name, "source": source, "definition": redact_definition(defs.raw.get(name, {}), known)}
            for name, source in sorted(defs.sources.items(), key=lambda kv: name_key(kv[0]))]


def journal_status(port: DaemonPort) -> dict[str, Any] | None:
    """The journal's backend and health (`Journal.status`; the URL without its password),
    with `tasks` (the tasks store's writes: `TaskStore.status`) and `log` (`daemon.log`'s:
    `HeldLogHandler.status`), each of which a full disk may hold in memory too."""
    from monad_cli.daemon.logfile import log_status

    if port.journal is None:
        return None
    out = port.journal.status()
    if port.tasks is not None:
        out["tasks"] = port.tasks.store.status()
    return {**out, "log": log_status()}


def server_routes(port: DaemonPort) -> list[Route]:
    async def edited(request: Request, what: str, name: str, source: str, fields: list[str]) -> None:
        """Journal a definition edited through the API, with its door (field names only, never
        values), and apply it before the answer."""
        if port.journal is not None:
            port.journal.record("edit", server=name, reason=f"{what} {door(request)} ({source})", detail={
                "via": via(request), "action": what, "source": source, "fields": sorted(fields)})
        await port.reconcile()

    async def list_servers(request: Request) -> JSONResponse:
        await port.reconcile()
        return JSONResponse(definitions_listing(port.paths, port.definitions))

    async def get_server(request: Request) -> JSONResponse:
        name = request.path_params["name"]
        source, raw = edits.read_definition(port.paths, name)
        # What is wrong with it as written, so the edit form shows each problem at its field
        # (a hand-written `start = "ondemand"`) before anyone saves.
        errors = [{"field": e.field, "message": str(e)}
                  for e in field_errors(raw, name=name, source=source) if e.field]
        return JSONResponse({"name": name, "source": source, "definition": redact_definition(
            raw, held_secrets_of(port.paths, port.definitions.raw.values())), "errors": errors})

    async def add_server(request: Request) -> JSONResponse:
        body = await read_json_body(request)
        name = body.get("name")
        definition = body.get("definition")
        if not isinstance(name, str) or not isinstance(definition, dict):
            raise InvalidInput('expected {"name": ..., "definition": {...}}')
        force = bool(body.get("force"))
        path = await anyio.to_thread.run_sync(lambda: edits.add_server(port.paths, name, definition, force=force))
        await edited(request, "added", name, f"atoms/mcp/{name}.toml", list(definition))
        return JSONResponse({"name": name, "path": path}, status_code=201)

    async def patch_server(request: Request) -> JSONResponse:
        name = request.path_params["name"]
        body = await read_json_body(request)
        source = await anyio.to_thread.run_sync(lambda: edits.update_server(port.paths, name, body))
        await edited(request, "edited", name, source, list(body))
        return JSONResponse({"name": name, "source": source})

    async def delete_server(request: Request) -> JSONResponse:
        name = request.path_params["name"]
        source = await anyio.to_thread.run_sync(lambda: edits.remove_server(port.paths, name))
        await edited(request, "removed", name, source, [])
        return JSONResponse({"name": name, "source": source})

    async def status(request: Request) -> JSONResponse:
        await port.reconcile()
        detail = request.query_params.get("detail") in ("1", "true")
        return JSONResponse({"servers": port.status(detail=detail), "problems": port.file_problems,
                             "journal": journal_status(port)})

    async def server_status(request: Request) -> JSONResponse:
        await port.reconcile()
        name = request.path_params["name"]
        actor_named(port, name)
        return JSONResponse(port.status(name=name, detail=True)[0])

    def not_reconnectable(name: str, actor: Any) -> str | None:
        """Why reconnecting `name` would change nothing (an invalid definition, disabled,
        filtered out), or None when it can reconnect."""
        filtered = port.server_filter.reason(name)
        if actor.spec is None:
            # `monad mcp get` of an invalid definition only repeats the reason: name the file.
            where = f"`{actor.source}`" if getattr(actor, "source", None) else "its file"
            return (f"its definition is invalid ({actor.reason})" if actor.reason else
                    "its definition is invalid") + f"; it connects live once {where} is fixed"
        if not actor.spec.enabled:
            return f"disabled (enabled = false); `monad mcp enable {name}` connects it"
        return f"filtered out: {filtered}" if filtered else None

    async def reconnect(request: Request) -> JSONResponse:
        """Drop the session and connect again; `Conflict` (409) saying why when a reconnect
        would change nothing (an invalid definition, disabled, filtered out)."""
        await port.reconcile()
        actor = actor_named(port, request.path_params["name"])
        why = not_reconnectable(actor.name, actor)
        if why is not None:
            raise Conflict(f"not reconnecting `{actor.name}`: {why}")
        actor.reconnect()
        if via(request) == "studio" and port.journal is not None:
            port.journal.record("action", server=actor.name, reason="reconnect asked from the Studio",
                                detail={"via": "studio", "action": "reconnect"})
        # A broken edit beside a running definition: the reconnect uses the last good one.
        return JSONResponse({"name": actor.name, "reconnecting": True, "configError": actor.config_error})

    async def reconnect_all(request: Request) -> JSONResponse:
        """Reconnect every server that can connect; `skipped` names the others and why
        (filtered out, disabled, an invalid definition), which a reconnect does not change."""
        await port.reconcile(force=True)
        reconnecting, skipped = [], []
        for name, actor in sorted(port.actors.items(), key=lambda kv: name_key(kv[0])):
            # Fifty on-demand servers must not all start at one `--all`.
            why = not_reconnectable(name, actor) or (
                f"on demand and idle (`monad mcp reconnect {name}` starts it)" if actor.listed else None)
            if why is None:
                actor.reconnect()
                reconnecting.append(name)
            else:
                skipped.append({"name": name, "reason": why})
        return JSONResponse({"reconnecting": reconnecting, "skipped": skipped})

    async def tools(request: Request) -> JSONResponse:
        actor = actor_named(port, request.path_params["name"])
        return JSONResponse([t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in actor.tools]
                            if actor.live or actor.listed else [])

    return [
        Route("/v1/settings/mcp-servers", list_servers),
        Route("/v1/settings/mcp-servers", add_server, methods=["POST"]),
        Route("/v1/settings/mcp-servers/status", status),
        Route("/v1/settings/mcp-servers/{name}", get_server),
        Route("/v1/settings/mcp-servers/{name}", patch_server, methods=["PATCH"]),
        Route("/v1/settings/mcp-servers/{name}", delete_server, methods=["DELETE"]),
        Route("/v1/settings/mcp-servers/{name}/status", server_status),
        Route("/v1/mcp-servers/reconnect", reconnect_all, methods=["POST"]),
        Route("/v1/mcp-servers/{name}/reconnect", reconnect, methods=["POST"]),
        Route("/v1/mcp-servers/{name}/tools", tools),
    ]
