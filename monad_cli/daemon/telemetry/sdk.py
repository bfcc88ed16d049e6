"""The OpenTelemetry SDK, set up once when telemetry is on (never imported otherwise), used as
it ships:

- traces, only when an OTLP endpoint is set: a `TracerProvider` (resource from `service_name`
  and `OTEL_RESOURCE_ATTRIBUTES`; the sampler the SDK reads from `OTEL_TRACES_SAMPLER`,
  default parent-based always-on) whose `BatchSpanProcessor` hands the spans to the library's
  `OTLPSpanExporter` through `Scrubbed`. Without an endpoint no provider is set: the API's
  no-op tracer passes an incoming trace context on unchanged and records nothing;
- metrics: a `MeterProvider` with `opentelemetry-exporter-prometheus`'s reader for `GET /metrics`
  and, with an endpoint, a `PeriodicExportingMetricReader` over the library's `OTLPMetricExporter`;
- both become the global providers, so the MCP SDK's own `MCP send …` spans record into them.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from opentelemetry import metrics, trace
from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.sdk.metrics import AlwaysOffExemplarFilter, MeterProvider
from opentelemetry.sdk.metrics.export import MetricReader, PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.sampling import Decision, Sampler, SamplingResult
from opentelemetry.trace import SpanKind, Status, get_current_span
from prometheus_client import CollectorRegistry
from prometheus_client.exposition import generate_latest

from monad_cli import __version__
from monad_cli.daemon.telemetry.settings import ENDPOINT_VARS, TelemetrySettings

# The MCP SDK's own CLIENT spans (`mcp/shared/jsonrpc_dispatcher.py`).
SDK_SPAN = "MCP send "
SHUTDOWN_S = 3.0
# An exception event's text: what the exception's message quoted.
_EXCEPTION_TEXT = ("exception.message", "exception.stacktrace")
log = logging.getLogger("monad.telemetry")


class HashedResource(Resource):
    """A `Resource` whose hash is computed once. The OTLP encoder groups every span of a
    batch by its resource (a dict keyed by it), and `Resource.__hash__` writes the attributes
    as sorted JSON each time: ~4 µs a span on the exporter's thread, for a value that never
    changes (a resource is immutable)."""

    def __init__(self, resource: Resource) -> None:
        super().__init__(resource.attributes, resource.schema_url)
        self.hashed = super().__hash__()

    def __hash__(self) -> int:
        return self.hashed


class QuietSampler(Sampler):
    """The configured sampler, except for the MCP SDK's own spans that start a trace: its
    pings, list refreshes and handshakes, which no caller asked for (a trace per ping per
    server every few seconds). Under a monad span they are the configured sampler's."""

    def __init__(self, inner: Sampler) -> None:
        self.inner = inner

    def should_sample(self, parent_context: Any, trace_id: int, name: str, kind: Any = None,
                      attributes: Any = None, links: Any = None, trace_state: Any = None) -> SamplingResult:
        if name.startswith(SDK_SPAN) and not get_current_span(parent_context).get_span_context().is_valid:
            return SamplingResult(Decision.DROP)
        return self.inner.should_sample(parent_context, trace_id, name, kind, attributes, links, trace_state)

    def get_description(self) -> str:
        return f"QuietSampler({self.inner.get_description()})"


class SdkRequestIds(SpanProcessor):
    """The JSON-RPC id of an upstream request the MCP SDK's session sends is known only to the
    SDK's `MCP send …` span, opened inside monad's CLIENT span: copied to monad's, so the
    CLIENT span has `jsonrpc.request.id` whichever path sent the request."""

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        if not span.name.startswith(SDK_SPAN):
            return
        parent = get_current_span(parent_context)
        request_id = (span.attributes or {}).get("jsonrpc.request.id")
        if request_id is not None and parent.is_recording() and getattr(parent, "kind", None) is SpanKind.CLIENT:
            parent.set_attribute("jsonrpc.request.id", request_id)


