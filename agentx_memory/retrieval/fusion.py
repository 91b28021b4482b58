"""Fusion: the legs of one memory type (vector, lexical, resolved names) into one relevance per item. Pure functions.

* :func:`rrf_ranks` — weighted reciprocal-rank fusion (Cormack et al. 2009), kept per leg so every contribution can
  be explained; :func:`fuse` normalizes it to [0, 1] by the best possible score (facts, entities, and turns with
  ``recall.fusion = "rrf"``), with :func:`leg_weights` for the weights;
* :func:`turn_relevance` — the turns' default ``recall.fusion = "score"``: ``lexical_weight * L + vector_weight * D``
  with L the BM25 score relative to the best and D the cosine above the candidate floor, scaled to [0, 1].
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..settings import RecallSettings

__all__ = ["fuse", "leg_weights", "query_match", "rrf_ranks", "top_by_relevance", "turn_relevance"]


def rrf_ranks(legs: Mapping[str, Sequence[str]], weights: Mapping[str, float], k: int = 60
              ) -> dict[str, dict[str, float]]:
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


def fuse(legs: Mapping[str, Sequence[str]], weights: Mapping[str, float], k: int
         ) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
    """Weighted RRF, normalized to [0, 1] by the best possible score; returns totals and per-leg parts.

    >>> fuse({"a": ["x"], "b": ["x"]}, {"a": 1.0, "b": 1.0}, k=1)[0]
    {'x': 1.0}
    """
    parts = rrf_ranks(legs, weights, k)
    best = sum(weights.values()) / (k + 1) or 1.0
    normalized = {item: {leg: v / best for leg, v in p.items()} for item, p in parts.items()}
    return {item: sum(p.values()) for item, p in normalized.items()}, normalized


def leg_weights(legs: Mapping[str, Sequence[str]], recall: RecallSettings) -> dict[str, float]:
    """The weight of each fact/entity leg: the lexical weight for full text and resolved names, the vector weight
    shared by the vector legs."""
    n_vector = max(1, sum(1 for leg in legs if leg.startswith("vector")))
    return {leg: recall.lexical_weight if leg.startswith("lexical") or leg == "resolved"
            else recall.vector_weight / n_vector for leg in legs}


def turn_relevance(rows: Mapping[str, Mapping[str, Any]], floor: float, recall: RecallSettings
                   ) -> dict[str, dict[str, float]]:
    """Per turn, the weighted legs: ``lexical = wl * rank / best rank`` and ``vector = wd * (cos - floor) / (best
    cos - floor)`` (``fusion="score"``), or weighted reciprocal ranks (``fusion="rrf"``). Rows need ``lexical``
    (BM25) and ``cosine``."""
    if not rows:
        return {}
    if recall.fusion == "rrf":
        return _rrf_turn_relevance(rows, recall)
    best_lexical = max(r["lexical"] for r in rows.values())
    best_cosine = max(float(r["cosine"]) for r in rows.values())
    span = best_cosine - floor
    out = {}
    for turn_id, row in rows.items():
        legs = {}
        if recall.hybrid and best_lexical > 0:
            legs["lexical"] = recall.lexical_weight * row["lexical"] / best_lexical
        legs["vector"] = recall.vector_weight * max(0.0, (float(row["cosine"]) - floor) / span) if span > 1e-9 else 0.0
        out[turn_id] = legs
    return out


def _rrf_turn_relevance(rows: Mapping[str, Mapping[str, Any]], recall: RecallSettings) -> dict[str, dict[str, float]]:
    lexical = [i for i in sorted(rows, key=lambda i: (-rows[i]["lexical"], i)) if rows[i]["lexical"] > 0]
    dense = sorted(rows, key=lambda i: (-rows[i]["cosine"], i))[: recall.candidates]
    weights = {"lexical": recall.lexical_weight if recall.hybrid else 0.0, "vector": recall.vector_weight}
    _, parts = fuse({"lexical": lexical, "vector": dense}, weights, recall.rrf_k)
    return {i: {leg: v * weights[leg] for leg, v in parts.get(i, {}).items()} for i in rows}


def query_match(lexical: Mapping[str, float], cosine: Mapping[str, float], recall: RecallSettings
                ) -> dict[str, float]:
    """Per item, how well its own text matches the question, in [0, 1]: ``(wl * L + wd * D) / (wl + wd)`` with L
    its full-text rank relative to the best, D its cosine above the lowest candidate's relative to the best's (the
    turns' score fusion, for facts). Items in neither leg are left out.

    >>> query_match({"a": 0.2, "b": 0.1}, {"a": 0.5, "b": 1.0, "c": 0.75}, RecallSettings(lexical_weight=1,
    ...             vector_weight=1))
    {'a': 0.5, 'b': 0.75, 'c': 0.25}
    """
    wl = recall.lexical_weight if recall.hybrid else 0.0
    wd = recall.vector_weight
    if wl + wd <= 0:
        return {}
    best_rank = max(lexical.values(), default=0.0)
    floor, best_cosine = min(cosine.values(), default=0.0), max(cosine.values(), default=0.0)
    span = best_cosine - floor
    out = {}
    for item in dict.fromkeys([*lexical, *cosine]):
        lex = lexical.get(item, 0.0) / best_rank if best_rank > 0 else 0.0
        dense = (cosine[item] - floor) / span if item in cosine and span > 1e-9 else 0.0
        out[item] = (wl * lex + wd * dense) / (wl + wd)
    return out


def top_by_relevance(relevance: Mapping[str, Mapping[str, float]], n: int) -> list[str]:
    """The ``n`` items of highest total relevance (ties by id)."""
    return sorted(relevance, key=lambda i: (-sum(relevance[i].values()), i))[:n]
