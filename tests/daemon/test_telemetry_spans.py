"""monad's call spans (daemon/telemetry/spans.py) held to the OpenTelemetry SDK's: the same
span started and ended both ways, under the same provider (sampler, ids, resource), reaches
the span processors as the same `ReadableSpan`: name, kind, trace and parent, flags, trace
state, attributes, status, resource and scope."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry import context, propagate, trace
from opentelemetry.propagate import extract
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import (
    ALWAYS_OFF,
    ALWAYS_ON,
    DEFAULT_OFF,
    DEFAULT_ON,
    ParentBased,
    ParentBasedTraceIdRatio,
    TraceIdRatioBased,
)
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import NonRecordingSpan, SpanContext, SpanKind, StatusCode, TraceFlags, TraceState

from monad_cli.daemon.telemetry.sdk import QuietSampler
from monad_cli.daemon.telemetry.spans import CallSpans, Unrecorded, fixed_decisions

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


PARENTS = {  # the five cases a parent-based sampler tells apart
    "none": None,
    "remote sampled": {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
                       "tracestate": "vendor=x"},
    "remote not sampled": {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00",
                           "tracestate": "vendor=y"},
    "local sampled": SpanContext(0x0AF7651916CD43DD8448EB211C80319C, 0xB7AD6B7169203331, False, TraceFlags(1),
                                 TraceState([("vendor", "z")])),
    "local not sampled": SpanContext(0x0AF7651916CD43DD8448EB211C80319C, 0xB7AD6B7169203331, False, TraceFlags(0)),
}


def _parent_context(parent: Any) -> Any:
    if parent is None:
        return None
    if isinstance(parent, dict):
        return extract(parent)
    return trace.set_span_in_context(NonRecordingSpan(parent))


FIXED = [ALWAYS_ON, ALWAYS_OFF, DEFAULT_ON, DEFAULT_OFF, QuietSampler(DEFAULT_ON),
         ParentBased(ALWAYS_ON, remote_parent_sampled=ALWAYS_OFF, remote_parent_not_sampled=ALWAYS_ON,
                     local_parent_sampled=ALWAYS_OFF, local_parent_not_sampled=ALWAYS_ON)]


@pytest.mark.parametrize("sampler", FIXED, ids=lambda s: s.get_description())
@pytest.mark.parametrize("parent", list(PARENTS), ids=str)
def test_a_fixed_samplers_outcome_is_the_samplers(sampler: Any, parent: str) -> None:
    """`fixed_decisions` (the sampler not called per span) decides what the sampler decides,
    and the span it starts has the SDK span's flags, trace state and attributes."""
    ctx = _parent_context(PARENTS[parent])
    decisions = fixed_decisions(sampler)
    assert decisions is not None
    index = {"none": 0, "remote sampled": 1, "remote not sampled": 2, "local sampled": 3, "local not sampled": 4}
    expected = sampler.should_sample(ctx, 1, "tools/call a__t", SpanKind.SERVER, ATTRIBUTES)
    assert decisions[index[parent]] is expected.decision.is_sampled()
    provider = TracerProvider(sampler=sampler)
    (sdk_span, sdk), (our_span, ours) = _both(provider, ctx)
    mine, theirs = our_span.get_span_context(), sdk_span.get_span_context()
    assert (mine.trace_flags, mine.trace_state, mine.is_remote) == (theirs.trace_flags, theirs.trace_state,
                                                                    theirs.is_remote)
    assert (ours is None) == (sdk is None)
    if ours is not None and sdk is not None:
        assert dict(ours.attributes) == dict(sdk.attributes)
        assert ours.context.trace_state == sdk.context.trace_state and ours.parent == sdk.parent


@pytest.mark.parametrize("sampler", [TraceIdRatioBased(0.5), ParentBasedTraceIdRatio(0.5),
                                     QuietSampler(TraceIdRatioBased(0.5)), ParentBased(TraceIdRatioBased(0.5))],
                         ids=lambda s: s.get_description())
def test_any_other_sampler_is_called(sampler: Any) -> None:
    assert fixed_decisions(sampler) is None