class Scrubbed(SpanExporter):
    """The exporter given every span with its free strings through the supervisor's scrubber
    (`scrub`: a secret monad holds becomes `***`): the name, every string attribute and event
    attribute. A status description is left out, and so are an exception event's message and
    stack trace: a server's error message may quote what it was sent, which is no secret monad
    knows (the JSON-RPC code is in `error.type`). One place for every span, monad's and the MCP
    SDK's, so a new span cannot forget it. A span with no event, no description and nothing the
    scrubber changes goes as it is; any other as a `ReadableSpan` built by its public constructor
    (OpenTelemetry Python has no public hook to change a span as it ends: the spec's `OnEnding`
    is `_on_ending` there)."""

    def __init__(self, inner: SpanExporter, scrub: Callable[[str], str]) -> None:
        self.inner = inner
        self.scrub = scrub

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        # One scan for the whole batch (the supervisor's scrubber is one Hyperscan pass however
        # long the text): its names and string attributes, NUL-separated (no secret holds a
        # NUL, no credential span crosses one). Clean, as nearly always, a span with no event
        # and no status description goes as it is; any other is looked at alone.
        strings = [text for span in spans for text in (span.name, *(
            v for v in (span.attributes or {}).values() if isinstance(v, str)))]
        joined = "\x00".join(strings)
        clean = self.scrub(joined) == joined
        return self.inner.export([span if clean and not span.events and not span.status.description
                                  else self._scrubbed(span) for span in spans])

    def _strings(self, attributes: Mapping[str, Any] | None, leave_out: tuple[str, ...] = ()) -> dict[str, Any]:
        return {k: self.scrub(v) if isinstance(v, str) else v for k, v in (attributes or {}).items()
                if k not in leave_out}

    def _scrubbed(self, span: ReadableSpan) -> ReadableSpan:
        name, scrub = self.scrub(span.name), self.scrub
        given = span.attributes or {}
        # Most spans: no event, no description, nothing the scrubber changes; no copy made.
        if (name == span.name and not span.events and not span.status.description
                and all(scrub(v) == v for v in given.values() if isinstance(v, str))):
            return span
        events = [Event(e.name, self._strings(e.attributes, _EXCEPTION_TEXT), e.timestamp) for e in span.events]
        return ReadableSpan(name=name, context=span.context, parent=span.parent, resource=span.resource,
                            attributes=self._strings(given), events=events, links=span.links, kind=span.kind,
                            status=Status(span.status.status_code), start_time=span.start_time,
                            end_time=span.end_time, instrumentation_scope=span.instrumentation_scope)

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self.inner.force_flush(timeout_millis)


def providers(settings: TelemetrySettings, environ: Mapping[str, str], scrub: Callable[[str], str]
              ) -> tuple[TracerProvider | None, MeterProvider, Callable[[], bytes]]:
    """The tracer provider (None without an OTLP endpoint), the meter provider and the
    `/metrics` text (bytes, the Prometheus text format 0.0.4), as the supervisor runs them."""
    resource = HashedResource(Resource.create({"service.name": settings.service_name, "service.version": __version__}))
    registry = CollectorRegistry(auto_describe=False)
    readers: list[MetricReader] = [PrometheusMetricReader(disable_target_info=True, scope_info_enabled=False,
                                                          registry=registry)]
    tracer_provider: TracerProvider | None = None
    if settings.endpoint is not None:
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        # The sampler the SDK reads from OTEL_TRACES_SAMPLER (a provider built without one),
        # quieted: the SDK has no public function for it (`sampling._get_from_env_or_default`).
        configured = TracerProvider(shutdown_on_exit=False).sampler
        # shutdown_on_exit=False: `install`'s shutdown bounds the wait; an atexit one would not.
        tracer_provider = TracerProvider(resource=resource, sampler=QuietSampler(configured), shutdown_on_exit=False)
        tracer_provider.add_span_processor(SdkRequestIds())
        # The exporters read OTEL_EXPORTER_OTLP_* themselves; an endpoint from settings.toml
        # is a base URL, completed with the signal's path as the OTLP spec says.
        from_env = any(environ.get(v) for v in ENDPOINT_VARS)
        base = settings.endpoint.rstrip("/")
        spans_out = OTLPSpanExporter() if from_env else OTLPSpanExporter(endpoint=f"{base}/v1/traces")
        tracer_provider.add_span_processor(BatchSpanProcessor(Scrubbed(spans_out, scrub)))
        metrics_out = OTLPMetricExporter() if from_env else OTLPMetricExporter(endpoint=f"{base}/v1/metrics")
        readers.append(PeriodicExportingMetricReader(metrics_out))
    # Exemplars (a sampled span's ids kept beside a measurement) cost every measurement on a
    # call's path; `/metrics` does not show them. OTEL_METRICS_EXEMPLAR_FILTER turns them on.
    exemplars = None if environ.get("OTEL_METRICS_EXEMPLAR_FILTER") else AlwaysOffExemplarFilter()
    meter_provider = MeterProvider(resource=resource, metric_readers=readers, exemplar_filter=exemplars,
                                   shutdown_on_exit=False)
    return tracer_provider, meter_provider, lambda: generate_latest(registry)


def install(settings: TelemetrySettings, environ: Mapping[str, str],
            scrub: Callable[[str], str]) -> tuple[Callable[[], bytes], Callable[[], None]]:
    """Set the global providers (`providers`); returns the `/metrics` text and the shutdown
    function (flushes, bounded by `SHUTDOWN_S`)."""
    # The exporters log a warning per retry while a collector is down; one error per lost
    # batch says enough in daemon.log.
    logging.getLogger("opentelemetry").setLevel(logging.ERROR)
    tracer_provider, meter_provider, exposition = providers(settings, environ, scrub)
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

    return exposition, shutdown


__all__ = ["SDK_SPAN", "HashedResource", "QuietSampler", "Scrubbed", "SdkRequestIds", "install", "providers"]
