"""OpenTelemetry spans and metrics for agentx-memory, and a Prometheus endpoint (extra ``[otel]``).

Turn it on with the setting ``observability.enabled`` (``AGENTX_OBSERVABILITY__ENABLED=true``): every memory opened
then wraps its public operations in spans and records the metrics of spec 003's monitoring list through
OpenTelemetry's *global* tracer and meter providers, so the exporters you configure there receive them. Off (the
default), nothing of this package or of OpenTelemetry is imported and no call is wrapped.

``telemetry``   the tracer and the instruments (names, units, buckets); :func:`configure` for explicit providers
``spans``       the wrapper that traces one operation: attributes, result counts, errors, per-operation metrics
``tracing``     :func:`instrument`: a memory's class swapped for a traced subclass (its working memory, router too)
``gauges``      the memory-size and consolidation-lag gauges, read from a cached ``memory_stats()``
``prometheus``  :func:`prometheus_reader`, :func:`metrics_app` (ASGI ``/metrics``) and :func:`prometheus_text`

See ``docs/observability.md`` for the names of the spans, attributes and metrics.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from ..errors import ConfigurationError

if TYPE_CHECKING:  # at run time ``__getattr__`` loads each name on first use (OpenTelemetry with it)
    from .prometheus import PrometheusReader, metrics_app, prometheus_reader, prometheus_text
    from .telemetry import Telemetry, configure
    from .tracing import instrument, is_instrumented

_EXPORTS: dict[str, str] = {
    "instrument": ".tracing",
    "is_instrumented": ".tracing",
    "PrometheusReader": ".prometheus",
    "metrics_app": ".prometheus",
    "prometheus_reader": ".prometheus",
    "prometheus_text": ".prometheus",
    "Telemetry": ".telemetry",
    "configure": ".telemetry",
}

#: What the ``otel`` extra installs.
_EXTRA = frozenset({"opentelemetry", "prometheus_client"})

__all__ = ["PrometheusReader", "Telemetry", "configure", "instrument", "is_instrumented", "metrics_app",
           "prometheus_reader", "prometheus_text"]


if not TYPE_CHECKING:

    def __getattr__(name: str) -> object:
        """Load a name from its module on first access (PEP 562)."""
        module = _EXPORTS.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        try:
            value = getattr(importlib.import_module(module, __name__), name)
        except ImportError as exc:
            if (exc.name or "").split(".")[0] not in _EXTRA:
                raise
            raise ConfigurationError(
                f"agentx_memory.observability needs {exc.name}: pip install 'agentx-memory[otel]' (or leave "
                "observability.enabled off)") from exc
        globals()[name] = value
        return value


def __dir__() -> list[str]:
    """The module's attributes, the names not loaded yet included."""
    return sorted(set(globals()) | set(__all__))
