"""What monad records while telemetry is on: spans by the OpenTelemetry semantic conventions
for MCP (`open-telemetry/semantic-conventions-genai`, docs/gen-ai/mcp.md; status:
development) and the metrics in docs/telemetry.md, through the OpenTelemetry API as it is:
the SDK's tracer (`start_span`), its histograms and counters, `opentelemetry.propagate`.

Built by `telemetry.start` once the SDK's providers are set; imported only then. Nothing here
reads an argument, a result's content, a header, a token or an env value: attributes are
names, ids, versions, codes and outcomes. A name an agent sends that is not a listed tool or
prompt is recorded as `_OTHER` (the conventions' value for an unknown value of a bounded
attribute), so an invented name never becomes a span name, an attribute or a metric label;
every span's free strings pass the supervisor's scrubber on their way out (`sdk.Scrubbed`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from contextvars import Token
from typing import Any

from opentelemetry import context, metrics, propagate, trace
from opentelemetry.context import Context
from opentelemetry.metrics import CallbackOptions, Histogram, Observation
from opentelemetry.trace import Span, SpanKind, StatusCode

from monad_cli.core.redact import redact_url

# The conventions' buckets for every `mcp.*.duration` histogram, in seconds.
DURATION_BUCKETS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300)
# Journal writes take ~0.05-1 ms: the conventions' buckets would put them all in the first.
JOURNAL_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1)
# W3C Trace Context keys in `params._meta` (SEP-414: unprefixed, reserved in 2026-07-28).
TRACE_KEYS = frozenset({"traceparent", "tracestate", "baggage"})
TRANSPORTS = {"stdio": "pipe", "http": "tcp"}
CALL, GET, READ = "tools/call", "prompts/get", "resources/read"
OTHER = "_OTHER"  # a name that is not a listed tool or prompt (the conventions' `_OTHER`)
_TARGETS = {CALL: "gen_ai.tool.name", GET: "gen_ai.prompt.name"}


def _tool_error(result: Any) -> bool:
    """Whether a tools/call result (a `CallToolResult` or its wire dict) has `isError: true`."""
    if isinstance(result, Mapping):
        return result.get("isError") is True
    return getattr(result, "is_error", None) is True


def _error_type(exc: Exception) -> tuple[str, str | None]:
    """`error.type` of a request that raised `exc`, and its JSON-RPC code (None: not an error
    answer): an `MCPError`'s code, never its message (a server's message may quote what it
    was sent); invalid params as the SDK answers them; else the exception's type."""
    from mcp.shared.exceptions import MCPError
    from mcp_types import INVALID_PARAMS
    from pydantic import ValidationError

    if isinstance(exc, MCPError):
        return str(exc.error.code), str(exc.error.code)
    if isinstance(exc, ValidationError):
        return str(INVALID_PARAMS), str(INVALID_PARAMS)
    return type(exc).__qualname__, None


class Operation:
    """One MCP request in flight, received or sent: `span` (the SDK's; without an OTLP
    endpoint the API's non-recording span carrying the parent's context) and `error`, the
    `error.type` its duration is recorded with."""

    __slots__ = ("error", "span")

    def __init__(self, span: Span) -> None:
        self.span = span
        self.error: str | None = None

    def fail(self, error_type: str, code: str | None = None) -> None:
        """The request failed: `error.type` (and `rpc.response.status_code` for an error
        answer), and the span's status ERROR, with no description."""
        self.error = error_type
        self.span.set_attributes({"error.type": error_type, **({"rpc.response.status_code": code} if code else {})})
        self.span.set_status(StatusCode.ERROR)

    def result(self, result: Any) -> None:
        """A tools/call result: `error.type = tool_error` when it has `isError: true`."""
        if _tool_error(result):
            self.fail("tool_error")

    def rpc_error(self, error: Any) -> None:
        """An error answer (an `MCPError`): its code."""
        self.fail(str(error.error.code), str(error.error.code))

    def inject(self, meta: dict[str, Any]) -> None:
        """This request's trace context into an outgoing `_meta` (SEP-414), as the configured
        propagators write it (default: W3C `traceparent`/`tracestate`, and `baggage`); none
        when there is none (no span recorded and the agent sent none)."""
        propagate.inject(meta, context=trace.set_span_in_context(self.span))

    def request_id(self, request_id: Any) -> None:
        """The JSON-RPC id the request was sent with."""
        self.span.set_attribute("jsonrpc.request.id", str(request_id))


