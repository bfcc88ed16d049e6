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

Where the SDK's outcome is fixed at setup, a span skips its general call: the sampler is
not called when the configured one is decided by the parent alone (`fixed_decisions`: the
default parent-based always-on among them; held to the sampler by the same tests), and an
ended span goes to the processors as it is (a `CallSpan` is a `ReadableSpan`, as the SDK's
own `Span` is), not copied.

What it leaves out, on purpose: processors' `on_start` (monad's processors act on the MCP
SDK's spans only), span limits (monad's call spans carry about fifteen attributes of
strings and ints, set by monad), links and exception events (monad never records an
exception: its message may quote what a server was sent).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from time import time_ns
from typing import Any

from opentelemetry import trace
from opentelemetry.context import Context, get_current
from opentelemetry.sdk.trace import Event, ReadableSpan, SpanProcessor
from opentelemetry.sdk.trace.sampling import ParentBased, StaticSampler
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import NonRecordingSpan, SpanContext, SpanKind, TraceFlags
from opentelemetry.trace.status import Status, StatusCode

from monad_cli.daemon.telemetry.sdk import QUIET_PREFIX, QuietSampler

# The trace flags by (sampled, random trace id), as the SDK's `start_span` sets them.
_FLAGS = {(sampled, random_id): TraceFlags((TraceFlags.SAMPLED if sampled else TraceFlags.DEFAULT)
                                           | (TraceFlags.RANDOM_TRACE_ID if random_id else 0))
          for sampled in (False, True) for random_id in (False, True)}
_UNSET = Status(StatusCode.UNSET)
# The OpenTelemetry context's key for the current span, read from a context the API builds
# (the API keeps the key's name private).
_SPAN_KEY = next(iter(trace.set_span_in_context(trace.INVALID_SPAN, Context())))


def current_span(context: Context | None = None) -> trace.Span:
    """`context`'s span (None: the current context's), else `INVALID_SPAN`: the API's
    `get_current_span` without its three nested calls and its `isinstance` test against the
    `Span` ABC (~0.2 µs each time in a tight loop; a gateway call asks five times). Only
    `set_span_in_context` writes the key, with a `Span`."""
    span: trace.Span | None = (context if context is not None else get_current()).get(_SPAN_KEY)  # type: ignore[assignment]
    return span if span is not None else trace.INVALID_SPAN



class CallSpans:
    """Starts call spans with `provider`'s sampler, ids and resource; `processors`: the
    span processors that take finished spans (none: a recording span is dropped at `end`)."""

    def __init__(self, provider: Any, processors: Sequence[SpanProcessor]) -> None:
        self.sampler = provider.sampler
        self.ids = provider.id_generator
        self.resource = provider.resource
        self.processors = tuple(processors)
        # Decided once here, not per span: whether the sampler's outcome is fixed by the parent alone.
        self.decisions = fixed_decisions(self.sampler)

    def start(self, scope: InstrumentationScope, name: str, kind: SpanKind, attributes: dict[str, Any],
              context: Context | None = None) -> trace.Span:
        """A started span, the child of `context`'s span (None: the current one), as the SDK's
        `start_span` decides it: a `CallSpan` when sampled to record, else a `NonRecordingSpan`
        carrying the ids and flags (so that the trace context still goes upstream).
        `attributes` (a fresh dict) becomes the span's own when the sampler's outcome is fixed."""
        parent: SpanContext | None = current_span(context).get_span_context()
        if parent is None or not parent.is_valid:
            parent = None
        decisions = self.decisions
        if decisions is not None and not name.startswith(QUIET_PREFIX):
            # The sampler's outcome without calling it (`fixed_decisions`).
            if parent is None:
                sampled, trace_state = decisions[0], None
                trace_id, random_id = self.ids.generate_trace_id(), self.ids.is_trace_id_random()
            else:
                flags = parent.trace_flags
                sampled = decisions[(2 if parent.is_remote else 4) - flags.sampled]
                trace_id, trace_state, random_id = parent.trace_id, parent.trace_state, flags.random_trace_id
            span_context = SpanContext(trace_id, self.ids.generate_span_id(), False, _FLAGS[sampled, random_id],
                                       trace_state)
            if not sampled:
                return NonRecordingSpan(span_context)
            return CallSpan(self, scope, name, kind, span_context, parent, attributes)
        if parent is None:
            trace_id = self.ids.generate_trace_id()
            random_id = self.ids.is_trace_id_random()
        else:
            trace_id = parent.trace_id
            random_id = parent.trace_flags.random_trace_id
        result = self.sampler.should_sample(context, trace_id, name, kind, attributes, ())
        span_context = SpanContext(trace_id, self.ids.generate_span_id(), is_remote=False,
                                   trace_flags=_FLAGS[result.decision.is_sampled(), random_id],
                                   trace_state=result.trace_state)
        if not result.decision.is_recording():
            return NonRecordingSpan(span_context)
        return CallSpan(self, scope, name, kind, span_context, parent, dict(result.attributes))


