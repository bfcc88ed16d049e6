"""A real OTLP/HTTP receiver for tests: `POST /v1/traces` and `/v1/metrics` on 127.0.0.1,
decoded with `opentelemetry-proto` (the protobuf messages the exporter really sends,
OTLP spec "OTLP/HTTP"), kept as spans and metric names, and the raw bodies for scans."""

from __future__ import annotations

import gzip
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Span:
    name: str
    kind: int
    trace_id: str
    span_id: str
    parent_span_id: str
    attributes: dict[str, Any]
    status_code: int
    status_message: str
    scope: str


@dataclass
class Received:
    spans: list[Span] = field(default_factory=list)
    metrics: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # name -> data points' attributes
    bodies: list[bytes] = field(default_factory=list)  # every decoded request, serialized again
    lock: threading.Lock = field(default_factory=threading.Lock)


def _value(v: Any) -> Any:
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return [_value(x) for x in v.array_value.values]
    return getattr(v, kind) if kind else None


def _attrs(kvs: Any) -> dict[str, Any]:
    return {kv.key: _value(kv.value) for kv in kvs}


class OtlpReceiver:
    """`with OtlpReceiver() as r:` → `r.endpoint` (base URL), `r.received`."""

    def __init__(self) -> None:
        self.received = Received()
        received = self.received

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
                    ExportMetricsServiceRequest,
                    ExportMetricsServiceResponse,
                )
                from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
                    ExportTraceServiceRequest,
                    ExportTraceServiceResponse,
                )

                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                if self.headers.get("content-encoding") == "gzip":
                    body = gzip.decompress(body)
                answer: bytes
                if self.path == "/v1/traces":
                    req = ExportTraceServiceRequest.FromString(body)
                    with received.lock:
                        received.bodies.append(body)
                        for rs in req.resource_spans:
                            for ss in rs.scope_spans:
                                for s in ss.spans:
                                    received.spans.append(Span(
                                        name=s.name, kind=s.kind, trace_id=s.trace_id.hex(), span_id=s.span_id.hex(),
                                        parent_span_id=s.parent_span_id.hex(), attributes=_attrs(s.attributes),
                                        status_code=s.status.code, status_message=s.status.message,
                                        scope=ss.scope.name))
                    answer = ExportTraceServiceResponse().SerializeToString()
                elif self.path == "/v1/metrics":
                    mreq = ExportMetricsServiceRequest.FromString(body)
                    with received.lock:
                        received.bodies.append(body)
                        for rm in mreq.resource_metrics:
                            for sm in rm.scope_metrics:
                                for m in sm.metrics:
                                    kind = m.WhichOneof("data")
                                    points = getattr(m, kind).data_points if kind else []
                                    received.metrics.setdefault(m.name, []).extend(
                                        _attrs(p.attributes) for p in points)
                    answer = ExportMetricsServiceResponse().SerializeToString()
                else:
                    self.send_response(404)
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> OtlpReceiver:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def spans(self) -> list[Span]:
        with self.received.lock:
            return list(self.received.spans)


__all__ = ["OtlpReceiver", "Span"]
