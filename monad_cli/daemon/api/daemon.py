"""Control API routes for the supervisor itself (docs/supervisor.md "Control API") and its
telemetry (docs/telemetry.md).

    GET  /v1/health             {pid, version, home, startedAt (epoch s), journal}
    POST /v1/daemon/stop        {stopping: true, pid}: the supervisor stops once this is answered
    GET  /v1/telemetry          {on, endpoint (secrets as ***), prometheus: {url, tokenFile} | null,
                                reason: why telemetry that was asked for is off, with what to run | null}
    GET  /v1/telemetry/metrics  {text}: what `GET /metrics` serves now (Prometheus text format);
                                503 `unavailable` while telemetry is off
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from monad_cli import __version__
from monad_cli.core.errors import Unavailable
from monad_cli.core.redact import redact_url
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

    async def telemetry(request: Request) -> JSONResponse:
        from monad_cli.daemon.telemetry import TELEMETRY

        endpoint = TELEMETRY.settings.endpoint
        return JSONResponse({"on": TELEMETRY.on, "endpoint": redact_url(endpoint) if endpoint else None,
                             "prometheus": TELEMETRY.where, "reason": TELEMETRY.off_reason})

    async def metrics(request: Request) -> JSONResponse:
        from monad_cli.daemon.telemetry import TELEMETRY

        exposition = TELEMETRY.exposition
        if exposition is None:
            raise Unavailable(f"telemetry is off: {TELEMETRY.off_reason}" if TELEMETRY.off_reason else
                              "telemetry is off; turn it on with `enabled = true` under `[telemetry]` in "
                              "settings.toml and restart the supervisor (see docs/telemetry.md)")
        return JSONResponse({"text": exposition().decode()})

    return [Route("/v1/health", health), Route("/v1/daemon/stop", stop_daemon, methods=["POST"]),
            Route("/v1/telemetry", telemetry), Route("/v1/telemetry/metrics", metrics)]
