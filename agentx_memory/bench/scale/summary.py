"""Figures derived from all sizes of a run: the growth of every latency per 10× of data, and the bar."""

from __future__ import annotations

import math
from itertools import pairwise
from typing import Any

from .config import BAR, BARS, FULL, FULL_MEDIAN, OVERLAP_BAR

__all__ = ["bar", "growth"]


def _per_10x(small: float, large: float, size_small: int, size_large: int) -> float | None:
    if not small or not large or size_large <= size_small:
        return None
    return round((large / small) ** (1 / math.log10(size_large / size_small)), 2)


def _series(step: dict[str, Any]) -> dict[str, float]:
    """Every latency p50 of one size (remember configurations and floors)."""
    out = {f"remember {name} p50": v["ms"]["p50"] for name, v in step["latency"].items()}
    out.update({f"remember {name} p95": v["ms"]["p95"] for name, v in step["latency"].items()})
    out.update({f"{name} p50": v["p50"] for name, v in step["read_floors"].items()
                if not name.startswith("_") and v.get("p50")})
    return out


def growth(results: dict[str, Any]) -> dict[str, Any]:
    """Per pair of consecutive sizes: each latency's ratio scaled to a 10× growth of the store."""
    sizes = [int(s) for s in results]
    out: dict[str, Any] = {}
    for small, large in pairwise(sizes):
        a, b = _series(results[str(small)]), _series(results[str(large)])
        out[f"{small} -> {large}"] = {k: _per_10x(a[k], b[k], small, large) for k in a if k in b}
    return out


def bar(results: dict[str, Any]) -> dict[str, Any]:
    """The full configuration's p50/p95 at 100k turns (or the largest size), each timed configuration against its
    own target in :data:`.config.BARS` (the median user's p50 is held to 15 ms, the busiest user's to 25)."""
    sizes = [int(s) for s in results]
    at = 100_000 if 100_000 in sizes else sizes[-1]
    step = results[str(at)]
    out: dict[str, Any] = {"size": at, "target": BAR}
    for name in (FULL, FULL_MEDIAN):
        if name in step["latency"]:
            ms = step["latency"][name]["ms"]
            target = BARS[name]
            out[name] = {"p50_ms": ms["p50"], "p95_ms": ms["p95"], "target": target,
                         "met": all(ms[key.removesuffix("_ms")] <= limit for key, limit in target.items())}
    overlap = step.get("exact_overlap") or {}
    if overlap.get("mean") is not None:
        out["exact_overlap"] = {**overlap, "target": OVERLAP_BAR, "met": overlap["mean"] >= OVERLAP_BAR}
    return out
