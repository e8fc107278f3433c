"""The OpenTelemetry SDK around an OpenTelemetryObserver, in memory, for the tests to read back: the
metrics (an InMemoryMetricReader) and the finished spans (an InMemorySpanExporter)."""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader, Metric
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import zkwire
from zkwire.observing.otel import OpenTelemetryObserver


class Telemetry:
    """An observer writing to providers of its own; ``tracer`` makes the test's own spans."""

    def __init__(self, **options: Any) -> None:
        self.reader = InMemoryMetricReader()
        self.meters = MeterProvider(metric_readers=[self.reader])
        self.exporter = InMemorySpanExporter()
        self.tracers = TracerProvider()
        self.tracers.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = self.tracers.get_tracer("tests")
        self.observer = OpenTelemetryObserver(self.meters, self.tracers, **options)

    @asynccontextmanager
    async def client(self, hosts: str, **options: Any) -> AsyncIterator[zkwire.Client]:
        """A client (not following the ensemble: the requests are the test's) the observer is attached
        to; the observers have caught up when the block ends."""
        async with zkwire.open_client(hosts, follow_ensemble=False, **options) as zk:
            self.observer.attach(zk)
            yield zk
            assert await zk.flush_observers()

    def metrics(self) -> dict[str, Metric]:
        """Every metric collected now, by name."""
        data = self.reader.get_metrics_data()
        found: dict[str, Metric] = {}
        if data is None:
            return found
        for resource in data.resource_metrics:
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    found[metric.name] = metric
        return found

    def points(self, name: str) -> list[Any]:
        metric = self.metrics().get(name)
        return [] if metric is None else list(metric.data.data_points)

    def counts(self, name: str, attribute: str) -> Counter[Any]:
        """A histogram's counts (or a sum's values) by one attribute's value (None: absent)."""
        total: Counter[Any] = Counter()
        for point in self.points(name):
            n = point.count if isinstance(point, HistogramDataPoint) else point.value
            total[point.attributes.get(attribute)] += n
        return total

    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def everything(self) -> str:
        """Every attribute of every metric point and span, as text (to look for what must not be there)."""
        parts = []
        for metric in self.metrics().values():
            parts.extend(repr(dict(point.attributes)) for point in metric.data.data_points)
        for span in self.spans():
            parts.append(f"{span.name} {dict(span.attributes or {})} {span.status.description}")
            parts.extend(f"{event.name} {dict(event.attributes or {})}" for event in span.events)
        return "\n".join(parts)


class Raising:
    """A meter provider and a tracer provider whose meters, tracers and instruments are made but raise
    at every use (an SDK failing under the observer)."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("create_") or name in ("get_meter", "get_tracer"):
            return lambda *args, **kwargs: self
        raise RuntimeError(f"{name} fails")
