"""One gateway call's telemetry work in a tight loop: the recorder's hooks in the order a call
on the direct lanes runs them (the SERVER span, monad's attributes, the CLIENT span, the
trace context into the upstream `_meta`, the results and the outcome). Not a bench: no
target; the supervisor runs the same work with cold caches, about twice as slow.

    python bench/profile_telemetry_hooks.py [-n 20000] [--profile] [--traceparent] [--spans]

Prints µs of CPU per call for 5 rounds (the least is the work's own cost); `--profile`: the
functions with the most own time under cProfile instead; `--traceparent`: the agent's
request carries a W3C trace context in `_meta` (without: none, as from an agent with no SDK);
`--spans`: spans recorded by the SDK's tracer and batched to the OTLP exporter, as with an
endpoint (its encoding and sending run on the batch thread, outside this loop's CPU);
without: metrics only. The providers are the supervisor's (`sdk.providers`).
"""

from __future__ import annotations

import argparse
import cProfile
import logging
import pstats
import time
from typing import Any

from monad_cli.daemon.telemetry.recorder import Recorder
from monad_cli.daemon.telemetry.sdk import providers
from monad_cli.daemon.telemetry.settings import TelemetrySettings

RESULT = {"content": [{"type": "text", "text": "hello"}]}
AGENT_META = {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}


def one(rec: Recorder, i: int, agent_meta: dict[str, str] | None = None) -> None:
    with rec.server_request("tools/call", "b__echo", request_id=i, protocol_version="2025-11-25", meta=agent_meta,
                            transport="pipe") as server, rec.call("b__echo", "gateway"):
        with rec.client_request("tools/call", "echo", server="b", transport="stdio", protocol_version="2025-11-25",
                                address=None, current=False, resolved=True) as upstream:
            meta: dict[str, Any] = {}
            upstream.inject(meta)
            upstream.request_id(i)
            upstream.result(RESULT)
        rec.call_ended(server="b", exposed="b__echo", via="gateway", outcome="ok", decision="approved",
                       decided_by="trust.autoApproveTools", call_id=i, arguments={"text": "hello"})
        server.result(RESULT)


def recorder(spans: bool) -> Recorder:
    """A recorder on the providers the supervisor builds (`sdk.providers`), not set globally;
    with `spans`, exporting to a port nobody listens on (the batch thread's failures are not
    this loop's CPU)."""
    settings = TelemetrySettings(enabled=True, endpoint="http://127.0.0.1:9" if spans else None)
    tracers, meters, _text = providers(settings, {}, str)
    logging.getLogger("opentelemetry").setLevel(logging.CRITICAL)
    return Recorder(listed=lambda method, name: True, exporting=spans, tracer_provider=tracers, meter_provider=meters)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=20000)
    ap.add_argument("--profile", action="store_true", help="cProfile's functions by own time instead")
    ap.add_argument("--traceparent", action="store_true", help="the agent's request carries a traceparent")
    ap.add_argument("--spans", action="store_true", help="spans recorded and batched, as with an OTLP endpoint")
    args = ap.parse_args()
    meta = AGENT_META if args.traceparent else None
    rec = recorder(args.spans)
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
