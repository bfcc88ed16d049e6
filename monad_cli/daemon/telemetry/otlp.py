"""Finished spans to the bytes of an OTLP `ExportTraceServiceRequest`, written directly.

Why a second copy beside `opentelemetry-exporter-otlp-proto-common`: its `encode_spans` builds a
protobuf message object for every span, attribute and value, then serializes them: ~35–41 µs
of CPU a monad call span in a tight loop, more in the running supervisor (on the exporter's
batch thread, but on the supervisor's CPU). Two spans a gateway call made it the largest part
of what telemetry with OTLP export cost a call (bench/README.md "Issue 27, the encoder"). Here
a span is its fields' bytes joined, and what repeats from call to call (the span's name, an
attribute's key and value, a status, the resource and the scope) is encoded once and kept:
~3.6 µs a span (`bench/profile_telemetry_hooks.py --encoder`).

It writes what `encode_spans(spans).SerializePartialToString()` writes, byte for byte:
the same fields, in field-number order, the same grouping by resource and then by
instrumentation scope (equal ones merged, in first-seen order), and the same presence rules
(proto3: a scalar at its default is left out; a submessage set, even empty, is written; a
`oneof` value is written even at its default). tests/daemon/test_telemetry_otlp.py holds the
two to each other on spans of every shape. What it does not take (an attribute value of a
type other than None, bool, str, int, float, bytes, a sequence or a mapping of them; an int
outside int64; a string that is not UTF-8; a key or a name that is not a string) raises
`Unencodable`, and `span_exporter` gives that batch to the library's own export, which
decides it (it logs and drops such an attribute, or refuses the batch).

Field numbers from opentelemetry-proto: `collector/trace/v1/trace_service.proto`,
`trace/v1/trace.proto`, `common/v1/common.proto`, `resource/v1/resource.proto`; the wire format
from the protobuf encoding guide (varints, fixed64/fixed32 little endian, length-delimited).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from struct import Struct
from typing import Any

from opentelemetry.trace import SpanKind, StatusCode

from monad_cli.daemon.telemetry.spans import CallSpan

_SMALL = [bytes((n,)) for n in range(128)]
_DOUBLE = Struct("<d").pack
_U64 = 0xFFFF_FFFF_FFFF_FFFF
# `Span.kind` by the API's kind: OTLP's SPAN_KIND_INTERNAL = 1 … for the API's INTERNAL = 0 ….
_KIND = {kind: b"\x30" + _SMALL[kind.value + 1] for kind in SpanKind}
# `Span.status` without a description, by its code (UNSET: an empty message, still written).
_STATUS = {code: b"\x7a\x02\x18" + _SMALL[code.value] if code.value else b"\x7a\x00" for code in StatusCode}
# Span.flags (SpanFlags): "has is_remote", and "is remote" when the parent's context is.
_FLAGS_LOCAL = b"\x85\x01" + (0x100).to_bytes(4, "little")
_FLAGS_REMOTE = b"\x85\x01" + (0x300).to_bytes(4, "little")
# A cached attribute's value at most this long (a captured argument is not kept).
_CACHE_VALUE_CHARS = 256
_CACHE_ENTRIES = 4096


class Unencodable(Exception):
    """A span holds what this encoder leaves to the library's."""


def _varint(n: int) -> bytes:
    if n < 0x80:
        return _SMALL[n]
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _field(tag: bytes, payload: bytes) -> bytes:
    """A length-delimited field: its tag, the payload's length, the payload."""
    return tag + _varint(len(payload)) + payload


def _text(value: str) -> bytes:
    if not isinstance(value, str):  # a key or a name of another type: the library refuses it
        raise Unencodable(f"a {type(value).__name__} where a string goes")
    try:
        return value.encode("utf-8")
    except UnicodeEncodeError as exc:  # a lone surrogate: the library decides
        raise Unencodable(str(exc)) from None


