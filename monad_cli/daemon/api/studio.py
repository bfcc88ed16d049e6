"""What the control API gains for the Studio, on the unix socket and the Studio's port alike.

    POST   /v1/studio                        {port?, defaultPort?} → {url, port, started, movedFrom, file}
                                             (the Studio's port refuses it: locks.py)
    POST   /v1/studio/sign-out               {} → {signedOut: N}: end every session of the page
    GET    /v1/studio/tools                  the Tools view: `GET /v1/tools` rows + `formSchema`
                                             (inputSchema, local $refs resolved) + `ui` ({resourceUri}),
                                             and the name `collisions` (as `GET /v1/tools`)
    GET    /v1/journal[?server=NAME][&limit=N]        events, newest first (a fleet's shared
                                             rows when its link is up: `shared: true`)
    GET    /v1/journal/calls[?server=NAME][&limit=N]  tool calls, with the arguments the
                                             transcript kept in memory
    GET    /v1/studio/apps/resource · POST /v1/studio/apps/request   MCP Apps (apps.py)
    POST   /v1/mcp-servers/{name}/authorize  start `monad mcp authorize`'s flow → 202 the run
    GET    /v1/mcp-servers/{name}/authorize  the last run of that server
    DELETE /v1/mcp-servers/{name}/authorize  cancel it
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from monad_cli.core.errors import InvalidInput, NotFound, Unavailable
from monad_cli.core.studio import DEFAULT_PORT
from monad_cli.daemon.api.servers import definitions_listing
from monad_cli.daemon.http import limit_param, read_json_body, until_disconnect
from monad_cli.daemon.port import actor_named
from monad_cli.daemon.studio.apps import INTERNAL, AppHost
from monad_cli.daemon.studio.authorize import AuthorizeDeps, AuthorizeRuns
from monad_cli.daemon.studio.events import EventBus
from monad_cli.daemon.studio.scrub import scrub_data
from monad_cli.daemon.studio.transcript import MAX_CALLS, Transcript
from monad_cli.daemon.trust.gate import standing_approval
from monad_cli.daemon.trust.visibility import resource_uri
from monad_cli.tools.schema_refs import resolve_local

if TYPE_CHECKING:
    from starlette.applications import Starlette

    from monad_cli.daemon.port import DaemonPort
    from monad_cli.daemon.studio.service import Studio

log = logging.getLogger("monad.studio")
MAX_JOURNAL_ROWS = 500


class StudioHub:
    """The Studio's side of one control server.

    Owns: the event bus and what feeds it (the supervisor's state, tool and reload listeners,
    only while a page listens; the transcript's events), the Studio service once `POST
    /v1/studio` asks for it, the authorization runs, and the MCP Apps host.

    Never: keeps server state of its own (only the collision lines it last published), writes
    a definition, decides an approval, or publishes anything the redaction function has not
    passed (`publish`)."""

    def __init__(self, sup: DaemonPort, control_app: Callable[[], Starlette]) -> None:
        self.control_app = control_app
        self.sup = sup
        self.bus = EventBus()
        self.studio: Studio | None = None
        # Each server's collision lines as its last `server.state` event carried them.
        self._collisions_shown: dict[str, list[str]] = {}
        self.authorize = AuthorizeRuns(AuthorizeDeps(
            paths=sup.paths, scrub=sup.scrub, publish=self.publish, record=self._record_auth,
            reconnect=self._reconnect, start_soon=sup.start_soon, reload=sup.reconcile))
        # Calls to a server whose grant lapsed join these runs, and show as Authorize cards.
        sup.tool_service.authorization.flows = self.authorize
        sup.tool_service.authorization.listeners.append(self.publish)
        self.transcript = Transcript(sup.tool_service, sup.tasks, publish=self.publish,
                                     listening=lambda: self.bus.listening, start_soon=sup.start_soon)
        self.apps = AppHost(sup.tool_service, sup.catalog, sup.tool_service.journal, scrub=sup.scrub)
        sup.on_state(self._on_actor)
        sup.on_tools(self._on_actor)
        sup.on_config(lambda _diff: self._on_config())
        # Login files an earlier run left (a crash, a kill): their tokens died with it.
        from monad_cli.daemon.studio.login_file import LoginFiles

        LoginFiles(sup.paths.run_dir).clear()

    def publish(self, type_: str, data: dict[str, Any]) -> None:
        """An event to every open page, every string of it scrubbed (scrub.py)."""
        if self.bus.listening:
            self.bus.publish(type_, scrub_data(data, self.sup.scrub))

    def snapshot(self) -> dict[str, Any]:
        """`{servers: [status row], problems: [{file, message}], definitions: [{name, source,
        definition}], approvals: [pending request]}`, as `GET …/status`, `GET
        /v1/settings/mcp-servers` and `GET /v1/approvals` answer (redacted), and `authorizations`:
        the calls waiting for their server's authorization (trust/authorization.py)."""
        return scrub_data({"servers": self.sup.status(), "problems": self.sup.file_problems,
                           "definitions": definitions_listing(self.sup.paths, self.sup.definitions),
                           "approvals": self.sup.tool_service.gate.listing(),
                           "authorizations": self.sup.tool_service.authorization.listing()}, self.sup.scrub)

    def _on_actor(self, actor: Any) -> None:
        # A removed server's actor still reports `stopped` on its way out; it is no row any more.
        name: str = actor.name
        if not self.bus.listening or self.sup.actors.get(name) is not actor:
            return
        # The row as `GET …/status` answers it: `collisions` and `toolsRefused` are the
        # supervisor's, which the actor's own row lacks.
        self.publish("server.state", {"server": self.sup.status(name=name)[0]})
        # A collision is the state of two servers: when this one's tools (or its going away)
        # make or end one, the other side's row changes too, without an event of its own.
        now = self.sup.all_collisions()  # one pass over every server's lists
        for other in {*now, *self._collisions_shown}:
            if other != name and other in self.sup.actors and now.get(other) != self._collisions_shown.get(other):
                self.publish("server.state", {"server": self.sup.status(name=other)[0]})
        self._collisions_shown = now

    def _on_config(self) -> None:
        if self.bus.listening:
            self.publish("config", self.snapshot())

    def _record_auth(self, server: str, reason: str, detail: dict[str, Any]) -> None:
        if self.sup.journal is not None:
            self.sup.journal.record("auth", server=server, reason=reason, detail=detail)

    def _reconnect(self, name: str) -> None:
        actor = self.sup.actors.get(name)
        if actor is not None:
            actor.reconnect()

    def service(self) -> Studio:
        from monad_cli.daemon.studio.login_file import LoginFiles
        from monad_cli.daemon.studio.service import Studio, StudioDeps
        from monad_cli.daemon.studio.state import StudioState

        if self.studio is None:
            self.studio = Studio(StudioDeps(control_app=self.control_app(), snapshot=self.snapshot,
                                            refresh=self.sup.reconcile, stopping=self.sup.stop_event,
                                            start_soon=self.sup.start_soon,
                                            state=StudioState(self.sup.paths.studio_state),
                                            login_files=LoginFiles(self.sup.paths.run_dir)),
                                 self.bus)
        return self.studio

    async def resume(self) -> None:
        """At the supervisor's start: serve the page again on its port if it was served before
        (`studio.json`), whichever way the supervisor started."""
        if self.sup.paths.studio_state.exists():
            await self.service().resume()


def _port(value: Any, what: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 65535:
        raise InvalidInput(f"{what} must be a port number from 0 to 65535, got {value!r}")
    return value


def studio_routes(sup: DaemonPort, hub: StudioHub) -> list[Route]:
    async def serve_studio(request: Request) -> JSONResponse:
        body = await read_json_body(request)
        port = _port(body.get("port"), "`--port`")
        default = _port(body.get("defaultPort"), "the default port")
        answer = await hub.service().serve(port=port, default_port=DEFAULT_PORT if default is None else default)
        return JSONResponse(answer)

    async def sign_out(request: Request) -> JSONResponse:
        await read_json_body(request)
        return JSONResponse({"signedOut": await hub.studio.sign_out() if hub.studio is not None else 0})

    async def studio_tools(request: Request) -> JSONResponse:
        rows = sup.tool_service.listing()
        for row in rows:
            actor = sup.actors.get(row["server"])
            row["approval"] = None if actor is None else standing_approval(sup.tool_service.gate, actor, row["tool"])
            row["formSchema"] = resolve_local(row.get("inputSchema") or {})
            uri = resource_uri(row.get("_meta"))
            row["ui"] = {"resourceUri": uri} if uri else None
        # As `GET /v1/tools` has them: each renamed tool says why on its row.
        return JSONResponse({"tools": rows, "collisions": sup.tool_service.name_map().collisions})

    def known(request: Request) -> str:
        return actor_named(sup, request.path_params["name"]).name

    async def authorize(request: Request) -> JSONResponse:
        name = known(request)
        return JSONResponse(await hub.authorize.start(name), status_code=202)

    async def authorize_run(request: Request) -> JSONResponse:
        """GET (and so HEAD): the last run of the server's authorization; DELETE: cancel it."""
        name = known(request)
        run = (hub.authorize.cancel if request.method == "DELETE" else hub.authorize.view)(name)
        if run is None:
            raise NotFound(f"server `{name}` has no authorization in progress")
        return JSONResponse(run)

    return [
        Route("/v1/studio", serve_studio, methods=["POST"]),
        Route("/v1/studio/sign-out", sign_out, methods=["POST"]),
        Route("/v1/studio/tools", studio_tools),
        *journal_routes(sup, hub.transcript),
        *app_routes(hub.apps),
        Route("/v1/mcp-servers/{name}/authorize", authorize, methods=["POST"]),
        Route("/v1/mcp-servers/{name}/authorize", authorize_run, methods=["GET", "DELETE"]),
    ]


def journal_routes(sup: DaemonPort, transcript: Transcript) -> list[Route]:
    async def journal(request: Request) -> JSONResponse:
        server = request.query_params.get("server") or None
        limit = limit_param(request, 50, MAX_JOURNAL_ROWS)
        journal_db = sup.journal
        if journal_db is None:
            return JSONResponse({"events": []})
        if journal_db.link is not None and journal_db.link.state() == "ok":
            # A fleet: the shared journal's rows of this server, from every host (docs/fleet.md).
            from monad_cli.journal import reader

            try:
                rows = await anyio.to_thread.run_sync(lambda: reader.from_shared(
                    journal_db.settings, lambda db: reader.events(db, server=server, limit=limit)))
                return JSONResponse({"events": rows, "shared": True})
            except Unavailable as e:  # the link went down meanwhile: this supervisor's own rows
                log.info("studio journal: %s", e.message)
        rows = await anyio.to_thread.run_sync(lambda: journal_db.events(server=server, limit=limit))
        return JSONResponse({"events": rows, "shared": False})

    async def calls(request: Request) -> JSONResponse:
        server = request.query_params.get("server") or None
        journal = transcript.tools.journal
        return JSONResponse({"calls": await transcript.calls(server=server, limit=limit_param(request, 100, MAX_CALLS)),
                             "fleet": journal.settings.fleet, "host": journal.host})

    return [Route("/v1/journal", journal), Route("/v1/journal/calls", calls)]


def app_routes(host: AppHost) -> list[Route]:
    async def resource(request: Request) -> JSONResponse:
        name = request.query_params.get("name")
        if not name:
            raise InvalidInput("expected ?name=server__tool")
        return JSONResponse(await host.resource(name))

    async def app_request(request: Request) -> JSONResponse:
        body = await read_json_body(request)
        answer = await until_disconnect(request, lambda: host.request(body))
        return JSONResponse(answer if answer is not None else {"jsonrpc": "2.0", "id": None, "error": {
            "code": INTERNAL, "message": "the page went away"}})

    return [Route("/v1/studio/apps/resource", resource),
            Route("/v1/studio/apps/request", app_request, methods=["POST"])]
