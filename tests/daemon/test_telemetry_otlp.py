"""monad's OTLP span encoder (daemon/telemetry/otlp.py) held to the library's: for spans of
every shape the OpenTelemetry SDK and monad make, `SpanEncoder.encode` writes the bytes of
`encode_spans(spans).SerializePartialToString()`; what it does not take goes to the library;
and the exporter built on it sends a real OTLP receiver what the library's exporter sends."""

from __future__ import annotations

import math
import time
from typing import Any

import pytest

pytest.importorskip("opentelemetry.exporter.otlp.proto.http")

from opentelemetry import context, trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.propagate import extract
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan, SpanLimits, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode, TraceFlags, TraceState

from monad_cli.daemon.telemetry.aggregate import Aggregates
from monad_cli.daemon.telemetry.otlp import SpanEncoder, Unencodable, span_exporter
from monad_cli.daemon.telemetry.recorder import Recorder
from tests.otlp import OtlpReceiver

AGENT = {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "tracestate": "vendor=x,other=y"}
RESULT = {"content": [{"type": "text", "text": "hi"}]}


def library(spans: list[Any]) -> bytes:
    return encode_spans(spans).SerializePartialToString()


def _provider(resource: Resource | None = None, **kwargs: Any) -> tuple[TracerProvider, InMemorySpanExporter]:
    provider = TracerProvider(resource=resource or Resource.create({"service.name": "monad"}), **kwargs)
    out = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(out))
    return provider, out


def _monad_call_spans(n: int) -> list[Any]:
    """The spans of `n` gateway calls as the supervisor's recorder makes them (the SERVER and
    the upstream CLIENT span, on a direct lane), half of them under an agent's trace context,
    some failing."""
    out = InMemorySpanExporter()
    rec = Recorder(Aggregates(), tracer_provider=TracerProvider(resource=Resource.create({"service.name": "monad"})),
                   span_processors=[SimpleSpanProcessor(out)])
    for i in range(n):
        meta = dict(AGENT) if i % 2 else None
        with rec.server_request("tools/call", "b__echo", request_id=i, protocol_version="2025-11-25", meta=meta,
                                transport="pipe") as span, rec.call("b__echo", "gateway"):
            rec.annotate_call(server="b", exposed="b__echo", via="gateway", decision="approved",
                              decided_by="trust.autoApproveTools", call_id=i, arguments={"text": "hello"})
            with rec.client_request("tools/call", "echo", server="b", transport="stdio",
                                    protocol_version="2025-11-25", address=None, session_id=None,
                                    current=False) as upstream:
                rec.inject({}, upstream)
                rec.request_id(i, upstream)
                rec.result(upstream, {**RESULT, "isError": i % 3 == 0})
            rec.outcome(server="b", outcome="ok", decision="approved", via="gateway")
            rec.result(span, RESULT)
            if i == 1:
                span.add_event("an event", {"k": 1})
    return list(out.get_finished_spans())


def test_monad_call_spans_are_the_librarys_bytes() -> None:
    spans = _monad_call_spans(40)
    assert {s.kind for s in spans} == {SpanKind.SERVER, SpanKind.CLIENT}
    assert any(s.parent is not None and s.parent.is_remote for s in spans)  # the agent's context
    assert any(s.status.status_code is StatusCode.ERROR for s in spans) and any(s.events for s in spans)
    assert {type(s).__name__ for s in spans} == {"CallSpan"}  # monad's own, read directly
    encoder = SpanEncoder()
    expected = library(spans)
    assert encoder.encode(spans) == expected
    assert encoder.encode(spans) == expected  # again, from what it kept
    assert encoder.encode(spans[:1]) == library(spans[:1])
    assert encoder.encode([]) == library([]) == b""