def _value(value: Any) -> bytes:
    """An `AnyValue` message, as the library's `_encode_value` fills it (its order of tests)."""
    if value is None:
        return b""
    if isinstance(value, bool):
        return b"\x10\x01" if value else b"\x10\x00"
    if isinstance(value, str):
        return _field(b"\x0a", _text(value))
    if isinstance(value, int):
        if not -(1 << 63) <= value < (1 << 63):
            raise Unencodable("an int outside int64")
        return b"\x18" + _varint(value & _U64)
    if isinstance(value, float):
        return b"\x21" + _DOUBLE(value)
    if isinstance(value, bytes):
        return _field(b"\x3a", value)
    if isinstance(value, Sequence):
        return _field(b"\x2a", b"".join([_field(b"\x0a", _value(v)) for v in value]))
    if isinstance(value, Mapping):
        return _field(b"\x32", b"".join([_field(b"\x0a", _key_value(str(k), v)) for k, v in value.items()]))
    raise Unencodable(f"an attribute value of type {type(value).__name__}")


def _key_value(key: str, value: Any) -> bytes:
    """A `KeyValue` message (a key that is not a string: the library drops the attribute)."""
    return (_field(b"\x0a", _text(key)) if key or type(key) is not str else b"") + _field(b"\x12", _value(value))


def _attributes(tag: bytes, attributes: Mapping[str, Any] | None) -> bytes:
    """A repeated `KeyValue` field."""
    if not attributes:
        return b""
    return b"".join([_field(tag, _key_value(k, v)) for k, v in attributes.items()])


def _resource(resource: Any) -> bytes:
    """`ResourceSpans.resource`: a `Resource` with its attributes (written even when empty)."""
    return _field(b"\x0a", _attributes(b"\x0a", resource.attributes))


def _scope(scope: Any) -> bytes:
    """`ScopeSpans.scope`: an `InstrumentationScope` (an empty one for None)."""
    if scope is None:
        return b"\x0a\x00"
    body = b"".join([
        _field(b"\x0a", _text(scope.name)) if scope.name else b"",
        _field(b"\x12", _text(scope.version)) if scope.version else b"",
        _attributes(b"\x1a", scope.attributes),
    ])
    return _field(b"\x0a", body)


def _trace_state(trace_state: Any) -> str:
    """A non-empty `TraceState` as the library writes it (`key=value`, comma-separated)."""
    return ",".join([f"{key}={value}" for key, value in trace_state.items()])


