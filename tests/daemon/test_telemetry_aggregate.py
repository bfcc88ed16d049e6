"""monad's own aggregation of the per-call metrics (daemon/telemetry/aggregate.py, and the
`monad.tool.calls` counter the recorder keeps) held to the OpenTelemetry SDK's: the same
measurements recorded both ways give the same series (attribute sets), bucket counts,
counts, sums, minima and maxima, cumulative and delta, through the SDK's real readers."""

from __future__ import annotations

import random
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.sdk.metrics import Histogram, MeterProvider
from opentelemetry.sdk.metrics.export import AggregationTemporality, InMemoryMetricReader

from monad_cli.daemon.telemetry.aggregate import Aggregates
from monad_cli.daemon.telemetry.recorder import DURATION_BUCKETS, JOURNAL_BUCKETS, Recorder
from monad_cli.daemon.telemetry.sdk import PullReader

CUMULATIVE, DELTA = AggregationTemporality.CUMULATIVE, AggregationTemporality.DELTA


def _points(data: Any, name: str) -> dict[frozenset[tuple[str, Any]], Any]:
    if data is None:  # nothing measured since a delta reader's last collection
        return {}
    found = [m for rm in data.resource_metrics for sm in rm.scope_metrics for m in sm.metrics if m.name == name]
    assert len(found) <= 1, found
    return {frozenset(p.attributes.items()): p for m in found for p in m.data.data_points}


def _same_histograms(ours: dict[Any, Any], sdk: dict[Any, Any]) -> None:
    assert ours.keys() == sdk.keys()  # the same series
    for key, p in sdk.items():
        o = ours[key]
        assert tuple(o.bucket_counts) == tuple(p.bucket_counts), key
        assert tuple(o.explicit_bounds) == tuple(float(b) for b in p.explicit_bounds)
        assert (o.count, o.min, o.max) == (p.count, p.min, p.max), key
        assert o.sum == pytest.approx(p.sum, rel=1e-12), key


@pytest.mark.parametrize("temporality", [CUMULATIVE, DELTA])
@pytest.mark.parametrize("bounds", [DURATION_BUCKETS, JOURNAL_BUCKETS])
def test_histograms_match_the_sdks(temporality: AggregationTemporality, bounds: tuple[float, ...]) -> None:
    aggregates = Aggregates()
    slot = aggregates.reader(temporality)
    ours = aggregates.histogram("h", unit="s", description="d", boundaries=bounds)
    reader = InMemoryMetricReader(preferred_temporality={Histogram: temporality})
    sdk = MeterProvider(metric_readers=[reader]).get_meter("ref").create_histogram(
        "h", unit="s", explicit_bucket_boundaries_advisory=list(bounds))
    rng = random.Random(27)
    # Every bound exactly (it counts in its own bucket), zero, beyond the last, and a spread.
    values = [*bounds, 0.0, bounds[-1] * 2, *(rng.uniform(0, bounds[-1] * 1.2) for _ in range(300)),
              *(rng.expovariate(1 / bounds[2]) for _ in range(300))]
    sets = [(("mcp.method.name", "tools/call"), ("gen_ai.tool.name", "a__t")),
            (("mcp.method.name", "tools/call"), ("gen_ai.tool.name", "a__t"), ("error.type", "tool_error")),
            (("mcp.method.name", "tools/list"),), ()]

    def record(values: list[float], sets: list[Any]) -> None:
        for i, v in enumerate(values):
            key = sets[i % len(sets)]
            ours.record(v, key)
            sdk.record(v, dict(reversed(key)))  # the order of a set's keys makes no other series

    def collect() -> tuple[dict[Any, Any], dict[Any, Any]]:
        from time import time_ns

        metric = ours.collect(slot, time_ns())
        assert metric is None or metric.data.aggregation_temporality is temporality
        mine = {frozenset(p.attributes.items()): p for p in (metric.data.data_points if metric else [])}
        return mine, _points(reader.get_metrics_data(), "h")

    record(values, sets)
    _same_histograms(*collect())
    # A second period with one set silent: delta leaves it out, cumulative keeps its totals.
    record(values[:100], sets[:2])
    mine, theirs = collect()
    _same_histograms(mine, theirs)
    assert len(mine) == (2 if temporality is DELTA else 4)
    # Nothing new: a delta reader gets no point at all.
    mine, theirs = collect()
    _same_histograms(mine, theirs)