def test_sdk_spans_of_every_shape_are_the_librarys_bytes() -> None:
    resource = Resource.create({"service.name": "monad", "deployment.environment": "test", "n": 3},
                               schema_url="https://opentelemetry.io/schemas/1.26.0")
    provider, out = _provider(resource, span_limits=SpanLimits(max_span_attributes=12, max_events=2, max_links=2,
                                                                  max_event_attributes=1))
    plain = provider.get_tracer("mcp-python-sdk")
    versioned = provider.get_tracer("monad", "1.2.3", schema_url="https://example.com/schema",
                                    attributes={"scope.attr": "x"})
    remote = trace.get_current_span(extract(AGENT)).get_span_context()
    local_parent = plain.start_span("parent", kind=SpanKind.INTERNAL)
    values: dict[str, Any] = {
        "str": "välue ✓ 𝄞", "empty": "", "true": True, "false": False, "zero": 0, "negative": -5,
        "int64.max": 2**63 - 1, "int64.min": -(2**63), "float": 1.5, "neg.zero": -0.0, "pos.zero": 0.0,
        "nan": math.nan, "inf": -math.inf, "strs": ("a", "", "b"), "ints": (1, -2, 0), "bools": (True, False),
        "floats": (0.0, -0.0, 2.5), "no.items": (),
    }
    kinds = [SpanKind.INTERNAL, SpanKind.SERVER, SpanKind.CLIENT, SpanKind.PRODUCER, SpanKind.CONSUMER]
    for i, kind in enumerate(kinds):
        tracer = versioned if i % 2 else plain
        parent = trace.set_span_in_context(trace.NonRecordingSpan(remote)) if i == 1 else (
            trace.set_span_in_context(local_parent) if i == 2 else context.Context())
        links = [Link(remote), Link(remote, {"link.attr": 1, "dropped": 2}), Link(local_parent.get_span_context())] \
            if i == 3 else []  # the newest two kept, the first dropped
        span = tracer.start_span(f"op {i}" if i != 4 else "", parent, kind, links=links)
        span.set_attributes(dict(list(values.items())[i * 4:i * 4 + 14]))  # past the limit at times: dropped
        if i in (0, 3):
            span.add_event("first, dropped by the limit")
            span.add_event("second", {"e": "v", "n": 2}, timestamp=1_700_000_000_000_000_001)
            span.add_event("third")
        statuses = {1: Status(StatusCode.ERROR, "went wrong: ✗"), 2: Status(StatusCode.OK), 3: Status(StatusCode.ERROR)}
        span.set_status(statuses.get(i, Status(StatusCode.UNSET)))
        span.end()
    local_parent.end()
    spans = list(out.get_finished_spans())
    assert any(s.dropped_attributes for s in spans) and any(s.dropped_events for s in spans)
    assert any(s.dropped_links for s in spans) and any(e.dropped_attributes for s in spans for e in s.events)
    assert {link.context.is_remote for s in spans for link in s.links} == {True, False}
    assert SpanEncoder().encode(spans) == library(spans)
    for one in spans:
        assert SpanEncoder().encode([one]) == library([one]), one.name


def test_grouping_by_resource_and_scope_is_the_librarys() -> None:
    """Equal resources and scopes that are distinct objects are one group, in first-seen order,
    as the library's dicts make them; a span with no scope, and a resource with no attributes."""
    context_ = SpanContext(0x1234, 0x5678, False, TraceFlags(1), TraceState([("k", "v")]))
    parent = SpanContext(0x1234, 0x9, True, TraceFlags(1))

    def span(name: str, resource: Resource, scope: InstrumentationScope | None, **kw: Any) -> ReadableSpan:
        return ReadableSpan(name=name, context=context_, parent=kw.get("parent"), resource=resource,
                            attributes=kw.get("attributes", {"a": name}), instrumentation_scope=scope,
                            start_time=10, end_time=20, kind=SpanKind.SERVER, status=Status(StatusCode.UNSET),
                            events=kw.get("events", ()))

    r1, r1_again, r2 = Resource({"service.name": "a"}), Resource({"service.name": "a"}), Resource({})
    s1, s1_again = InstrumentationScope("x", "1"), InstrumentationScope("x", "1")
    s2 = InstrumentationScope("y", schema_url="https://example.com/s")
    spans = [span("1", r1, s1), span("2", r2, s2), span("3", r1_again, s1_again, parent=parent),
             span("4", r1, None), span("5", r2, s1), span("6", r1, s2, attributes={}),
             span("7", r1, s1, events=(Event("e", {"x": (1, 2)}, 5),)),
             span("8", r1, s1, attributes={"f": 0.0}), span("9", r1, s1, attributes={"f": -0.0})]
    assert SpanEncoder().encode(spans) == library(spans)


@pytest.mark.parametrize("value", [object(), 2**63, -(2**63) - 1, "lone \ud800 surrogate", {"k": object()}])
def test_what_the_encoder_does_not_take_goes_to_the_library(value: Any) -> None:
    bad = ReadableSpan(name="bad", context=SpanContext(1, 2, False), resource=Resource({}),
                       attributes={"ok": "yes", "bad": value}, kind=SpanKind.CLIENT)
    with pytest.raises(Unencodable):
        SpanEncoder().encode([bad])


