"""The base retriever: per-type candidate searches run concurrently, then fusion, expansion and reranking.

:class:`MemoryRetriever` is a template method. :meth:`MemoryRetriever.search_and_rank` takes a :class:`SearchPlan` (what
to search with: lexical texts, query vectors, time filter and boosts, entity seeds — built by the RecallLayer from the
question) and:

1. **searches** with every wanted leg of :data:`~agentx_memory.retrieval.legs.LEGS` concurrently (in two pipelines that
   meet for the turns' scoring, so the graph expansion of step 3 overlaps the turn search): turns (PostgreSQL
   full text and pgvector, through :class:`~agentx_memory.sql.search.TurnSearch`), facts, entities and strategies
   (graph, exact cosine over the user's own nodes), every search filtered by user, channels and time window inside
   the query;
2. **fuses** each type's legs (:mod:`~agentx_memory.retrieval.fusion`);
3. **expands**: the facts that best match the question lift the turns they were DERIVED_FROM (by their own
   match), entity seeds pull in their graph neighbourhood and the facts about it, and strong turn hits pull in the
   turns around them;
4. **boosts** by neighbours, conversation, speaker, time (self-query ranges), recency and the facts' temporal tag
   (current ×1.2, past ×0.7);
5. **reranks**: duplicates out, MMR diversity (``retrieval.mmr_lambda``, off by default), at most N turns per
   conversation.

While the graph is unreachable (:class:`~agentx_memory.graph.health.GraphHealth`) every graph read — the graph legs,
loading lexical-only facts and entities, graph expansion — is skipped and named in ``metrics.skipped``: recall
degrades to the PostgreSQL legs instead of failing.

:meth:`MemoryRetriever.retrieve` is spec 003's named interface over it (``retrieve(query, user_id, channels, top_k,
include_*, time_window_hours) -> MemoryBundle``): the plan of the question alone (its vector, and its words for the
full-text legs when ``recall.hybrid`` is on), searched and ranked as above, with the active goals and the user's
profile. The techniques that read the question first (self-query, query expansion, HyDE, names, rules) are the
RecallLayer's: ``AgentMemory.remember`` runs them.

Steps 2-5 are the pure functions of :mod:`~agentx_memory.retrieval.fusion` and :mod:`~agentx_memory.retrieval.rerank`;
this class does the reading. Every score is a sum of named contributions (see
:class:`~agentx_memory.retrieval.bundle.Signal`).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple, TypeVar

from ..context import MemoryContext
from ..errors import StorageUnavailableError, ValidationError
from ..gathering import gather
from ..goals import GoalMemory
from ..graph import cypher
from ..graph.port import GraphStore
from ..procedural import ProceduralMemory
from ..profiles import ProfileStore
from ..rows import entity_from_row, fact_from_row, turn_from_row
from ..semantic import SemanticMemory
from ..settings import RecallSettings, RetrievalSettings
from ..validation import check_channels, check_datetime, check_id, check_int, check_text
from . import fusion, rerank
from .bundle import MemoryBundle, RecallMetrics, ScoredEntity, ScoredFact, ScoredStrategy, ScoredTurn, TechniqueMetric
from .legs import LEGS, Leg, bm25
from .plan import Candidates, SearchPlan, utc, window_from_hours

__all__ = ["Candidates", "MemoryRetriever", "SearchPlan"]

T = TypeVar("T")

#: Seconds a user's turn count (exact scan or index?) is reused.
_COUNT_TTL = 60.0


class MemoryRetriever:
    """Runs a :class:`SearchPlan` against the stores and ranks what comes back."""

    def __init__(self, ctx: MemoryContext, semantic: SemanticMemory, procedural: ProceduralMemory,
                 goals: GoalMemory | None = None, profiles: ProfileStore | None = None):
        self.ctx = ctx
        self.semantic = semantic
        self.procedural = procedural
        self.goals = goals
        self.profiles = profiles
        self.turn_search = ctx.sql.search
        self._user_turn_counts: dict[str, tuple[float, int]] = {}

    @property
    def settings(self) -> RetrievalSettings:
        """The base retrieval settings."""
        return self.ctx.settings.retrieval

    @property
    def graph(self) -> GraphStore:
        """The graph store the graph legs read."""
        return self.ctx.graph

    async def search_and_rank(self, plan: SearchPlan, metrics: RecallMetrics
                              ) -> tuple[list[ScoredTurn], list[ScoredFact], list[ScoredEntity], list[ScoredStrategy]]:
        """Search and rank: returns (turns, facts, entities, strategies).

        Two pipelines run at once and meet for the turns' scoring, which needs both: the turn candidates, then the
        turns around the best of them; and the fact, entity and strategy legs, then the graph around the entity
        seeds, then (newest wins) what the best facts replaced. So the graph's second and third reads run while
        PostgreSQL still ranks a large user's turns, not after."""
        recall = plan.recall or self.ctx.settings.recall
        legs = [leg for leg in LEGS if leg.wanted(plan, recall)]
        found = Candidates()

        async def semantic() -> tuple[list[ScoredEntity], list[ScoredFact], _FactSources]:
            await self._search(plan, recall, [leg for leg in legs if leg.name != "turns"], found, metrics)
            if any(found.unloaded()):
                await self.graph_or_skip("semantic:lexical", self._fill_lexical_only(plan, found), None, metrics)
            found.drop_unloaded()
            entities, graph_facts = await self._rank_entities(plan, found, recall, metrics)
            facts = self._rank_facts(plan, found, recall, graph_facts)
            return entities, facts, await self._fact_sources(plan, facts, found, recall, metrics)

        async def episodic() -> _TurnContext:
            await self._search(plan, recall, [leg for leg in legs if leg.name == "turns"], found, metrics)
            if not plan.include_episodic:  # no turns: not even the facts' source turns, which _rank_turns reads
                return _TurnContext({}, {}, [])
            return await self._read_turn_context(plan, found, recall, metrics)

        # the turn search goes out first: it is the slower pipeline's first step, and each leg's task sends its
        # statement in the order the tasks were created
        context, (entities, facts, sources) = await gather(episodic(), semantic())
        turns = await self._rank_turns(plan, recall, sources, context, metrics) if plan.include_episodic else []
        strategies = rerank.rank_strategies(found.strategies, self.settings.procedural_weight)
        return turns, facts[: plan.top_k], entities[: plan.top_k], strategies[: plan.top_k]

    async def retrieve(self, query: str, user_id: str, channels: Sequence[str] | str | None = None, top_k: int = 10,
                       include_episodic: bool = True, include_semantic: bool = True, include_procedural: bool = True,
                       time_window_hours: float | None = None, *,
                       reference_time: datetime | None = None, agent_id: str | None = None) -> MemoryBundle:
        """Spec 003's ``MemoryRetriever.retrieve``: what is relevant to ``query`` for ``user_id`` in ``channels``
        (plus ``_global``), at most ``top_k`` of each kind, within the last ``time_window_hours`` before
        ``reference_time`` (default now) when given, as a :class:`MemoryBundle` with the active goals and the
        profile (when the retriever was given their stores, as the RecallLayer's is).

        The base retrieval of the module docstring run on the question alone: the plan holds its vector and words
        (:meth:`search_and_rank`), so self-query, query expansion, HyDE, names and rules — the RecallLayer's
        techniques — are not applied; ``AgentMemory.remember`` applies them. Nothing is reinforced or audited here.
        With ``agent_id``, only what that agent may read."""
        check_text(query, "query", max_bytes=self.ctx.settings.limits.max_text_bytes)
        check_id(user_id, "user_id")
        check_int(top_k, "top_k", low=1, high=200)
        if time_window_hours is not None and (
                isinstance(time_window_hours, bool) or not isinstance(time_window_hours, (int, float))
                or not (0 < time_window_hours <= 24 * 365 * 100)):
            raise ValidationError("time_window_hours", f"must be > 0 (hours), got {time_window_hours!r}")
        if reference_time is not None:
            check_datetime(reference_time, "reference_time")
        searched = check_channels(channels)
        started = time.perf_counter()
        metrics = RecallMetrics()
        reference = utc(reference_time)
        embed_started = time.perf_counter()
        vector = (await self.ctx.embedder.embed([query], is_query=True))[0]
        metrics.embed_ms = (time.perf_counter() - embed_started) * 1000
        plan = SearchPlan(
            query=query, user_id=user_id, channels=searched, top_k=top_k, lexical_texts=[query],
            vectors=[("question", vector)], reference_time=reference,
            window=window_from_hours(time_window_hours, reference), include_episodic=include_episodic,
            include_semantic=include_semantic, include_procedural=include_procedural,
            archive_horizon=datetime.now(UTC) - timedelta(days=self.ctx.settings.retention.conversation_days),
            agent_id=agent_id)
        turns, facts, entities, strategies = await self.search_and_rank(plan, metrics)
        goals = (await self.graph_or_skip("goals", self.goals.list_goals(user_id, "active", searched, limit=top_k),
                                          [], metrics) if self.goals is not None else [])
        profile = await self.profiles.get_profile(user_id) if self.profiles is not None else None
        metrics.total_ms = (time.perf_counter() - started) * 1000
        return MemoryBundle(query=query, user_id=user_id, channels=searched, turns=turns, facts=facts,
                            entities=entities, strategies=strategies, goals=goals, user_context=profile,
                            metrics=metrics)

    # --- 1. searches --------------------------------------------------------------------------------------------

    async def exact_scan(self, user_id: str) -> bool:
        """Whether the user has at most ``retrieval.exact_scan_max_vectors`` turns (counted at most once a minute)."""
        cached = self._user_turn_counts.get(user_id)
        if cached and time.monotonic() - cached[0] < _COUNT_TTL:
            count = cached[1]
        else:
            count = await self.turn_search.count_user_turns(user_id)
            self._user_turn_counts[user_id] = (time.monotonic(), count)
        return count <= self.settings.exact_scan_max_vectors

    async def _search(self, plan: SearchPlan, recall: RecallSettings, legs: Sequence[Leg], found: Candidates,
                      metrics: RecallMetrics) -> None:
        """Run ``legs`` (of :data:`~agentx_memory.retrieval.legs.LEGS`, in its order) concurrently and file their rows
        in ``found``. The turn legs and the others file into separate parts of ``found``, so the two pipelines may
        each run theirs."""
        pool = self.settings.candidate_pool(plan.top_k)
        results = await gather(*(_timed(metrics, leg.technique, self._run_leg(leg, plan, recall, pool, metrics))
                                 for leg in legs))
        for leg, rows in zip(legs, results, strict=True):
            leg.collect(found, rows)

    async def _run_leg(self, leg: Leg, plan: SearchPlan, recall: RecallSettings, pool: int,
                       metrics: RecallMetrics) -> Sequence[Any]:
        work = leg.query(self, plan, recall, pool)
        if leg.store == "graph":
            return await self.graph_or_skip(leg.name, work, [], metrics)
        return await work

    async def graph_or_skip(self, part: str, work: Awaitable[T], fallback: T, metrics: RecallMetrics) -> T:
        """Await a graph read; while the graph is unreachable, ``fallback`` instead, with ``part`` and the reason
        recorded in ``metrics.skipped``."""
        try:
            return await self.ctx.graph_health.call(work)
        except StorageUnavailableError as exc:
            metrics.skipped[part] = str(exc)
            return fallback

    async def _fill_lexical_only(self, plan: SearchPlan, found: Candidates) -> None:
        """Load facts/entities that only the lexical leg found (it returns ids)."""
        missing_facts, missing_entities = found.unloaded()
        if missing_facts:
            params = {"ids": missing_facts, "user_id": plan.user_id, "channels": plan.channels,
                      "agent_id": plan.agent_id}
            for r in await self.graph.read(cypher.GET_FACTS, params):
                found.fact_rows[r["fact"]["id"]] = r
        if missing_entities:
            for r in await self.graph.read(cypher.GET_ENTITIES, {"ids": missing_entities, "user_id": plan.user_id}):
                if r["entity"]["channel"] in plan.channels:
                    found.entity_rows[r["entity"]["id"]] = r["entity"]

    # --- 2-5. fuse, expand, boost, rerank -----------------------------------------------------------------------

    def _rank_facts(self, plan: SearchPlan, found: Candidates, recall: RecallSettings,
                    graph_facts: dict[str, tuple[Any, float]]) -> list[ScoredFact]:
        """Facts from the vector and full-text legs (weighted RRF) and from the graph around matched entities;
        one per claim (a promoted copy and its original count once)."""
        s = self.settings
        totals, parts = fusion.fuse(found.fact_legs, fusion.leg_weights(found.fact_legs, recall), recall.rrf_k)
        scored: dict[str, ScoredFact] = {}
        for fact_id in totals:
            row = found.fact_rows[fact_id]
            item = ScoredFact(item=fact_from_row(row["fact"], row["entity_ids"]), cosine=found.fact_cosine.get(fact_id))
            rerank.add_rrf_signals(item, parts[fact_id], s.facts_weight)
            scored[fact_id] = item
        for fact_id, (fact, entity_relevance) in graph_facts.items():
            if rerank.in_window(fact.created_at, plan.window):
                item = scored.get(fact_id) or ScoredFact(item=fact)
                item.add("graph", entity_relevance, s.facts_weight, "about an entity the question matched")
                scored[fact_id] = item
        return rerank.finish_facts(scored.values(), s, plan.reference_time)

    async def _rank_entities(self, plan: SearchPlan, found: Candidates, recall: RecallSettings,
                             metrics: RecallMetrics) -> tuple[list[ScoredEntity], dict[str, tuple[Any, float]]]:
        """Entities from their legs (weighted RRF), then the graph around the best three (the seeds)."""
        s = self.settings
        totals, parts = fusion.fuse(found.entity_legs, fusion.leg_weights(found.entity_legs, recall), recall.rrf_k)
        scored: dict[str, ScoredEntity] = {}
        for entity_id in totals:
            item = ScoredEntity(item=entity_from_row(found.entity_rows[entity_id]),
                                cosine=found.entity_cosine.get(entity_id))
            rerank.add_rrf_signals(item, parts[entity_id], s.entities_weight)
            scored[entity_id] = item
        seeds = sorted(scored.values(), key=lambda e: (-e.score, e.id))[:3]
        graph_facts: dict[str, tuple[Any, float]] = {}
        if any(e.score > 0 for e in seeds):
            graph_facts = await self.graph_or_skip("graph_expansion", self._expand_graph(plan, seeds, scored, metrics),
                                                   {}, metrics)
        for item in scored.values():
            rerank.add_salience(item, s)
        return sorted(scored.values(), key=lambda e: (-e.score, e.id)), graph_facts

    async def _expand_graph(self, plan: SearchPlan, seeds: list[ScoredEntity], scored: dict[str, ScoredEntity],
                            metrics: RecallMetrics) -> dict[str, tuple[Any, float]]:
        """Read the graph around the seeds: neighbours join ``scored``; returns the facts about them."""
        s = self.settings
        started = time.perf_counter()
        graph = await self.semantic.get_entity_graph([e.id for e in seeds if e.score > 0], s.graph_depth,
                                                     user_id=plan.user_id, limit=s.graph_expansion_limit,
                                                     agent_id=plan.agent_id)
        expansion = rerank.GraphExpansion({e.id: e.score for e in seeds}, graph.relationships)
        for entity in graph.entities:
            if entity.channel in plan.channels:
                scored[entity.id] = expansion.entity(entity, scored.get(entity.id), s.graph_depth)
        graph_facts = expansion.facts([f for f in graph.facts if f.channel in plan.channels], s.entities_weight)
        _record(metrics, "graph_expansion", started, len(graph.entities) + len(graph.facts))
        return graph_facts

    async def _read_turn_context(self, plan: SearchPlan, found: Candidates, recall: RecallSettings,
                                 metrics: RecallMetrics) -> _TurnContext:
        """The candidate rows with the turns around the best of them, every row's relevance, and the participants the
        question names (two reads that run at once)."""
        rows = dict(found.turn_rows)
        relevance = fusion.turn_relevance(rows, found.cosine_floor, recall)
        if recall.session_expansion and (recall.neighbours or recall.session_weight) and rows:
            relevance, named = await gather(self._read_around(plan, found, rows, relevance, recall, metrics),
                                            self._named_speakers(plan, recall))
        else:
            named = await self._named_speakers(plan, recall)
        return _TurnContext(rows, relevance, named)

    async def _rank_turns(self, plan: SearchPlan, recall: RecallSettings, sources: _FactSources,
                          context: _TurnContext, metrics: RecallMetrics) -> list[ScoredTurn]:
        """Score the turn candidates (and the turns around the best, ``context``; the facts' source turns,
        ``sources``), then order, diversify and cap them."""
        s = self.settings
        rows, relevance, named = context
        # Score with plain tuples; only the turns that make the list become pydantic models (hundreds of candidates
        # per query, a handful returned).
        drafts = rerank.TurnSignals(rows, relevance, recall, s.episodic_weight, named, plan.time_ranges,
                                    plan.speaker_role, standing=plan.standing).drafts()
        await self._lend_fact_scores(plan, drafts, sources, recall)
        w = s.episodic_weight
        for draft in drafts.values():
            rerank.add_recency(draft, draft.score / max(w, 1e-9), w, draft.row["timestamp"], plan.reference_time, s)
        if sources.replaced:
            rerank.outrank_replaced(drafts, sources.said_by, sources.replaced, plan.reference_time)
        ranked = rerank.unique_by_content(rerank.best_first(drafts.values()))
        ranked = await self._diversify(plan, ranked, metrics)
        return [_scored_turn(d) for d in rerank.cap_per_conversation(ranked, s.max_per_conversation, plan.top_k)]

    async def _read_around(self, plan: SearchPlan, found: Candidates, rows: dict[str, dict[str, Any]],
                           relevance: dict[str, dict[str, float]], recall: RecallSettings,
                           metrics: RecallMetrics) -> dict[str, dict[str, float]]:
        """Add to ``rows`` the turns around the best candidates (``session_span`` turns either side, or
        ``neighbours`` when the session signal is off), so neighbour and session signals see every turn near a hit;
        returns the relevance of all rows."""
        started = time.perf_counter()
        top = fusion.top_by_relevance(relevance, recall.session_expansion)
        extra = await self.turn_search.turns_around(
            plan.scope(), hits=[(rows[i]["conversation_id"], rows[i]["turn_index"]) for i in top],
            span=recall.session_span if recall.session_weight else recall.neighbours, exclude=list(rows),
            terms=found.term_weights, average_length=found.average_length, embedding=plan.query_vector(),
            text=plan.turn_text(), bm25=bm25(recall))
        for row in extra:
            rows[row["turn_id"]] = row
        _record(metrics, "neighbours", started, len(extra))
        return fusion.turn_relevance(rows, found.cosine_floor, recall)

    async def _named_speakers(self, plan: SearchPlan, recall: RecallSettings) -> list[str]:
        """The names in the question that are participants of the user's conversations, casefolded."""
        if not (recall.entity_centric and recall.speaker_weight):
            return []
        return [n.casefold() for n in await self.turn_search.speakers_among(plan.user_id, plan.entity_names)]

    async def _fact_sources(self, plan: SearchPlan, facts: list[ScoredFact], found: Candidates,
                            recall: RecallSettings, metrics: RecallMetrics) -> _FactSources:
        """The facts that best match the question (their own legs, :func:`~.fusion.query_match`) with the turns they
        were derived from, which they lift, and for newest wins the turns of the facts they replaced (one graph read,
        made here so it runs while PostgreSQL still ranks the turns)."""
        share = self.settings.fact_lending
        if not plan.include_episodic or not facts or (share <= 0 and not plan.newest_wins):
            return _FactSources({}, {}, {})
        match = fusion.query_match(found.fact_lexical, found.fact_cosine, recall)
        best = rerank.best_matching_facts(facts, match, plan.top_k)
        said_by = {f.id: str(f.item.source_turn_id) for f in best}
        replaced: dict[str, list[str]] = {}
        if plan.newest_wins and said_by:
            started = time.perf_counter()
            replaced = await self.graph_or_skip(
                "newest_wins", self.semantic.replaced_sources(plan.user_id, list(said_by)), {}, metrics)
            _record(metrics, "newest_wins", started, sum(len(turns) for turns in replaced.values()))
        # best is ranked already: this keeps one fact per turn
        return _FactSources(rerank.fact_sources(best, match, plan.top_k), said_by, replaced)

    async def _lend_fact_scores(self, plan: SearchPlan, drafts: dict[str, rerank.TurnDraft], sources: _FactSources,
                                recall: RecallSettings) -> None:
        """The facts' source turns join the drafts (read when they were no candidates), lifted by their facts'
        match when ``fact_lending`` is on."""
        if not sources.lend:
            return
        missing = [turn_id for turn_id in sources.lend if turn_id not in drafts]
        if missing:
            for row in await self.turn_search.turns_by_ids(plan.scope(), missing):
                drafts[row["turn_id"]] = rerank.TurnDraft(row)
        share = self.settings.fact_lending
        if share > 0:
            full = (recall.lexical_weight if recall.hybrid else 0.0) + recall.vector_weight
            rerank.lend_fact_scores(drafts, sources.lend, share, full, self.settings.episodic_weight)

    async def _diversify(self, plan: SearchPlan, ranked: list[rerank.TurnDraft], metrics: RecallMetrics
                         ) -> list[rerank.TurnDraft]:
        """MMR over the best candidates' stored embeddings (nothing is read when ``mmr_lambda`` is 1)."""
        lam = self.settings.mmr_lambda
        if lam >= 1 or len(ranked) < 2:
            return ranked
        started = time.perf_counter()
        pool = self.settings.candidate_pool(plan.top_k)
        vectors = await self.turn_search.embeddings(plan.user_id, [d.id for d in ranked[:pool]])
        diversified = rerank.mmr(ranked, vectors, lam, pool)
        _record(metrics, "mmr", started, min(pool, len(ranked)))
        return diversified


