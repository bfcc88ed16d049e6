"""What monad records while telemetry is on: spans by the OpenTelemetry semantic conventions
for MCP (`open-telemetry/semantic-conventions-genai`, docs/gen-ai/mcp.md; status:
development) and the metrics in docs/telemetry.md.

Built by `telemetry.start` once the SDK's providers are set; imported only then. Spans go
through the MCP SDK's own hooks (`mcp.shared._otel`: `otel_span`, `extract_trace_context`,
`inject_trace_context`), so the gateway's direct lanes and the SDK's paths open the same
spans the same way. Nothing here ever reads an argument, a result's content, a header, a
token or an env value: attributes are names, ids, versions, codes and outcomes only.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from mcp.shared._otel import extract_trace_context, inject_trace_context, otel_span
from opentelemetry import metrics, trace
from opentelemetry.trace import Span, SpanKind, StatusCode

# The conventions' buckets for every `mcp.*.duration` histogram, in seconds.
DURATION_BUCKETS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300)
# Journal writes take ~0.05-1 ms: the conventions' buckets would put them all in the first.
JOURNAL_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1)
# W3C Trace Context keys in `params._meta` (SEP-414: unprefixed, reserved in 2026-07-28).
TRACE_KEYS = frozenset({"traceparent", "tracestate", "baggage"})
TRANSPORTS = {"stdio": "pipe", "http": "tcp"}
FLUSH_S = 0.25
QUEUE_MAX = 100_000


def _tool_error(result: Any) -> bool:
    if isinstance(result, Mapping):
        return result.get("isError") is True
    return getattr(result, "is_error", None) is True


class Recorder:
    """The spans and instruments. `capture_arguments`: spans carry
    `gen_ai.tool.call.arguments` as the journal keeps arguments (a digest); `digest` makes it."""

    def __init__(self, *, capture_arguments: bool = False, digest: Callable[[Any], str] | None = None) -> None:
        self.capture_arguments = capture_arguments and digest is not None
        self.digest = digest
        self.tracer = trace.get_tracer("monad")
        # Bounded: a flush task that stopped must not grow the supervisor without end.
        self._queue: deque[tuple[Callable[[float, Any], None], float, Any]] = deque(maxlen=QUEUE_MAX)
        meter = metrics.get_meter("monad")
        h = meter.create_histogram
        self.server_duration = h("mcp.server.operation.duration", unit="s", explicit_bucket_boundaries_advisory=list(
            DURATION_BUCKETS), description="MCP request duration as observed on the receiver (the gateway)")
        self.client_duration = h("mcp.client.operation.duration", unit="s", explicit_bucket_boundaries_advisory=list(
            DURATION_BUCKETS), description="MCP request duration as observed on the sender (upstream calls)")
        self.server_session_duration = h("mcp.server.session.duration", unit="s",
                                         explicit_bucket_boundaries_advisory=list(DURATION_BUCKETS),
                                         description="How long a gateway client's session lasted")
        self.session_duration = h("mcp.client.session.duration", unit="s", explicit_bucket_boundaries_advisory=list(
            DURATION_BUCKETS), description="How long an upstream MCP session lasted")
        self.approval_wait = h("monad.approval.wait.duration", unit="s", explicit_bucket_boundaries_advisory=list(
            DURATION_BUCKETS), description="How long a call waited at the approval gate for a person")
        self.journal_write = h("monad.journal.write.duration", unit="s", explicit_bucket_boundaries_advisory=list(
            JOURNAL_BUCKETS), description="One journal write transaction")
        self.calls = meter.create_counter("monad.tool.calls", unit="{call}",
                                          description="Tool calls by server, outcome, approval decision and caller")
        self.restarts = meter.create_counter("monad.server.restarts", unit="{restart}",
                                             description="Upstream sessions restarted after a failure or an end")
        self.refreshes = meter.create_counter("monad.oauth.refreshes", unit="{refresh}",
                                              description="OAuth token refreshes by outcome")

    # -- measurements, handed to the SDK off the call's path ---------------------------
    def _later(self, record: Callable[[float, Any], None], value: float, attributes: Any) -> None:
        """Queue one measurement: the SDK's `record`/`add` costs ~5-10 µs of CPU each (attribute
        hashing, one aggregation per reader), a deque append ~0.1 µs. `flush` hands them over
        after the answer is out; a deque because journal writes come from threads too."""
        self._queue.append((record, value, attributes))

    def flush(self) -> None:
        """Hand every queued measurement to the SDK (the flush task, and before a scrape)."""
        queue = self._queue
        while queue:
            try:
                record, value, attributes = queue.popleft()
            except IndexError:  # emptied by another thread meanwhile
                return
            record(value, attributes)

    async def run(self) -> None:
        """Flush the queue every `FLUSH_S` seconds; never returns (cancel it)."""
        import anyio

        while True:
            await anyio.sleep(FLUSH_S)
            self.flush()

    def observe_servers(self, states: Callable[[], Mapping[str, str]], *,
                        tasks: Callable[[], Mapping[str, tuple[int, int]]] = dict,
                        fleet_queued: Callable[[], int] = lambda: 0) -> None:
        """Gauges read at collection (on a scrape, or in the OTLP reader's thread):
        `monad.servers` (count by state), `monad.server.state` (1 per server, at its current
        state), `monad.tasks` (per server, active and queued tasks) and `monad.fleet.queued`
        (journal rows waiting for a fleet's shared journal). `states()`: server → state;
        `tasks()`: server → (active, queued)."""
        from opentelemetry.metrics import CallbackOptions, Observation

        meter = metrics.get_meter("monad")

        def read(source: Callable[[], Any], empty: Any) -> Any:
            try:
                return source()
            except RuntimeError:  # the supervisor's maps changed under a reader thread: next time
                return empty

        def by_state(_options: CallbackOptions) -> Iterator[Observation]:
            counts: dict[str, int] = {}
            for state in read(states, {}).values():
                counts[state] = counts.get(state, 0) + 1
            for state, n in sorted(counts.items()):
                yield Observation(n, {"monad.server.state": state})

        def each(_options: CallbackOptions) -> Iterator[Observation]:
            for server, state in sorted(read(states, {}).items()):
                yield Observation(1, {"monad.server": server, "monad.server.state": state})

        def task_counts(_options: CallbackOptions) -> Iterator[Observation]:
            for server, (active, queued) in sorted(read(tasks, {}).items()):
                yield Observation(active, {"monad.server": server, "monad.task.state": "active"})
                yield Observation(queued, {"monad.server": server, "monad.task.state": "queued"})

        def fleet(_options: CallbackOptions) -> Iterator[Observation]:
            yield Observation(read(fleet_queued, 0))

        meter.create_observable_gauge("monad.servers", [by_state], unit="{server}",
                                      description="Defined servers by state")
        meter.create_observable_gauge("monad.server.state", [each], unit="1",
                                      description="1 for each server, labelled with its current state")
        meter.create_observable_gauge("monad.tasks", [task_counts], unit="{task}",
                                      description="Tasks per server: active (in flight) and queued")
        meter.create_observable_gauge("monad.fleet.queued", [fleet], unit="{row}",
                                      description="Journal rows waiting to be shipped to a fleet's shared journal")

    # -- the gateway's side (SERVER spans) -------------------------------------------------
    @contextmanager
    def server_request(self, method: str, target: str | None, *, request_id: Any, protocol_version: str | None,
                       meta: Mapping[str, Any] | None, transport: str) -> Iterator[Span]:
        """The SERVER span of one request the gateway answers on its direct lane, with the
        attributes the SDK's `OpenTelemetryMiddleware` gives the same request on its path
        (context from `meta`'s traceparent), plus `network.transport`; and its duration in
        `mcp.server.operation.duration`. Raises what the block raises."""
        attributes: dict[str, Any] = {"mcp.method.name": method, "network.transport": transport}
        if protocol_version:
            attributes["mcp.protocol.version"] = protocol_version
        if request_id is not None:
            attributes["jsonrpc.request.id"] = str(request_id)
        if method == "tools/call":
            attributes["gen_ai.operation.name"] = "execute_tool"
            if target:
                attributes["gen_ai.tool.name"] = target
        started = time.perf_counter()
        error: str | None = None
        with otel_span(f"{method} {target}" if target else method, kind=SpanKind.SERVER, attributes=attributes,
                       context=extract_trace_context(meta), record_exception=False,
                       set_status_on_exception=False) as span:
            try:
                yield span
            except Exception as e:
                error = _mark_failed(span, e)
                raise
            finally:
                error = error or _span_error(span)
                self.record_server(method, target, time.perf_counter() - started, error=error)

    def record_server(self, method: str, target: str | None, seconds: float, *, error: str | None) -> None:
        attributes: dict[str, Any] = {"mcp.method.name": method}
        if method == "tools/call" and target:
            attributes["gen_ai.tool.name"] = target
        if error:
            attributes["error.type"] = error
        self._later(self.server_duration.record, seconds, attributes)

    def middleware(self, transport: str) -> Any:
        """A context-tier middleware for the SDK's server path, after the SDK's own
        `OpenTelemetryMiddleware` (which opens the SERVER span): it adds
        `network.transport` and records `mcp.server.operation.duration`."""
        recorder = self

        class MonadServerMiddleware:
            async def __call__(self, ctx: Any, call_next: Any) -> Any:
                span = trace.get_current_span()
                span.set_attribute("network.transport", transport)
                name = ctx.params.get("name") if ctx.params else None
                target = name if isinstance(name, str) else None
                started = time.perf_counter()
                try:
                    result = await call_next(ctx)
                except Exception as e:
                    from mcp.shared.exceptions import MCPError

                    error = str(e.error.code) if isinstance(e, MCPError) else type(e).__qualname__
                    recorder.record_server(ctx.method, target, time.perf_counter() - started, error=error)
                    raise
                tool_error = ctx.method == "tools/call" and _tool_error(result)
                recorder.record_server(ctx.method, target, time.perf_counter() - started,
                                       error="tool_error" if tool_error else None)
                return result

        return MonadServerMiddleware()

    def annotate_call(self, *, server: str, exposed: str, via: str, decision: str, decided_by: str,
                      call_id: int | None, arguments: Any) -> None:
        """monad's own attributes on the current (SERVER) span of a tools/call."""
        span = trace.get_current_span()
        if not span.is_recording():
            return
        attributes: dict[str, Any] = {"monad.server": server, "monad.tool.exposed_name": exposed, "monad.via": via,
                                      "monad.approval.decision": decision, "monad.approval.decided_by": decided_by}
        if call_id is not None:
            attributes["monad.call.id"] = call_id
        if self.capture_arguments and self.digest is not None:
            attributes["gen_ai.tool.call.arguments"] = self.digest(arguments)
        span.set_attributes(attributes)

    @contextmanager
    def call(self, exposed: str, via: str) -> Iterator[Span | None]:
        """A SERVER span for a call that did not come through the gateway (`monad mcp call`,
        the Studio): a trace of its own. Inside a gateway request (a span is current) none."""
        if trace.get_current_span().get_span_context().is_valid:
            yield None
            return
        with self.tracer.start_as_current_span(f"tools/call {exposed}", kind=SpanKind.SERVER, attributes={
                "mcp.method.name": "tools/call", "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": exposed, "monad.via": via}, record_exception=False) as span:
            yield span

    def outcome(self, *, server: str, outcome: str, decision: str, via: str) -> None:
        """One call's end: `monad.tool.calls` and the current span's outcome."""
        self._later(self.calls.add, 1, {"monad.server": server, "monad.call.outcome": outcome,
                                        "monad.approval.decision": decision, "monad.via": via})
        span = trace.get_current_span()
        if span.is_recording():
            span.set_attribute("monad.call.outcome", outcome)
            if outcome == "tool-error":
                span.set_attribute("error.type", "tool_error")
                span.set_status(StatusCode.ERROR)
            elif outcome not in ("ok", "detached"):
                # A gateway answers these as tool errors, and its span says `tool_error` once
                # the result is out; a CLI call's span keeps the outcome (timeout, refused, …).
                span.set_attribute("error.type", outcome)
                span.set_status(StatusCode.ERROR)

    # -- the approval gate -----------------------------------------------------------------
    @contextmanager
    def approval(self, exposed: str, server: str) -> Iterator[Callable[[str, str], None]]:
        """An INTERNAL span `approval {exposed}` for the gate's wait; the block calls the
        yielded `decided(decision, who)`. Records `monad.approval.wait.duration`."""
        started = time.perf_counter()
        decided: dict[str, str] = {"decision": "cancelled", "by": "the caller left"}

        def tell(decision: str, who: str) -> None:
            decided.update(decision=decision, by=who)

        with self.tracer.start_as_current_span(f"approval {exposed}", kind=SpanKind.INTERNAL, attributes={
                "monad.server": server, "monad.tool.exposed_name": exposed}, record_exception=False) as span:
            try:
                yield tell
            finally:
                waited = time.perf_counter() - started
                span.set_attributes({"monad.approval.decision": decided["decision"],
                                     "monad.approval.decided_by": decided["by"],
                                     "monad.approval.wait.duration": round(waited, 6)})
                self.approval_wait.record(waited, {"monad.approval.decision": decided["decision"]})

    # -- upstream (CLIENT spans) -----------------------------------------------------------
    @contextmanager
    def client_request(self, method: str, target: str | None, *, server: str, transport: str,
                       protocol_version: str | None, address: tuple[str, int | None] | None,
                       session_id: str | None) -> Iterator[Span]:
        """The CLIENT span of one request to an upstream server, and its duration in
        `mcp.client.operation.duration`. `transport`: the definition's (`stdio`/`http`)."""
        attributes: dict[str, Any] = {"mcp.method.name": method, "network.transport": TRANSPORTS.get(transport,
                                                                                                      transport),
                                      "monad.server": server}
        if protocol_version:
            attributes["mcp.protocol.version"] = protocol_version
        if session_id:
            attributes["mcp.session.id"] = session_id
        if address is not None:
            attributes["server.address"] = address[0]
            if address[1] is not None:
                attributes["server.port"] = address[1]
        if method == "tools/call":
            attributes["gen_ai.operation.name"] = "execute_tool"
            if target:
                attributes["gen_ai.tool.name"] = target
        started = time.perf_counter()
        error: str | None = None
        with self.tracer.start_as_current_span(f"{method} {target}" if target else method, kind=SpanKind.CLIENT,
                                               attributes=attributes, record_exception=False,
                                               set_status_on_exception=False) as span:
            try:
                yield span
            except Exception as e:
                error = _mark_failed(span, e)
                raise
            finally:
                error = error or _span_error(span)
                attrs: dict[str, Any] = {"mcp.method.name": method, "monad.server": server,
                                         "network.transport": attributes["network.transport"]}
                if method == "tools/call" and target:
                    attrs["gen_ai.tool.name"] = target
                if error:
                    attrs["error.type"] = error
                self._later(self.client_duration.record, time.perf_counter() - started, attrs)

    @staticmethod
    def result(span: Span, result: Any) -> None:
        """A tools/call result on `span`: `error.type = tool_error` when it has `isError`."""
        if _tool_error(result):
            span.set_attribute("error.type", "tool_error")
            span.set_status(StatusCode.ERROR)

    @staticmethod
    def rpc_error(span: Span, error: Any) -> None:
        """A JSON-RPC error answer (an `MCPError`) on `span`: its code as `error.type`."""
        code = str(error.error.code)
        span.set_attributes({"error.type": code, "rpc.response.status_code": code})
        span.set_status(StatusCode.ERROR)

    @staticmethod
    def request_id(request_id: Any) -> None:
        """The JSON-RPC id a direct lane gave the current request."""
        span = trace.get_current_span()
        if span.is_recording():
            span.set_attribute("jsonrpc.request.id", str(request_id))

    @staticmethod
    def inject(meta: dict[str, Any]) -> None:
        """The current span's W3C context into an outgoing request's `_meta` (SEP-414), by
        the SDK's own hook."""
        inject_trace_context(meta)

    # -- sessions --------------------------------------------------------------------------
    def connecting(self, server: str, transport: str) -> Span:
        """An INTERNAL span `connect {server}` (ended by `connected`); not made current, so
        the session's later requests do not nest under it."""
        return self.tracer.start_span(f"connect {server}", kind=SpanKind.INTERNAL, attributes={
            "monad.server": server, "network.transport": TRANSPORTS.get(transport, transport)})

    @staticmethod
    def connected(span: Span, *, protocol_version: str | None, error: str | None) -> None:
        if protocol_version:
            span.set_attribute("mcp.protocol.version", protocol_version)
        if error:
            span.set_attribute("error.type", error)
            span.set_status(StatusCode.ERROR)
        span.end()

    def session_ended(self, server: str, transport: str, seconds: float, *, error: str | None) -> None:
        attrs: dict[str, Any] = {"monad.server": server, "network.transport": TRANSPORTS.get(transport, transport)}
        if error:
            attrs["error.type"] = error
        self.session_duration.record(seconds, attrs)

    def gateway_session_ended(self, transport: str, seconds: float) -> None:
        """One gateway client's session (a relay connection, an HTTP listener) ended."""
        self._later(self.server_session_duration.record, seconds, {"network.transport": transport})

    def restarted(self, server: str, why: str) -> None:
        self.restarts.add(1, {"monad.server": server, "monad.restart.reason": why})

    def refreshed(self, server: str, outcome: str) -> None:
        self.refreshes.add(1, {"monad.server": server, "monad.oauth.outcome": outcome})

    def journal_written(self, seconds: float) -> None:
        self._later(self.journal_write.record, seconds, None)


def _mark_failed(span: Span, exc: Exception) -> str:
    """`error.type` (and the status) of a span whose request raised `exc`: an `MCPError`'s code,
    never its message (a server's message may quote what it was sent), else the exception's type."""
    from mcp.shared.exceptions import MCPError

    if isinstance(exc, MCPError):
        Recorder.rpc_error(span, exc)
        return str(exc.error.code)
    error = type(exc).__qualname__
    span.set_attribute("error.type", error)
    span.set_status(StatusCode.ERROR)
    return error


def _span_error(span: Span) -> str | None:
    attributes = getattr(span, "attributes", None)
    value = attributes.get("error.type") if attributes else None
    return str(value) if value else None


__all__ = ["DURATION_BUCKETS", "TRACE_KEYS", "Recorder"]
