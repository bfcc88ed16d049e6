"""Telemetry: OpenTelemetry spans and metrics by the MCP semantic conventions, and a
Prometheus `/metrics` (docs/telemetry.md), on the OpenTelemetry SDK's public API.

Off by default, and then free: `TELEMETRY.recorder` is None and the OpenTelemetry SDK is
not imported (tests/e2e/test_telemetry_off.py). `start` turns it on for this process from
`[telemetry]` in settings.toml and the `OTEL_*` environment (`settings.py`); without the
telemetry extra installed it stays off, and `TELEMETRY.off_reason` says why and what to run.

The outward API, for the wrappers of a call's path (`recorder.Recorder`; each a context
manager or a plain call, none with a cost while off, since a wrapper is installed only on):

- `server_request(method, target, request_id=, protocol_version=, meta=, transport=)`: one
  request a gateway client sent. SERVER span (child of the trace context in `meta`) and
  `mcp.server.operation.duration`; yields an `Operation`: `.result(result)` records a tool
  error, `.rpc_error(e)` an error answer; an exception leaving the block fails it.
  `middleware(transport)` is the same around the MCP SDK's server path.
- `call(exposed, via)`: a SERVER span of its own for a call from the CLI or the Studio;
  `call_ended(...)` puts the decision and the outcome on the current span and counts
  `monad.tool.calls`; `approval(exposed, server)` spans the gate's wait.
- `client_request(method, target, server=, transport=, protocol_version=, address=, resolved=)`: one
  request to an upstream server. CLIENT span and `mcp.client.operation.duration`; yields an
  `Operation`: `.inject(meta)` writes its W3C context into the request's `_meta`,
  `.request_id(id)` records the id it was sent with, `.result(result)` a tool error.
- sessions: `connecting`/`connected`, `session_ended`, `gateway_session_ended`,
  `restarted`, `refreshed`, `journal_write.record(seconds)`.

A tool or prompt name that is not listed (`start`'s `listed`) is recorded as `_OTHER`; every
exported span passes `start`'s `scrub` (the supervisor's scrubber).
"""

from __future__ import annotations

import gc
import logging
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from monad_cli.daemon.telemetry.settings import OFF, TelemetrySettings, load_telemetry_settings

if TYPE_CHECKING:
    from monad_cli.core.paths import Paths
    from monad_cli.daemon.telemetry.recorder import Recorder

log = logging.getLogger("monad.telemetry")
# The telemetry extra (pyproject.toml), by the names pip installs them with.
EXTRA = ("opentelemetry-sdk", "opentelemetry-exporter-otlp-proto-http", "opentelemetry-exporter-prometheus")


class Telemetry:
    """The process's telemetry: `recorder` (None while off), `exposition()` (the `/metrics`
    text, None while off), `settings`, `listener` (the `/metrics` URL and token file, once it
    listens), and `off_reason` (why telemetry that was asked for is off, with what to run)."""

    def __init__(self) -> None:
        self.recorder: Recorder | None = None
        self.exposition: Callable[[], bytes] | None = None
        self.settings: TelemetrySettings = OFF
        self.where: dict[str, Any] | None = None
        self.off_reason: str | None = None
        self._shutdown: Callable[[], None] | None = None

    @property
    def on(self) -> bool:
        return self.recorder is not None

    def shutdown(self) -> None:
        """Flush what is batched and stop exporting (the supervisor's stop)."""
        if self._shutdown is not None:
            try:
                self._shutdown()
            except Exception:  # an exporter that cannot reach its collector must not fail a stop
                log.exception("telemetry shutdown failed")
        self.recorder = self.exposition = self._shutdown = None
        self.where = None


TELEMETRY = Telemetry()


def install_command() -> str:
    """A pip command that installs the telemetry extra into the Python running monad: from
    the checkout when monad runs from one (an editable install, as `make` does), else the
    extra's packages by name (monad-cli is not on the public package index)."""
    root = Path(__file__).resolve().parents[3]
    pip = f"{sys.executable} -m pip install"
    if (root / "pyproject.toml").is_file():
        return f"{pip} -e '{root}[telemetry]'"
    return f"{pip} {' '.join(EXTRA)}"


def start(paths: Paths, environ: Mapping[str, str], *, states: Callable[[], Mapping[str, str]],
          tasks: Callable[[], Mapping[str, tuple[int, int]]] = dict, fleet_queued: Callable[[], int] = lambda: 0,
          digest: Callable[[Any], str] | None = None, scrub: Callable[[str], str] = str,
          listed: Callable[[str, str], bool] = lambda method, name: False) -> Telemetry:
    """Turn telemetry on for this process if the settings say so (else import nothing).
    `states()`: server name → state; `tasks()`: server → (active, queued) tasks;
    `fleet_queued()`: rows waiting for a fleet's journal; each read at every collection.
    `scrub(text)`: the supervisor's scrubber, for every exported span's free strings;
    `listed(method, name)`: whether a tools/call's tool or a prompts/get's prompt was listed
    to agents (else it is recorded as `_OTHER`). Raises `ConfigError` for bad settings; a
    missing telemetry extra leaves telemetry off, with `off_reason` and a warning in the log."""
    settings = load_telemetry_settings(paths, environ)
    TELEMETRY.settings = settings
    if not settings.enabled or TELEMETRY.on:
        return TELEMETRY
    try:
        from monad_cli.daemon.telemetry.recorder import Recorder
        from monad_cli.daemon.telemetry.sdk import install
    except ImportError as e:
        asked = "`telemetry.enabled` is true in settings.toml" if settings.from_file else "OTEL_EXPORTER_OTLP_* is set"
        TELEMETRY.settings = OFF
        TELEMETRY.off_reason = (f"{asked}, but the telemetry extra is not installed (no `{e.name}`); install it with "
                                f"`{install_command()}` and restart the supervisor (docs/telemetry.md)")
        log.warning("telemetry stays off: %s", TELEMETRY.off_reason)
        return TELEMETRY

    exposition, shutdown = install(settings, environ, scrub)
    recorder = Recorder(listed=listed, capture_arguments=settings.capture_arguments, digest=digest,
                        exporting=settings.endpoint is not None)
    recorder.observe_servers(states, tasks=tasks, fleet_queued=fleet_queued)
    TELEMETRY.exposition, TELEMETRY._shutdown, TELEMETRY.recorder = exposition, shutdown, recorder
    # The SDK's modules and providers, and what the supervisor has built by now, out of the
    # collector's generations, as its imports are (daemon/main.py): a full collection would
    # walk them again each time. A cycle that is garbage now is never collected: a one-off.
    gc.freeze()
    from monad_cli.core.redact import redact_url

    log.info("telemetry on: %s; /metrics %s",
             f"OTLP to {redact_url(settings.endpoint)}" if settings.endpoint else "no OTLP export",
             "served" if settings.prometheus else "not served")
    return TELEMETRY


__all__ = ["EXTRA", "TELEMETRY", "Telemetry", "install_command", "start"]
