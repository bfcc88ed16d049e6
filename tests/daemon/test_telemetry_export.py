"""`sdk.Scrubbed`, the one place every exported span passes: spans made by the OpenTelemetry
SDK's own tracer (monad's and the MCP SDK's alike), exported through it to the SDK's
in-memory exporter, with the supervisor's real scrubber (`core.redact.Scrubber`)."""

from __future__ import annotations

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from monad_cli.core.redact import Scrubber
from monad_cli.daemon.telemetry.sdk import Scrubbed

SECRET = "sentinel-held-secret-6a0e"


def _spans() -> tuple[TracerProvider, InMemorySpanExporter]:
    out = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(Scrubbed(out, Scrubber([SECRET]))))
    return provider, out


def test_a_secret_monad_holds_leaves_no_exported_span() -> None:
    provider, out = _spans()
    tracer = provider.get_tracer("mcp-python-sdk")
    with tracer.start_as_current_span(f"MCP send resources/read {SECRET}", kind=SpanKind.CLIENT,
                                      attributes={"mcp.resource.uri": f"file:///{SECRET}/a", "n": 3},
                                      record_exception=True, set_status_on_exception=False) as span:
        span.set_status(StatusCode.ERROR, f"not found: file:///{SECRET}/a?key=x")
        span.add_event("retry", {"why": f"token {SECRET}"})
        try:
            raise ValueError(f"bad argument {SECRET}")
        except ValueError as e:
            span.record_exception(e)
    [exported] = out.get_finished_spans()
    assert exported.name == "MCP send resources/read ***"
    assert dict(exported.attributes or {}) == {"mcp.resource.uri": "file:///***/a", "n": 3}
    # A status description is never exported (a server's message may quote what it was sent).
    assert exported.status.status_code is StatusCode.ERROR and exported.status.description is None
    retry, raised = exported.events
    assert dict(retry.attributes or {}) == {"why": "token ***"}
    assert dict(raised.attributes or {}) == {"exception.type": "ValueError", "exception.escaped": "False"}
    assert (exported.context, exported.kind, exported.start_time, exported.end_time) == (
        span.get_span_context(), SpanKind.CLIENT, span.start_time, span.end_time)  # type: ignore[attr-defined]


def test_a_span_with_nothing_to_hide_goes_as_it_is() -> None:
    ended = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(ended))
    with provider.get_tracer("monad").start_as_current_span("tools/call light__echo", kind=SpanKind.SERVER,
                                                            attributes={"gen_ai.tool.name": "light__echo"}):
        pass
    [span] = ended.get_finished_spans()
    out = InMemorySpanExporter()
    Scrubbed(out, Scrubber([SECRET])).export([span])
    assert out.get_finished_spans()[0] is span
