"""`daemon/telemetry/sdk.py`: `Scrubbed`, the one place every exported span passes (spans made
by the OpenTelemetry SDK's own tracer, monad's and the MCP SDK's alike, exported through it
to the SDK's in-memory exporter, with the supervisor's real scrubber, `core.redact.Scrubber`);
and the sampler the supervisor runs, the one `OTEL_TRACES_SAMPLER` names."""

from __future__ import annotations

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from monad_cli.core.redact import Scrubber
from monad_cli.daemon.telemetry.sdk import QuietSampler, Scrubbed, providers
from monad_cli.daemon.telemetry.settings import TelemetrySettings

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


@pytest.mark.parametrize("sampler,ratio,expected", [
    ("", "", "ParentBased{root:AlwaysOnSampler"),
    ("parentbased_traceidratio", "0.1", "ParentBased{root:TraceIdRatioBased{0.1}"),
    ("always_off", "", "AlwaysOffSampler"),
])
def test_the_sampler_is_the_one_the_environment_names(monkeypatch: pytest.MonkeyPatch, sampler: str, ratio: str,
                                                      expected: str) -> None:
    """docs/telemetry.md "Sampling": the SDK reads OTEL_TRACES_SAMPLER(_ARG) itself; monad's
    wrapper only drops the MCP SDK's own spans that start a trace (its pings)."""
    for var, value in (("OTEL_TRACES_SAMPLER", sampler), ("OTEL_TRACES_SAMPLER_ARG", ratio)):
        if value:
            monkeypatch.setenv(var, value)
        else:
            monkeypatch.delenv(var, raising=False)
    tracers, meters, _text = providers(TelemetrySettings(enabled=True, endpoint="http://127.0.0.1:9"), {}, str)
    try:
        assert tracers is not None and isinstance(tracers.sampler, QuietSampler)
        assert tracers.sampler.get_description().startswith(f"QuietSampler({expected}"), tracers.sampler
        with tracers.get_tracer("mcp-python-sdk").start_as_current_span("MCP send ping") as ping:
            assert not ping.is_recording()  # a ping of its own: no trace
    finally:
        tracers.shutdown()
        meters.shutdown()


def test_a_batch_is_scanned_once_and_only_its_span_with_a_secret_is_rebuilt() -> None:
    """The batch thread's export: one scan of every name and string attribute of the batch
    (not one per string); the spans with nothing to hide go as they are, beside one that held
    a secret, which goes masked."""
    ended = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(ended))
    tracer = provider.get_tracer("monad")
    for name, uri in (("tools/call echo", "file:///a"), ("resources/read", f"file:///{SECRET}"),
                      ("tools/call add", "file:///b")):
        with tracer.start_as_current_span(name, attributes={"mcp.resource.uri": uri, "n": 1}):
            pass
    batch = ended.get_finished_spans()
    scans: list[str] = []
    reference = Scrubber([SECRET])

    def scrub(text: str) -> str:
        scans.append(text)
        return reference(text)

    clean = [batch[0], batch[2]]
    out = InMemorySpanExporter()
    Scrubbed(out, scrub).export(clean)
    assert list(out.get_finished_spans()) == clean and len(scans) == 1  # one scan for the batch, no copy
    out.clear()
    Scrubbed(out, scrub).export(batch)
    first, masked, last = out.get_finished_spans()
    assert first is batch[0] and last is batch[2]
    assert dict(masked.attributes or {}) == {"mcp.resource.uri": "file:///***", "n": 1}
