"""Summary statistics of timings: percentiles of a sample and a rate per second."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["percentiles", "rate"]


def percentiles(values: Sequence[float]) -> dict[str, float]:
    """``n``, mean, p50, p95 and p99 of ``values`` (rounded to 3 decimals); ``{"n": 0}`` for no values."""
    if not len(values):
        return {"n": 0}
    arr = np.asarray(values, dtype=np.float64)
    return {"n": int(arr.size), "mean": round(float(arr.mean()), 3), "p50": round(float(np.percentile(arr, 50)), 3),
            "p95": round(float(np.percentile(arr, 95)), 3), "p99": round(float(np.percentile(arr, 99)), 3)}


def rate(count: int, seconds: float) -> float:
    """``count / seconds`` rounded to 0.1 (0 when no time passed)."""
    return round(count / seconds, 1) if seconds > 0 else 0.0
