"""One gateway call's telemetry work in a tight loop: the recorder's hooks in the order a call
on the direct lanes runs them (the SERVER span, monad's attributes, the CLIENT span, the
trace context into the upstream `_meta`, the results and the outcome), with the SDK set up
as the supervisor sets it (no export). Not a bench: no target; the supervisor runs the same
work with cold caches, two to three times slower (bench/README.md "Issue 27, the last cuts").

    python bench/profile_telemetry_hooks.py [-n 20000] [--profile] [--traceparent]
    python bench/profile_telemetry_hooks.py --encoder

Prints µs of CPU per call for 5 rounds (the least is the work's own cost); `--profile`: the
functions with the most own time under cProfile instead; `--traceparent`: the agent's
request carries a W3C trace context in `_meta` (without: none, as from an agent with no SDK).
`--encoder`: instead, the CPU per span of encoding batches of 512 of these calls' spans for
OTLP, by the library's `encode_spans` and by monad's `SpanEncoder` (daemon/telemetry/otlp.py).
`PYTHONPATH=DIR` runs another tree's
monad (e.g. `git archive REV monad_cli | tar -x -C DIR`) for a before/after.
"""

from __future__ import annotations

import argparse
import cProfile
import inspect
import pstats
import time
from typing import Any

from monad_cli.daemon.telemetry.aggregate import Aggregates
from monad_cli.daemon.telemetry.recorder import Recorder
from monad_cli.daemon.telemetry.sdk import install
from monad_cli.daemon.telemetry.settings import TelemetrySettings

RESULT = {"content": [{"type": "text", "text": "hello"}]}
AGENT_META = {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
# Whether the tree's direct lane passes the CLIENT span itself (the second pass of issue 27).
DIRECT = "current" in inspect.signature(Recorder.client_request).parameters


def one(rec: Recorder, i: int, agent_meta: dict[str, str] | None = None) -> None:
    with rec.server_request("tools/call", "b__echo", request_id=i, protocol_version="2025-11-25", meta=agent_meta,
                            transport="pipe") as span, rec.call("b__echo", "gateway"):
        rec.annotate_call(server="b", exposed="b__echo", via="gateway", decision="approved",
                          decided_by="trust.autoApproveTools", call_id=i, arguments={"text": "hello"})
        if DIRECT:  # the direct lane is given its CLIENT span, not made current
            with rec.client_request("tools/call", "echo", server="b", transport="stdio",
                                    protocol_version="2025-11-25", address=None, session_id=None,
                                    current=False) as upstream:
                meta: dict[str, Any] = {}
                rec.inject(meta, upstream)
                rec.request_id(i, upstream)
                rec.result(upstream, RESULT)
        else:  # a tree from before the second pass (91eff63, 7525616)
            with rec.client_request("tools/call", "echo", server="b", transport="stdio",
                                    protocol_version="2025-11-25", address=None, session_id=None) as upstream:
                meta = {}
                rec.inject(meta)
                rec.request_id(i)
                rec.result(upstream, RESULT)
        rec.outcome(server="b", outcome="ok", decision="approved", via="gateway")
        rec.result(span, RESULT)


def encoders(rounds: int = 5) -> None:
    """Per span, µs of CPU to encode 512-span batches of the calls' spans: the library's, monad's."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from monad_cli.daemon.telemetry.otlp import SpanEncoder

    kept = InMemorySpanExporter()
    rec = Recorder(Aggregates(), tracer_provider=TracerProvider(), span_processors=[SimpleSpanProcessor(kept)])
    for i in range(256):
        one(rec, i, AGENT_META if i % 2 else None)
    batch, encoder = list(kept.get_finished_spans()), SpanEncoder()
    assert encoder.encode(batch) == encode_spans(batch).SerializePartialToString()
    for name, encode in (("library", lambda: encode_spans(batch).SerializePartialToString()),
                         ("monad", lambda: encoder.encode(batch))):
        times = []
        for _ in range(rounds):
            started = time.thread_time()
            for _ in range(20):
                encode()
            times.append((time.thread_time() - started) / 20 / len(batch) * 1e6)
        print(f"{name:8} µs of CPU per span:", " ".join(f"{t:.1f}" for t in times), f"(least {min(times):.1f})")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=20000)
    ap.add_argument("--profile", action="store_true", help="cProfile's functions by own time instead")
    ap.add_argument("--traceparent", action="store_true", help="the agent's request carries a traceparent")
    ap.add_argument("--encoder", action="store_true", help="the OTLP encoders' CPU per span instead")
    args = ap.parse_args()
    if args.encoder:
        encoders()
        return
    meta = AGENT_META if args.traceparent else None
    aggregates = Aggregates()
    _pull, _shutdown, exporting = install(TelemetrySettings(enabled=True), {}, aggregates)
    rec = Recorder(aggregates, span_processors=exporting)
    for i in range(2000):  # warm up
        one(rec, i, meta)
    if args.profile:
        profiler = cProfile.Profile()
        profiler.enable()
        for i in range(args.n):
            one(rec, i, meta)
        profiler.disable()
        pstats.Stats(profiler).sort_stats("tottime").print_stats(30)
        return
    rounds = []
    for _ in range(5):
        started = time.thread_time()
        for i in range(args.n):
            one(rec, i, meta)
        rounds.append((time.thread_time() - started) / args.n * 1e6)
    print("µs of CPU per call:", " ".join(f"{r:.1f}" for r in rounds), f"(least {min(rounds):.1f})")


if __name__ == "__main__":
    main()