class SpanEncoder:
    """Encodes batches of finished spans (`ReadableSpan`s); keeps the bytes of what repeats.
    One per exporter: `encode` runs on its batch thread only."""

    def __init__(self) -> None:
        # A whole `Span.attributes` field by (key, the value's class, value) for ints and bools, by
        # key and value for strs; name -> `Span.name` field.
        self._attrs: dict[tuple[str, type, Any], bytes] = {}
        self._strs: dict[str, dict[str, bytes]] = {}
        self._names: dict[str, bytes] = {}
        # id() -> (the object, its bytes): a resource's and a scope's encoding, by identity
        # (the library groups by equality, which `encode` does per batch).
        self._resources: dict[int, tuple[Any, bytes]] = {}
        self._scopes: dict[int, tuple[Any, bytes]] = {}

    def encode(self, spans: Sequence[Any]) -> bytes:
        """The serialized `ExportTraceServiceRequest` for `spans`, equal to the library's
        `encode_spans(spans).SerializePartialToString()`; raises `Unencodable` for what it
        leaves to the library (module docstring)."""
        # Resource, then scope, each grouped by equality as the library's dicts group them
        # (hashing each distinct object once a batch, not once a span).
        groups: dict[Any, dict[Any, list[bytes]]] = {}
        by_id: dict[tuple[int, int], list[bytes]] = {}
        for span in spans:
            resource = span.resource
            scope = span.instrumentation_scope or None
            ids = (id(resource), id(scope))
            bucket = by_id.get(ids)
            if bucket is None:
                bucket = groups.setdefault(resource, {}).setdefault(scope, [])
                by_id[ids] = bucket
            bucket.append(self._span(span))
        out = []
        for resource, scopes in groups.items():
            body = [self._cached(self._resources, resource, _resource)]
            for scope, encoded in scopes.items():
                scope_spans = [self._cached(self._scopes, scope, _scope)]
                scope_spans += [_field(b"\x12", s) for s in encoded]
                if scope is not None and scope.schema_url:
                    scope_spans.append(_field(b"\x1a", _text(scope.schema_url)))
                body.append(_field(b"\x12", b"".join(scope_spans)))
            if resource.schema_url:
                body.append(_field(b"\x1a", _text(resource.schema_url)))
            out.append(_field(b"\x0a", b"".join(body)))
        return b"".join(out)

    @staticmethod
    def _cached(cache: dict[int, tuple[Any, bytes]], obj: Any, encode: Any) -> bytes:
        entry = cache.get(id(obj))
        if entry is None or entry[0] is not obj:
            if len(cache) >= 64:
                cache.clear()
            entry = cache[id(obj)] = (obj, encode(obj))
        return entry[1]

    def _span(self, span: Any) -> bytes:
        """A `Span` message, as the library's `_encode_span` fills it. A monad call span's
        fields are read directly (`CallSpan`: no links, nothing dropped); any other span's
        through `ReadableSpan`'s properties."""
        if type(span) is CallSpan:
            context, parent, name, kind = span._context, span._parent, span._name, span._kind
            start, end, attributes, status = span._start_time, span._end_time, span._attributes, span._status
            events: Sequence[Any] = span._events
            links: Sequence[Any] = ()
            dropped_attributes = dropped_events = dropped_links = 0
        else:
            context, parent, name, kind = span.get_span_context(), span.parent, span.name, span.kind
            start, end, attributes, status = span.start_time, span.end_time, span.attributes, span.status
            events, links = span.events, span.links
            dropped_attributes, dropped_events = span.dropped_attributes, span.dropped_events
            dropped_links = span.dropped_links
        parts = [b"\x0a\x10", context.trace_id.to_bytes(16, "big"), b"\x12\x08", context.span_id.to_bytes(8, "big")]
        if context.trace_state:  # an empty one writes nothing, as None
            parts.append(_field(b"\x1a", _text(_trace_state(context.trace_state))))
        if parent:
            parts += (b"\x22\x08", parent.span_id.to_bytes(8, "big"))
        if name or (name is not None and type(name) is not str):  # an empty one is not written
            encoded = self._names.get(name)
            if encoded is None:
                if len(self._names) >= _CACHE_ENTRIES:
                    self._names.clear()
                encoded = self._names[name] = _field(b"\x2a", _text(name))
            parts.append(encoded)
        parts.append(_KIND[kind])
        if start:
            parts += (b"\x39", start.to_bytes(8, "little"))
        if end:
            parts += (b"\x41", end.to_bytes(8, "little"))
        if attributes:
            strs, others = self._strs, self._attrs
            for key, value in attributes.items():
                cls = value.__class__
                # Kept: strs (short ones), ints and bools, whose equal values encode alike (not
                # floats: 0.0 == -0.0). A str by key, then value (no tuple made for the lookup).
                if cls is str:
                    by_value = strs.get(key)
                    if by_value is None:
                        if len(strs) >= _CACHE_ENTRIES:
                            strs.clear()
                        by_value = strs[key] = {}
                    encoded = by_value.get(value)
                    if encoded is None:
                        encoded = _field(b"\x4a", _key_value(key, value))
                        if len(value) <= _CACHE_VALUE_CHARS:
                            if len(by_value) >= _CACHE_ENTRIES:
                                by_value.clear()
                            by_value[value] = encoded
                elif cls is int or cls is bool:
                    cache_key = (key, cls, value)
                    encoded = others.get(cache_key)
                    if encoded is None:
                        if len(others) >= _CACHE_ENTRIES:
                            others.clear()
                        encoded = others[cache_key] = _field(b"\x4a", _key_value(key, value))
                else:
                    encoded = _field(b"\x4a", _key_value(key, value))
                parts.append(encoded)
        if dropped_attributes:
            parts += (b"\x50", _varint(dropped_attributes))
        for event in events:
            event_parts = [b"\x09" + event.timestamp.to_bytes(8, "little")] if event.timestamp else []
            if event.name or (event.name is not None and type(event.name) is not str):
                event_parts.append(_field(b"\x12", _text(event.name)))
            event_parts.append(_attributes(b"\x1a", event.attributes))
            if event.dropped_attributes:
                event_parts.append(b"\x20" + _varint(event.dropped_attributes))
            parts.append(_field(b"\x5a", b"".join(event_parts)))
        if dropped_events:
            parts += (b"\x60", _varint(dropped_events))
        for link in links:
            link_parts = [b"\x0a\x10", link.context.trace_id.to_bytes(16, "big"),
                          b"\x12\x08", link.context.span_id.to_bytes(8, "big"),
                          _attributes(b"\x22", link.attributes)]
            if link.dropped_attributes:
                link_parts.append(b"\x28" + _varint(link.dropped_attributes))
            link_parts.append(b"\x35" + (0x300 if link.context.is_remote else 0x100).to_bytes(4, "little"))
            parts.append(_field(b"\x6a", b"".join(link_parts)))
        if dropped_links:
            parts += (b"\x70", _varint(dropped_links))
        if status is not None:
            encoded = _STATUS.get(status.status_code) if not status.description else None
            if encoded is None:
                description, code = status.description, status.status_code.value
                encoded = _field(b"\x7a", (_field(b"\x12", _text(description)) if description else b"")
                                 + (b"\x18" + _SMALL[code] if code else b""))
            parts.append(encoded)
        parts.append(_FLAGS_REMOTE if parent is not None and parent.is_remote else _FLAGS_LOCAL)
        return b"".join(parts)


