"""What some operations tell beyond their span and duration, recorded after they return.

``remember``     the bundle's :class:`~agentx_memory.retrieval.bundle.RecallMetrics` as span attributes
                 (``agentx_memory.recall.total_ms``, ``.embed_ms``, ``.technique.<name>.latency_ms`` / ``.results`` /
                 ``.skipped``, ``.skipped_parts``) and item counts per kind; ``agentx_memory.recall.duration`` and
                 ``agentx_memory.recall.technique.duration`` per technique
``apply_decay``  ``agentx_memory.decay.changed`` by ``kind`` (entity, fact) for a run that wrote
``consolidate``  ``agentx_memory.consolidation.delay``: each consolidated conversation's lag
``memory_stats`` the figures kept for the gauges (:mod:`.gauges`)
``close``        the memory's gauges stop
"""

from __future__ import annotations

from typing import Any

from opentelemetry.trace import Span

from ..decay import DecayReport
from ..extraction.consolidation import ConsolidationReport
from ..retrieval.bundle import MemoryBundle
from ..stats import MemoryStats
from . import gauges
from .spans import After
from .telemetry import Telemetry

__all__ = ["AFTER"]

_RECALL = "agentx_memory.recall."


def recalled(tel: Telemetry, memory: Any, span: Span, bundle: Any, seconds: float) -> None:
    """Recall's timings on the span and in the recall histograms."""
    if not isinstance(bundle, MemoryBundle):
        return
    tel.recall_duration.record(seconds)
    metrics = bundle.metrics
    kinds = {"turns": len(bundle.turns), "facts": len(bundle.facts), "entities": len(bundle.entities),
             "strategies": len(bundle.strategies), "controls": len(bundle.controls)}
    attrs: dict[str, Any] = {_RECALL + "total_ms": metrics.total_ms, _RECALL + "embed_ms": metrics.embed_ms,
                             "agentx_memory.result.count": sum(kinds.values()),
                             **{_RECALL + kind: n for kind, n in kinds.items()}}
    for name, technique in metrics.techniques.items():
        key = f"{_RECALL}technique.{name}."
        attrs[key + "latency_ms"] = technique.latency_ms
        attrs[key + "results"] = technique.results
        if technique.skipped:
            attrs[key + "skipped"] = technique.skipped
        else:
            tel.technique_duration.record(technique.latency_ms / 1000, {"technique": name})
    if metrics.skipped:
        attrs[_RECALL + "skipped_parts"] = sorted(metrics.skipped)
    span.set_attributes(attrs)


def decayed(tel: Telemetry, memory: Any, span: Span, report: Any, seconds: float) -> None:
    """A decay run's changed entities and facts counted."""
    if isinstance(report, DecayReport) and not report.dry_run:
        tel.decay_changed.add(report.entities_changed, {"kind": "entity"})
        tel.decay_changed.add(report.facts_changed, {"kind": "fact"})


def consolidated(tel: Telemetry, memory: Any, span: Span, report: Any, seconds: float) -> None:
    """Each consolidated conversation's lag (last turn to consolidation) in the delay histogram."""
    if isinstance(report, ConsolidationReport):
        for conversation in report.conversations:
            tel.consolidation_delay.record(float(conversation["lag_seconds"]))


def stats_taken(tel: Telemetry, memory: Any, span: Span, stats: Any, seconds: float) -> None:
    """Fresh figures for the gauges of the memory's store."""
    if isinstance(stats, MemoryStats):
        source = gauges.source_for(memory) or gauges.register(memory)
        source.update(stats)


def closed(tel: Telemetry, memory: Any, span: Span, result: Any, seconds: float) -> None:
    """A closed memory's gauges stop (a view's close leaves its parent's running)."""
    gauges.unregister(memory)


#: The hook of each operation that has one.
AFTER: dict[str, After] = {"remember": recalled, "apply_decay": decayed, "consolidate": consolidated,
                           "memory_stats": stats_taken, "close": closed}
