"""What monad records while telemetry is on: spans by the OpenTelemetry semantic conventions
for MCP (`open-telemetry/semantic-conventions-genai`, docs/gen-ai/mcp.md; status:
development) and the metrics in docs/telemetry.md.

Built by `telemetry.start` once the SDK's providers are set; imported only then. The
gateway's direct lanes open the span the MCP SDK's `OpenTelemetryMiddleware` opens on its
path: the same scope (`mcp-python-sdk`), name and attributes, the context from the SDK's
own `extract_trace_context`, and `inject_trace_context` into an upstream request's `_meta`.

What a gateway call costs is kept small (issue 27: at most 0.1 ms of CPU; bench/README.md):
- without an exporting span processor (no OTLP endpoint) no span is built at all
  (`records_spans`; docs/telemetry.md "Spans only when exported");
- its two spans (the SERVER span of a direct lane, the upstream CLIENT span) are built by
  `spans.py` with the provider's sampler, ids and resource, and end as the SDK's
  `ReadableSpan` in the exporting processors (the SDK's `start_span`/`end` cost ~85 µs a
  span in the supervisor); they start with every attribute known then, and are made
  current with `context.attach` (no generator context managers); the rarer spans
  (connect, approval, a CLI call) are the SDK's;
- the measurements taken on every call go to monad's own aggregation (`aggregate.py`,
  ~1 µs each instead of the SDK's ~10 µs) and a plain counter read by an observable
  callback; the rare ones (sessions, restarts, refreshes, the approval wait) to the SDK;
- under the default propagators, the agent's W3C trace context is read (`agent_trace_context`)
  and the upstream one written (`inject`) here, not through the propagators' general path;
- the exporter's thread encodes the spans with monad's own OTLP encoder (`otlp.py`).

Nothing here ever reads an argument, a result's content, a header, a token or an env
value: attributes are names, ids, versions, codes and outcomes only.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

from mcp.shared._otel import extract_trace_context, inject_trace_context
from opentelemetry import baggage, context, metrics, propagate, trace
from opentelemetry.context import Context, get_current
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import (
    INVALID_SPAN_CONTEXT,
    NonRecordingSpan,
    Span,
    SpanContext,
    SpanKind,
    StatusCode,
    TraceFlags,
    TraceState,
)
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from monad_cli.core.redact import redact_url
from monad_cli.daemon.telemetry.aggregate import AggregatedHistogram, Aggregates, Key
from monad_cli.daemon.telemetry.spans import CallSpan, CallSpans, Unrecorded, current_span

# The conventions' buckets for every `mcp.*.duration` histogram, in seconds.
DURATION_BUCKETS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300)
# Journal writes take ~0.05-1 ms: the conventions' buckets would put them all in the first.
JOURNAL_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1)
# W3C Trace Context keys in `params._meta` (SEP-414: unprefixed, reserved in 2026-07-28).
TRACE_KEYS = frozenset({"traceparent", "tracestate", "baggage"})
TRANSPORTS = {"stdio": "pipe", "http": "tcp"}
CALL = "tools/call"
# The spans' fixed attributes, built once (a tools/call span adds its tool, ids and version).
_TOOLS_CALL = {"mcp.method.name": CALL, "gen_ai.operation.name": "execute_tool"}
# The OpenTelemetry context's key for baggage, read from a context the API builds (its name is private).
_BAGGAGE_KEY = next(iter(baggage.set_baggage("k", "v", Context())))
_TOOL_ERROR = {"monad.call.outcome": "tool-error", "error.type": "tool_error"}
# The conventions' attribute for a request's target, by method.
_TARGETS = {CALL: "gen_ai.tool.name", "prompts/get": "gen_ai.prompt.name", "resources/read": "mcp.resource.uri",
            "resources/subscribe": "mcp.resource.uri", "resources/unsubscribe": "mcp.resource.uri"}


def _tool_error(result: Any) -> bool:
    # A dict (wire shape) or a `CallToolResult`: tested by type first, an ABC's
    # `isinstance` is slow on a call's path.
    if type(result) is dict or (not hasattr(result, "is_error") and isinstance(result, Mapping)):
        return result.get("isError") is True
    return getattr(result, "is_error", None) is True


class Recorder:
    """The spans and instruments. `aggregates`: where the per-call histograms are kept (the
    SDK's readers registered in it); `capture_arguments`: spans carry
    `gen_ai.tool.call.arguments` as the journal keeps arguments (a digest); `digest` makes it;
    `tracer_provider`/`meter_provider`: the SDK's providers (default: the global ones);
    `span_processors`: those that export spans. None (no OTLP endpoint: metrics only, a
    Prometheus scrape): `records_spans` is False, decided here once, and monad builds no
    span at all (docs/telemetry.md "Spans only when exported"): a call records its metrics
    from the same timestamps, and the agent's W3C trace context goes upstream unchanged (an
    `Unrecorded` stand-in carries it, as the OpenTelemetry API does with no SDK); none is
    made up when the agent sent none."""

    def __init__(self, aggregates: Aggregates, *, capture_arguments: bool = False,
                 digest: Callable[[Any], str] | None = None, tracer_provider: Any = None,
                 meter_provider: Any = None, span_processors: Sequence[Any] = ()) -> None:
        self.capture_arguments = capture_arguments and digest is not None
        self.digest = digest
        self.tracer = trace.get_tracer("monad", tracer_provider=tracer_provider)
        self.w3c_propagators = w3c_propagators()  # `inject` writes the W3C lines itself
        # Spans that go nowhere cost a call ~10 µs of CPU in a tight loop, ~50 µs more on the
        # MCP SDK's path (bench/README.md "Issue 27, spans only when exported"): decided once.
        self.records_spans = bool(span_processors)
        # Every call's two spans (spans.py), ended into the processors that export. The
        # SERVER span of a direct lane is the one the SDK's middleware opens on its path,
        # scope included (the MCP SDK's tracer, `mcp.shared._otel`).
        self.call_spans = CallSpans(tracer_provider or trace.get_tracer_provider(),
                                    span_processors) if self.records_spans else None
        # The scopes `provider.get_tracer(name)` gives (no version: "", as the SDK has it).
        self.sdk_scope = InstrumentationScope("mcp-python-sdk", "")
        self.scope = InstrumentationScope("monad", "")
        self.meter = meter = metrics.get_meter("monad", meter_provider=meter_provider)
        # Per target and server session: the CLIENT span's name, fixed attributes and duration series.
        self._client_base: dict[tuple[str, str | None, str, str, str | None, Any], tuple[str, dict[str, Any], Key]] = {}
        # Per tool and agent era: the SERVER span's name, fixed attributes and duration series.
        self._server_base: dict[tuple[str, str | None, str, str | None], tuple[str, dict[str, Any], Key]] = {}
        h = aggregates.histogram
        self.server_duration = h("mcp.server.operation.duration", unit="s", boundaries=DURATION_BUCKETS,
                                 description="MCP request duration as observed on the receiver (the gateway)")
        self.client_duration = h("mcp.client.operation.duration", unit="s", boundaries=DURATION_BUCKETS,
                                 description="MCP request duration as observed on the sender (upstream calls)")
        self.server_session_duration = h("mcp.server.session.duration", unit="s", boundaries=DURATION_BUCKETS,
                                         description="How long a gateway client's session lasted")
        self.journal_write = h("monad.journal.write.duration", unit="s", boundaries=JOURNAL_BUCKETS,
                               description="One journal write transaction")
        # `monad.tool.calls`: counted here, read by the SDK at collection (an observable
        # counter's callback), so the series is the SDK's monotonic cumulative sum.
        self._calls: dict[Key, int] = {}
        sdk_h = meter.create_histogram
        self.session_duration = sdk_h("mcp.client.session.duration", unit="s",
                                      explicit_bucket_boundaries_advisory=list(DURATION_BUCKETS),
                                      description="How long an upstream MCP session lasted")
        self.approval_wait = sdk_h("monad.approval.wait.duration", unit="s",
                                   explicit_bucket_boundaries_advisory=list(DURATION_BUCKETS),
                                   description="How long a call waited at the approval gate for a person")
        meter.create_observable_counter("monad.tool.calls", [self._observe_calls], unit="{call}",
                                        description="Tool calls by server, outcome, approval decision and caller")
        self.restarts = meter.create_counter("monad.server.restarts", unit="{restart}",
                                             description="Upstream sessions restarted after a failure or an end")
        self.refreshes = meter.create_counter("monad.oauth.refreshes", unit="{refresh}",
                                              description="OAuth token refreshes by outcome")

    def _observe_calls(self, _options: Any) -> Iterator[Any]:
        from opentelemetry.metrics import Observation

        for key, count in list(self._calls.items()):  # list(): one step, while the loop adds keys
            yield Observation(count, dict(key))

    def observe_servers(self, states: Callable[[], Mapping[str, str]], *,
                        tasks: Callable[[], Mapping[str, tuple[int, int]]] = dict,
                        fleet_queued: Callable[[], int] = lambda: 0) -> None:
        """Gauges read at collection (on a scrape, or in the OTLP reader's thread):
        `monad.servers` (count by state), `monad.server.state` (1 per server, at its current
        state), `monad.tasks` (per server, active and queued tasks) and `monad.fleet.queued`
        (journal rows waiting for a fleet's shared journal). `states()`: server → state;
        `tasks()`: server → (active, queued)."""
        from opentelemetry.metrics import CallbackOptions, Observation

        meter = self.meter

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
    def server_request(self, method: str, target: str | None, *, request_id: Any, protocol_version: str | None,
                       meta: Mapping[str, Any] | None, transport: str) -> AbstractContextManager[Span]:
        """The SERVER span of one request the gateway answers on its direct lane, with the
        attributes the SDK's `OpenTelemetryMiddleware` gives the same request on its path
        (context from `meta`'s traceparent), plus `network.transport`; and its duration in
        `mcp.server.operation.duration`. Raises what the block raises."""
        base_key = (method, target, transport, protocol_version)
        base = self._server_base.get(base_key)
        if base is None:  # one per tool and agent era: its name and attributes built once
            attributes: dict[str, Any] = dict(_TOOLS_CALL) if method == CALL else {"mcp.method.name": method}
            attributes["network.transport"] = transport
            if protocol_version:
                attributes["mcp.protocol.version"] = protocol_version
            if target and method == CALL:
                attributes["gen_ai.tool.name"] = target
            if len(self._server_base) > 1000:  # tools come and go: keep it bounded
                self._server_base.clear()
            base = (f"{method} {target}" if target else method, attributes, _server_key(method, target))
            self._server_base[base_key] = base
        name, fixed, key = base
        parsed = agent_trace_context(meta) if meta and self.w3c_propagators else None
        if self.call_spans is None:  # no span: a stand-in with the agent's context (or none)
            if parsed is None:
                parsed = current_span(extract_trace_context(meta)).get_span_context() if meta else INVALID_SPAN_CONTEXT
            elif not parsed.is_valid:  # `extract_trace_context` gives None: the current span's, as there
                parsed = current_span().get_span_context()
            # Made current even without a context: the outcome labels its duration (`outcome`).
            return _Current(Unrecorded(parsed), self.server_duration, key)
        attributes = dict(fixed)
        if request_id is not None:
            attributes["jsonrpc.request.id"] = str(request_id)
        if parsed is not None:  # as `extract_trace_context` gives it: a fresh context, or None
            parent = trace.set_span_in_context(NonRecordingSpan(parsed), Context()) if parsed.is_valid else None
        else:
            parent = extract_trace_context(meta) if meta else None
        span = self.call_spans.start(self.sdk_scope, name, SpanKind.SERVER, attributes, parent)
        return _Current(span, self.server_duration, key)

    def record_server(self, method: str, target: str | None, seconds: float, *, error: str | None) -> None:
        """One gateway request's `mcp.server.operation.duration`."""
        key = _server_key(method, target)
        self.server_duration.record(seconds, (*key, ("error.type", error)) if error else key)

    def middleware(self, transport: str) -> Any:
        """A context-tier middleware for the SDK's server path, after the SDK's own
        `OpenTelemetryMiddleware` (which opens the SERVER span): it adds
        `network.transport` and records `mcp.server.operation.duration`."""
        recorder = self

        class MonadServerMiddleware:
            async def __call__(self, ctx: Any, call_next: Any) -> Any:
                span = current_span()
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
        span = current_span()
        if not span.is_recording():
            return
        attributes: dict[str, Any] = {"monad.server": server, "monad.tool.exposed_name": exposed, "monad.via": via,
                                      "monad.approval.decision": decision, "monad.approval.decided_by": decided_by}
        if call_id is not None:
            attributes["monad.call.id"] = call_id
        if self.capture_arguments and self.digest is not None:
            attributes["gen_ai.tool.call.arguments"] = self.digest(arguments)
        span.set_attributes(attributes)

    def call(self, exposed: str, via: str) -> AbstractContextManager[Span | None]:
        """A SERVER span for a call that did not come through the gateway (`monad mcp call`,
        the Studio): a trace of its own. Inside a gateway request (a span is current) none;
        none either when no span is recorded."""
        if self.call_spans is None or current_span().get_span_context().is_valid:
            return nullcontext()
        return self._own_call(exposed, via)

    @contextmanager
    def _own_call(self, exposed: str, via: str) -> Iterator[Span]:
        with self.tracer.start_as_current_span(f"tools/call {exposed}", kind=SpanKind.SERVER, attributes={
                "mcp.method.name": "tools/call", "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": exposed, "monad.via": via}, record_exception=False) as span:
            yield span

    def outcome(self, *, server: str, outcome: str, decision: str, via: str) -> None:
        """One call's end: `monad.tool.calls` and the current span's outcome."""
        key: Key = (("monad.server", server), ("monad.call.outcome", outcome), ("monad.approval.decision", decision),
                    ("monad.via", via))
        self._calls[key] = self._calls.get(key, 0) + 1
        span = current_span()
        if not span.is_recording():
            if type(span) is Unrecorded and outcome != "ok" and outcome != "detached":  # its duration's label
                span.error = "tool_error" if outcome == "tool-error" else outcome
            return
        if outcome == "ok" or outcome == "detached":
            span.set_attribute("monad.call.outcome", outcome)
            return
        # A gateway answers the others as tool errors, and its span says `tool_error` once
        # the result is out; a CLI call's span keeps the outcome (timeout, refused, …).
        span.set_attributes(_TOOL_ERROR if outcome == "tool-error" else
                            {"monad.call.outcome": outcome, "error.type": outcome})
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

        if self.call_spans is None:  # no span: the metric only
            try:
                yield tell
            finally:
                self.approval_wait.record(time.perf_counter() - started,
                                          {"monad.approval.decision": decided["decision"]})
            return
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
    def client_request(self, method: str, target: str | None, *, server: str, transport: str,
                       protocol_version: str | None, address: tuple[str, int | None] | None,
                       session_id: str | None, current: bool = True) -> AbstractContextManager[Span]:
        """The CLIENT span of one request to an upstream server, and its duration in
        `mcp.client.operation.duration`. `current`: the span is made the OpenTelemetry
        context's current one for the block, as the MCP SDK's path needs (it injects the
        current context, and opens its own span under it); False for a direct lane, which
        is given the span (`inject`, `request_id`) and reads no context: the context's
        `attach` and `detach` cost ~1 µs a call in a tight loop, ~5–10 µs in the supervisor
        (bench/README.md "Issue 27, second pass"). `transport`: the definition's (`stdio`/`http`);
        `target`: the tool (tools/call, in the name and `gen_ai.tool.name`), the prompt
        (prompts/get, in the name and `gen_ai.prompt.name`) or the resource URI
        (resources/read: `mcp.resource.uri` only, its query values and password as `***`),
        as the server names it. Raises what the block raises."""
        net = TRANSPORTS.get(transport, transport)
        base_key = (method, target, server, net, protocol_version, address)
        base = self._client_base.get(base_key)
        if base is None:  # one per target and server session: its name, attributes and series built once
            attributes: dict[str, Any] = dict(_TOOLS_CALL) if method == CALL else {"mcp.method.name": method}
            attributes["network.transport"] = net
            attributes["monad.server"] = server
            if protocol_version:
                attributes["mcp.protocol.version"] = protocol_version
            if address is not None:
                attributes["server.address"] = address[0]
                if address[1] is not None:
                    attributes["server.port"] = address[1]
            name = method
            if target:
                target_key = _TARGETS.get(method)
                if target_key == "mcp.resource.uri":  # never in the span's name (the SDK's neither)
                    attributes[target_key] = redact_url(target)
                elif target_key is not None:
                    attributes[target_key] = target
                    name = f"{method} {target}"
            key: Key = (("mcp.method.name", method), ("monad.server", server), ("network.transport", net))
            if method == CALL and target:
                key += (("gen_ai.tool.name", target),)
            if len(self._client_base) > 1000:  # tools and servers come and go: keep it bounded
                self._client_base.clear()
            base = self._client_base[base_key] = (name, attributes, key)
        name, fixed, key = base
        if self.call_spans is None:  # no span: the current one's context goes upstream as it is
            return _Current(Unrecorded(current_span().get_span_context()), self.client_duration, key, False)
        attributes = dict(fixed)
        if session_id:
            attributes["mcp.session.id"] = session_id
        span = self.call_spans.start(self.scope, name, SpanKind.CLIENT, attributes)
        return _Current(span, self.client_duration, key, current)

    @staticmethod
    def current(span: Span) -> AbstractContextManager[Any]:
        """`span` made the OpenTelemetry context's current one for a block (not ended at its
        end, nothing recorded on it): a CLIENT span opened with `current=False` whose request
        goes through the MCP SDK after all."""
        return _Attached(span)

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
    def request_id(request_id: Any, span: Span | None = None) -> None:
        """The JSON-RPC id a direct lane gave its request, on `span` (None: the current span)."""
        if span is None:
            span = current_span()
        if span.is_recording():
            span.set_attribute("jsonrpc.request.id", str(request_id))

    def inject(self, meta: dict[str, Any], span: Span | None = None) -> None:
        """`span`'s W3C context (None: the current span's) into an outgoing request's `_meta`
        (SEP-414), what the configured propagators write, as the MCP SDK's own hook writes
        it; the context given them is the current one with `span` in it, built for this
        write and never attached. Under the default propagators (`tracecontext,baggage`),
        with no baggage in the current context, `traceparent` and `tracestate` are written
        here as `TraceContextTextMapPropagator` writes them: the propagators' own path
        (a context built, the composite, the baggage lookup, the getters) cost ~7 µs a call
        in a tight loop (bench/README.md "Issue 27, the encoder"); tests/daemon/
        test_telemetry_spans.py holds the two to each other."""
        if span is None:
            inject_trace_context(meta)
            return
        if type(span) is Unrecorded and not span.get_span_context().is_valid:
            return  # no span recorded and the agent sent no context: none is made up
        if self.w3c_propagators and get_current().get(_BAGGAGE_KEY) is None:
            span_context = span.get_span_context()
            if span_context == INVALID_SPAN_CONTEXT:
                return
            meta["traceparent"] = (f"00-{span_context.trace_id:032x}-{span_context.span_id:016x}-"
                                   f"{span_context.trace_flags:02x}")
            if span_context.trace_state:
                meta["tracestate"] = span_context.trace_state.to_header()
            return
        propagate.inject(meta, context=trace.set_span_in_context(span))

    # -- sessions --------------------------------------------------------------------------
    def connecting(self, server: str, transport: str) -> Span:
        """An INTERNAL span `connect {server}` (ended by `connected`); not made current, so
        the session's later requests do not nest under it. No span recorded: the API's invalid one."""
        if self.call_spans is None:
            return trace.INVALID_SPAN
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
        self.server_session_duration.record(seconds, (("network.transport", transport),))

    def restarted(self, server: str, why: str) -> None:
        self.restarts.add(1, {"monad.server": server, "monad.restart.reason": why})

    def refreshed(self, server: str, outcome: str) -> None:
        self.refreshes.add(1, {"monad.server": server, "monad.oauth.outcome": outcome})

    def journal_written(self, seconds: float) -> None:
        self.journal_write.record(seconds)


class _Current:
    """`span` made current for a `with` block (unless `attach` is False) and ended at its end;
    then the block's duration is recorded in `histogram` under `key`, plus `error.type` when
    it failed. A class, not a generator context manager: a call opens two of these."""

    __slots__ = ("_attach", "_histogram", "_key", "_span", "_started", "_token")

    def __init__(self, span: Span, histogram: AggregatedHistogram, key: Key, attach: bool = True) -> None:
        self._span, self._histogram, self._key, self._attach = span, histogram, key, attach

    def __enter__(self) -> Span:
        self._started = time.perf_counter()
        if self._attach:
            self._token = context.attach(trace.set_span_in_context(self._span))
        return self._span

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        span = self._span
        error = _mark_failed(span, exc) if isinstance(exc, Exception) else None  # not a cancellation
        if self._attach:
            context.detach(self._token)
        span.end()
        error = error or _span_error(span)
        self._histogram.record(time.perf_counter() - self._started,
                               (*self._key, ("error.type", error)) if error else self._key)


class _Attached:
    """`span` current in the OpenTelemetry context for a `with` block (`Recorder.current`)."""

    __slots__ = ("_span", "_token")

    def __init__(self, span: Span) -> None:
        self._span = span

    def __enter__(self) -> None:
        self._token = context.attach(trace.set_span_in_context(self._span))

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        context.detach(self._token)


# The traceparent's format, the W3C propagator's own (a private field: a release that renames
# it gets every context extracted by the propagators).
_TRACEPARENT = getattr(TraceContextTextMapPropagator, "_TRACEPARENT_HEADER_FORMAT_RE", None)
_TRACE_FLAGS = [TraceFlags(flags) for flags in range(256)]
_MAX_HEADER = 512  # the propagator's longest traceparent; a longer tracestate (rare) is left to it too


def agent_trace_context(meta: Mapping[str, Any]) -> SpanContext | None:
    """The W3C trace context an agent's request carries in `_meta` (SEP-414), as the default
    propagators extract it (`TraceContextTextMapPropagator.extract`: the same format, the
    same refusals, the tracestate parsed by `TraceState.from_header`): a remote span
    context, or `INVALID_SPAN_CONTEXT` when there is none or it is malformed. None when
    this leaves it to the propagators: a value that is not a string, one over 512
    characters (they log it), `baggage` beside it, or a release without the format.

    Why a copy of the propagator's checks: its path (the composite, the getters, the
    baggage propagator, a context built, the MCP SDK's `extract_trace_context` around it)
    cost ~4.3 µs a call in a tight loop, this ~1.2 µs, on every call from an agent that
    traces its work (bench/README.md "Issue 27, the encoder");
    tests/daemon/test_telemetry_spans.py holds the two to each other on valid, malformed
    and mutated contexts."""
    header = meta.get("traceparent")
    state = meta.get("tracestate")
    if (_TRACEPARENT is None or "baggage" in meta or (header is not None and type(header) is not str)
            or (state is not None and type(state) is not str)):
        return None
    if not header:
        return INVALID_SPAN_CONTEXT
    if len(header) > _MAX_HEADER or (state is not None and len(state) > _MAX_HEADER):
        return None
    match = _TRACEPARENT.search(header)
    if match is None:
        return INVALID_SPAN_CONTEXT
    version, trace_id, span_id, flags, rest = match.groups()
    if (trace_id == "00000000000000000000000000000000" or span_id == "0000000000000000"
            or (version == "00" and rest) or version == "ff"):
        return INVALID_SPAN_CONTEXT
    return SpanContext(int(trace_id, 16), int(span_id, 16), True, _TRACE_FLAGS[int(flags, 16)],
                       None if state is None else TraceState.from_header([state]))


def w3c_propagators() -> bool:
    """Whether the global propagators are the default ones (`OTEL_PROPAGATORS` unset:
    `tracecontext,baggage`) or `tracecontext` alone, whose output `Recorder.inject` writes
    itself. Decided once, by the `Recorder`: the API sets them from `OTEL_PROPAGATORS` at
    import, and monad never sets them again. The composite's list is a private field: a
    release that renames it, or any other propagator, gets the propagators called."""
    from opentelemetry.baggage.propagation import W3CBaggagePropagator
    from opentelemetry.propagators.composite import CompositePropagator

    textmap = propagate.get_global_textmap()
    parts = getattr(textmap, "_propagators", None) if type(textmap) is CompositePropagator else [textmap]
    kinds = [type(part) for part in parts or ()]
    return kinds in ([TraceContextTextMapPropagator, W3CBaggagePropagator], [TraceContextTextMapPropagator])


def _server_key(method: str, target: str | None) -> Key:
    """A gateway request's `mcp.server.operation.duration` series (without `error.type`)."""
    return (("mcp.method.name", method), ("gen_ai.tool.name", target)) if method == CALL and target else (
        ("mcp.method.name", method),)


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
    # `error.type` is set only with an ERROR status (above, and the MCP SDK's middleware):
    # read the attributes (a lookup that raises KeyError inside when absent) only then.
    if type(span) is Unrecorded:
        return span.error
    status = span._status if type(span) is CallSpan else getattr(span, "status", None)
    if status is None or status.status_code is not StatusCode.ERROR:
        return None
    attributes = getattr(span, "attributes", None)
    value = attributes.get("error.type") if attributes else None
    return str(value) if value else None


__all__ = ["DURATION_BUCKETS", "TRACE_KEYS", "Recorder"]