class _Timed:
    """`Recorder._operation`'s block (a class, not a generator: two of these run on every
    call's path): the span made current on entry, then ended and its duration recorded; an
    exception (not a cancellation) fails the operation first."""

    __slots__ = ("current", "histogram", "labels", "op", "started", "token")

    def __init__(self, op: Operation, histogram: Histogram, labels: dict[str, Any], current: bool) -> None:
        self.op, self.histogram, self.labels, self.current = op, histogram, labels, current
        self.token: Token[Context] | None = None
        self.started = 0.0

    def __enter__(self) -> Operation:
        if self.current:
            self.token = context.attach(trace.set_span_in_context(self.op.span))
        self.started = time.perf_counter()
        return self.op

    def __exit__(self, kind: Any, exc: BaseException | None, tb: Any) -> None:
        op = self.op
        if isinstance(exc, Exception):  # not a cancellation: nothing failed then
            op.fail(*_error_type(exc))
        if self.token is not None:
            context.detach(self.token)
        op.span.end()
        self.histogram.record(time.perf_counter() - self.started,
                              {**self.labels, "error.type": op.error} if op.error else self.labels)


class Recorder:
    """The spans and instruments. `listed(method, name)`: whether `name` is a tool (tools/call)
    or prompt (prompts/get) an agent was listed, else it is recorded as `_OTHER`;
    `capture_arguments`: spans carry `gen_ai.tool.call.arguments` as `digest` makes it (the
    journal's digest); `exporting`: spans go somewhere (an OTLP endpoint), else monad opens
    none of its own beyond the requests' (whose non-recording spans carry the context);
    `tracer_provider`/`meter_provider`: the SDK's (default: the global ones)."""

    def __init__(self, *, listed: Callable[[str, str], bool], capture_arguments: bool = False,
                 digest: Callable[[Any], str] | None = None, exporting: bool = True,
                 tracer_provider: Any = None, meter_provider: Any = None) -> None:
        self.listed = listed
        self.digest = digest if capture_arguments else None
        self.exporting = exporting
        self.tracer = trace.get_tracer("monad", tracer_provider=tracer_provider)
        self.meter = meter = metrics.get_meter("monad", meter_provider=meter_provider)

        def histogram(name: str, description: str, buckets: tuple[float, ...] = DURATION_BUCKETS) -> Histogram:
            return meter.create_histogram(name, unit="s", description=description,
                                          explicit_bucket_boundaries_advisory=list(buckets))

        self.server_duration = histogram("mcp.server.operation.duration",
                                         "MCP request duration as observed on the receiver (the gateway)")
        self.client_duration = histogram("mcp.client.operation.duration",
                                         "MCP request duration as observed on the sender (upstream calls)")
        self.server_session_duration = histogram("mcp.server.session.duration",
                                                 "How long a gateway client's session lasted")
        self.session_duration = histogram("mcp.client.session.duration", "How long an upstream MCP session lasted")
        self.approval_wait = histogram("monad.approval.wait.duration",
                                       "How long a call waited at the approval gate for a person")
        self.journal_write = histogram("monad.journal.write.duration", "One journal write transaction",
                                       JOURNAL_BUCKETS)
        # Counted in a dict on the call's path and read by the SDK at collection (an observable
        # counter: the SDK's counter costs a call ~10 µs more, twice that in the supervisor).
        self.calls: dict[tuple[str, str, str, str], int] = {}
        meter.create_observable_counter("monad.tool.calls", [self._observe_calls], unit="{call}",
                                        description="Tool calls by server, outcome, approval decision and caller")
        self.restarts = meter.create_counter("monad.server.restarts", unit="{restart}",
                                             description="Upstream sessions restarted after a failure or an end")
        self.refreshes = meter.create_counter("monad.oauth.refreshes", unit="{refresh}",
                                              description="OAuth token refreshes by outcome")

    def _observe_calls(self, _options: CallbackOptions) -> Iterator[Observation]:
        for (server, outcome, decision, via), n in list(self.calls.items()):  # list(): one step, keys may be added
            yield Observation(n, {"monad.server": server, "monad.call.outcome": outcome,
                                  "monad.approval.decision": decision, "monad.via": via})

    def observe_servers(self, states: Callable[[], Mapping[str, str]], *,
                        tasks: Callable[[], Mapping[str, tuple[int, int]]] = dict,
                        fleet_queued: Callable[[], int] = lambda: 0) -> None:
        """Gauges read at collection (on a scrape, or in the OTLP reader's thread):
        `monad.servers` (count by state), `monad.server.state` (1 per server, at its current
        state), `monad.tasks` (per server, active and queued tasks) and `monad.fleet.queued`
        (journal rows waiting for a fleet's shared journal). `states()`: server → state;
        `tasks()`: server → (active, queued)."""

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

        gauge = self.meter.create_observable_gauge
        gauge("monad.servers", [by_state], unit="{server}", description="Defined servers by state")
        gauge("monad.server.state", [each], unit="1", description="1 for each server, labelled with its current state")
        gauge("monad.tasks", [task_counts], unit="{task}",
              description="Tasks per server: active (in flight) and queued")
        gauge("monad.fleet.queued", [fleet], unit="{row}",
              description="Journal rows waiting to be shipped to a fleet's shared journal")

    def _target(self, method: str, name: Any) -> str | None:
        """A request's tool or prompt as recorded: the name when listed, else `_OTHER`."""
        if method not in _TARGETS or not isinstance(name, str):
            return None
        return name if self.listed(method, name) else OTHER

    def _operation(self, name: str, kind: SpanKind, attributes: dict[str, Any], histogram: Histogram,
                   labels: dict[str, Any], *, parent: Any = None, current: bool = True) -> _Timed:
        """A span around a block, made current unless `current` is False, and its duration in
        `histogram` under `labels` plus `error.type` when it failed."""
        return _Timed(Operation(self.tracer.start_span(name, context=parent, kind=kind, attributes=attributes)),
                      histogram, labels, current)

    # -- the gateway's side (SERVER spans) -------------------------------------------------
    def server_request(self, method: str, target: Any, *, request_id: Any, protocol_version: str | None,
                       meta: Mapping[str, Any] | None, transport: str) -> AbstractContextManager[Operation]:
        """The SERVER span of one request a gateway client sent, named `{method} {target}` for a
        listed tool or prompt (else `{method}`, with `_OTHER` as the target's attribute), a child
        of the trace context in the request's `meta` (SEP-414); its duration in
        `mcp.server.operation.duration`. `transport`: `pipe` (a relay's stdio) or `tcp`.
        Raises what the block raises (an exception fails the operation first)."""
        shown = self._target(method, target)
        attributes: dict[str, Any] = {"mcp.method.name": method, "network.transport": transport}
        labels: dict[str, Any] = {"mcp.method.name": method}
        if method == CALL:
            attributes["gen_ai.operation.name"] = "execute_tool"
        if shown is not None:
            attributes[_TARGETS[method]] = shown
            if method == CALL:
                labels["gen_ai.tool.name"] = shown
        if protocol_version:
            attributes["mcp.protocol.version"] = protocol_version
        if request_id is not None:
            attributes["jsonrpc.request.id"] = str(request_id)
        name = f"{method} {shown}" if shown not in (None, OTHER) else method
        parent = propagate.extract(meta) if meta and not TRACE_KEYS.isdisjoint(meta) else None
        return self._operation(name, SpanKind.SERVER, attributes, self.server_duration, labels, parent=parent)

    def middleware(self, transport: str) -> Any:
        """A context-tier middleware for the MCP SDK's server path (in place of the SDK's own
        `OpenTelemetryMiddleware`): `server_request` around every request."""
        recorder = self

        async def telemetry(ctx: Any, call_next: Any) -> Any:
            with recorder.server_request(ctx.method, (ctx.params or {}).get("name"), request_id=ctx.request_id,
                                         protocol_version=ctx.protocol_version, meta=ctx.meta,
                                         transport=transport) as op:
                result = await call_next(ctx)
                if ctx.method == CALL:
                    op.result(result)
                return result

        return telemetry

    # -- one tool call ---------------------------------------------------------------------
    def call(self, exposed: str, via: str) -> AbstractContextManager[Any]:
        """A SERVER span `tools/call {exposed}` for a call that did not come through the gateway
        (`monad mcp call`, the Studio): a trace of its own. Inside a gateway request (a span is
        current) none, and none without an OTLP endpoint."""
        if not self.exporting or trace.get_current_span().get_span_context().is_valid:
            return nullcontext()
        shown = self._target(CALL, exposed)
        return self.tracer.start_as_current_span(
            f"tools/call {exposed}" if shown == exposed else "tools/call", kind=SpanKind.SERVER,
            attributes={"mcp.method.name": CALL, "gen_ai.operation.name": "execute_tool",
                        "gen_ai.tool.name": shown or OTHER, "monad.via": via},
            record_exception=False, set_status_on_exception=False)

    def call_ended(self, *, server: str, exposed: str, via: str, outcome: str | None, decision: str | None,
                   decided_by: str | None, call_id: int | None, arguments: Any) -> None:
        """One tools/call's end: `monad.tool.calls` (when it has an `outcome`), and in one update
        of the current (SERVER) span its outcome (a gateway answers a refused, failed or
        timed-out call as a tool error, which its span records from the answer; a CLI call's
        span keeps the outcome as `error.type`) and, once it was resolved to a server's tool
        and decided (`call_id`, `decision` and `decided_by` set), monad's own attributes.
        `monad.tool.exposed_name` only when the agent called the tool by the server's own name
        (`monad mcp serve NAME`): else the span's name and `gen_ai.tool.name` hold it."""
        failed = outcome is not None and outcome not in ("ok", "detached")
        if outcome is not None:
            key = (server, outcome, decision or "none", via)
            self.calls[key] = self.calls.get(key, 0) + 1
        span = trace.get_current_span()
        if not span.is_recording():
            return
        attributes: dict[str, Any] = {}
        if call_id is not None and decision and decided_by:
            attributes.update({"monad.server": server, "monad.via": via, "monad.approval.decision": decision,
                               "monad.approval.decided_by": decided_by, "monad.call.id": call_id})
            # `name`: the SDK's span's (a ReadableSpan); it holds the exposed name only when listed.
            if getattr(span, "name", None) != f"tools/call {exposed}" and self._target(CALL, exposed) == exposed:
                attributes["monad.tool.exposed_name"] = exposed
            if self.digest is not None:
                attributes["gen_ai.tool.call.arguments"] = self.digest(arguments)
        if outcome is not None:
            attributes["monad.call.outcome"] = outcome
        if failed:
            attributes["error.type"] = "tool_error" if outcome == "tool-error" else outcome
        if attributes:
            span.set_attributes(attributes)
        if failed:
            span.set_status(StatusCode.ERROR)

    @contextmanager
    def approval(self, exposed: str, server: str) -> Iterator[Callable[[str, str], None]]:
        """An INTERNAL span `approval {exposed}` for the gate's wait; the block calls the
        yielded `decided(decision, who)`. Records `monad.approval.wait.duration`."""
        started = time.perf_counter()
        decided = {"decision": "cancelled", "by": "the caller left"}
        with self.tracer.start_as_current_span(f"approval {exposed}", kind=SpanKind.INTERNAL, attributes={
                "monad.server": server, "monad.tool.exposed_name": exposed}, record_exception=False) as span:
            try:
                yield lambda decision, who: decided.update(decision=decision, by=who)
            finally:
                waited = time.perf_counter() - started
                span.set_attributes({"monad.approval.decision": decided["decision"],
                                     "monad.approval.decided_by": decided["by"],
                                     "monad.approval.wait.duration": round(waited, 6)})
                self.approval_wait.record(waited, {"monad.approval.decision": decided["decision"]})

    # -- upstream (CLIENT spans) -----------------------------------------------------------
    def client_request(self, method: str, target: str | None, *, server: str, transport: str,
                       protocol_version: str | None, address: tuple[str, int | None] | None,
                       current: bool = True, resolved: bool = False) -> AbstractContextManager[Operation]:
        """The CLIENT span of one request to an upstream server, and its duration in
        `mcp.client.operation.duration`. `target`, as the server names it: the tool
        (tools/call: in the name and `gen_ai.tool.name`), the prompt (prompts/get: in the name
        and `gen_ai.prompt.name`; either `_OTHER` when not listed) or the resource URI
        (resources/read: `mcp.resource.uri` only, its password and query values as `***`).
        `transport`: the definition's (`stdio`, `http`); `address`: a remote's host and port.
        The request's `_meta` gets the context from `Operation.inject` (the MCP SDK's session
        injects the current span's itself). `current` False: the span is not made current (a
        lane handed the operation). `resolved`: `target` is the tool the call path resolved from
        the server's own listing, never an agent's word: recorded as it is, with no look-up (which
        walks every server's tools for a name no agent was listed). The session id is never
        recorded (a server may treat it as a credential). Raises what the block raises."""
        net = TRANSPORTS.get(transport, transport)
        attributes: dict[str, Any] = {"mcp.method.name": method, "network.transport": net, "monad.server": server}
        labels = dict(attributes)
        name = method
        if method == CALL:
            attributes["gen_ai.operation.name"] = "execute_tool"
        shown = target if resolved and method == CALL and target else self._target(method, target)
        if shown is not None:
            attributes[_TARGETS[method]] = shown
            name = f"{method} {shown}" if shown != OTHER else method
            if method == CALL:
                labels["gen_ai.tool.name"] = shown
        elif target and method == READ:  # never in the name (the URI can be anything)
            attributes["mcp.resource.uri"] = redact_url(target)
        if protocol_version:
            attributes["mcp.protocol.version"] = protocol_version
        if address is not None:
            attributes["server.address"] = address[0]
            if address[1] is not None:
                attributes["server.port"] = address[1]
        return self._operation(name, SpanKind.CLIENT, attributes, self.client_duration, labels, current=current)

    # -- the shapes today's call sites use (an `Operation`'s methods) -----------------------
    @staticmethod
    def current(op: Operation) -> AbstractContextManager[Any]:
        """`op`'s span made current for a block (a request opened with `current=False` that
        goes through the MCP SDK's session after all)."""
        return trace.use_span(op.span, end_on_exit=False, record_exception=False, set_status_on_exception=False)

    @staticmethod
    def result(op: Operation, result: Any) -> None:
        op.result(result)

    @staticmethod
    def rpc_error(op: Operation, error: Any) -> None:
        op.rpc_error(error)

    @staticmethod
    def request_id(request_id: Any, op: Operation | None = None) -> None:
        """The JSON-RPC id on `op` (None: the current span)."""
        (op.span if op is not None else trace.get_current_span()).set_attribute("jsonrpc.request.id", str(request_id))

    @staticmethod
    def inject(meta: dict[str, Any], op: Operation | None = None) -> None:
        """`op`'s trace context (None: the current one) into an outgoing request's `_meta`."""
        if op is not None:
            op.inject(meta)
        else:
            propagate.inject(meta)

    # -- sessions --------------------------------------------------------------------------
    def connecting(self, server: str, transport: str) -> Span:
        """An INTERNAL span `connect {server}`, ended by `connected`; not made current, so the
        session's later requests do not nest under it."""
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
        self.server_session_duration.record(seconds, {"network.transport": transport})

    def restarted(self, server: str, why: str) -> None:
        self.restarts.add(1, {"monad.server": server, "monad.restart.reason": why})

    def refreshed(self, server: str, outcome: str) -> None:
        self.refreshes.add(1, {"monad.server": server, "monad.oauth.outcome": outcome})


__all__ = ["DURATION_BUCKETS", "OTHER", "TRACE_KEYS", "Operation", "Recorder"]
