"""`monad metrics`: the supervisor's Prometheus metrics, for scripts (docs/telemetry.md)."""

from __future__ import annotations

from typing import Annotated

import typer

from monad_cli.cli import render
from monad_cli.cli.commands._common import JsonOpt, supervisor
from monad_cli.core.errors import Unavailable


def metrics(
    where: Annotated[bool, typer.Option("--where", help="Print the /metrics URL and the token file's path instead.")]
    = False,
    as_json: JsonOpt = False,
) -> None:
    """Print the supervisor's metrics in the Prometheus text exposition format: the same text
    its `GET /metrics` serves.

    Needs telemetry on (`\\[telemetry] enabled = true` in settings.toml, or an
    `OTEL_EXPORTER_OTLP_ENDPOINT` in the supervisor's environment). `--where` prints the URL
    of the loopback `/metrics` listener and the path of the file holding its bearer token
    (for a Prometheus scrape config); `--json` with it prints `{"url", "tokenFile"}`.
    """
    client = supervisor()
    if where:
        state = client.get("/v1/telemetry")
        found = state.get("prometheus")
        if not state.get("on"):
            if state.get("reason"):
                raise Unavailable(f"telemetry is off: {state['reason']}")
            raise Unavailable("telemetry is off; turn it on with `enabled = true` under `[telemetry]` in "
                              "settings.toml and restart the supervisor (see docs/telemetry.md)")
        if not found:
            raise Unavailable("the /metrics listener is off (`prometheus = false` under `[telemetry]` in "
                              "settings.toml); `monad metrics` still prints the text")
        if as_json:
            render.data_json(found)
        else:
            render.key_values([("url", found["url"]), ("token file", found["tokenFile"])])
        return
    text = client.get("/v1/telemetry/metrics")["text"]
    if as_json:
        render.data_json({"text": text})
    else:
        render.text(text)


__all__ = ["metrics"]
