"""The base retriever: per-type candidate searches run concurrently, then fusion, expansion and reranking.

:class:`MemoryRetriever` is a template method. :meth:`MemoryRetriever.retrieve` takes a :class:`SearchPlan` (what to
search with: lexical texts, query vectors, time filter and boosts, entity seeds — built by the RecallLayer from the
question) and:

1. **searches** turns (PostgreSQL full text and pgvector), facts, entities and strategies (graph, exact cosine over
   the user's own nodes) concurrently, every search filtered by user, channels and time window inside the query;
2. **fuses** each type's legs with weighted reciprocal-rank fusion;
3. **expands**: facts lend their score to the turns they were DERIVED_FROM, entity seeds pull in their graph
   neighbourhood and the facts about it, and strong turn hits pull in their neighbouring turns;
4. **boosts** by time (self-query ranges), recency and the facts' temporal tag (current ×1.2, past ×0.7);
5. **reranks**: type weights, MMR diversity, at most N turns per conversation.

Every score is a sum of named contributions (see :class:`~agentx_memory.retrieval.bundle.Signal`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

import numpy as np

from ..context import MemoryContext
from ..episodic import _row_to_turn
from ..graph import cypher
from ..semantic import SemanticMemory, entity_from_row, fact_from_row
from ..settings import RecallSettings, RetrievalSettings
from ..sql import search
from .bundle import RecallMetrics, ScoredEntity, ScoredFact, ScoredStrategy, ScoredTurn, TechniqueMetric
from .fusion import rrf_ranks
from .timeparse import TimeRange

__all__ = ["MemoryRetriever", "SearchPlan", "Candidates"]

TEMPORAL_TAG = {"current": "temporal_boost_current", "past": "temporal_boost_past"}


@dataclass
class SearchPlan:
    """What to search with. Built by the RecallLayer; plain data."""

    query: str
    user_id: str
    channels: list[str]
    top_k: int
    lexical_texts: list[str]
    vectors: list[tuple[str, np.ndarray]]  # (name, unit vector)
    reference_time: datetime
    window: tuple[datetime | None, datetime | None] = (None, None)
    time_ranges: list[TimeRange] = field(default_factory=list)
    entity_names: list[str] = field(default_factory=list)
    include_episodic: bool = True
    include_semantic: bool = True
    include_procedural: bool = True
    recall: RecallSettings | None = None


@dataclass
class Candidates:
    """Raw results of the per-type searches, before fusion."""

    turn_rows: dict[str, dict[str, Any]] = field(default_factory=dict)
    turn_legs: dict[str, list[str]] = field(default_factory=dict)  # leg name → turn ids, best first
    turn_cosine: dict[str, float] = field(default_factory=dict)
    fact_rows: dict[str, dict[str, Any]] = field(default_factory=dict)
    fact_legs: dict[str, list[str]] = field(default_factory=dict)
    fact_cosine: dict[str, float] = field(default_factory=dict)
    entity_rows: dict[str, dict[str, Any]] = field(default_factory=dict)
    entity_legs: dict[str, list[str]] = field(default_factory=dict)
    entity_cosine: dict[str, float] = field(default_factory=dict)
    strategies: list[Any] = field(default_factory=list)


class MemoryRetriever:
    """Runs a :class:`SearchPlan` against the stores and ranks what comes back."""

    def __init__(self, ctx: MemoryContext, semantic: SemanticMemory, procedural):
        self.ctx = ctx
        self.semantic = semantic
        self.procedural = procedural
        self._user_turn_counts: dict[str, tuple[float, int]] = {}

    @property
    def settings(self) -> RetrievalSettings:
        """The base retrieval settings."""
        return self.ctx.settings.retrieval

    # --- 1. searches --------------------------------------------------------------------------------------------

    async def _timed(self, metrics: RecallMetrics, name: str, coro):
        started = time.perf_counter()
        result = await coro
        metric = metrics.techniques.setdefault(name, TechniqueMetric())
        metric.latency_ms += (time.perf_counter() - started) * 1000
        metric.results += len(result) if hasattr(result, "__len__") else 0
        return result

    def _sql_params(self, plan: SearchPlan, limit: int) -> dict[str, Any]:
        start, end = plan.window
        return {"user_id": plan.user_id, "channels": plan.channels, "start": start, "end": end, "limit": limit}

    async def _user_turn_count(self, user_id: str) -> int:
        cached = self._user_turn_counts.get(user_id)
        if cached and time.monotonic() - cached[0] < 60:
            return cached[1]
        rows = await self.ctx.postgres.fetch(search.COUNT_USER_TURNS, {"user_id": user_id})
        self._user_turn_counts[user_id] = (time.monotonic(), rows[0]["n"])
        return rows[0]["n"]

    async def _turns_lexical(self, plan: SearchPlan, text: str, limit: int) -> list[dict[str, Any]]:
        return await self.ctx.postgres.fetch(search.LEXICAL_TURNS, {**self._sql_params(plan, limit), "text": text})

    async def _turns_vector(self, plan: SearchPlan, vector: np.ndarray, limit: int) -> list[dict[str, Any]]:
        exact = await self._user_turn_count(plan.user_id) <= self.settings.exact_scan_max_vectors
        query = search.VECTOR_TURNS_EXACT if exact else search.VECTOR_TURNS_INDEX
        return await self.ctx.postgres.fetch(query, {**self._sql_params(plan, limit), "embedding": vector})

    async def _facts_vector(self, plan: SearchPlan, vector: np.ndarray, limit: int) -> list[dict[str, Any]]:
        start, end = plan.window
        return await self.ctx.graph.read(cypher.SEARCH_FACTS, {
            "user_id": plan.user_id, "channels": plan.channels, "embedding": vector.tolist(), "k": limit,
            "start": int(start.timestamp() * 1000) if start else None, "end": int(end.timestamp() * 1000) if end else None,
        })

    async def _entities_vector(self, plan: SearchPlan, vector: np.ndarray, limit: int) -> list[dict[str, Any]]:
        return await self.ctx.graph.read(cypher.SEARCH_ENTITIES, {
            "user_id": plan.user_id, "channels": plan.channels, "embedding": vector.tolist(), "k": limit,
        })

    async def _timeline_lexical(self, plan: SearchPlan, text: str, types: list[str], limit: int) -> list[dict[str, Any]]:
        return await self.ctx.postgres.fetch(search.LEXICAL_TIMELINE, {
            "user_id": plan.user_id, "channels": plan.channels, "types": types, "limit": limit, "text": text,
        })

    async def _resolve_entities(self, plan: SearchPlan, limit: int) -> list[dict[str, Any]]:
        names = [n.strip().casefold() for n in plan.entity_names if n.strip()]
        if not names:
            return []
        return await self.ctx.graph.read(cypher.RESOLVE_ENTITIES, {
            "user_id": plan.user_id, "channels": plan.channels, "names": names, "k": limit,
        })

    async def search(self, plan: SearchPlan, metrics: RecallMetrics) -> Candidates:
        """Run every enabled per-type search concurrently."""
        recall = plan.recall or self.ctx.settings.recall
        pool = max(plan.top_k, int(plan.top_k * self.settings.overfetch_factor))
        turn_pool = max(50, pool * 3)
        jobs: dict[str, Any] = {}
        if plan.include_episodic:
            if recall.hybrid:
                for i, text in enumerate(plan.lexical_texts):
                    jobs[f"turns:lexical:{i}"] = self._timed(metrics, "hybrid_lexical", self._turns_lexical(plan, text, turn_pool))
            for name, vector in plan.vectors:
                jobs[f"turns:vector:{name}"] = self._timed(metrics, "vector", self._turns_vector(plan, vector, turn_pool))
        if plan.include_semantic:
            for name, vector in plan.vectors[:1]:
                jobs["facts:vector"] = self._timed(metrics, "vector", self._facts_vector(plan, vector, pool))
                jobs["entities:vector"] = self._timed(metrics, "vector", self._entities_vector(plan, vector, pool))
            if recall.hybrid and plan.lexical_texts:
                jobs["semantic:lexical"] = self._timed(metrics, "hybrid_lexical", self._timeline_lexical(
                    plan, plan.lexical_texts[0], ["fact", "entity"], pool))
            if recall.entity_centric and plan.entity_names:
                jobs["entities:resolved"] = self._timed(metrics, "entity_centric", self._resolve_entities(plan, pool))
        if plan.include_procedural and plan.vectors:
            jobs["strategies"] = self._timed(metrics, "vector", self.procedural.find_strategies(
                plan.query, plan.channels, max(1, min(plan.top_k, 10)), user_id=plan.user_id,
                embedding=plan.vectors[0][1].tolist()))
        results = dict(zip(jobs, await asyncio.gather(*jobs.values())))

        found = Candidates()
        for key, rows in results.items():
            if key.startswith("turns:"):
                leg = key.split(":", 1)[1]
                found.turn_legs[leg] = []
                for row in rows:
                    found.turn_rows.setdefault(row["turn_id"], row)
                    found.turn_legs[leg].append(row["turn_id"])
                    if "cosine" in row:
                        found.turn_cosine[row["turn_id"]] = max(found.turn_cosine.get(row["turn_id"], -1.0), float(row["cosine"]))
            elif key == "facts:vector":
                found.fact_legs["vector"] = [r["fact"]["id"] for r in rows]
                for r in rows:
                    found.fact_rows[r["fact"]["id"]] = r["fact"]
                    found.fact_cosine[r["fact"]["id"]] = float(r["similarity"])
            elif key == "entities:vector":
                found.entity_legs["vector"] = [r["entity"]["id"] for r in rows]
                for r in rows:
                    found.entity_rows[r["entity"]["id"]] = r["entity"]
                    found.entity_cosine[r["entity"]["id"]] = float(r["similarity"])
            elif key == "entities:resolved":
                found.entity_legs["resolved"] = [r["entity"]["id"] for r in rows]
                for r in rows:
                    found.entity_rows[r["entity"]["id"]] = r["entity"]
            elif key == "semantic:lexical":
                found.fact_legs["lexical"] = [r["node_id"] for r in rows if r["memory_type"] == "fact"]
                found.entity_legs["lexical"] = [r["node_id"] for r in rows if r["memory_type"] == "entity"]
            elif key == "strategies":
                found.strategies = rows
        await self._fill_lexical_only(plan, found)
        return found

    async def _fill_lexical_only(self, plan: SearchPlan, found: Candidates) -> None:
        """Load facts/entities that only the lexical leg found (it returns ids)."""
        missing_facts = [i for i in found.fact_legs.get("lexical", []) if i not in found.fact_rows]
        missing_entities = [i for i in found.entity_legs.get("lexical", []) if i not in found.entity_rows]
        if missing_facts:
            for r in await self.ctx.graph.read(cypher.GET_FACTS, {"ids": missing_facts, "user_id": plan.user_id, "channels": plan.channels}):
                found.fact_rows[r["fact"]["id"]] = r["fact"]
        if missing_entities:
            for r in await self.ctx.graph.read(cypher.GET_ENTITIES, {"ids": missing_entities, "user_id": plan.user_id}):
                if r["entity"]["channel"] in plan.channels:
                    found.entity_rows[r["entity"]["id"]] = r["entity"]
        found.fact_legs = {k: [i for i in v if i in found.fact_rows] for k, v in found.fact_legs.items()}
        found.entity_legs = {k: [i for i in v if i in found.entity_rows] for k, v in found.entity_legs.items()}

    # --- 2-5. fuse, expand, boost, rerank -----------------------------------------------------------------------

    def _leg_weight(self, leg: str, recall: RecallSettings, n_vector_legs: int) -> float:
        if leg.startswith("lexical"):
            return recall.lexical_weight
        if leg == "resolved":
            return recall.lexical_weight
        return recall.vector_weight / max(1, n_vector_legs)

    def _fuse(self, legs: dict[str, list[str]], recall: RecallSettings) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
        """Weighted RRF, normalized to [0, 1] by the best possible score; returns totals and per-leg parts."""
        n_vector = sum(1 for leg in legs if leg.startswith("vector"))
        weights = {leg: self._leg_weight(leg, recall, n_vector) for leg in legs}
        parts = rrf_ranks(legs, weights, recall.rrf_k)
        best = sum(weights.values()) / (recall.rrf_k + 1) or 1.0
        normalized = {item: {leg: v / best for leg, v in p.items()} for item, p in parts.items()}
        return {item: sum(p.values()) for item, p in normalized.items()}, normalized

    def _recency(self, moment: datetime, reference: datetime) -> float:
        age_days = max(0.0, (reference - moment).total_seconds() / 86400)
        return 0.5 ** (age_days / self.settings.recency_half_life_days)

    def _in_ranges(self, moment: datetime, ranges: Sequence[TimeRange]) -> bool:
        return any(r.contains(moment) for r in ranges)

    async def rank(self, plan: SearchPlan, found: Candidates, metrics: RecallMetrics) -> tuple[
            list[ScoredTurn], list[ScoredFact], list[ScoredEntity], list[ScoredStrategy]]:
        """Turn candidates into ranked, explained lists."""
        recall = plan.recall or self.ctx.settings.recall
        s = self.settings
        facts = self._rank_facts(plan, found, recall)
        entities, graph_facts = await self._rank_entities(plan, found, recall, metrics)
        for fact in graph_facts:
            if fact.id not in {f.id for f in facts}:
                facts.append(fact)
        facts.sort(key=lambda f: f.score, reverse=True)
        turns = await self._rank_turns(plan, found, recall, facts, metrics)
        strategies = []
        for st in found.strategies:
            scored = ScoredStrategy(item=st, cosine=st.similarity)
            scored.add("vector", st.similarity, s.procedural_weight * 0.7, "cosine similarity to the task")
            scored.add("success_rate", st.success_rate, s.procedural_weight * 0.3, "Laplace-smoothed success rate")
            strategies.append(scored)
        strategies.sort(key=lambda x: x.score, reverse=True)
        return turns, facts[: plan.top_k], entities[: plan.top_k], strategies[: plan.top_k]

    def _rank_facts(self, plan: SearchPlan, found: Candidates, recall: RecallSettings) -> list[ScoredFact]:
        s = self.settings
        totals, parts = self._fuse(found.fact_legs, recall)
        out = []
        for fact_id, total in totals.items():
            fact = fact_from_row(found.fact_rows[fact_id])
            scored = ScoredFact(item=fact, cosine=found.fact_cosine.get(fact_id))
            for leg, value in parts[fact_id].items():
                scored.add(leg, value, s.facts_weight, f"reciprocal-rank fusion, {leg} leg")
            relevance = total
            boost = getattr(s, TEMPORAL_TAG[fact.temporal]) if fact.temporal in TEMPORAL_TAG else 1.0
            if boost != 1.0:
                scored.add("temporal_tag", relevance * s.facts_weight, boost - 1.0, f"fact tagged {fact.temporal}: x{boost}")
            scored.add("recency", relevance * self._recency(fact.created_at, plan.reference_time), s.recency_weight,
                       f"half-life {s.recency_half_life_days} days")
            out.append(scored)
        out.sort(key=lambda f: f.score, reverse=True)
        return out

    async def _rank_entities(self, plan: SearchPlan, found: Candidates, recall: RecallSettings,
                             metrics: RecallMetrics) -> tuple[list[ScoredEntity], list[ScoredFact]]:
        s = self.settings
        totals, parts = self._fuse(found.entity_legs, recall)
        scored_entities: dict[str, ScoredEntity] = {}
        for entity_id, _ in totals.items():
            scored = ScoredEntity(item=entity_from_row(found.entity_rows[entity_id]), cosine=found.entity_cosine.get(entity_id))
            for leg, value in parts[entity_id].items():
                scored.add(leg, value, s.entities_weight, f"reciprocal-rank fusion, {leg} leg")
            scored_entities[entity_id] = scored
        graph_facts: list[ScoredFact] = []
        seeds = sorted(scored_entities.values(), key=lambda e: e.score, reverse=True)[:3]
        seeds_ids = [e.id for e in seeds if e.score > 0]
        if seeds_ids:
            started = time.perf_counter()
            graph = await self.semantic.get_entity_graph(seeds_ids, s.graph_depth, user_id=plan.user_id,
                                                         limit=s.graph_expansion_limit)
            seed_score = {e.id: e.score for e in seeds}
            neighbours: dict[str, set[str]] = {}
            for rel in graph.relationships:
                neighbours.setdefault(rel.source_id, set()).add(rel.target_id)
                neighbours.setdefault(rel.target_id, set()).add(rel.source_id)
            for entity in graph.entities:
                if entity.channel not in plan.channels:
                    continue
                linked = neighbours.get(entity.id, set())
                parent = max((seed_score.get(i, 0.0) for i in linked), default=0.0)
                scored = scored_entities.get(entity.id) or ScoredEntity(item=entity)
                scored.related = sorted(linked)
                if entity.id not in seed_score and parent > 0:
                    scored.add("graph", parent, 0.5, f"{s.graph_depth}-hop neighbour of a matched entity")
                scored_entities[entity.id] = scored
            best_seed = max(seed_score.values())
            for fact in graph.facts:
                if fact.channel not in plan.channels:
                    continue
                scored = ScoredFact(item=fact)
                scored.add("graph", best_seed, 0.5, "fact ABOUT a matched entity")
                graph_facts.append(scored)
            metric = metrics.techniques.setdefault("graph_expansion", TechniqueMetric())
            metric.latency_ms += (time.perf_counter() - started) * 1000
            metric.results += len(graph.entities) + len(graph.facts)
        entities = sorted(scored_entities.values(), key=lambda e: e.score, reverse=True)
        return entities, graph_facts

    async def _rank_turns(self, plan: SearchPlan, found: Candidates, recall: RecallSettings,
                          facts: list[ScoredFact], metrics: RecallMetrics) -> list[ScoredTurn]:
        s = self.settings
        totals, parts = self._fuse(found.turn_legs, recall)
        scored: dict[str, ScoredTurn] = {}
        for turn_id in totals:
            turn = _row_to_turn(found.turn_rows[turn_id])
            item = ScoredTurn(item=turn, cosine=found.turn_cosine.get(turn_id))
            for leg, value in parts[turn_id].items():
                name = "bm25" if leg.startswith("lexical") else leg.replace(":", "_")
                item.add(name, value, s.episodic_weight, f"reciprocal-rank fusion, {leg} leg")
            scored[turn_id] = item

        # Facts lend their relevance to the turns they were derived from.
        derived = {f.item.source_turn_id: f for f in facts[: plan.top_k] if f.item.source_turn_id}
        missing = [tid for tid in derived if tid not in scored]
        if missing:
            rows = await self.ctx.postgres.fetch(search.TURNS_BY_IDS, {"user_id": plan.user_id, "channels": plan.channels, "ids": missing})
            for row in rows:
                scored[row["turn_id"]] = ScoredTurn(item=_row_to_turn(row))
        for turn_id, fact in derived.items():
            if turn_id in scored:
                scored[turn_id].add("fact", fact.score / max(s.facts_weight, 1e-9), s.episodic_weight * 0.5,
                                    f"source of fact {fact.item.id}")

        # Neighbouring turns of strong hits (answers often sit next to the question).
        span = recall.neighbours
        if span and scored:
            started = time.perf_counter()
            strong = sorted(scored.values(), key=lambda t: t.score, reverse=True)[: max(3, plan.top_k // 2)]
            rows = await self.ctx.postgres.fetch(search.NEIGHBOUR_TURNS, {
                "user_id": plan.user_id, "channels": plan.channels, "span": span,
                "conversation_ids": [t.item.conversation_id for t in strong], "indexes": [t.item.index for t in strong],
            })
            by_position = {(t.item.conversation_id, t.item.index): t for t in strong}
            added = 0
            for row in rows:
                turn = _row_to_turn(row)
                if turn.id in {t.id for t in strong}:
                    continue
                parent = max((p for p in (by_position.get((turn.conversation_id, turn.index + d)) for d in range(-span, span + 1) if d) if p),
                             key=lambda p: p.score, default=None)
                if parent is None:
                    continue
                target = scored.get(turn.id) or ScoredTurn(item=turn)
                if turn.id not in scored:
                    added += 1
                value = parent.score / max(s.episodic_weight, 1e-9)
                if "neighbour" not in target.signals or target.signals["neighbour"].value < value:
                    target.add("neighbour", value, s.episodic_weight * 0.5, f"next to a strong hit ({parent.id})")
                scored[turn.id] = target
            metric = metrics.techniques.setdefault("neighbours", TechniqueMetric())
            metric.latency_ms += (time.perf_counter() - started) * 1000
            metric.results += added

        # Time: self-query ranges and recency.
        for item in scored.values():
            relevance = item.score / max(s.episodic_weight, 1e-9)
            if plan.time_ranges and self._in_ranges(item.item.timestamp, plan.time_ranges):
                item.add("time", relevance, s.episodic_weight * 0.5, "inside the question's time phrase")
            item.add("recency", relevance * self._recency(item.item.timestamp, plan.reference_time), s.recency_weight,
                     f"half-life {s.recency_half_life_days} days")
        return self._diversify(list(scored.values()), plan.top_k)

    def _diversify(self, items: list[ScoredTurn], top_k: int) -> list[ScoredTurn]:
        """Best first, at most ``max_per_conversation`` per conversation, exact duplicates of content dropped."""
        cap = self.settings.max_per_conversation
        seen_content: set[str] = set()
        per_conversation: dict[str, int] = {}
        chosen, overflow = [], []
        for item in sorted(items, key=lambda t: t.score, reverse=True):
            key = item.item.content.strip().casefold()
            if key in seen_content:
                continue
            seen_content.add(key)
            count = per_conversation.get(item.item.conversation_id, 0)
            if count >= cap:
                overflow.append(item)
                continue
            per_conversation[item.item.conversation_id] = count + 1
            chosen.append(item)
            if len(chosen) == top_k:
                break
        if len(chosen) < top_k:  # the cap only diversifies; it never leaves the list short
            chosen += overflow[: top_k - len(chosen)]
        return chosen

    async def retrieve(self, plan: SearchPlan, metrics: RecallMetrics):
        """Search and rank: returns (turns, facts, entities, strategies)."""
        found = await self.search(plan, metrics)
        return await self.rank(plan, found, metrics)


def utc(moment: datetime | None) -> datetime:
    """An aware UTC datetime (naive input is taken as UTC; None is now)."""
    if moment is None:
        return datetime.now(timezone.utc)
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def window_from_hours(hours: float | None, reference: datetime) -> tuple[datetime | None, datetime | None]:
    """The ``time_window_hours`` filter as a [start, end) range ending at the reference time."""
    if hours is None:
        return None, None
    return reference - timedelta(hours=hours), reference + timedelta(microseconds=1)

