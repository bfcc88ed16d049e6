"""The two spans of every gateway call (the gateway's SERVER span on a direct lane, and the
upstream CLIENT span), built here instead of by the OpenTelemetry SDK's `Tracer.start_span`.

Why a second copy beside the SDK: in the running supervisor the SDK's `start_span` and
`Span.end` cost ~85 µs of CPU a span (a sampler, a `BoundedAttributes` that cleans every
value under a lock, a `Span` with its lock, events and links lists, processor hooks, the
tracer's own metrics), about twice their cost in a tight loop, since they run with cold
caches between calls; two of them were most of telemetry's cost per call (bench/README.md
"Issue 27 again"). `CallSpans.start` keeps what the SDK decides (the provider's sampler,
id generator, resource; the parent from the context) and records into a plain dict; `end`
hands the SDK's own `ReadableSpan` to the span processors (the OTLP exporter's batch), or
nothing when no processor exports. tests/daemon/test_telemetry_spans.py holds a call span
to the SDK's span for the same inputs: name, kind, ids and flags, parent, attributes,
status, resource and scope.

What it leaves out, on purpose: processors' `on_start` (monad's processors act on the MCP
SDK's spans only), span limits (monad's call spans carry about fifteen attributes of
strings and ints, set by monad), links and exception events (monad never records an
exception: its message may quote what a server was sent).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from time import time_ns
from types import MappingProxyType
from typing import Any

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.trace import Event, ReadableSpan, SpanProcessor
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import NonRecordingSpan, SpanContext, SpanKind, TraceFlags
from opentelemetry.trace.status import Status, StatusCode

_SAMPLED = TraceFlags(TraceFlags.SAMPLED)
_NOT_SAMPLED = TraceFlags(TraceFlags.DEFAULT)
_UNSET = Status(StatusCode.UNSET)


class CallSpans:
    """Starts call spans with `provider`'s sampler, ids and resource; `processors`: the
    span processors that take finished spans (none: a recording span is dropped at `end`)."""

    def __init__(self, provider: Any, processors: Sequence[SpanProcessor]) -> None:
        self.sampler = provider.sampler
        self.ids = provider.id_generator
        self.resource = provider.resource
        self.processors = tuple(processors)

    def start(self, scope: InstrumentationScope, name: str, kind: SpanKind, attributes: dict[str, Any],
              context: Context | None = None) -> trace.Span:
        """A started span, the child of `context`'s span (None: the current one), as the SDK's
        `start_span` decides it: a `CallSpan` when sampled to record, else a `NonRecordingSpan`
        carrying the ids and flags (so that the trace context still goes upstream)."""
        parent: SpanContext | None = trace.get_current_span(context).get_span_context()
        if parent is None or not parent.is_valid:
            parent = None
            trace_id = self.ids.generate_trace_id()
            random_id = self.ids.is_trace_id_random()
        else:
            trace_id = parent.trace_id
            random_id = parent.trace_flags.random_trace_id
        sampled = self.sampler.should_sample(context, trace_id, name, kind, attributes, ())
        flags = _SAMPLED if sampled.decision.is_sampled() else _NOT_SAMPLED
        if random_id:
            flags = TraceFlags(flags | TraceFlags.RANDOM_TRACE_ID)
        span_context = SpanContext(trace_id, self.ids.generate_span_id(), is_remote=False, trace_flags=flags,
                                   trace_state=sampled.trace_state)
        if not sampled.decision.is_recording():
            return NonRecordingSpan(span_context)
        return CallSpan(self, scope, name, kind, span_context, parent, dict(sampled.attributes))


class CallSpan(trace.Span):
    """A recording span of the OpenTelemetry API whose end is the SDK's `ReadableSpan`."""

    def __init__(self, spans: CallSpans, scope: InstrumentationScope, name: str, kind: SpanKind,
                 context: SpanContext, parent: SpanContext | None, attributes: dict[str, Any]) -> None:
        self._spans, self._scope, self._name, self._kind = spans, scope, name, kind
        self._context, self._parent, self._attributes = context, parent, attributes
        self._events: list[Event] = []
        self._status = _UNSET
        self._start = time_ns()
        self._ended = False

    # What the SDK's span shows, and monad reads back (`error.type`, the kind).
    @property
    def name(self) -> str:
        return self._name

    @property
    def kind(self) -> SpanKind:
        return self._kind

    @property
    def attributes(self) -> Mapping[str, Any]:
        return MappingProxyType(self._attributes)

    @property
    def status(self) -> Status:
        return self._status

    def get_span_context(self) -> SpanContext:
        return self._context

    def is_recording(self) -> bool:
        return not self._ended

    def set_attribute(self, key: str, value: Any) -> None:
        if not self._ended:
            self._attributes[key] = value

    def set_attributes(self, attributes: Mapping[str, Any]) -> None:
        if not self._ended:
            self._attributes.update(attributes)

    def add_event(self, name: str, attributes: Any = None, timestamp: int | None = None) -> None:
        if not self._ended:
            self._events.append(Event(name, attributes, timestamp))

    def add_link(self, context: SpanContext, attributes: Any = None) -> None:
        """Links are not kept (monad adds none)."""

    def update_name(self, name: str) -> None:
        if not self._ended:
            self._name = name

    def set_status(self, status: Status | StatusCode, description: str | None = None) -> None:
        # As the SDK: OK is final, and UNSET is never set.
        code = status.status_code if isinstance(status, Status) else status
        if self._ended or self._status.status_code is StatusCode.OK or code is StatusCode.UNSET:
            return
        self._status = status if isinstance(status, Status) else Status(status, description)

    def record_exception(self, exception: BaseException, attributes: Any = None, timestamp: int | None = None,
                         escaped: bool = False) -> None:
        """Not recorded: an exception's message may quote what a server was sent."""

    def end(self, end_time: int | None = None) -> None:
        if self._ended:
            return
        self._ended = True
        spans = self._spans
        if not spans.processors:
            return
        done = ReadableSpan(self._name, context=self._context, parent=self._parent, resource=spans.resource,
                            attributes=self._attributes, events=tuple(self._events), kind=self._kind,
                            status=self._status, start_time=self._start, end_time=end_time or time_ns(),
                            instrumentation_scope=self._scope)
        for processor in spans.processors:
            processor.on_end(done)


__all__ = ["CallSpan", "CallSpans"]
