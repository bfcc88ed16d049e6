"""The OpenTelemetry SDK, set up once when telemetry is on (never imported otherwise).

- traces, only when an endpoint is set: a `TracerProvider` (resource from `service_name` and
  `OTEL_RESOURCE_ATTRIBUTES`, sampler from `OTEL_TRACES_SAMPLER`, default parent-based
  always-on), exported by OTLP/HTTP in batches (encoded by monad's `otlp.py`). Without one
  no span would go anywhere: no provider is set, and the MCP SDK's hooks keep the API's
  no-op tracer, which passes the incoming trace context on as a non-recording span
  (docs/telemetry.md);
- metrics: a `MeterProvider` with a pull reader for `GET /metrics` and, when an endpoint is
  set, a periodic OTLP/HTTP exporter (`OTEL_METRIC_EXPORT_INTERVAL`, default 60 s); each
  reader adds the histograms monad aggregates itself (`aggregate.py`) to what it collects;
- they become the global providers, so the MCP SDK's own hooks (`mcp/shared/_otel.py`,
  `mcp/server/_otel.py`) record into them too.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any

from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import (
    AggregationTemporality,
    InMemoryMetricReader,
    MetricReader,
    MetricsData,
    PeriodicExportingMetricReader,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.sampling import Decision, Sampler, SamplingResult, _get_from_env_or_default
from opentelemetry.trace import SpanKind, get_current_span

from monad_cli import __version__
from monad_cli.daemon.telemetry.aggregate import Aggregates
from monad_cli.daemon.telemetry.settings import ENDPOINT_VARS, TelemetrySettings

# The names of the MCP SDK's own CLIENT spans (`mcp/shared/session.py`), which `QuietSampler` drops
# when they start a trace.
QUIET_PREFIX = "MCP send "
SHUTDOWN_S = 3.0
log = logging.getLogger("monad.telemetry")


class QuietSampler(Sampler):
    """The configured sampler, except for the MCP SDK's own CLIENT spans that start a trace:
    its pings, list refreshes and handshakes, which no caller asked for (a span per ping per
    server every few seconds). Under a monad span the SDK's spans are kept."""

    def __init__(self, inner: Sampler) -> None:
        self.inner = inner

    def should_sample(self, parent_context: Any, trace_id: int, name: str, kind: Any = None,
                      attributes: Any = None, links: Any = None, trace_state: Any = None) -> SamplingResult:
        if name.startswith(QUIET_PREFIX) and not get_current_span(parent_context).get_span_context().is_valid:
            return SamplingResult(Decision.DROP)
        return self.inner.should_sample(parent_context, trace_id, name, kind, attributes, links, trace_state)

    def get_description(self) -> str:
        return f"QuietSampler({self.inner.get_description()})"


class SdkRequestIds(SpanProcessor):
    """The JSON-RPC id of an upstream request sent by the MCP SDK's session (not a direct
    lane) is known only to the SDK's own `MCP send …` span, opened inside monad's CLIENT
    span: copy it to monad's, so both paths give the CLIENT span `jsonrpc.request.id`."""

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        if not span.name.startswith(QUIET_PREFIX):
            return
        parent = get_current_span(parent_context)
        request_id = (span.attributes or {}).get("jsonrpc.request.id")
        if request_id is not None and parent.is_recording() and getattr(parent, "kind", None) == SpanKind.CLIENT:
            parent.set_attribute("jsonrpc.request.id", request_id)


def _temporality(reader: MetricReader) -> AggregationTemporality:
    # What the reader asks of histograms (OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE,
    # through the exporter); the SDK keeps it per instrument class.
    from opentelemetry.sdk.metrics import Histogram

    chosen = getattr(reader, "_instrument_class_temporality", {}).get(Histogram)
    return chosen if isinstance(chosen, AggregationTemporality) else AggregationTemporality.CUMULATIVE


