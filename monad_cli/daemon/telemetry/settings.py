"""Whether telemetry is on, and where it goes: the `[telemetry]` table of
`MONAD_HOME/settings.toml` and the standard OpenTelemetry environment (docs/telemetry.md
"Turning it on" shows both). On with `enabled = true`, or when the supervisor's environment
names an OTLP endpoint; `OTEL_SDK_DISABLED=true` turns it off whatever else says; the SDK
reads every other `OTEL_*` variable itself. Stdlib only: reading this must not import the SDK.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from monad_cli.core.paths import Paths

ENDPOINT_VARS = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                 "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT")
PROTOCOL_VARS = ("OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
                 "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL")


@dataclass(frozen=True)
class TelemetrySettings:
    """`enabled`: spans and metrics are recorded at all; `endpoint`: the OTLP/HTTP base URL
    (None: no export, only the Prometheus endpoint); `prometheus`/`prometheus_port`: the
    `/metrics` listener (port 0: any free one); `capture_arguments`: spans carry
    `gen_ai.tool.call.arguments` as the journal keeps arguments (a digest, never values);
    `from_file`: turned on by settings.toml, not only by the environment."""

    enabled: bool = False
    endpoint: str | None = None
    service_name: str = "monad"
    prometheus: bool = True
    prometheus_port: int = 0
    capture_arguments: bool = False
    from_file: bool = False  # `enabled = true` in settings.toml (else only the environment)


OFF = TelemetrySettings()


def load_telemetry_settings(paths: Paths, environ: Mapping[str, str] | None = None) -> TelemetrySettings:
    """The settings in force. Raises `ConfigError` for a bad `[telemetry]` table or an OTLP
    protocol other than `http/protobuf` (the exporter monad ships)."""
    from monad_cli.config.settings import load_settings
    from monad_cli.core.errors import ConfigError

    env = os.environ if environ is None else environ
    table = load_settings(paths).telemetry  # `[telemetry]`, checked there (config/settings.py)
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return OFF
    from_env = next((env[v] for v in ENDPOINT_VARS if env.get(v)), None)
    enabled = table.enabled or from_env is not None
    if not enabled:
        return OFF
    for var in PROTOCOL_VARS:
        if env.get(var) and env[var] != "http/protobuf":
            raise ConfigError(f"`{var}` is `{env[var]}`; monad exports OTLP over `http/protobuf` only; set it to "
                              f"that or unset it (see docs/telemetry.md)", field=var)
    endpoint = env.get("OTEL_EXPORTER_OTLP_ENDPOINT") or table.endpoint
    return TelemetrySettings(
        enabled=True, endpoint=endpoint or from_env,
        service_name=env.get("OTEL_SERVICE_NAME") or table.service_name or "monad",
        prometheus=table.prometheus, prometheus_port=table.prometheus_port,
        capture_arguments=table.capture_arguments, from_file=table.enabled)


__all__ = ["OFF", "TelemetrySettings", "load_telemetry_settings"]
