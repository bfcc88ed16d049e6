"""monad's call spans (daemon/telemetry/spans.py) held to the OpenTelemetry SDK's: the same
span started and ended both ways, under the same provider (sampler, ids, resource), reaches
the span processors as the same `ReadableSpan`: name, kind, trace and parent, flags, trace
state, attributes, status, resource and scope."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry import context, trace
from opentelemetry.propagate import extract
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF, ParentBased, TraceIdRatioBased
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanKind, StatusCode

from monad_cli.daemon.telemetry.spans import CallSpans

AGENT = {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "tracestate": "vendor=x"}
ATTRIBUTES = {"mcp.method.name": "tools/call", "gen_ai.operation.name": "execute_tool", "network.transport": "pipe",
              "jsonrpc.request.id": "7", "gen_ai.tool.name": "a__t"}


def _both(provider: TracerProvider, parent: Any) -> tuple[Any, Any]:
    """One span made by the SDK's tracer and one by `CallSpans`, the same things done to each."""
    sdk_out, ours_out = InMemorySpanExporter(), InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(sdk_out))
    spans = CallSpans(provider, [SimpleSpanProcessor(ours_out)])
    made = []
    for start in (lambda: provider.get_tracer("mcp-python-sdk").start_span("tools/call a__t", parent, SpanKind.SERVER,
                                                                             dict(ATTRIBUTES)),
                  lambda: spans.start(InstrumentationScope("mcp-python-sdk", ""), "tools/call a__t", SpanKind.SERVER,
                                      dict(ATTRIBUTES), parent)):
        span = start()
        token = context.attach(trace.set_span_in_context(span))
        try:
            assert trace.get_current_span() is span
            span.set_attributes({"monad.server": "a", "monad.call.id": 3})
            span.set_attribute("error.type", "tool_error")
            span.set_status(StatusCode.ERROR)
            span.set_status(StatusCode.UNSET)  # not OK: it stays ERROR … as the SDK's
        finally:
            context.detach(token)
            span.end()
        span.set_attribute("late", "ignored")  # after the end: dropped by both
        made.append(span)
    sdk_spans, our_spans = sdk_out.get_finished_spans(), ours_out.get_finished_spans()
    return (made[0], sdk_spans[0] if sdk_spans else None), (made[1], our_spans[0] if our_spans else None)


@pytest.mark.parametrize("parent", [None, "agent"])
def test_a_call_span_is_the_sdks_span(parent: str | None) -> None:
    provider = TracerProvider()
    ctx = extract(AGENT) if parent else None
    (sdk_span, sdk), (our_span, ours) = _both(provider, ctx)
    assert sdk is not None and ours is not None
    assert (ours.name, ours.kind) == (sdk.name, sdk.kind)
    assert dict(ours.attributes) == dict(sdk.attributes) and "late" not in ours.attributes
    assert (ours.status.status_code, ours.status.description) == (sdk.status.status_code, sdk.status.description)
    assert ours.resource == sdk.resource and ours.instrumentation_scope == sdk.instrumentation_scope
    assert ours.context.trace_flags == sdk.context.trace_flags
    assert ours.context.trace_state == sdk.context.trace_state
    assert (ours.parent is None) == (sdk.parent is None)
    if parent:  # the agent's trace continues: same trace, the agent's span as parent
        assert ours.context.trace_id == sdk.context.trace_id == int(AGENT["traceparent"][3:35], 16)
        assert ours.parent == sdk.parent
    else:
        assert ours.context.trace_id != sdk.context.trace_id  # a trace of its own each
    assert ours.start_time is not None and ours.end_time is not None and ours.start_time <= ours.end_time
    assert not ours.events and not sdk.events
    assert not our_span.is_recording() and not sdk_span.is_recording()


@pytest.mark.parametrize("sampler", [ALWAYS_OFF, ParentBased(ALWAYS_OFF), TraceIdRatioBased(0.0)])
def test_an_unsampled_call_span_is_not_recorded_and_carries_the_context(sampler: Any) -> None:
    provider = TracerProvider(sampler=sampler)
    (sdk_span, sdk), (our_span, ours) = _both(provider, None)
    assert sdk is None and ours is None  # neither reaches the processors
    mine, theirs = our_span.get_span_context(), sdk_span.get_span_context()
    assert mine.is_valid and mine.trace_flags == theirs.trace_flags  # not sampled, still propagated
    assert not our_span.is_recording() and not sdk_span.is_recording()
