"""Control API server (docs/supervisor.md "Control API").

Starlette routes served by uvicorn on a unix socket we bind ourselves: 0600 inside the
0700 `run/` directory, and every connection's peer uid checked with SO_PEERCRED.
Routes raise `MonadError` kinds; `control/http.py`'s `ErrorBoundary` answers them as
`{"error": {"code": ..., "message": ...}}` with the kind's status. Every answer passes
through the one redaction function.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import struct
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import anyio
import uvicorn
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from uvicorn.protocols.http.h11_impl import H11Protocol

from monad_cli import __version__
from monad_cli.config import edits
from monad_cli.core.errors import InvalidInput, NotFound
from monad_cli.core.redact import redact_definition
from monad_cli.daemon.api.studio import studio_routes
from monad_cli.daemon.api.tasks import task_routes
from monad_cli.daemon.api.tools import tools_routes
from monad_cli.daemon.http import MAX_BODY, ErrorBoundary, read_json_body

if TYPE_CHECKING:
    from monad_cli.daemon.port import DaemonPort

log = logging.getLogger("monad.control")


class PeerCheckedH11(H11Protocol):
    """Refuse connections from another uid (root excepted: it can read the socket anyway)."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family == socket.AF_UNIX:
            creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
            _pid, uid, _gid = struct.unpack("3i", creds)
            if uid not in (os.getuid(), 0):
                log.warning("refused a control connection from uid %d", uid)
                transport.close()
                return
        super().connection_made(transport)


class _QuietServer(uvicorn.Server):
    # The supervisor owns signal handling; uvicorn must not install its own.
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


