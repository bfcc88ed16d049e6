"""monad's own aggregation of the histograms measured on every gateway call, handed to the
OpenTelemetry SDK's metric readers as the SDK's own points at each collection.

Why a second copy beside the SDK: the SDK's `Histogram.record` costs ~10 µs of CPU per
measurement (a `Measurement` object, the attributes hashed, one aggregation per reader,
each under its lock); three of them per call were a third of telemetry's cost per call
(bench/README.md "Issue 27"). `AggregatedHistogram.record` costs ~1 µs: a tuple key, one
`bisect`, a few additions per reader, under one lock (journal writes come from threads).

What comes out is what the SDK's explicit-bucket histogram aggregation gives for the same
measurements: one `HistogramDataPoint` per attribute set with the same bucket counts
(`bisect_left`: a value equal to a bound counts in that bound's bucket), count, sum, min and
max; cumulative (start: the attribute set's first measurement) or delta (start: the previous
collection; a set with no measurement since is left out), as the reader prefers.
tests/daemon/test_telemetry_aggregate.py holds it to the SDK, series by series, both ways.
"""

from __future__ import annotations

import math
import threading
from bisect import bisect_left
from collections.abc import Sequence
from time import time_ns
from typing import Any

from opentelemetry.sdk.metrics.export import (
    AggregationTemporality,
    Histogram,
    HistogramDataPoint,
    Metric,
    MetricsData,
    ResourceMetrics,
    ScopeMetrics,
)
from opentelemetry.sdk.util.instrumentation import InstrumentationScope

# An attribute set as the call sites build it: ((key, value), …), in a fixed order per site.
Key = tuple[tuple[str, Any], ...]
SCOPE = "monad"  # the meter's name: these series sit beside monad's SDK instruments


class _Cell:
    """One reader's running values for one attribute set."""

    __slots__ = ("buckets", "count", "max", "min", "start", "sum")

    def __init__(self, size: int, start: int) -> None:
        self.buckets = [0] * size
        self.count = 0
        self.sum: float = 0
        self.min = math.inf
        self.max = -math.inf
        self.start = start


class AggregatedHistogram:
    """An explicit-bucket histogram instrument aggregated here. `record(value, key)`: `key`
    is the attribute set as ((name, value), …); one cell per registered reader."""

    def __init__(self, aggregates: Aggregates, name: str, *, unit: str, description: str,
                 boundaries: Sequence[float]) -> None:
        self.aggregates = aggregates
        self.name, self.unit, self.description = name, unit, description
        self.boundaries = tuple(float(b) for b in boundaries)
        self._series: dict[Key, list[_Cell]] = {}
        self._lock = threading.Lock()

    def record(self, value: float, key: Key = ()) -> None:
        with self._lock:
            cells = self._series.get(key)
            if cells is None:
                now = time_ns()
                size = len(self.boundaries) + 1
                cells = self._series[key] = [_Cell(size, now) for _ in self.aggregates.temporalities]
            index = bisect_left(self.boundaries, value)
            for cell in cells:
                cell.buckets[index] += 1
                cell.count += 1
                cell.sum += value
                if value < cell.min:
                    cell.min = value
                if value > cell.max:
                    cell.max = value

    def collect(self, reader: int, now: int) -> Metric | None:
        """The reader's `Metric` (None: no point), reset for a delta reader."""
        delta = self.aggregates.temporalities[reader] is AggregationTemporality.DELTA
        points = []
        with self._lock:
            for key, cells in self._series.items():
                cell = cells[reader]
                if cell.count:
                    points.append(HistogramDataPoint(
                        attributes=dict(key), start_time_unix_nano=cell.start, time_unix_nano=now,
                        count=cell.count, sum=cell.sum, bucket_counts=tuple(cell.buckets),
                        explicit_bounds=self.boundaries, min=cell.min, max=cell.max))
                if delta:
                    cells[reader] = _Cell(len(self.boundaries) + 1, now)
        if not points:
            return None
        temporality = AggregationTemporality.DELTA if delta else AggregationTemporality.CUMULATIVE
        return Metric(name=self.name, description=self.description, unit=self.unit,
                      data=Histogram(data_points=points, aggregation_temporality=temporality))


class Aggregates:
    """The histograms aggregated here, and the readers they are collected for. Register
    every reader (`reader`) before the first `histogram`'s first record."""

    def __init__(self) -> None:
        self.temporalities: list[AggregationTemporality] = []
        self.histograms: list[AggregatedHistogram] = []

    def reader(self, temporality: AggregationTemporality) -> int:
        """A reader's slot (what `merge` takes)."""
        self.temporalities.append(temporality)
        return len(self.temporalities) - 1

    def histogram(self, name: str, *, unit: str, description: str, boundaries: Sequence[float]) -> AggregatedHistogram:
        h = AggregatedHistogram(self, name, unit=unit, description=description, boundaries=boundaries)
        self.histograms.append(h)
        return h

    def merge(self, data: MetricsData, reader: int) -> MetricsData:
        """`data` as the SDK collected it for `reader`, with these histograms in the `monad`
        scope of its (one) resource."""
        now = time_ns()
        metrics = [m for h in self.histograms if (m := h.collect(reader, now)) is not None]
        if not metrics or not data.resource_metrics:
            return data
        first, *rest = data.resource_metrics
        scopes = list(first.scope_metrics)
        for i, scope in enumerate(scopes):
            if scope.scope.name == SCOPE:
                scopes[i] = ScopeMetrics(scope=scope.scope, metrics=[*scope.metrics, *metrics],
                                         schema_url=scope.schema_url)
                break
        else:
            scopes.append(ScopeMetrics(scope=InstrumentationScope(SCOPE), metrics=metrics, schema_url=""))
        return MetricsData(resource_metrics=[ResourceMetrics(resource=first.resource, scope_metrics=scopes,
                                                             schema_url=first.schema_url), *rest])


__all__ = ["AggregatedHistogram", "Aggregates", "Key"]