def test_the_recorders_series_match_the_sdks_instruments() -> None:
    """Through the recorder and the pull reader `GET /metrics` reads: the call-path
    histograms and `monad.tool.calls` come out as the SDK's own instruments would give them."""
    from opentelemetry.sdk.trace import TracerProvider

    aggregates = Aggregates()
    pull = PullReader(aggregates)
    provider = MeterProvider(metric_readers=[pull])
    recorder = Recorder(aggregates, tracer_provider=TracerProvider(), meter_provider=provider)
    ref = provider.get_meter("ref")
    server = ref.create_histogram("ref.server", unit="s", explicit_bucket_boundaries_advisory=list(DURATION_BUCKETS))
    journal = ref.create_histogram("ref.journal", unit="s", explicit_bucket_boundaries_advisory=list(JOURNAL_BUCKETS))
    calls = ref.create_counter("ref.calls", unit="{call}")
    rng = random.Random(5)
    for i in range(400):
        seconds = rng.expovariate(20)
        method = ("tools/call", "tools/list", "prompts/get")[i % 3]
        error = "-32602" if i % 7 == 0 else None
        recorder.record_server(method, "a__t", seconds, error=error)
        attributes = {"mcp.method.name": method, **({"gen_ai.tool.name": "a__t"} if method == "tools/call" else {}),
                      **({"error.type": error} if error else {})}
        server.record(seconds, attributes)
        recorder.journal_written(seconds / 50)
        journal.record(seconds / 50)
        outcome = ("ok", "tool-error", "refused")[i % 3]
        recorder.outcome(server="a", outcome=outcome, decision="approved", via="gateway")
        calls.add(1, {"monad.server": "a", "monad.call.outcome": outcome, "monad.approval.decision": "approved",
                      "monad.via": "gateway"})
    data = pull.get_metrics_data()
    _same_histograms(_points(data, "mcp.server.operation.duration"), _points(data, "ref.server"))
    _same_histograms(_points(data, "monad.journal.write.duration"), _points(data, "ref.journal"))
    ours, theirs = _points(data, "monad.tool.calls"), _points(data, "ref.calls")
    assert ours.keys() == theirs.keys() and len(ours) == 3
    assert {k: p.value for k, p in ours.items()} == {k: p.value for k, p in theirs.items()}
    # The same kind of series: a monotonic cumulative sum, and histograms in the `monad` scope.
    by_name = {m.name: (sm.scope.name, m) for rm in data.resource_metrics for sm in rm.scope_metrics
               for m in sm.metrics}
    assert by_name["monad.tool.calls"][1].data.is_monotonic
    assert by_name["monad.tool.calls"][1].data.aggregation_temporality is CUMULATIVE
    scope, metric = by_name["mcp.server.operation.duration"]
    assert scope == "monad" and metric.unit == "s" and metric.data.aggregation_temporality is CUMULATIVE