class _FactSources(NamedTuple):
    """The facts that best match the question, for the turns' scoring: their source turns (turn id → the fact and
    its match), the facts' own source turn (fact id → turn id) and, for newest wins, the source turns of the facts
    each replaced (fact id → turn ids)."""

    lend: dict[str, tuple[str, float]]
    said_by: dict[str, str]
    replaced: dict[str, list[str]]


class _TurnContext(NamedTuple):
    """What turn scoring reads before the facts are ranked: the candidate rows (and the turns around the best) by turn
    id, their relevance legs, and the casefolded participants the question names."""

    rows: dict[str, dict[str, Any]]
    relevance: dict[str, dict[str, float]]
    named: list[str]


async def _timed(metrics: RecallMetrics, name: str, coro: Awaitable[T]) -> T:
    """Await ``coro``, adding its latency and result count to the technique ``name``."""
    started = time.perf_counter()
    result = await coro
    _record(metrics, name, started, len(result) if isinstance(result, Sequence) else 0)
    return result


def _record(metrics: RecallMetrics, name: str, started: float, results: int) -> None:
    metric = metrics.techniques.setdefault(name, TechniqueMetric())
    metric.latency_ms += (time.perf_counter() - started) * 1000
    metric.results += results


def _scored_turn(draft: rerank.TurnDraft) -> ScoredTurn:
    """The :class:`ScoredTurn` the caller gets (its score recomputed from the signals)."""
    cosine = draft.row.get("cosine")
    item = ScoredTurn(item=turn_from_row(dict(draft.row)), cosine=float(cosine) if cosine is not None else None)
    for name, (value, weight, detail) in draft.signals.items():
        item.add(name, value, weight, detail)
    return item
