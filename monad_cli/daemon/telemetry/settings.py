"""Whether telemetry is on, and where it goes: the `[telemetry]` table of
`MONAD_HOME/settings.toml` and the standard OpenTelemetry environment (docs/telemetry.md
"Turning it on" shows both). On with `enabled = true`, or when the supervisor's environment
names an OTLP endpoint; `OTEL_SDK_DISABLED=true` turns it off whatever else says; the SDK
reads every other `OTEL_*` variable itself. Stdlib only: reading this must not import the SDK.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from monad_cli.core.paths import Paths

SETTINGS_FILE = "settings.toml"
ENDPOINT_VARS = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                 "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT")
PROTOCOL_VARS = ("OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
                 "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL")
_TYPES: dict[str, type] = {"enabled": bool, "endpoint": str, "service_name": str, "prometheus": bool,
                           "prometheus_port": int, "capture_arguments": bool}


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


def _table(paths: Paths) -> dict[str, object]:
    from monad_cli.core.errors import ConfigError

    try:
        with open(paths.home / SETTINGS_FILE, "rb") as f:
            data = tomllib.load(f)
    except FileNotFoundError:
        return {}
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"`{SETTINGS_FILE}`: {e}; fix the file (see docs/telemetry.md)", file=SETTINGS_FILE) from None
    table = data.get("telemetry", {})
    if not isinstance(table, dict):
        raise ConfigError(f"`{SETTINGS_FILE}`: `telemetry` must be a table (`[telemetry]`)", file=SETTINGS_FILE,
                          field="telemetry")
    for key, value in table.items():
        want = _TYPES.get(key)
        if want is None:
            raise ConfigError(f"`{SETTINGS_FILE}`: `telemetry.{key}` is not a known setting; known: "
                              f"{', '.join(sorted(_TYPES))} (see docs/telemetry.md)", file=SETTINGS_FILE,
                              field=f"telemetry.{key}")
        # bool is an int in Python: `prometheus_port = true` must not pass as port 1.
        if not isinstance(value, want) or (want is int and isinstance(value, bool)):
            raise ConfigError(f"`{SETTINGS_FILE}`: `telemetry.{key}` must be a {want.__name__}", file=SETTINGS_FILE,
                              field=f"telemetry.{key}")
    port = table.get("prometheus_port", 0)
    assert isinstance(port, int)
    if not 0 <= port <= 65535:
        raise ConfigError(f"`{SETTINGS_FILE}`: `telemetry.prometheus_port` must be a port from 0 to 65535",
                          file=SETTINGS_FILE, field="telemetry.prometheus_port")
    return table


def load_telemetry_settings(paths: Paths, environ: Mapping[str, str] | None = None) -> TelemetrySettings:
    """The settings in force. Raises `ConfigError` for a bad `[telemetry]` table or an OTLP
    protocol other than `http/protobuf` (the exporter monad ships)."""
    from monad_cli.core.errors import ConfigError

    env = os.environ if environ is None else environ
    table = _table(paths)
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return OFF
    from_env = next((env[v] for v in ENDPOINT_VARS if env.get(v)), None)
    enabled = bool(table.get("enabled", False)) or from_env is not None
    if not enabled:
        return OFF
    for var in PROTOCOL_VARS:
        if env.get(var) and env[var] != "http/protobuf":
            raise ConfigError(f"`{var}` is `{env[var]}`; monad exports OTLP over `http/protobuf` only; set it to "
                              f"that or unset it (see docs/telemetry.md)", field=var)
    endpoint = env.get("OTEL_EXPORTER_OTLP_ENDPOINT") or (str(table["endpoint"]) if table.get("endpoint") else None)
    return TelemetrySettings(
        enabled=True, endpoint=endpoint or from_env,
        service_name=env.get("OTEL_SERVICE_NAME") or str(table.get("service_name") or "monad"),
        prometheus=bool(table.get("prometheus", True)), prometheus_port=int(str(table.get("prometheus_port", 0))),
        capture_arguments=bool(table.get("capture_arguments", False)), from_file=bool(table.get("enabled", False)))


__all__ = ["OFF", "TelemetrySettings", "load_telemetry_settings"]
