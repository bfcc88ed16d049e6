"""Control API routes for the journal (docs/supervisor.md "Journal", docs/studio.md).

    GET /v1/journal[?server=NAME][&limit=N]        events, newest first (a fleet's shared rows
                                                   when its link is up: `shared: true`)
    GET /v1/journal/calls[?server=NAME][&limit=N]  tool calls, with the arguments the
                                                   Studio's transcript kept in memory
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import anyio
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from monad_cli.core.errors import Unavailable
from monad_cli.daemon.http import limit_param
from monad_cli.daemon.studio.transcript import MAX_CALLS, Transcript

if TYPE_CHECKING:
    from monad_cli.daemon.port import DaemonPort

log = logging.getLogger("monad.studio")
MAX_JOURNAL_ROWS = 500


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
