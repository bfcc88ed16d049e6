"""Telemetry: OpenTelemetry spans and metrics by the MCP semantic conventions, and a
Prometheus `/metrics` (docs/telemetry.md).

Off by default, and then free: `TELEMETRY.recorder` is None, every hook on a call's path
is one attribute test, and the OpenTelemetry SDK is not imported (tests/e2e/test_telemetry_off.py
holds it). `start` turns it on for this process from `[telemetry]` in settings.toml and
the `OTEL_*` environment (`settings.py`).
"""

from __future__ import annotations

import gc
import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from monad_cli.daemon.telemetry.settings import OFF, TelemetrySettings, load_telemetry_settings

if TYPE_CHECKING:
    from monad_cli.core.paths import Paths
    from monad_cli.daemon.telemetry.prometheus import Exposition
    from monad_cli.daemon.telemetry.recorder import Recorder

log = logging.getLogger("monad.telemetry")


class Telemetry:
    """The process's telemetry: `recorder` (None while off), `exposition` (the `/metrics`
    text, None while off), `settings`, and `listener` (the `/metrics` URL and token file,
    once it listens)."""

    def __init__(self) -> None:
        self.recorder: Recorder | None = None
        self.exposition: Exposition | None = None
        self.settings: TelemetrySettings = OFF
        self.where: dict[str, Any] | None = None
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


def start(paths: Paths, environ: Mapping[str, str], *, states: Callable[[], Mapping[str, str]],
          tasks: Callable[[], Mapping[str, tuple[int, int]]] = dict, fleet_queued: Callable[[], int] = lambda: 0,
          digest: Callable[[Any], str] | None = None) -> Telemetry:
    """Turn telemetry on for this process if the settings say so (else import nothing).
    `states()`: server name → state; `tasks()`: server → (active, queued) tasks;
    `fleet_queued()`: rows waiting for a fleet's journal; each read at every collection.
    Raises `ConfigError` for bad settings."""
    settings = load_telemetry_settings(paths, environ)
    TELEMETRY.settings = settings
    if not settings.enabled or TELEMETRY.on:
        return TELEMETRY
    try:
        from monad_cli.daemon.telemetry.aggregate import Aggregates
        from monad_cli.daemon.telemetry.prometheus import Exposition
        from monad_cli.daemon.telemetry.recorder import Recorder
        from monad_cli.daemon.telemetry.sdk import install
    except ImportError as e:
        if not settings.from_file:
            # On only because OTEL_* variables are set (for another program, perhaps): stay off.
            log.warning("telemetry stays off: OTEL_EXPORTER_OTLP_* is set, but %s is not installed "
                        "(pip install 'monad-cli[telemetry]')", e.name)
            TELEMETRY.settings = OFF
            return TELEMETRY
        from monad_cli.core.errors import ConfigError

        raise ConfigError(f"`telemetry.enabled` is true in settings.toml, but the telemetry extra is not "
                          f"installed (no `{e.name}`); run pip install 'monad-cli[telemetry]' (see docs/telemetry.md)",
                          file="settings.toml", field="telemetry.enabled") from None

    aggregates = Aggregates()
    pull, shutdown, exporting = install(settings, environ, aggregates)
    recorder = Recorder(aggregates, capture_arguments=settings.capture_arguments, digest=digest,
                        span_processors=exporting)
    recorder.observe_servers(states, tasks=tasks, fleet_queued=fleet_queued)
    TELEMETRY.exposition = Exposition(pull)
    TELEMETRY._shutdown = shutdown
    TELEMETRY.recorder = recorder
    # The SDK's modules and providers (~13,000 long-lived objects), and what the supervisor
    # has built by now, out of the collector's generations, as its imports are (daemon/main.py):
    # a full collection walked them again each time (bench/README.md "Issue 27, the encoder").
    # A cycle that is garbage at this moment is never collected: a one-off, what startup left.
    gc.freeze()
    from monad_cli.core.redact import redact_url

    log.info("telemetry on: %s; /metrics %s",
             f"OTLP to {redact_url(settings.endpoint)}" if settings.endpoint else "no OTLP export",
             "served" if settings.prometheus else "not served")
    return TELEMETRY


__all__ = ["TELEMETRY", "Telemetry", "start"]
