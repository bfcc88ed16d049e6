"""The Prometheus text exposition format (version 0.0.4) of monad's OpenTelemetry metrics.

The OpenTelemetry SDK's metrics are read by a pull reader (`InMemoryMetricReader`, cumulative)
and written by `prometheus_client` (its families and `generate_latest`), with the names
OpenTelemetry's Prometheus compatibility spec gives them: dots become underscores, the unit
`s` a `_seconds` suffix, a counter gets `_total` (from the client library), annotation units
(`{call}`) and `1` add nothing, and attribute keys become label names the same way
(`monad.server` → `monad_server`). What `opentelemetry-exporter-prometheus` does, which is
not published where monad installs from.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry

_INVALID = re.compile(r"[^a-zA-Z0-9_]")
_UNITS = {"s": "seconds", "ms": "milliseconds", "By": "bytes"}


def metric_name(name: str, unit: str | None) -> str:
    """`mcp.client.operation.duration` + `s` → `mcp_client_operation_duration_seconds`."""
    base = _INVALID.sub("_", name)
    suffix = _UNITS.get(unit or "")
    return f"{base}_{suffix}" if suffix and not base.endswith(suffix) else base


def label_name(key: str) -> str:
    return _INVALID.sub("_", key)


def _bound(value: float) -> str:
    return repr(float(value))


class OtelCollector(Collector):
    """A `prometheus_client` collector over an `InMemoryMetricReader`: every scrape collects."""

    def __init__(self, reader: Any) -> None:
        self.reader = reader

    def collect(self) -> Iterator[Metric]:
        from opentelemetry.sdk.metrics.export import Gauge, Histogram, Sum

        data = self.reader.get_metrics_data()
        if data is None:
            return
        for resource_metrics in data.resource_metrics:
            for scope_metrics in resource_metrics.scope_metrics:
                for metric in scope_metrics.metrics:
                    name = metric_name(metric.name, metric.unit)
                    doc = metric.description or metric.name
                    points = list(metric.data.data_points)
                    keys = sorted({label_name(str(k)) for p in points for k in (p.attributes or {})})

                    def labels(point: Any, keys: list[str] = keys) -> list[str]:
                        given = {label_name(str(k)): str(v) for k, v in (point.attributes or {}).items()}
                        return [given.get(k, "") for k in keys]

                    family: Metric
                    if isinstance(metric.data, Histogram):
                        family = HistogramMetricFamily(name, doc, labels=keys)
                        for p in points:
                            running, buckets = 0, []
                            for bound, count in zip(p.explicit_bounds, p.bucket_counts, strict=False):
                                running += count
                                buckets.append((_bound(bound), running))
                            buckets.append(("+Inf", p.count))
                            family.add_metric(labels(p), buckets, p.sum)
                    elif isinstance(metric.data, Sum) and metric.data.is_monotonic:
                        family = CounterMetricFamily(name, doc, labels=keys)
                        for p in points:
                            family.add_metric(labels(p), p.value)
                    elif isinstance(metric.data, Sum | Gauge):
                        family = GaugeMetricFamily(name, doc, labels=keys)
                        for p in points:
                            family.add_metric(labels(p), p.value)
                    else:
                        continue
                    yield family


class Exposition:
    """The text of one scrape: `text()` → bytes in the exposition format."""

    def __init__(self, reader: Any) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(OtelCollector(reader))

    def text(self) -> bytes:
        from prometheus_client.exposition import generate_latest

        return generate_latest(self.registry)


CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

__all__ = ["CONTENT_TYPE", "Exposition", "label_name", "metric_name"]
