"""Pieces the recall benchmarks (``bench locomo``, ``bench beam``) share: the BM25 and exact-cosine baselines over the
same texts the engine stored, latency percentiles, the machine line and the recall@K plot."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import platform
import re
from collections.abc import Callable, Coroutine, Hashable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from ..backends import drop_namespace
from ..memory import AsyncAgentMemory
from ..settings import Settings
from ..stopwords import STOP_WORDS
from . import git_commit, pyplot, split_variant

__all__ = ["STOP_WORDS", "Bm25Ranking", "VectorRanking", "bm25_okapi", "engine_variant", "latency_summary", "machine",
           "plot_recall",
           "report_header", "run_in_namespace", "tokens", "turn_vectors", "write_report"]

T = TypeVar("T")

_WORD = re.compile(r"[a-z0-9]+")
def tokens(text: str) -> list[str]:
    """The BM25 baseline's tokens: lower-cased runs of letters and digits, stop-words out."""
    return [w for w in _WORD.findall(text.lower()) if w not in STOP_WORDS]


def bm25_okapi() -> Any:
    """``rank_bm25.BM25Okapi``, the BM25 baseline's implementation (the ``bench`` extra)."""
    try:
        from rank_bm25 import BM25Okapi
    except ImportError as exc:
        raise ImportError("the benchmarks' BM25 baseline needs rank-bm25: pip install 'agentx-memory[bench]'") from exc
    return BM25Okapi


class Bm25Ranking:
    """BM25 (``rank-bm25``'s Okapi) over one user's texts: :meth:`rank` gives their ids, best first."""

    def __init__(self, texts: dict[Hashable, str]):
        self.ids = list(texts)
        self._bm25 = bm25_okapi()([tokens(text) for text in texts.values()])

    def rank(self, question: str, n: int) -> list[Any]:
        """The ids of the ``n`` best texts for ``question``."""
        return [self.ids[i] for i in np.argsort(-self._bm25.get_scores(tokens(question)))[:n]]


class VectorRanking:
    """Exact cosine over one user's stored turn vectors (the engine's own embeddings): :meth:`rank` gives ids."""

    def __init__(self, vectors: dict[Hashable, np.ndarray]):
        self.ids = list(vectors)
        self._matrix = np.array([vectors[i] for i in self.ids], dtype=np.float32)

    def rank(self, query_vector: Sequence[float] | np.ndarray, n: int) -> list[Any]:
        """The ids of the ``n`` turns nearest to ``query_vector``."""
        return [self.ids[i] for i in np.argsort(-(self._matrix @ np.asarray(query_vector, dtype=np.float32)))[:n]]


async def turn_vectors(memory: AsyncAgentMemory) -> dict[str, np.ndarray]:
    """Every stored turn's vector by turn id, as the engine embedded it (from the durable conversation log)."""
    rows = await memory.ctx.postgres.fetch("SELECT turn_id, embedding FROM conversation_logs")
    return {r["turn_id"]: np.asarray(r["embedding"], dtype=np.float32) for r in rows}


@contextlib.contextmanager
def engine_variant(memory: AsyncAgentMemory, override: Mapping[str, Any] | None) -> Iterator[dict[str, Any] | None]:
    """Run a benchmark variant: its ``retrieval.<setting>`` keys are set on the memory's retrieval settings until the
    block ends; the rest is the ``recall`` override to pass to ``remember`` (None when there is none)."""
    recall, retrieval = split_variant(override or {})
    settings = memory.ctx.settings.retrieval
    before = {k: getattr(settings, k) for k in retrieval}
    try:
        for k, v in retrieval.items():
            setattr(settings, k, v)
        yield recall or None
    finally:
        for k, v in before.items():
            setattr(settings, k, v)


def spread(values: Sequence[float]) -> dict[str, float]:
    """Mean, sample standard deviation (0 for one value), min and max of per-conversation figures: dev figures are
    reported with their spread across conversations."""
    std = float(np.std(values, ddof=1)) if len(values) > 1 else 0.0
    return {"mean": round(float(np.mean(values)), 4), "std": round(std, 4), "min": round(min(values), 4),
            "max": round(max(values), 4)}


def latency_summary(latencies_ms: Sequence[float]) -> dict[str, float]:
    """p50 and p95 of latencies in milliseconds, rounded to 0.01 ms."""
    return {"p50": round(float(np.percentile(latencies_ms, 50)), 2),
            "p95": round(float(np.percentile(latencies_ms, 95)), 2)}


def machine() -> dict[str, Any]:
    """Python version, platform and CPU count of the machine a benchmark ran on."""
    return {"python": platform.python_version(), "platform": platform.platform(), "cpus": os.cpu_count() or 0}


def plot_recall(methods: dict[str, dict[str, Any]], ks: Sequence[int], title: str, path: Path) -> None:
    """Recall@K per method (``methods[name]["overall"]["R@k"]``, baselines dashed) as a PNG; nothing without
    matplotlib (the ``bench`` extra)."""
    plt = pyplot()
    if plt is None:
        return
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name, m in methods.items():
        ax.plot(ks, [m["overall"][f"R@{k}"] for k in ks], marker="o", label=name,
                linestyle="--" if name.startswith("baseline") else "-")
    ax.set_xscale("log")
    ax.set_xticks(list(ks), [str(k) for k in ks])
    ax.set_xlabel("K")
    ax.set_ylabel("evidence recall@K")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def report_header(benchmark: str, data: Path, settings: Settings) -> dict[str, Any]:
    """The fields every recall report starts with: what ran, on which data, when, at which commit, on what machine,
    with which embedding model and ranking settings."""
    return {
        "benchmark": benchmark,
        "data": str(data),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "commit": git_commit(),
        "machine": machine(),
        "embedding_model": settings.embedding.model,
        "settings": {"retrieval": settings.retrieval.model_dump(), "recall": settings.recall.model_dump()},
    }


def write_report(report: dict[str, Any], out_dir: Path, name: str, markdown: Callable[[dict[str, Any]], str],
                 ks: Sequence[int], title: str) -> None:
    """Write ``<name>.json``, ``<name>.md`` (``markdown(report)``) and the recall@K plot ``<name>.png``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / f"{name}.json").write_text(json.dumps(report, indent=2))
    (out_dir / f"{name}.md").write_text(markdown(report))
    plot_recall(report["methods"], ks, title, out_dir / f"{name}.png")


def run_in_namespace(settings: Settings, keep: bool, run: Coroutine[Any, Any, T]) -> T:
    """Run a benchmark coroutine on the namespace of ``settings``: its graph, schema and keys are dropped first, and
    again afterwards unless ``keep``."""
    asyncio.run(drop_namespace(settings))
    try:
        return asyncio.run(run)
    finally:
        if not keep:
            asyncio.run(drop_namespace(settings))
