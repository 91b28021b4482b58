"""Engine ingest: one benchmark step's rows through the public API with precomputed vectors, each kind timed.

``store_turns`` in batches of whole conversations, then the batch APIs ``upsert_entities``, ``create_relationships``
and ``learn_facts`` (``limits.max_batch_items`` items per call, one call at a time), so the throughput excludes
embedding.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from ..progress import progress_bar
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


async def _batched(label: str, items: Sequence[T], call: Callable[[list[T]], Awaitable[Any]], size: int,
                   unit: str) -> dict[str, Any]:
    """Write ``items`` with the batch API ``call``, ``size`` per call, one call after the other; time them."""
    started = time.perf_counter()
    with progress_bar(label, len(items), unit=unit) as bar:
        for start in range(0, len(items), size):
            chunk = list(items[start:start + size])
            await call(chunk)
            bar.update(len(chunk))
    seconds = time.perf_counter() - started
    return {"count": len(items), "seconds": round(seconds, 2), "per_second": rate(len(items), seconds),
            "batch": size}


async def ingest_engine(memory, corpus: Corpus, part: Slice, vectors: Vectors, *,
                        batch: int = 500) -> dict[str, Any]:
    """Store a slice through the public API with precomputed vectors; time each kind of write."""
    from ...models import Entity, Fact, Relationship, Turn

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

    # Entities, relationships and facts through the batch APIs, in batches of the largest size allowed; the models
    # are built outside the clock, as the turns' are.
    size = memory.settings.limits.max_batch_items
    entities = [Entity(id=e.id, user_id=e.user_id, channel=e.channel, name=e.name, type=e.type, aliases=e.aliases,
                       description=e.description, embedding=entity_vectors[i].tolist())
                for i, e in ((i, corpus.entities[i]) for i in part.entities(corpus))]
    out["entities"] = await _batched("engine: upsert_entities", entities, memory.upsert_entities, size, "entity")
    relationships = [Relationship(source_id=source, target_id=target, rel_type=rel_type, user_id=user)
                     for user, source, target, rel_type in (corpus.relationships[i]
                                                            for i in part.relationships(corpus))]
    out["relationships"] = await _batched("engine: create_relationships", relationships, memory.create_relationships,
                                          size, "edge")
    facts = [Fact(id=f.id, user_id=f.user_id, channel=f.channel, claim=f.claim, confidence=0.8,
                  source_turn_id=f.source_turn_id, conversation_id=f.conversation_id, entity_ids=f.entity_ids,
                  created_at=f.created_at, embedding=fact_vectors[i].tolist())
             for i, f in ((i, corpus.facts[i]) for i in part.facts(corpus))]
    out["facts"] = await _batched("engine: learn_facts", facts, memory.learn_facts, size, "fact")
    out["batch_items"] = size
    await memory.drain()
    return out