class ControlServer:
    """The control API (`/v1/`) on the unix socket: its routes, its socket and its uvicorn.

    Owns: binding `run/monad.sock` (0600, peers of another uid refused), the Starlette app
    (`self.app`: these routes plus `tools_routes` and `task_routes`, inside one
    `ErrorBoundary`), and starting and stopping the uvicorn server that serves it.

    Never: keeps API state of its own (every answer is read from the supervisor's actors,
    definitions and services at request time), opens an MCP session (the actors own them),
    writes a definition other than through `config.edits` (the locked path the CLI takes
    too), answers an error other than by raising a `MonadError` kind (the boundary maps
    it, scrubbed), or lets a secret value into an answer (definitions pass
    `redact_definition`).
    """

    def __init__(self, sup: DaemonPort) -> None:
        self.sup = sup
        self.server: _QuietServer | None = None
        self.sock: socket.socket | None = None
        self._task: asyncio.Task[None] | None = None
        self.app = Starlette(routes=self.routes(), middleware=[Middleware(ErrorBoundary, scrub=sup.scrub)])

    def routes(self) -> list[Route]:
        return [
            Route("/v1/health", self.health),
            Route("/v1/daemon/stop", self.stop_daemon, methods=["POST"]),
            Route("/v1/settings/mcp-servers", self.list_servers),
            Route("/v1/settings/mcp-servers", self.add_server, methods=["POST"]),
            Route("/v1/settings/mcp-servers/status", self.status),
            Route("/v1/settings/mcp-servers/{name}", self.get_server),
            Route("/v1/settings/mcp-servers/{name}", self.patch_server, methods=["PATCH"]),
            Route("/v1/settings/mcp-servers/{name}", self.delete_server, methods=["DELETE"]),
            Route("/v1/settings/mcp-servers/{name}/status", self.server_status),
            Route("/v1/mcp-servers/reconnect", self.reconnect_all, methods=["POST"]),
            Route("/v1/mcp-servers/{name}/reconnect", self.reconnect, methods=["POST"]),
            Route("/v1/mcp-servers/{name}/tools", self.tools),
            *tools_routes(self),
            *task_routes(self.sup.tasks),
            *studio_routes(self),
        ]

    async def _body(self, request: Request) -> dict[str, Any]:
        return await read_json_body(request)

    def _actor(self, name: str) -> Any:
        actor = self.sup.actors.get(name)
        if actor is None:
            raise NotFound(f"server `{name}` is not defined (see `monad mcp list`)")
        return actor

    def _journal_edit(self, request: Request, what: str, name: str, source: str, fields: list[str]) -> None:
        """A journal row for a definition edited through the API, saying through which door
        (`via`: "studio" when the Studio's listener passed it on, else "control"). Field names
        only, never values."""
        via = getattr(request.state, "via", "control")
        where = "from the Studio" if via == "studio" else "through the control API"
        if self.sup.journal is not None:
            self.sup.journal.record("edit", server=name, reason=f"{what} {where} ({source})",
                                    detail={"via": via, "action": what, "source": source, "fields": sorted(fields)})

    # -- endpoints -----------------------------------------------------------------------
    async def health(self, request: Request) -> JSONResponse:
        return JSONResponse({"pid": os.getpid(), "version": __version__, "home": str(self.sup.paths.home),
                             "startedAt": self.sup.started_at, "journal": self._journal()})

    def _journal(self) -> dict[str, Any] | None:
        """The journal's backend and health (`Journal.status`; the URL without its password)."""
        return self.sup.journal.status() if self.sup.journal is not None else None

    async def stop_daemon(self, request: Request) -> JSONResponse:
        from starlette.background import BackgroundTask

        # Stop once the answer is sent: stopping first would cut this very connection.
        return JSONResponse({"stopping": True, "pid": os.getpid()}, background=BackgroundTask(self.sup.stop_event.set))

    async def list_servers(self, request: Request) -> JSONResponse:
        await self.sup.reconcile()
        out = []
        for name, source in sorted(self.sup.definitions.sources.items()):
            raw = self.sup.definitions.raw.get(name, {})
            out.append({"name": name, "source": source, "definition": redact_definition(raw)})
        return JSONResponse(out)

    async def get_server(self, request: Request) -> JSONResponse:
        name = request.path_params["name"]
        source, raw = edits.read_definition(self.sup.paths, name)
        return JSONResponse({"name": name, "source": source, "definition": redact_definition(raw)})

    async def add_server(self, request: Request) -> JSONResponse:
        body = await self._body(request)
        name = body.get("name")
        definition = body.get("definition")
        if not isinstance(name, str) or not isinstance(definition, dict):
            raise InvalidInput('expected {"name": ..., "definition": {...}}')
        force = bool(body.get("force"))
        path = await anyio.to_thread.run_sync(lambda: edits.add_server(self.sup.paths, name, definition,
                                                                       force=force))
        self._journal_edit(request, "added", name, f"atoms/mcp/{name}.toml", list(definition))
        await self.sup.reconcile()
        return JSONResponse({"name": name, "path": path}, status_code=201)

    async def patch_server(self, request: Request) -> JSONResponse:
        name = request.path_params["name"]
        body = await self._body(request)
        source = await anyio.to_thread.run_sync(lambda: edits.update_server(self.sup.paths, name, body))
        self._journal_edit(request, "edited", name, source, list(body))
        await self.sup.reconcile()
        return JSONResponse({"name": name, "source": source})

    async def delete_server(self, request: Request) -> JSONResponse:
        name = request.path_params["name"]
        source = await anyio.to_thread.run_sync(lambda: edits.remove_server(self.sup.paths, name))
        self._journal_edit(request, "removed", name, source, [])
        await self.sup.reconcile()
        return JSONResponse({"name": name, "source": source})

    async def status(self, request: Request) -> JSONResponse:
        await self.sup.reconcile()
        detail = request.query_params.get("detail") in ("1", "true")
        return JSONResponse({"servers": self.sup.status(detail=detail), "problems": self.sup.file_problems,
                             "journal": self._journal()})

    async def server_status(self, request: Request) -> JSONResponse:
        await self.sup.reconcile()
        name = request.path_params["name"]
        self._actor(name)
        return JSONResponse(self.sup.status(name=name, detail=True)[0])

    async def reconnect(self, request: Request) -> JSONResponse:
        await self.sup.reconcile()
        actor = self._actor(request.path_params["name"])
        actor.reconnect()
        if getattr(request.state, "via", None) == "studio" and self.sup.journal is not None:
            self.sup.journal.record("action", server=actor.name, reason="reconnect asked from the Studio",
                                    detail={"via": "studio", "action": "reconnect"})
        return JSONResponse({"name": actor.name, "reconnecting": True})

    async def reconnect_all(self, request: Request) -> JSONResponse:
        """Reconnect every server that can connect; `skipped` names the others and why
        (filtered out, disabled, an invalid definition), which a reconnect does not change."""
        await self.sup.reconcile(force=True)
        reconnecting, skipped = [], []
        for name, actor in sorted(self.sup.actors.items()):
            filtered = self.sup.server_filter.reason(name)
            why = ("its definition is invalid" if actor.spec is None else
                   "disabled (enabled = false)" if not actor.spec.enabled else
                   f"filtered out: {filtered}" if filtered else
                   # Fifty on-demand servers must not all start at one `--all`.
                   f"on demand and idle (`monad mcp reconnect {name}` starts it)" if actor.listed else None)
            if why is None:
                actor.reconnect()
                reconnecting.append(name)
            else:
                skipped.append({"name": name, "reason": why})
        return JSONResponse({"reconnecting": reconnecting, "skipped": skipped})

    async def tools(self, request: Request) -> JSONResponse:
        actor = self._actor(request.path_params["name"])
        return JSONResponse([t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in actor.tools]
                            if actor.live or actor.listed else [])

    # -- lifecycle -----------------------------------------------------------------------
    def _bind(self) -> socket.socket:
        path = self.sup.paths.socket
        with contextlib.suppress(FileNotFoundError):
            path.unlink()  # stale: we hold the daemon lock, so no live supervisor owns it
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)
        try:
            sock.bind(str(path))
        finally:
            os.umask(old)
        os.chmod(path, 0o600)
        sock.listen(128)
        sock.setblocking(False)
        return sock

    async def start(self) -> None:
        self.sock = self._bind()
        config = uvicorn.Config(self.app, http=PeerCheckedH11, lifespan="off", log_config=None,
                                access_log=False, timeout_graceful_shutdown=2, h11_max_incomplete_event_size=MAX_BODY)
        self.server = _QuietServer(config)
        config.load()
        self.server.lifespan = config.lifespan_class(config)
        await self.server.startup(sockets=[self.sock])

    async def stop(self) -> None:
        if self.server is not None and self.server.started:
            self.server.force_exit = True
            with anyio.move_on_after(3):
                await self.server.shutdown(sockets=[self.sock] if self.sock else None)

    def cleanup(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.sup.paths.socket.unlink()
