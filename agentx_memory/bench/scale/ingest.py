"""Engine ingest: one benchmark step's rows through the public API with precomputed vectors, each kind timed.

``store_turns`` in batches of whole conversations, then ``upsert_entity``, ``create_relationship`` and ``learn_fact``
(4 concurrent callers), so the throughput excludes embedding.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from ..progress import Bar, progress_bar
from .corpus import Corpus
from .stats import rate

__all__ = ["Slice", "Vectors", "ingest_engine"]

T = TypeVar("T")

#: The corpus vectors: turns, entities and facts, row for row.
Vectors = tuple[np.ndarray, np.ndarray, np.ndarray]


@dataclass
class Slice:
    """Rows of one benchmark step: [lo, hi) of turns, entities, relationships and facts."""

    lo: tuple[int, int, int, int]
    hi: tuple[int, int, int, int]

    def turns(self, corpus: Corpus) -> range:
        """Indexes of the step's turns in ``corpus.turns``."""
        return range(self.lo[0], self.hi[0])

    def entities(self, corpus: Corpus) -> range:
        """Indexes of the step's entities in ``corpus.entities``."""
        return range(self.lo[1], self.hi[1])

    def relationships(self, corpus: Corpus) -> range:
        """Indexes of the step's relationships in ``corpus.relationships``."""
        return range(self.lo[2], self.hi[2])

    def facts(self, corpus: Corpus) -> range:
        """Indexes of the step's facts in ``corpus.facts``."""
        return range(self.lo[3], self.hi[3])


async def _bounded(items: Sequence[T], call: Callable[[T], Awaitable[Any]], concurrency: int, bar: Bar) -> None:
    semaphore = asyncio.Semaphore(concurrency)

    async def one(item: T) -> None:
        async with semaphore:
            await call(item)
            bar.update(1)

    await asyncio.gather(*(one(item) for item in items))


async def ingest_engine(memory, corpus: Corpus, part: Slice, vectors: Vectors, *,
                        batch: int = 500, concurrency: int = 4) -> dict[str, Any]:
    """Store a slice through the public API with precomputed vectors; time each kind of write."""
    from ...models import Entity, Fact, Turn

    turn_vectors, entity_vectors, fact_vectors = vectors
    rows = part.turns(corpus)
    # Batches of whole conversations, about `batch` turns each.
    batches: list[list[int]] = [[]]
    for i in rows:
        if len(batches[-1]) >= batch and corpus.turns[i].index == 0:
            batches.append([])
        batches[-1].append(i)
    seconds = 0.0  # store_turns only: the Turn models (with their vectors) are built outside the clock
    with progress_bar("engine: store_turns", len(rows), unit="turn") as bar:
        for indexes in (b for b in batches if b):
            chunk = [Turn(id=t.id, conversation_id=t.conversation_id, user_id=t.user_id, channel=t.channel,
                          index=t.index, timestamp=t.timestamp, role=t.role, content=t.content,
                          metadata={"speaker": t.speaker}, embedding=turn_vectors[i].tolist())
                     for i, t in ((i, corpus.turns[i]) for i in indexes)]
            t0 = time.perf_counter()
            await memory.store_turns(chunk)
            seconds += time.perf_counter() - t0
            bar.update(len(chunk))
    out: dict[str, Any] = {"turns": {"count": len(rows), "seconds": round(seconds, 2),
                                     "per_second": rate(len(rows), seconds), "batch": batch}}

    entities = [corpus.entities[i] for i in part.entities(corpus)]
    models = {e.id: Entity(id=e.id, user_id=e.user_id, channel=e.channel, name=e.name, type=e.type, aliases=e.aliases,
                           description=e.description, embedding=entity_vectors[i].tolist())
              for i, e in zip(part.entities(corpus), entities, strict=True)}
    started = time.perf_counter()
    with progress_bar("engine: upsert_entity", len(models), unit="entity") as bar:
        await _bounded(list(models.values()), memory.upsert_entity, concurrency, bar)
    seconds = time.perf_counter() - started
    out["entities"] = {"count": len(models), "seconds": round(seconds, 2), "per_second": rate(len(models), seconds)}

    relationships = [corpus.relationships[i] for i in part.relationships(corpus)]

    async def relate(rel: tuple[str, str, str, str]) -> None:
        user, source, target, rel_type = rel
        await memory.create_relationship(source, target, rel_type, user_id=user)

    started = time.perf_counter()
    with progress_bar("engine: create_relationship", len(relationships), unit="edge") as bar:
        await _bounded(relationships, relate, concurrency, bar)
    seconds = time.perf_counter() - started
    out["relationships"] = {"count": len(relationships), "seconds": round(seconds, 2),
                            "per_second": rate(len(relationships), seconds)}

    facts = [Fact(id=f.id, user_id=f.user_id, channel=f.channel, claim=f.claim, confidence=0.8,
                  source_turn_id=f.source_turn_id, conversation_id=f.conversation_id, entity_ids=f.entity_ids,
                  created_at=f.created_at, embedding=fact_vectors[i].tolist())
             for i, f in ((i, corpus.facts[i]) for i in part.facts(corpus))]
    started = time.perf_counter()
    with progress_bar("engine: learn_fact", len(facts), unit="fact") as bar:
        await _bounded(facts, memory.learn_fact, concurrency, bar)
    seconds = time.perf_counter() - started
    out["facts"] = {"count": len(facts), "seconds": round(seconds, 2), "per_second": rate(len(facts), seconds)}
    out["concurrency"] = concurrency
    await memory.drain()
    return out