INJECTED = {  # the spans a call hands `Recorder.inject`, by the context they carry
    "sampled, trace state": NonRecordingSpan(SpanContext(0x0AF7651916CD43DD8448EB211C80319C, 0xB7AD6B7169203331,
                                                         False, TraceFlags(1), TraceState([("v", "x"), ("w", "y")]))),
    "random id flag": NonRecordingSpan(SpanContext(0x1, 0x2, False, TraceFlags(3))),
    "not sampled, empty trace state": NonRecordingSpan(SpanContext(0xABC, 0xDEF, True, TraceFlags(0), TraceState())),
    "the agent's, unrecorded": Unrecorded(SpanContext(0xABC, 0xDEF, True, TraceFlags(1), TraceState([("a", "b")]))),
    "invalid": NonRecordingSpan(trace.INVALID_SPAN_CONTEXT),
    "none, unrecorded": Unrecorded(trace.INVALID_SPAN_CONTEXT),
}


@pytest.mark.parametrize("span", list(INJECTED), ids=str)
@pytest.mark.parametrize("with_baggage", [False, True], ids=["no baggage", "baggage"])
def test_inject_writes_what_the_propagators_write(span: str, with_baggage: bool) -> None:
    """`Recorder.inject` writes the W3C lines itself under the default propagators: what
    `propagate.inject` writes for the same span (baggage in the current context: the
    propagators' own path); an unrecorded span with no context writes nothing."""
    from opentelemetry import baggage

    from monad_cli.daemon.telemetry.aggregate import Aggregates
    from monad_cli.daemon.telemetry.recorder import Recorder

    recorder = Recorder(Aggregates(), tracer_provider=TracerProvider())
    assert recorder.w3c_propagators
    given = INJECTED[span]
    token = context.attach(baggage.set_baggage("tenant", "t1") if with_baggage else context.get_current())
    try:
        ours: dict[str, Any] = {}
        recorder.inject(ours, given)
        theirs: dict[str, Any] = {}
        made_up = type(given) is Unrecorded and not given.get_span_context().is_valid  # nothing to pass on
        if not made_up:
            propagate.inject(theirs, context=trace.set_span_in_context(given))
    finally:
        context.detach(token)
    assert ours == theirs
    assert ("traceparent" in ours) is given.get_span_context().is_valid
    assert ("baggage" in ours) is (with_baggage and not made_up)


def test_other_propagators_are_called() -> None:
    from opentelemetry.baggage.propagation import W3CBaggagePropagator
    from opentelemetry.propagators.composite import CompositePropagator
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    from monad_cli.daemon.telemetry.recorder import w3c_propagators

    default = propagate.get_global_textmap()
    try:
        for textmap, expected in [(CompositePropagator([TraceContextTextMapPropagator()]), True),
                                  (TraceContextTextMapPropagator(), True),
                                  (W3CBaggagePropagator(), False),
                                  (CompositePropagator([W3CBaggagePropagator(),
                                                        TraceContextTextMapPropagator()]), False),
                                  (CompositePropagator([TraceContextTextMapPropagator(), W3CBaggagePropagator(),
                                                        TraceContextTextMapPropagator()]), False)]:
            propagate.set_global_textmap(textmap)
            assert w3c_propagators() is expected, textmap
    finally:
        propagate.set_global_textmap(default)


def _contexts() -> list[dict[str, Any]]:
    """Agents' `_meta`: valid, malformed in each way the W3C format refuses, and mutated."""
    import random

    valid = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    metas: list[dict[str, Any]] = [
        {}, {"traceparent": valid}, {"traceparent": valid, "tracestate": "v=x,w=y"},
        {"traceparent": valid, "tracestate": ""}, {"traceparent": valid, "tracestate": "bad member"},
        {"traceparent": valid, "tracestate": "k=1,k=2"}, {"traceparent": valid, "tracestate": "x" * 600},
        {"traceparent": valid, "tracestate": " a=1 ,, b=2 "}, {"traceparent": valid, "baggage": "k=v"},
        {"traceparent": valid, "tracestate": 7}, {"traceparent": valid.upper()}, {"traceparent": ""},
        {"traceparent": None}, {"traceparent": 5}, {"traceparent": [valid]}, {"tracestate": "v=x"},
        {"traceparent": "00-" + "0" * 32 + "-b7ad6b7169203331-01"}, {"traceparent": valid[:36] + "0" * 16 + "-01"},
        {"traceparent": "ff" + valid[2:]}, {"traceparent": "01" + valid[2:] + "-future"},
        {"traceparent": valid + "-extra"}, {"traceparent": " \t" + valid + " \t"}, {"traceparent": valid + "\n"},
        {"traceparent": valid[:-2] + "ff"}, {"traceparent": valid[:-2] + "00"}, {"traceparent": valid + " " * 600},
        {"traceparent": valid[:-1]},
    ]
    rng = random.Random(27)
    alphabet = "0123456789abcdefABCDEF- \tzx\n"
    for _ in range(1500):
        chars = list(valid)
        for _ in range(rng.randint(1, 3)):
            where = rng.randrange(len(chars))
            what = rng.choice(["replace", "delete", "insert"])
            if what == "replace":
                chars[where] = rng.choice(alphabet)
            elif what == "delete":
                del chars[where]
            else:
                chars.insert(where, rng.choice(alphabet))
        metas.append({"traceparent": "".join(chars)})
    return metas


