"""Control API routes for the supervisor itself (docs/supervisor.md "Control API").

    GET  /v1/health       {pid, version, home, startedAt (epoch s), journal}
    POST /v1/daemon/stop  {stopping: true, pid}: the supervisor stops once this is answered
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from monad_cli import __version__
from monad_cli.daemon.api.servers import journal_status

if TYPE_CHECKING:
    from monad_cli.daemon.port import DaemonPort


def daemon_routes(port: DaemonPort) -> list[Route]:
    async def health(request: Request) -> JSONResponse:
        return JSONResponse({"pid": os.getpid(), "version": __version__, "home": str(port.paths.home),
                             "startedAt": port.started_at, "journal": journal_status(port)})

    async def stop_daemon(request: Request) -> JSONResponse:
        # Stop once the answer is sent: stopping first would cut this very connection.
        return JSONResponse({"stopping": True, "pid": os.getpid()}, background=BackgroundTask(port.stop_event.set))

    return [Route("/v1/health", health), Route("/v1/daemon/stop", stop_daemon, methods=["POST"])]
