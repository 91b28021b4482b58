"""The tracer and the instruments every traced memory records to, by name (``docs/observability.md`` lists them).

They come from OpenTelemetry's global providers unless :func:`configure` is given others. Instruments made before the
application sets its global providers follow them once set (the API's proxies), so the order does not matter.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from opentelemetry import metrics, trace

from . import gauges

__all__ = ["DURATION_BUCKETS", "LAG_BUCKETS", "SCOPE", "Telemetry", "configure", "current"]

#: The instrumentation scope of every span and metric.
SCOPE = "agentx_memory"

#: Histogram bucket bounds of operation and recall latencies, in seconds (1 ms to 30 s).
DURATION_BUCKETS: Sequence[float] = (
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)

#: Histogram bucket bounds of consolidation lags, in seconds (1 minute to 2 days).
LAG_BUCKETS: Sequence[float] = (60, 300, 900, 1800, 3600, 7200, 14400, 43200, 86400, 172800)


class Telemetry:
    """A tracer and the instruments of the metrics, on one pair of providers (``None``: the global ones)."""

    def __init__(self, tracer_provider: trace.TracerProvider | None = None,
                 meter_provider: metrics.MeterProvider | None = None):
        from .. import __version__

        self.tracer = trace.get_tracer(SCOPE, __version__, tracer_provider=tracer_provider)
        meter = metrics.get_meter(SCOPE, __version__, meter_provider=meter_provider)
        self.operation_duration = meter.create_histogram(
            "agentx_memory.operation.duration", unit="s", explicit_bucket_boundaries_advisory=DURATION_BUCKETS,
            description="duration of each public operation of the memory (attributes: operation, error.type)")
        self.recall_duration = meter.create_histogram(
            "agentx_memory.recall.duration", unit="s", explicit_bucket_boundaries_advisory=DURATION_BUCKETS,
            description="duration of each remember() that returned a bundle (retrieval latency, p50/p95/p99)")
        self.technique_duration = meter.create_histogram(
            "agentx_memory.recall.technique.duration", unit="s", explicit_bucket_boundaries_advisory=DURATION_BUCKETS,
            description="duration of each retrieval technique of a remember() (attribute: technique)")
        self.working_hits = meter.create_counter(
            "agentx_memory.working.hits", unit="{read}",
            description="working-memory (Redis) reads that found something (attribute: operation)")
        self.working_misses = meter.create_counter(
            "agentx_memory.working.misses", unit="{read}",
            description="working-memory (Redis) reads that found nothing (attribute: operation)")
        self.decay_changed = meter.create_counter(
            "agentx_memory.decay.changed", unit="{item}",
            description="entities and facts whose salience or confidence a decay run lowered (attribute: kind)")
        self.consolidation_delay = meter.create_histogram(
            "agentx_memory.consolidation.delay", unit="s", explicit_bucket_boundaries_advisory=LAG_BUCKETS,
            description="time from a conversation's last turn to its consolidation, per conversation consolidated")
        meter.create_observable_gauge(
            "agentx_memory.graph.nodes", [gauges.graph_nodes], unit="{node}",
            description="graph nodes per label (attributes: store, label)")
        meter.create_observable_gauge(
            "agentx_memory.graph.relationships", [gauges.graph_relationships], unit="{relationship}",
            description="graph relationships per type (attributes: store, type)")
        meter.create_observable_gauge(
            "agentx_memory.postgres.rows", [gauges.postgres_rows], unit="{row}",
            description="PostgreSQL live rows per table (attributes: store, table)")
        meter.create_observable_gauge(
            "agentx_memory.redis.used_memory", [gauges.redis_used_memory], unit="By",
            description="the Redis server's used_memory (attribute: store)")
        meter.create_observable_gauge(
            "agentx_memory.consolidation.pending", [gauges.consolidation_pending], unit="{conversation}",
            description="conversations with turns not consolidated yet (attribute: store)")
        meter.create_observable_gauge(
            "agentx_memory.consolidation.lag", [gauges.consolidation_lag], unit="s",
            description="how long the oldest unconsolidated conversation has waited since its last turn")


_lock = threading.Lock()
_current: Telemetry | None = None


def current() -> Telemetry:
    """The telemetry traced memories record to (made on the global providers at first use)."""
    global _current
    if _current is None:
        with _lock:
            if _current is None:
                _current = Telemetry()
    return _current


def configure(tracer_provider: trace.TracerProvider | None = None,
              meter_provider: metrics.MeterProvider | None = None) -> Telemetry:
    """Record to these providers from now on instead of the global ones (``None`` for either: the global one);
    returns the new :class:`Telemetry`. For tests and for applications that keep their providers out of the
    global slots; everyone else sets the global providers and never calls this."""
    global _current
    with _lock:
        _current = Telemetry(tracer_provider, meter_provider)
    return _current