@pytest.mark.parametrize("key", [0, False, (), 0.0, None, 7])
def test_a_key_or_a_name_that_is_not_a_string_goes_to_the_library(key: Any) -> None:
    """The library drops such an attribute (or refuses such a name); never written as empty."""
    for attributes, name in (({key: "x", "ok": "y"}, "span"), ({"ok": "y"}, key)):
        span = ReadableSpan(name=name, context=SpanContext(1, 2, False), resource=Resource({}),
                            attributes=attributes, kind=SpanKind.CLIENT)
        if name is None:  # no name: written as none, as the library does
            assert SpanEncoder().encode([span]) == library([span])
            continue
        with pytest.raises(Unencodable):
            SpanEncoder().encode([span])
    event = ReadableSpan(name="e", context=SpanContext(1, 2, False), resource=Resource({}), kind=SpanKind.CLIENT,
                         events=(Event(key, {"a": 1}, 5),))
    if key is not None:
        with pytest.raises(Unencodable):
            SpanEncoder().encode([event])


def test_a_long_run_past_the_caches_bounds_stays_the_librarys(monkeypatch: pytest.MonkeyPatch) -> None:
    from monad_cli.daemon.telemetry import otlp

    monkeypatch.setattr(otlp, "_CACHE_ENTRIES", 64)
    spans = _monad_call_spans(300)  # 600 spans, each call with its own request id: the caches clear
    encoder = SpanEncoder()
    for start in range(0, len(spans), 100):
        batch = spans[start:start + 100]
        assert encoder.encode(batch) == library(batch)
        assert len(encoder._attrs) <= 64 and all(len(values) <= 64 for values in encoder._strs.values())
    assert len(encoder._strs["jsonrpc.request.id"]) < 64  # it cleared on the way


def _export(exporter: Any, spans: list[Any], receiver: OtlpReceiver) -> tuple[SpanExportResult, list[Any]]:
    before = len(receiver.received.spans)
    result = exporter.export(spans)
    exporter.shutdown()
    with receiver.received.lock:
        return result, [(s.name, s.kind, s.trace_id, s.span_id, s.parent_span_id, s.attributes, s.status_code,
                         s.status_message, s.scope) for s in receiver.received.spans[before:]]


def test_the_exporter_sends_what_the_librarys_sends() -> None:
    spans = _monad_call_spans(5)
    odd: dict[str, Any] = {"ok": "yes", "bad": object()}
    bad = ReadableSpan(name="odd", context=SpanContext(1, 2, False), resource=Resource({}),
                       attributes=odd, kind=SpanKind.CLIENT, start_time=1, end_time=2)
    with OtlpReceiver() as receiver:
        url = f"{receiver.endpoint}/v1/traces"
        ours = span_exporter(endpoint=url)
        assert ours.own, "the fields the exporter sends through were renamed: it falls back on every batch"
        sent: list[bytes] = []
        real_send = ours._client.export

        def send(data: bytes) -> Any:  # the bytes on their way to the receiver
            sent.append(data)
            return real_send(data)

        ours._client.export = send
        result, received = _export(ours, spans, receiver)
        assert result is SpanExportResult.SUCCESS and sent == [library(spans)]
        lib_result, lib_received = _export(OTLPSpanExporter(endpoint=url), spans, receiver)
        assert (result, received) == (lib_result, lib_received) and len(received) == len(spans)
        # A batch it does not take is the library's: its attribute dropped, the rest sent.
        odd_result, odd_received = _export(span_exporter(endpoint=url), [bad], receiver)
        assert odd_result is SpanExportResult.SUCCESS and odd_received[0][5] == {"ok": "yes"}
        # A collector that refuses: a failure, as the library's.
        down = span_exporter(endpoint=f"{receiver.endpoint}/nowhere", timeout=1)
        started = time.monotonic()
        assert down.export(spans) is SpanExportResult.FAILURE
        assert time.monotonic() - started < 5


def test_a_fault_of_the_encoder_is_logged_once_and_the_library_sends(caplog: pytest.LogCaptureFixture) -> None:
    spans = _monad_call_spans(2)
    with OtlpReceiver() as receiver:
        exporter = span_exporter(endpoint=f"{receiver.endpoint}/v1/traces")

        def broken(batch: Any) -> bytes:
            raise RuntimeError("a bug of ours, quoting tools/call b__echo")

        exporter.encoder.encode = broken
        with caplog.at_level("WARNING", logger="monad.telemetry"):
            assert exporter.export(spans) is SpanExportResult.SUCCESS
            assert exporter.export(spans) is SpanExportResult.SUCCESS
        exporter.shutdown()
        assert len(receiver.spans()) == 2 * len(spans)  # the library encoded and sent both batches
    warnings = [r.getMessage() for r in caplog.records if r.name == "monad.telemetry"]
    assert warnings == ["telemetry: monad's OTLP encoder failed (RuntimeError); the library encodes the spans "
                        "it cannot"], warnings  # once, and without the exception's message