def test_an_agents_trace_context_is_read_as_the_propagators_read_it() -> None:
    """`agent_trace_context` gives what the MCP SDK's `extract_trace_context` (the default
    propagators) gives, or leaves it to them; and the SERVER span's parent is the same."""
    from mcp.shared._otel import extract_trace_context

    from monad_cli.daemon.telemetry.recorder import agent_trace_context

    decided = 0
    for meta in _contexts():
        theirs = trace.get_current_span(extract_trace_context(meta)).get_span_context()
        ours = agent_trace_context(meta)
        if ours is None:  # left to the propagators
            assert "baggage" in meta or any(not isinstance(v, str) or len(v) > 512 for v in meta.values()), meta
            continue
        decided += 1
        assert ours == theirs, meta
        assert ours.trace_state.to_header() == theirs.trace_state.to_header(), meta
    assert decided > 1400


@pytest.mark.parametrize("meta", [{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
                                   "tracestate": "v=x"},
                                  {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"},
                                  {"traceparent": "junk"}, {"other": 1}])
def test_a_server_span_under_an_agents_context_is_the_sdks(meta: dict[str, Any]) -> None:
    from mcp.shared._otel import extract_trace_context

    from monad_cli.daemon.telemetry.aggregate import Aggregates
    from monad_cli.daemon.telemetry.recorder import Recorder

    out = InMemorySpanExporter()
    provider = TracerProvider()
    recorder = Recorder(Aggregates(), tracer_provider=provider, span_processors=[SimpleSpanProcessor(out)])
    with recorder.server_request("tools/call", "a__t", request_id=1, protocol_version="2025-11-25", meta=meta,
                                 transport="pipe") as span:
        ours = span.get_span_context()
    sdk = provider.get_tracer("mcp-python-sdk").start_span("tools/call a__t", extract_trace_context(meta),
                                                          SpanKind.SERVER)
    theirs = sdk.get_span_context()
    assert (ours.trace_flags, ours.trace_state, ours.is_valid) == (theirs.trace_flags, theirs.trace_state,
                                                                   theirs.is_valid)
    recorded = out.get_finished_spans()
    if meta.get("traceparent", "").startswith("00-0af7") and meta["traceparent"].endswith("01"):
        assert recorded[0].parent is not None and recorded[0].parent.is_remote
        assert ours.trace_id == theirs.trace_id == 0x0AF7651916CD43DD8448EB211C80319C
    elif meta.get("traceparent", "").endswith("-00"):
        assert not recorded and ours.trace_id == theirs.trace_id  # not sampled, still the agent's trace
    else:
        assert recorded[0].parent is None and ours.trace_id != theirs.trace_id  # a trace of its own each


@pytest.mark.parametrize("meta", [{"progressToken": 1}, {"traceparent": "junk"},
                                  {"traceparent": "00-" + "0" * 32 + "-b7ad6b7169203331-01"},
                                  {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}])
def test_without_spans_the_stand_in_carries_what_the_sdks_extract_gives(meta: dict[str, Any]) -> None:
    """No exporter (no span built): a request's stand-in carries the agent's context, and,
    when `_meta` holds none that is valid, the current span's, as `extract_trace_context`'s
    None leaves it to the current context."""
    from mcp.shared._otel import extract_trace_context

    from monad_cli.daemon.telemetry.aggregate import Aggregates
    from monad_cli.daemon.telemetry.recorder import Recorder

    recorder = Recorder(Aggregates(), tracer_provider=TracerProvider())
    assert recorder.call_spans is None
    ambient = NonRecordingSpan(SpanContext(0xAAA, 0xBBB, False, TraceFlags(1)))
    token = context.attach(trace.set_span_in_context(ambient))
    try:
        expected = trace.get_current_span(extract_trace_context(meta)).get_span_context()
        with recorder.server_request("tools/call", "a__t", request_id=1, protocol_version="2025-11-25", meta=meta,
                                     transport="pipe") as span:
            assert span.get_span_context() == expected
    finally:
        context.detach(token)
    assert expected.trace_id == (0x0AF7651916CD43DD8448EB211C80319C if meta.get("traceparent", "").startswith("00-0a")
                                 else 0xAAA)