def fixed_decisions(sampler: Any) -> tuple[bool, bool, bool, bool, bool] | None:
    """Whether a span is sampled (recorded and exported) under `sampler`, when the parent
    alone decides it: (no parent, remote parent sampled, remote parent not sampled, local
    parent sampled, local parent not sampled); None for any other sampler (the ratio ones,
    a custom one), which `CallSpans.start` then calls.

    The fixed ones are the SDK's `ALWAYS_ON`/`ALWAYS_OFF` (`StaticSampler`) and a
    `ParentBased` whose five samplers are those: the default `parentbased_always_on`,
    `parentbased_always_off`, `always_on`, `always_off` (OTEL_TRACES_SAMPLER), and monad's
    `QuietSampler` around any of them (it drops only the MCP SDK's own `MCP send …` spans,
    which `start` leaves to it). The SDK's outcome for them: the decision, the parent's
    trace state, the attributes as given. Why not call it: the sampler's call, the two
    lookups of the parent it makes, its `SamplingResult` and the copy of the attributes
    cost ~2.5–4 µs a span in a tight loop (about half of `start`; more in the running
    supervisor), two spans a gateway call (bench/README.md "Issue 27, the last cuts").
    tests/daemon/test_telemetry_spans.py holds the outcome to the sampler's own for each
    parent."""
    if isinstance(sampler, QuietSampler):
        sampler = sampler.inner
    if type(sampler) is StaticSampler:
        return (_static(sampler),) * 5
    if type(sampler) is ParentBased:
        # Its five samplers are private fields: a release that renames them gets the sampler called.
        parts = tuple(getattr(sampler, f"_{field}", None) for field in (
            "root", "remote_parent_sampled", "remote_parent_not_sampled", "local_parent_sampled",
            "local_parent_not_sampled"))
        if all(type(part) is StaticSampler for part in parts):
            root, remote_sampled, remote_not, local_sampled, local_not = (_static(part) for part in parts)
            return root, remote_sampled, remote_not, local_sampled, local_not
    return None


def _static(sampler: Any) -> bool:
    return sampler.should_sample(None, 1, "").decision.is_sampled()


class CallSpan(trace.Span, ReadableSpan):
    """A recording span of the OpenTelemetry API that is, once ended, the SDK's `ReadableSpan`
    handed to the processors as it is (as the SDK's own `Span` is): no copy at the end, ~1.5 µs
    a span less with OTLP export (a tight loop)."""

    # ReadableSpan's fields a call span starts with, shared until one is set (no event list
    # until an event is added).
    _events: Sequence[Event] = ()
    _links = ()
    _instrumentation_info = None
    _status = _UNSET
    _end_time: int | None = None
    _ended = False

    def __init__(self, spans: CallSpans, scope: InstrumentationScope, name: str, kind: SpanKind,
                 context: SpanContext, parent: SpanContext | None, attributes: dict[str, Any]) -> None:
        # ReadableSpan's other fields, set here (its __init__ would build a Resource when none is given).
        self._spans, self._instrumentation_scope, self._name, self._kind = spans, scope, name, kind
        self._context: SpanContext = context
        self._parent = parent
        self._attributes: dict[str, Any] = attributes
        self._resource = spans.resource
        self._start_time = time_ns()

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
            self._events = (*self._events, Event(name, attributes, timestamp))

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
        processors = self._spans.processors
        if not processors:
            return
        self._end_time = end_time or time_ns()
        for processor in processors:
            processor.on_end(self)


class Unrecorded(NonRecordingSpan):
    """A call's stand-in when no span processor exports (`Recorder.records_spans` False):
    nothing is recorded on it, but it carries the parent's context (the agent's W3C trace
    context, or the invalid one: what goes upstream, unchanged) and the `error.type` the
    duration metrics are labelled with (set as on a span, with `set_attribute(s)`)."""

    __slots__ = ("error",)

    def __init__(self, context: SpanContext) -> None:
        super().__init__(context)
        self.error: str | None = None

    def set_attribute(self, key: str, value: Any) -> None:
        if key == "error.type":
            self.error = str(value)

    def set_attributes(self, attributes: Mapping[str, Any]) -> None:
        if "error.type" in attributes:
            self.error = str(attributes["error.type"])


__all__ = ["CallSpan", "CallSpans", "Unrecorded", "current_span", "fixed_decisions"]