def test_without_an_exporting_processor_no_span_and_the_same_series() -> None:
    """The same gateway calls (ok, a tool error, a JSON-RPC error answer, a request that
    raises; with and without the agent's trace context) through a recorder whose spans are
    exported and one with no exporting processor: the second records no span
    (`records_spans` False, the agent's context passed on as it came) and gives the same
    duration series, counts and `monad.tool.calls`."""
    from mcp.shared.exceptions import MCPError
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    agent = {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "tracestate": "k=v"}
    exporter = InMemorySpanExporter()
    runs = []
    for exported in (True, False):
        aggregates = Aggregates()
        pull = PullReader(aggregates)
        provider = TracerProvider()
        processors = [SimpleSpanProcessor(exporter)] if exported else []
        for processor in processors:  # as `sdk.install` has it: the SDK's own spans export there too
            provider.add_span_processor(processor)
        recorder = Recorder(aggregates, tracer_provider=provider,
                            meter_provider=MeterProvider(metric_readers=[pull]), span_processors=processors)
        assert recorder.records_spans is exported
        sent: list[dict[str, Any]] = []
        for i, how in enumerate(("ok", "tool-error", "rpc-error", "raises", "cancelled") * 2):
            meta = agent if i % 2 else None
            try:
                with recorder.server_request("tools/call", "a__t", request_id=i, protocol_version="2025-11-25",
                                             meta=meta, transport="pipe") as server:
                    with recorder.call("a__t", "gateway"), recorder.approval("a__t", "a") as decided:
                        decided("approved", "trust.autoApproveTools")
                    recorder.annotate_call(server="a", exposed="a__t", via="gateway", decision="approved",
                                           decided_by="trust.autoApproveTools", call_id=i, arguments={})
                    with recorder.client_request("tools/call", "t", server="a", transport="stdio",
                                                 protocol_version="2025-11-25", address=None, session_id=None,
                                                 current=False) as client:
                        upstream: dict[str, Any] = {}
                        recorder.inject(upstream, client)
                        recorder.request_id(i, client)
                        sent.append(upstream)
                        if how == "raises":
                            raise TimeoutError
                        if how == "rpc-error":
                            recorder.rpc_error(client, MCPError(-32602, "bad"))
                        if how == "tool-error":
                            recorder.result(client, {"isError": True})
                    outcome = {"ok": "ok", "rpc-error": "error", "cancelled": "cancelled"}.get(how, "tool-error")
                    recorder.outcome(server="a", outcome=outcome, decision="approved", via="gateway")
                    # The gateway's answer, after the call (gateway/direct.py `_answer`).
                    if how == "rpc-error":
                        recorder.rpc_error(server, MCPError(-32602, "bad"))
                    if how == "tool-error":
                        recorder.result(server, {"isError": True})
            except TimeoutError:
                pass
        connect = recorder.connecting("a", "stdio")
        recorder.connected(connect, protocol_version="2025-11-25", error=None)
        runs.append((pull.get_metrics_data(), sent))
    (with_spans, sent_with), (without, sent_without) = runs
    # Spans only from the exporting recorder: per call SERVER, CLIENT, approval; and the connect span.
    assert len(exporter.get_finished_spans()) == 10 * 3 + 1
    for name in ("mcp.server.operation.duration", "mcp.client.operation.duration", "monad.approval.wait.duration"):
        ours, theirs = _points(without, name), _points(with_spans, name)
        assert ours.keys() == theirs.keys() and len(ours) >= 1, name
        assert {k: p.count for k, p in ours.items()} == {k: p.count for k, p in theirs.items()}, name
    errors = {dict(k).get("error.type") for k in _points(without, "mcp.server.operation.duration")}
    assert errors == {None, "tool_error", "-32602", "TimeoutError", "cancelled"}
    assert {k: p.value for k, p in _points(without, "monad.tool.calls").items()} == {
        k: p.value for k, p in _points(with_spans, "monad.tool.calls").items()}
    # Upstream: with spans, monad's CLIENT span in the agent's trace (or a trace of monad's);
    # without, the agent's context as it came, and nothing when it sent none.
    assert sent_without == [{}, agent] * 5
    for upstream, came in zip(sent_with, [None, agent] * 5, strict=True):
        _v, trace_id, parent, _f = upstream["traceparent"].split("-")
        assert parent != "b7ad6b7169203331"
        assert came is None or trace_id == "0af7651916cd43dd8448eb211c80319c"
