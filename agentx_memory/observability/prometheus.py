"""Prometheus exposition of the metrics: a reader in the OpenTelemetry SDK that Prometheus scrapes.

:class:`PrometheusReader` is an OpenTelemetry ``MetricReader``: put it in a ``MeterProvider`` and every scrape
collects that provider's metrics (ours and any others) and writes them in Prometheus' text format, with the
usual renaming: dots become underscores, the unit becomes a suffix (``agentx_memory.recall.duration`` in seconds is
``agentx_memory_recall_duration_seconds``), counters end in ``_total``, histograms give ``_bucket`` / ``_sum`` /
``_count`` series (so ``histogram_quantile`` gives p50/p95/p99), attributes become labels (``error.type`` →
``error_type``).

:func:`metrics_app` is the ASGI application to mount at ``/metrics`` (prometheus-client's), :func:`prometheus_text`
the same text as a string. Without a reader they use :func:`prometheus_reader`: the process's reader, which on first
use installs an SDK ``MeterProvider`` reading through it as OpenTelemetry's global one, unless the application set
a global provider before (then give that provider a ``PrometheusReader()`` and pass it here).
"""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from opentelemetry import metrics
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import Gauge, Histogram, MetricReader, MetricsData, Sum
from prometheus_client import CollectorRegistry, generate_latest, make_asgi_app
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from ..errors import ConfigurationError

__all__ = ["PrometheusReader", "metrics_app", "prometheus_name", "prometheus_reader", "prometheus_text"]

#: Unit suffixes of Prometheus' conventions; annotation units (``{row}``) and ``1`` add none.
_UNITS = {"s": "seconds", "ms": "milliseconds", "By": "bytes", "%": "percent"}
_INVALID = re.compile(r"[^a-zA-Z0-9_:]")
_INVALID_LABEL = re.compile(r"[^a-zA-Z0-9_]")


def prometheus_name(name: str, unit: str = "") -> str:
    """The Prometheus name of an OpenTelemetry instrument (dots to underscores, the unit as a suffix)."""
    base = _INVALID.sub("_", name)
    suffix = _UNITS.get(unit, "")
    return f"{base}_{suffix}" if suffix and not base.endswith("_" + suffix) else base


def _labels(attributes: Mapping[str, Any] | None) -> dict[str, str]:
    out = {}
    for key, value in (attributes or {}).items():
        text = ",".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value).lower() \
            if isinstance(value, bool) else str(value)
        out[_INVALID_LABEL.sub("_", key)] = text
    return out


def _bound(value: float) -> str:
    return "+Inf" if math.isinf(value) else repr(float(value))


def _histogram(found: dict[str, Metric], name: str, description: str, points: Histogram) -> None:
    family = found.setdefault(name, Metric(name, description, "histogram"))
    for point in points.data_points:
        labels, running = _labels(point.attributes), 0
        for bound, count in zip(point.explicit_bounds, point.bucket_counts, strict=False):
            running += count
            family.add_sample(name + "_bucket", {**labels, "le": _bound(bound)}, running)
        family.add_sample(name + "_bucket", {**labels, "le": "+Inf"}, point.count)
        family.add_sample(name + "_count", labels, point.count)
        family.add_sample(name + "_sum", labels, point.sum)


def _counter(found: dict[str, Metric], name: str, description: str, points: Sum) -> None:
    base = name.removesuffix("_total")
    family = found.setdefault(base, Metric(base, description, "counter"))
    for point in points.data_points:
        family.add_sample(base + "_total", _labels(point.attributes), point.value)


def _gauge(found: dict[str, Metric], name: str, description: str, points: Sum | Gauge) -> None:
    family = found.setdefault(name, Metric(name, description, "gauge"))
    for point in points.data_points:
        family.add_sample(name, _labels(point.attributes), point.value)


def families(data: MetricsData | None) -> list[Metric]:
    """Prometheus metric families of an OpenTelemetry collection (one per name, samples of every scope; exponential
    histograms, which the SDK makes only when asked to, are left out)."""
    found: dict[str, Metric] = {}
    for resource in data.resource_metrics if data is not None else ():
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                name, description, points = prometheus_name(metric.name, metric.unit or ""), metric.description or "", \
                    metric.data
                if isinstance(points, Histogram):
                    _histogram(found, name, description, points)
                elif isinstance(points, Sum) and points.is_monotonic:
                    _counter(found, name, description, points)
                elif isinstance(points, (Sum, Gauge)):  # gauges, and up-down sums
                    _gauge(found, name, description, points)
    return list(found.values())


class PrometheusReader(MetricReader):
    """An OpenTelemetry metric reader that Prometheus scrapes (cumulative, as Prometheus expects): each scrape of
    :attr:`registry` collects the meter provider it was given to and translates the result (see the module
    docstring)."""

    def __init__(self) -> None:
        super().__init__()
        self._received: MetricsData | None = None
        self._lock = threading.Lock()
        #: The prometheus-client registry whose only collector is this reader.
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(_ReaderCollector(self.families))

    def _receive_metrics(self, metrics_data: MetricsData, timeout_millis: float = 10_000, **kwargs: Any) -> None:
        self._received = metrics_data

    def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
        """Nothing to release: the reader holds no connection or thread."""

    def families(self) -> list[Metric]:
        """Collect now and return the Prometheus metric families (empty until the reader is in a MeterProvider)."""
        with self._lock:
            self._received = None
            self.collect()
            return families(self._received)


class _ReaderCollector(Collector):
    def __init__(self, collect: Callable[[], list[Metric]]):
        self._collect = collect

    def collect(self) -> Iterable[Metric]:
        return self._collect()


_default: PrometheusReader | None = None
_default_lock = threading.Lock()


def prometheus_reader() -> PrometheusReader:
    """The process's :class:`PrometheusReader`. The first call installs an OpenTelemetry SDK ``MeterProvider`` that
    reads through it as the global one; if the application set a global provider before, this raises
    :class:`~agentx_memory.errors.ConfigurationError`: build your provider with
    ``metric_readers=[PrometheusReader(), ...]`` and pass that reader to :func:`metrics_app`."""
    global _default
    with _default_lock:
        if _default is None:
            reader = PrometheusReader()
            provider = MeterProvider(metric_readers=[reader])
            metrics.set_meter_provider(provider)
            if metrics.get_meter_provider() is not provider:
                provider.shutdown()
                raise ConfigurationError(
                    "a global OpenTelemetry MeterProvider was set before agentx_memory's Prometheus reader could be "
                    "installed: create it with MeterProvider(metric_readers=[PrometheusReader(), ...]) and pass that "
                    "reader to metrics_app(reader) / prometheus_text(reader)")
            _default = reader
        return _default


def metrics_app(reader: PrometheusReader | None = None) -> Callable[..., Any]:
    """An ASGI application answering every GET with the Prometheus text of ``reader``'s metrics (default:
    :func:`prometheus_reader`); mount it at ``/metrics``."""
    return make_asgi_app(registry=(reader or prometheus_reader()).registry)


def prometheus_text(reader: PrometheusReader | None = None) -> str:
    """The Prometheus text exposition of ``reader``'s metrics (default: :func:`prometheus_reader`), e.g. for a
    framework that is not ASGI."""
    return generate_latest((reader or prometheus_reader()).registry).decode("utf-8")
