"""Recall latency: ``remember()`` p50/p95/p99 over questions generated from the corpus, and an optional profile.

Query vectors are embedded up front (:func:`prepare_queries`), so the embedder's cache answers during the timed
calls; latency is reported with and without ``metrics.embed_ms``.
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from ..common import engine_variant
from ..progress import track
from .stats import percentiles

__all__ = ["exact_overlap", "prepare_queries", "profile_full", "time_remember"]

#: How many turns the overlap with the exact ranking compares.
OVERLAP_K = 10


async def prepare_queries(memory, questions: Sequence[str], reference: datetime) -> tuple[np.ndarray, dict[str, Any]]:
    """Embed every question (and the statement recall derives from it) once, up front: recall then finds them in
    the embedder's cache. Returns the question vectors and the cost of this step."""
    from ...retrieval.query import analyze

    texts = list(dict.fromkeys(list(questions) + [analyze(q, reference).statement for q in questions]))
    started = time.perf_counter()
    vectors = await memory.ctx.embedder.embed(texts, is_query=True)
    seconds = time.perf_counter() - started
    row = {t: i for i, t in enumerate(texts)}
    return vectors[[row[q] for q in questions]], {"texts": len(texts), "seconds": round(seconds, 2)}


async def time_remember(memory, queries: Sequence[tuple[str, str]], user: str, reference: datetime,
                        kwargs: dict[str, Any], label: str, *,
                        warmup: Sequence[tuple[str, str]] = ()) -> dict[str, Any]:
    """remember() latency over the queries, after the ``warmup`` questions (untimed): wall time, wall time minus
    metrics.embed_ms, per technique, how the graph's vector searches were answered (``GraphStore.vector_routes``,
    counted over the timed queries), and the questions answered with fewer than 10 turns (``short_questions``)."""
    for question, channel in warmup:
        await memory.remember(question, user_id=user, channel=channel, top_k=10, reference_time=reference, **kwargs)
        await memory.drain()
    wall, excl, embed, turns = [], [], [], []
    short: list[dict[str, Any]] = []  # questions answered with fewer than top_k turns, to look into
    techniques: dict[str, list[float]] = defaultdict(list)
    routes_before = Counter(memory.ctx.graph.vector_routes)
    for question, channel in track(queries, label, unit="q"):
        started = time.perf_counter()
        bundle = await memory.remember(question, user_id=user, channel=channel, top_k=10, reference_time=reference,
                                       **kwargs)
        ms = (time.perf_counter() - started) * 1000
        await memory.drain()  # reinforcement and audit run after the result; an agent's LLM call would hide them
        wall.append(ms)
        excl.append(ms - bundle.metrics.embed_ms)
        embed.append(bundle.metrics.embed_ms)
        turns.append(len(bundle.turns))
        if len(bundle.turns) < 10:
            short.append({"question": question, "channel": channel, "turns": len(bundle.turns)})
        for name, metric in bundle.metrics.techniques.items():
            techniques[name].append(metric.latency_ms)
    return {"ms": percentiles(excl), "wall_ms": percentiles(wall), "embed_ms": percentiles(embed),
            "turns_returned_mean": round(float(np.mean(turns)), 2) if turns else 0,
            "short_questions": short,
            "techniques_mean_ms": {k: round(float(np.mean(v)), 3) for k, v in sorted(techniques.items())},
            "vector_routes": dict(sorted((memory.ctx.graph.vector_routes - routes_before).items()))}


async def exact_overlap(memory, queries: Sequence[tuple[str, str]], user: str, reference: datetime
                        ) -> dict[str, Any]:
    """Top-10 turns of the full default ``remember()`` as configured against the same ranking computed exactly (every
    vector search an exact scan: ``retrieval.exact_scan_max_vectors`` above the user's turns), per query: the mean
    and the lowest share of the exact top 10 found, and whether the user's searches were approximate at all."""
    approximate = not await memory.recall.retriever.exact_scan(user)
    overlaps = []
    for question, channel in track(queries, "overlap with the exact ranking", unit="q"):
        ranked = []
        for variant in (None, {"retrieval.exact_scan_max_vectors": 10_000_000}):
            with engine_variant(memory, variant):
                bundle = await memory.remember(question, user_id=user, channel=channel, top_k=OVERLAP_K,
                                               reference_time=reference)
            await memory.drain()
            ranked.append([t.item.id for t in bundle.turns])
        configured, exact = ranked
        if exact:
            overlaps.append(len(set(configured) & set(exact)) / len(exact))
    return {"queries": len(overlaps), "k": OVERLAP_K, "approximate_search": approximate,
            "mean": round(float(np.mean(overlaps)), 4) if overlaps else None,
            "min": round(float(min(overlaps)), 4) if overlaps else None}


async def profile_full(memory, queries: Sequence[tuple[str, str]], user: str, reference: datetime, path: Path) -> None:
    """cProfile the full default remember() over ``queries``; write the top functions (cumulative, own time)."""
    import cProfile
    import io
    import pstats

    profiler = cProfile.Profile()
    profiler.enable()
    for question, channel in queries:
        await memory.remember(question, user_id=user, channel=channel, top_k=10, reference_time=reference)
        await memory.drain()
    profiler.disable()
    text = io.StringIO()
    for order in ("cumulative", "tottime"):
        text.write(f"==== {len(queries)} remember() calls, full default, sorted by {order}\n")
        pstats.Stats(profiler, stream=text).sort_stats(order).print_stats(45)
    path.write_text(text.getvalue())