def span_exporter(**kwargs: Any) -> Any:
    """The library's OTLP/HTTP span exporter (`OTLPSpanExporter(**kwargs)`: its endpoint,
    headers, TLS, compression, retries and its own metrics), whose batches `SpanEncoder`
    encodes. The library's `export` encodes inline; this one sends the bytes through the same
    client, and leaves to it (encoding again, as it does) a batch `SpanEncoder` does not take,
    one over `max_request_size` (it logs and drops it), and every batch if a release renames
    the fields used here (tested on the pinned one)."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import SpanExportResult

    class Exporter(OTLPSpanExporter):
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.encoder = SpanEncoder()
            self.faulted = False  # logged once
            self.own = all(hasattr(self, f) for f in ("_shutdown", "_metrics", "_client", "_max_request_size"))

        def export(self, spans: Sequence[Any]) -> SpanExportResult:
            if not self.own or self._shutdown:
                return super().export(spans)
            try:
                data = self.encoder.encode(spans)
            except Unencodable:  # what the library decides (it drops or refuses it)
                return super().export(spans)
            except Exception as e:  # noqa: BLE001 - a fault of ours: the library encodes the batch
                if not self.faulted:
                    self.faulted = True
                    # Its type only: a message may quote a span's attribute.
                    logging.getLogger("monad.telemetry").warning(
                        "telemetry: monad's OTLP encoder failed (%s); the library encodes the spans it "
                        "cannot", type(e).__name__)
                return super().export(spans)
            if 0 < self._max_request_size < len(data):
                return super().export(spans)
            with self._metrics.export_operation(len(spans)) as result:
                sent = self._client.export(data)
                if not sent.success:
                    result.error = sent.error
                    result.error_attrs = (None if sent.status_code is None
                                          else {"http.response.status_code": sent.status_code})
                    return SpanExportResult.FAILURE
            return SpanExportResult.SUCCESS

    return Exporter(**kwargs)


__all__ = ["SpanEncoder", "Unencodable", "span_exporter"]
