"""Control API routes for telemetry (docs/telemetry.md).

    GET /v1/telemetry          {on, endpoint (secrets as ***), prometheus: {url, tokenFile} | null,
                               reason: why telemetry that was asked for is off, with what to run | null}
    GET /v1/telemetry/metrics  {text}: what `GET /metrics` serves now (Prometheus text format);
                               503 `unavailable` while telemetry is off
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from monad_cli.core.errors import Unavailable
from monad_cli.core.redact import redact_url


def telemetry_routes() -> list[Route]:
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

    return [Route("/v1/telemetry", telemetry), Route("/v1/telemetry/metrics", metrics)]
