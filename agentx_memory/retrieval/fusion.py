"""Weighted reciprocal-rank fusion (Cormack et al. 2009), kept per leg so every contribution can be explained."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

__all__ = ["rrf_ranks"]


def rrf_ranks(legs: Mapping[str, Sequence[str]], weights: Mapping[str, float], k: int = 60) -> dict[str, dict[str, float]]:
    """Per item, per leg: ``weight / (k + rank)`` (rank from 1). Items absent from a leg get nothing from it.

    >>> rrf_ranks({"a": ["x", "y"], "b": ["y"]}, {"a": 1.0, "b": 1.0}, k=1)["y"]
    {'a': 0.3333333333333333, 'b': 0.5}
    """
    parts: dict[str, dict[str, float]] = {}
    for leg, ranked in legs.items():
        weight = weights.get(leg, 1.0)
        if weight == 0:
            continue
        for rank, item in enumerate(dict.fromkeys(ranked), start=1):
            parts.setdefault(item, {})[leg] = weight / (k + rank)
    return parts