class PullReader(InMemoryMetricReader):
    """The `GET /metrics` reader (cumulative), with monad's own histograms."""

    def __init__(self, aggregates: Aggregates) -> None:
        super().__init__()
        self.aggregates = aggregates
        self.slot = aggregates.reader(_temporality(self))

    def _receive_metrics(self, metrics_data: MetricsData, timeout_millis: float = 10_000, **kwargs: Any) -> None:
        super()._receive_metrics(self.aggregates.merge(metrics_data, self.slot), timeout_millis, **kwargs)


class ExportingReader(PeriodicExportingMetricReader):
    """The OTLP reader, with monad's own histograms (in the temporality its exporter prefers)."""

    def __init__(self, exporter: Any, aggregates: Aggregates) -> None:
        self.aggregates = aggregates
        super().__init__(exporter)  # collects only once a MeterProvider registers it, after this
        self.slot = aggregates.reader(_temporality(self))

    def _receive_metrics(self, metrics_data: MetricsData, timeout_millis: float = 10_000, **kwargs: Any) -> None:
        super()._receive_metrics(self.aggregates.merge(metrics_data, self.slot), timeout_millis, **kwargs)


def install(settings: TelemetrySettings, environ: Mapping[str, str],
            aggregates: Aggregates) -> tuple[InMemoryMetricReader, Callable[[], None], list[SpanProcessor]]:
    """Set the global providers, their readers registered in `aggregates`; returns the pull
    reader, the shutdown function (flushes) and the span processors that export (the OTLP
    batch; none without an endpoint, and then no tracer provider is set: the API's no-op one
    stays), which monad's call spans end into (`spans.py`)."""
    # The exporters log a warning per retry while a collector is down; one error per lost
    # batch says enough in daemon.log.
    logging.getLogger("opentelemetry").setLevel(logging.ERROR)
    resource = Resource.create({"service.name": settings.service_name, "service.version": __version__})
    tracer_provider: TracerProvider | None = None
    exporting: list[SpanProcessor] = []
    pull = PullReader(aggregates)
    readers: list[MetricReader] = [pull]
    if settings.endpoint is not None:
        # shutdown_on_exit=False: our `shutdown` bounds the wait; an atexit one would not.
        tracer_provider = TracerProvider(resource=resource, sampler=QuietSampler(_get_from_env_or_default()),
                                         shutdown_on_exit=False)
        tracer_provider.add_span_processor(SdkRequestIds())
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter

        from monad_cli.daemon.telemetry.otlp import span_exporter

        # The exporters read the OTEL_EXPORTER_OTLP_* variables themselves; an endpoint from
        # settings.toml is a base URL, completed with the signal's path as the spec says.
        from_env = any(environ.get(v) for v in ENDPOINT_VARS)
        base = settings.endpoint.rstrip("/")
        spans_out = span_exporter() if from_env else span_exporter(endpoint=f"{base}/v1/traces")
        metric_exporter = OTLPMetricExporter() if from_env else OTLPMetricExporter(endpoint=f"{base}/v1/metrics")
        batch = BatchSpanProcessor(spans_out)
        tracer_provider.add_span_processor(batch)
        exporting.append(batch)
        readers.append(ExportingReader(metric_exporter, aggregates))
    meter_provider = MeterProvider(resource=resource, metric_readers=readers, shutdown_on_exit=False)
    if tracer_provider is not None:
        trace.set_tracer_provider(tracer_provider)
    metrics.set_meter_provider(meter_provider)

    def shutdown() -> None:
        # The last batch goes out, but a collector that is down must not hold up the
        # supervisor's stop: the exporters retry for up to their timeout (10 s) per signal.
        def flush() -> None:
            if tracer_provider is not None:
                tracer_provider.shutdown()
            meter_provider.shutdown()

        worker = threading.Thread(target=flush, name="telemetry-shutdown", daemon=True)
        worker.start()
        worker.join(SHUTDOWN_S)
        if worker.is_alive():
            log.warning("telemetry: the collector did not take the last spans and metrics within %g s; "
                        "dropped", SHUTDOWN_S)

    return pull, shutdown, exporting


__all__ = ["QUIET_PREFIX", "ExportingReader", "PullReader", "QuietSampler", "install"]
