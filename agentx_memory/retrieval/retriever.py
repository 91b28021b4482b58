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
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np

from ..context import MemoryContext
from ..graph import cypher
from ..rows import entity_from_row, fact_from_row, turn_from_row
from ..semantic import SemanticMemory
from ..settings import RecallSettings, RetrievalSettings
from ..sql import search
from ..timeutil import to_ms
from .bundle import RecallMetrics, ScoredEntity, ScoredFact, ScoredStrategy, ScoredTurn, TechniqueMetric
from .fusion import rrf_ranks
from .timeparse import TimeRange

__all__ = ["Candidates", "MemoryRetriever", "SearchPlan"]

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

    turn_rows: dict[str, dict[str, Any]] = field(default_factory=dict)  # turn id → row with lexical and cosine
    cosine_floor: float = 0.0  # cosine of the last dense candidate: D is measured above it
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

    async def _turn_candidates(self, plan: SearchPlan, vector: np.ndarray, recall: RecallSettings) -> list[dict[str, Any]]:
        exact = await self._user_turn_count(plan.user_id) <= self.settings.exact_scan_max_vectors
        boost = plan.time_ranges[0] if plan.time_ranges else None
        return await self.ctx.postgres.fetch(
            search.TURN_CANDIDATES_EXACT if exact else search.TURN_CANDIDATES_INDEX,
            {**self._sql_params(plan, recall.candidates), "text": plan.lexical_texts[0], "embedding": vector,
             "lexical": recall.hybrid, "boost_start": boost.start if boost else None,
             "boost_end": boost.end if boost else None},
        )

    async def _speakers_among(self, user_id: str, names: Sequence[str]) -> list[str]:
        """The names that are participants (``metadata.speaker``) of the user's conversations."""
        if not names:
            return []
        rows = await self.ctx.postgres.fetch(search.SPEAKERS_AMONG, {"user_id": user_id, "names": list(dict.fromkeys(names))})
        return [r["name"] for r in rows]

    async def _facts_vector(self, plan: SearchPlan, vector: np.ndarray, limit: int) -> list[dict[str, Any]]:
        start, end = plan.window
        return await self.ctx.graph.read_vectors(cypher.SEARCH_FACTS, {
            "user_id": plan.user_id, "channels": plan.channels, "embedding": vector.tolist(), "k": limit,
            "start": to_ms(start), "end": to_ms(end),
        })

    async def _entities_vector(self, plan: SearchPlan, vector: np.ndarray, limit: int) -> list[dict[str, Any]]:
        return await self.ctx.graph.read_vectors(cypher.SEARCH_ENTITIES, {
            "user_id": plan.user_id, "channels": plan.channels, "embedding": vector.tolist(), "k": limit,
        })

    async def _timeline_lexical(self, plan: SearchPlan, text: str, types: list[str], limit: int) -> list[dict[str, Any]]:
        return await self.ctx.postgres.fetch(search.LEXICAL_TIMELINE, {
            **self._sql_params(plan, limit), "types": types, "text": text,
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
        jobs: dict[str, Any] = {}
        if plan.include_episodic and plan.vectors:
            jobs["turns"] = self._timed(metrics, "turns_hybrid" if recall.hybrid else "turns_vector",
                                        self._turn_candidates(plan, _combined(plan.vectors), recall))
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
            if key == "turns":
                found.turn_rows = {row["turn_id"]: row for row in rows}
                found.cosine_floor = float(rows[0]["cosine_floor"]) if rows and rows[0]["cosine_floor"] is not None else 0.0
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

    def _leg_weights(self, legs: dict[str, list[str]], recall: RecallSettings) -> dict[str, float]:
        n_vector = max(1, sum(1 for leg in legs if leg.startswith("vector")))
        return {leg: recall.lexical_weight if leg.startswith("lexical") or leg == "resolved"
                else recall.vector_weight / n_vector for leg in legs}

    def _fuse(self, legs: dict[str, list[str]], weights: dict[str, float], k: int
              ) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
        """Weighted RRF, normalized to [0, 1] by the best possible score; returns totals and per-leg parts."""
        parts = rrf_ranks(legs, weights, k)
        best = sum(weights.values()) / (k + 1) or 1.0
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
        entities, graph_facts = await self._rank_entities(plan, found, recall, metrics)
        facts = self._rank_facts(plan, found, recall, graph_facts)
        turns = await self._rank_turns(plan, found, recall, facts, metrics)
        strategies = []
        for st in found.strategies:
            scored = ScoredStrategy(item=st, cosine=st.similarity)
            scored.add("vector", st.similarity, s.procedural_weight * 0.7, "cosine similarity to the task")
            scored.add("success_rate", st.success_rate, s.procedural_weight * 0.3, "Laplace-smoothed success rate")
            strategies.append(scored)
        strategies.sort(key=lambda x: (-x.score, x.id))
        return turns, facts[: plan.top_k], entities[: plan.top_k], strategies[: plan.top_k]

    def _recency_signal(self, item, relevance: float, type_weight: float, moment: datetime, reference: datetime) -> None:
        """Recency lifts an item by up to ``recency_weight`` of its own relevance (a nudge, never a ranking of its own)."""
        s = self.settings
        item.add("recency", relevance * self._recency(moment, reference), s.recency_weight * type_weight,
                 f"relevance x 0.5^(age / {s.recency_half_life_days} days)")

    def _rank_facts(self, plan: SearchPlan, found: Candidates, recall: RecallSettings,
                    graph_facts: dict[str, tuple[Any, float]]) -> list[ScoredFact]:
        """Facts from the vector and full-text legs (weighted RRF) and from the graph around matched entities;
        one per claim (a promoted copy and its original count once)."""
        s = self.settings
        totals, parts = self._fuse(found.fact_legs, self._leg_weights(found.fact_legs, recall), recall.rrf_k)
        scored: dict[str, ScoredFact] = {}
        for fact_id in totals:
            fact = fact_from_row(found.fact_rows[fact_id])
            item = ScoredFact(item=fact, cosine=found.fact_cosine.get(fact_id))
            for leg, value in parts[fact_id].items():
                item.add(leg, value, s.facts_weight, f"reciprocal-rank fusion, {leg} leg")
            scored[fact_id] = item
        start, end = plan.window
        for fact_id, (fact, entity_relevance) in graph_facts.items():
            if (start and fact.created_at < start) or (end and fact.created_at >= end):
                continue
            item = scored.get(fact_id) or ScoredFact(item=fact)
            item.add("graph", entity_relevance, s.facts_weight, "about an entity the question matched")
            scored[fact_id] = item
        out = []
        for item in scored.values():
            relevance = item.score / s.facts_weight if s.facts_weight else 0.0
            boost = getattr(s, TEMPORAL_TAG[item.item.temporal]) if item.item.temporal in TEMPORAL_TAG else 1.0
            if boost != 1.0:
                item.add("temporal_tag", relevance, s.facts_weight * (boost - 1.0), f"fact tagged {item.item.temporal}: x{boost}")
            self._recency_signal(item, relevance, s.facts_weight, item.item.created_at, plan.reference_time)
            out.append(item)
        best_per_claim: dict[str, ScoredFact] = {}
        for item in sorted(out, key=lambda f: (-f.score, f.id)):
            best_per_claim.setdefault(" ".join(item.item.claim.casefold().split()), item)
        return sorted(best_per_claim.values(), key=lambda f: (-f.score, f.id))

    async def _rank_entities(self, plan: SearchPlan, found: Candidates, recall: RecallSettings,
                             metrics: RecallMetrics) -> tuple[list[ScoredEntity], dict[str, tuple[Any, float]]]:
        s = self.settings
        totals, parts = self._fuse(found.entity_legs, self._leg_weights(found.entity_legs, recall), recall.rrf_k)
        scored_entities: dict[str, ScoredEntity] = {}
        for entity_id, _ in totals.items():
            scored = ScoredEntity(item=entity_from_row(found.entity_rows[entity_id]), cosine=found.entity_cosine.get(entity_id))
            for leg, value in parts[entity_id].items():
                scored.add(leg, value, s.entities_weight, f"reciprocal-rank fusion, {leg} leg")
            scored_entities[entity_id] = scored
        graph_facts: dict[str, tuple[Any, float]] = {}
        seeds = sorted(scored_entities.values(), key=lambda e: (-e.score, e.id))[:3]
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
                # A neighbour of a better seed gets a graph signal, also when it is a seed itself (which of two
                # near-tied entities makes the top 3 must not decide whether the edge between them counts).
                own = seed_score.get(entity.id, 0.0)
                parent = max((seed_score[i] for i in linked if seed_score.get(i, 0.0) > own), default=0.0)
                scored = scored_entities.get(entity.id) or ScoredEntity(item=entity)
                scored.related = sorted(linked)
                if parent > 0:
                    scored.add("graph", parent, 0.5, f"{s.graph_depth}-hop neighbour of a matched entity")
                scored_entities[entity.id] = scored
            for fact in graph.facts:
                if fact.channel not in plan.channels:
                    continue
                about = [seed_score[e] for e in fact.entity_ids if e in seed_score]
                linked = [seed_score[n] for e in fact.entity_ids for n in neighbours.get(e, ()) if n in seed_score]
                relevance = max(about) if about else 0.5 * max(linked, default=0.0)
                if relevance > 0:
                    graph_facts[fact.id] = (fact, relevance / max(s.entities_weight, 1e-9))
            metric = metrics.techniques.setdefault("graph_expansion", TechniqueMetric())
            metric.latency_ms += (time.perf_counter() - started) * 1000
            metric.results += len(graph.entities) + len(graph.facts)
        entities = sorted(scored_entities.values(), key=lambda e: (-e.score, e.id))
        return entities, graph_facts

    def _turn_relevance(self, rows: dict[str, dict[str, Any]], floor: float, recall: RecallSettings
                        ) -> dict[str, dict[str, float]]:
        """Per turn, the weighted legs: ``lexical = wl * rank / best rank`` and ``vector = wd * (cos - floor) / (best
        cos - floor)`` (``fusion="score"``), or weighted reciprocal ranks (``fusion="rrf"``)."""
        if not rows:
            return {}
        if recall.fusion == "rrf":
            lexical = [i for i in sorted(rows, key=lambda i: (-rows[i]["lexical"], i)) if rows[i]["lexical"] > 0]
            dense = sorted(rows, key=lambda i: (-rows[i]["cosine"], i))[: recall.candidates]
            weights = {"lexical": recall.lexical_weight if recall.hybrid else 0.0, "vector": recall.vector_weight}
            _, parts = self._fuse({"lexical": lexical, "vector": dense}, weights, recall.rrf_k)
            return {i: {leg: v * weights[leg] for leg, v in parts.get(i, {}).items()} for i in rows}
        best_lexical = max(r["lexical"] for r in rows.values())
        best_cosine = max(float(r["cosine"]) for r in rows.values())
        out = {}
        for turn_id, row in rows.items():
            legs = {}
            if recall.hybrid and best_lexical > 0:
                legs["lexical"] = recall.lexical_weight * row["lexical"] / best_lexical
            span = best_cosine - floor
            legs["vector"] = recall.vector_weight * max(0.0, (float(row["cosine"]) - floor) / span) if span > 1e-9 else 0.0
            out[turn_id] = legs
        return out

    async def _rank_turns(self, plan: SearchPlan, found: Candidates, recall: RecallSettings,
                          facts: list[ScoredFact], metrics: RecallMetrics) -> list[ScoredTurn]:
        s = self.settings
        rows = dict(found.turn_rows)
        floor = found.cosine_floor
        relevance = self._turn_relevance(rows, floor, recall)

        # Read around the best candidates: their conversations (bounded by session_span turns either side), so that
        # neighbour and session signals see every turn near a hit.
        if recall.session_expansion and (recall.neighbours or recall.session_weight) and rows:
            started = time.perf_counter()
            top = sorted(rows, key=lambda i: (-sum(relevance[i].values()), i))[: recall.session_expansion]
            span = recall.session_span if recall.session_weight else recall.neighbours
            extra = await self.ctx.postgres.fetch(search.TURNS_AROUND, {
                **self._sql_params(plan, 0), "text": plan.lexical_texts[0], "embedding": _combined(plan.vectors),
                "lexical": recall.hybrid, "span": span, "have": list(rows),
                "conversation_ids": [rows[i]["conversation_id"] for i in top], "indexes": [rows[i]["turn_index"] for i in top],
            })
            for row in extra:
                rows[row["turn_id"]] = row
            relevance = self._turn_relevance(rows, floor, recall)
            metric = metrics.techniques.setdefault("neighbours", TechniqueMetric())
            metric.latency_ms += (time.perf_counter() - started) * 1000
            metric.results += len(extra)

        base = {i: sum(legs.values()) for i, legs in relevance.items()}
        by_position = {(r["conversation_id"], r["turn_index"]): i for i, r in rows.items()}
        best_in_conversation: dict[str, float] = {}
        for turn_id, row in rows.items():
            conversation = row["conversation_id"]
            best_in_conversation[conversation] = max(best_in_conversation.get(conversation, 0.0), base[turn_id])
        named = []
        if recall.entity_centric and recall.speaker_weight:
            named = [n.casefold() for n in await self._speakers_among(plan.user_id, plan.entity_names)]
        w = s.episodic_weight
        # Score with plain tuples; only the turns that make the list become pydantic models (hundreds of candidates
        # per query, a handful returned).
        drafts: dict[str, _Draft] = {}
        for turn_id, row in rows.items():
            draft = _Draft(row)
            for leg, value in relevance[turn_id].items():
                weight = recall.lexical_weight if leg == "lexical" else recall.vector_weight
                draft.add("bm25" if leg == "lexical" else "vector", value / weight if weight else 0.0, w * weight,
                          "full-text rank over the turn and its neighbours, relative to the best" if leg == "lexical"
                          else "cosine above the candidate floor, relative to the best")
            if recall.neighbours and recall.neighbour_weight:
                near = [base[by_position[(row["conversation_id"], row["turn_index"] + d)]]
                        for d in range(-recall.neighbours, recall.neighbours + 1)
                        if d and (row["conversation_id"], row["turn_index"] + d) in by_position]
                if near and max(near) > 0:
                    draft.add("neighbour", max(near), w * recall.neighbour_weight, "best relevance of the turns next to it")
            if recall.session_weight and best_in_conversation[row["conversation_id"]] > 0:
                draft.add("session", best_in_conversation[row["conversation_id"]], w * recall.session_weight,
                          "best relevance in its conversation")
            speaker = str((row.get("metadata") or {}).get("speaker", "")).casefold()
            if len(named) == 1 and speaker == named[0]:
                draft.add("speaker", 1.0, w * recall.speaker_weight, "spoken by the one participant the question names")
            if plan.time_ranges and self._in_ranges(row["timestamp"], plan.time_ranges):
                draft.add("time", 1.0, w * recall.time_weight, "inside the question's time phrase")
            drafts[turn_id] = draft

        # Facts lend their relevance to the turns they were derived from.
        derived = {f.item.source_turn_id: f for f in facts[: plan.top_k] if f.item.source_turn_id}
        missing = [tid for tid in derived if tid not in drafts]
        if missing:
            for row in await self.ctx.postgres.fetch(search.TURNS_BY_IDS, {**self._sql_params(plan, 0), "ids": missing}):
                drafts[row["turn_id"]] = _Draft(row)
        for turn_id, fact in derived.items():
            if turn_id in drafts:
                drafts[turn_id].add("fact", fact.score / max(s.facts_weight, 1e-9), w * 0.5, f"source of fact {fact.item.id}")

        for draft in drafts.values():
            self._recency_signal(draft, draft.score / max(w, 1e-9), w, draft.row["timestamp"], plan.reference_time)
        return [draft.materialize() for draft in self._diversify(list(drafts.values()), plan.top_k)]

    def _diversify(self, items: list[_Draft], top_k: int) -> list[_Draft]:
        """Best first, at most ``max_per_conversation`` per conversation, exact duplicates of content dropped."""
        cap = self.settings.max_per_conversation
        seen_content: set[str] = set()
        per_conversation: dict[str, int] = {}
        chosen, overflow = [], []
        for item in sorted(items, key=lambda t: (-t.score, t.row["turn_id"])):
            key = item.row["content"].strip().casefold()
            if key in seen_content:
                continue
            seen_content.add(key)
            conversation = item.row["conversation_id"]
            count = per_conversation.get(conversation, 0)
            if count >= cap:
                overflow.append(item)
                continue
            per_conversation[conversation] = count + 1
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


class _Draft:
    """A turn candidate being scored: its row and its signals as plain tuples (cheap for hundreds of candidates)."""

    __slots__ = ("row", "score", "signals")

    def __init__(self, row: dict[str, Any]):
        self.row = row
        self.signals: dict[str, tuple[float, float, str]] = {}
        self.score = 0.0

    def add(self, name: str, value: float, weight: float, detail: str = "") -> None:
        """Add (or replace) a signal; the score stays the sum of ``value * weight``."""
        old = self.signals.get(name)
        if old is not None:
            self.score -= old[0] * old[1]
        self.signals[name] = (value, weight, detail)
        self.score += value * weight

    def materialize(self) -> ScoredTurn:
        """The :class:`ScoredTurn` the caller gets (its score recomputed from the signals)."""
        cosine = self.row.get("cosine")
        item = ScoredTurn(item=turn_from_row(self.row), cosine=float(cosine) if cosine is not None else None)
        for name, (value, weight, detail) in self.signals.items():
            item.add(name, value, weight, detail)
        return item


def _combined(vectors: Sequence[tuple[str, np.ndarray]]) -> np.ndarray:
    """One query vector from the question's variants (question, statement, HyDE): their normalized mean."""
    total = np.sum([v for _, v in vectors], axis=0)
    norm = np.linalg.norm(total)
    return total / norm if norm else total


def utc(moment: datetime | None) -> datetime:
    """An aware UTC datetime (naive input is taken as UTC; None is now)."""
    if moment is None:
        return datetime.now(UTC)
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def window_from_hours(hours: float | None, reference: datetime) -> tuple[datetime | None, datetime | None]:
    """The ``time_window_hours`` filter as a [start, end) range ending at the reference time."""
    if hours is None:
        return None, None
    return reference - timedelta(hours=hours), reference + timedelta(microseconds=1)

