"""The search legs as a table: each entry says when it runs, what it queries and where its rows go.

:data:`LEGS` is plain data, like graphiti's search recipes: the retriever runs every leg whose ``wanted(plan, recall)``
holds, all concurrently, times each under its ``technique`` (the key in ``RecallMetrics.techniques``), and hands
each leg's rows to its ``collect`` function, which files them into :class:`~agentx_memory.retrieval.plan.Candidates`.
Adding a leg is adding a row (and, if it brings a new kind of candidate, a field of ``Candidates``).

A leg whose ``store`` is ``"graph"`` is skipped (and the bundle says so in ``metrics.skipped``) while the graph is
unreachable: recall then answers from the PostgreSQL legs.

=================  ==============  =========================================  ==========================================
leg                technique       runs when                                  reads
=================  ==============  =========================================  ==========================================
turns              turns_hybrid    episodic, a query vector, hybrid on        PostgreSQL full text + pgvector (one trip)
turns              turns_vector    episodic, a query vector, hybrid off       pgvector only
facts:vector       vector          semantic, a query vector                   graph: cosine over the user's facts
entities:vector    vector          semantic, a query vector                   graph: cosine over the user's entities
semantic:lexical   hybrid_lexical  semantic, hybrid on, a lexical text        PostgreSQL full text over memory_timeline
entities:resolved  entity_centric  semantic, entity-centric on, names found   graph: entities by name or alias
strategies         vector          procedural, a query vector                 procedural memory (graph)
=================  ==============  =========================================  ==========================================
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, Protocol

from ..graph import cypher
from ..graph.port import GraphStore
from ..procedural import ProceduralMemory
from ..settings import RecallSettings
from ..sql.search import Bm25, TurnSearch
from ..timeutil import to_ms
from .plan import Candidates, SearchPlan

__all__ = ["LEGS", "Leg", "LegSources", "bm25", "distinct_texts", "resolve_names"]


class LegSources(Protocol):
    """What the legs read from (the retriever provides it)."""

    @property
    def turn_search(self) -> TurnSearch:
        """The PostgreSQL retrieval repository."""
        ...

    @property
    def graph(self) -> GraphStore:
        """The graph store."""
        ...

    @property
    def procedural(self) -> ProceduralMemory:
        """The procedural memory (``find_strategies``)."""
        ...

    async def exact_scan(self, user_id: str) -> bool:
        """Whether the user's vectors are few enough to be scanned exactly (turns in PostgreSQL, facts and entities in
        the graph)."""
        ...


Query = Callable[[LegSources, SearchPlan, RecallSettings, int], Awaitable[Sequence[Any]]]
Collect = Callable[[Candidates, Sequence[Any]], None]


@dataclass(frozen=True)
class Leg:
    """One search leg: its name, the technique it is timed under, when it runs, its query and its collector.

    ``query(sources, plan, recall, pool)`` returns rows (``pool``: how many facts/entities to fetch);
    ``collect(candidates, rows)`` files them; ``store`` is the database it reads.
    """

    name: str
    technique: str
    wanted: Callable[[SearchPlan, RecallSettings], bool]
    query: Query
    collect: Collect
    store: Literal["postgres", "graph"]


# --- queries -------------------------------------------------------------------------------------------------------

def bm25(recall: RecallSettings) -> Bm25:
    """The BM25 parameters of the turns' lexical leg from the recall settings."""
    return Bm25(k1=recall.lexical_k1, b=recall.lexical_b, near=recall.lexical_near_weight,
                near_length=recall.lexical_near_length)


def distinct_texts(top_k: int, candidates: int) -> int:
    """How many different texts the turn candidates must hold (recall returns one turn per text): ``top_k``, and
    at least half of a list's ``candidates``, so copies of one text never leave the ranking a short list."""
    return max(top_k, candidates // 2)


async def query_turns(src: LegSources, plan: SearchPlan, recall: RecallSettings, pool: int) -> list[dict[str, Any]]:
    """Turn candidates: lexical, dense and in-time-phrase top lists in one round trip."""
    exact = await src.exact_scan(plan.user_id)
    boost = plan.time_ranges[0] if plan.time_ranges else None
    return await src.turn_search.candidates(
        plan.scope(), text=plan.turn_text(), embedding=plan.query_vector(), lexical=recall.hybrid,
        limit=recall.candidates, exact=exact, boost=(boost.start, boost.end) if boost else None,
        bm25=bm25(recall), texts=distinct_texts(plan.top_k, recall.candidates))


async def query_fact_vectors(src: LegSources, plan: SearchPlan, recall: RecallSettings, pool: int
                             ) -> list[dict[str, Any]]:
    """The user's facts nearest the question's vector, inside the time window (an exact scan for a user whose turns
    are scanned exactly, see :meth:`LegSources.exact_scan`)."""
    start, end = plan.window
    return await src.graph.read_vectors(cypher.SEARCH_FACTS, {
        "user_id": plan.user_id, "channels": plan.channels, "embedding": plan.vectors[0][1].tolist(), "k": pool,
        "start": to_ms(start), "end": to_ms(end), "agent_id": plan.agent_id,
    }, exact=await src.exact_scan(plan.user_id))


async def query_entity_vectors(src: LegSources, plan: SearchPlan, recall: RecallSettings, pool: int
                               ) -> list[dict[str, Any]]:
    """The user's entities nearest the question's vector (exact as the facts' leg)."""
    return await src.graph.read_vectors(cypher.SEARCH_ENTITIES, {
        "user_id": plan.user_id, "channels": plan.channels, "embedding": plan.vectors[0][1].tolist(), "k": pool,
    }, exact=await src.exact_scan(plan.user_id))


async def query_timeline_lexical(src: LegSources, plan: SearchPlan, recall: RecallSettings, pool: int
                                 ) -> list[dict[str, Any]]:
    """Facts and entities whose timeline summary matches the question's words."""
    return await src.turn_search.lexical_timeline(plan.scope(), text=plan.lexical_texts[0], types=["fact", "entity"],
                                                  limit=pool)


async def resolve_names(graph: GraphStore, user_id: str, channels: Sequence[str], names: Sequence[str], k: int
                        ) -> list[dict[str, Any]]:
    """The user's entities in ``channels`` whose name or alias is one of ``names`` (at most ``k``), as rows with an
    ``entity`` map."""
    keys = [n.strip().casefold() for n in names if n.strip()]
    if not keys:
        return []
    return list(await graph.read(cypher.RESOLVE_ENTITIES, {
        "user_id": user_id, "channels": list(channels), "names": keys, "k": k,
    }))


async def query_resolved_entities(src: LegSources, plan: SearchPlan, recall: RecallSettings, pool: int
                                  ) -> list[dict[str, Any]]:
    """Entities whose name or alias is one of the names in the question (the RecallLayer's, when it resolved them
    before the search to widen the lexical query)."""
    if plan.resolved_entities is not None:
        return plan.resolved_entities
    return await resolve_names(src.graph, plan.user_id, plan.channels, plan.entity_names, pool)


async def query_strategies(src: LegSources, plan: SearchPlan, recall: RecallSettings, pool: int) -> list[Any]:
    """Strategies similar to the question (at most ``top_k``, at most 10)."""
    return list(await src.procedural.find_strategies(
        plan.query, plan.channels, max(1, min(plan.top_k, 10)), user_id=plan.user_id,
        embedding=plan.vectors[0][1].tolist()))


# --- collectors ----------------------------------------------------------------------------------------------------

def collect_turns(found: Candidates, rows: Sequence[dict[str, Any]]) -> None:
    """Turn rows by id, the cosine floor of the dense list and the weights of the question's terms."""
    found.turn_rows = {row["turn_id"]: row for row in rows}
    floor = rows[0]["cosine_floor"] if rows else None
    found.cosine_floor = float(floor) if floor is not None else 0.0
    if rows and rows[0].get("term_lexemes"):
        found.term_weights = dict(zip(rows[0]["term_lexemes"], map(float, rows[0]["term_weights"]), strict=True))
        found.average_length = float(rows[0]["average_length"] or 0.0)


def collect_fact_vectors(found: Candidates, rows: Sequence[dict[str, Any]]) -> None:
    """The vector leg of facts, their rows (each with the entities the fact is about) and cosines."""
    found.fact_legs["vector"] = [r["fact"]["id"] for r in rows]
    for r in rows:
        found.fact_rows[r["fact"]["id"]] = r
        found.fact_cosine[r["fact"]["id"]] = float(r["similarity"])


def collect_entity_vectors(found: Candidates, rows: Sequence[dict[str, Any]]) -> None:
    """The vector leg of entities, their rows and cosines."""
    found.entity_legs["vector"] = [r["entity"]["id"] for r in rows]
    for r in rows:
        found.entity_rows[r["entity"]["id"]] = r["entity"]
        found.entity_cosine[r["entity"]["id"]] = float(r["similarity"])


def collect_timeline_lexical(found: Candidates, rows: Sequence[dict[str, Any]]) -> None:
    """The lexical legs of facts and entities (ids only: the retriever loads rows no other leg brought)."""
    found.fact_legs["lexical"] = [r["node_id"] for r in rows if r["memory_type"] == "fact"]
    found.fact_lexical = {r["node_id"]: float(r["rank"]) for r in rows if r["memory_type"] == "fact"}
    found.entity_legs["lexical"] = [r["node_id"] for r in rows if r["memory_type"] == "entity"]


def collect_resolved_entities(found: Candidates, rows: Sequence[dict[str, Any]]) -> None:
    """The resolved-names leg of entities and their rows."""
    found.entity_legs["resolved"] = [r["entity"]["id"] for r in rows]
    for r in rows:
        found.entity_rows[r["entity"]["id"]] = r["entity"]


def collect_strategies(found: Candidates, rows: Sequence[Any]) -> None:
    """The strategy matches, as found."""
    found.strategies = list(rows)


# --- the table -----------------------------------------------------------------------------------------------------

def _episodic(hybrid: bool) -> Callable[[SearchPlan, RecallSettings], bool]:
    return lambda plan, recall: plan.include_episodic and bool(plan.vectors) and recall.hybrid == hybrid


def _semantic_vector(plan: SearchPlan, recall: RecallSettings) -> bool:
    return plan.include_semantic and bool(plan.vectors)


def _semantic_lexical(plan: SearchPlan, recall: RecallSettings) -> bool:
    return plan.include_semantic and recall.hybrid and bool(plan.lexical_texts)


def _entity_names(plan: SearchPlan, recall: RecallSettings) -> bool:
    return plan.include_semantic and recall.entity_centric and bool(plan.entity_names)


def _procedural(plan: SearchPlan, recall: RecallSettings) -> bool:
    return plan.include_procedural and bool(plan.vectors)


#: Every search leg, in the order their rows are filed (which fixes the order of each type's legs in fusion).
LEGS: Final[tuple[Leg, ...]] = (
    Leg("turns", "turns_hybrid", _episodic(hybrid=True), query_turns, collect_turns, "postgres"),
    Leg("turns", "turns_vector", _episodic(hybrid=False), query_turns, collect_turns, "postgres"),
    Leg("facts:vector", "vector", _semantic_vector, query_fact_vectors, collect_fact_vectors, "graph"),
    Leg("entities:vector", "vector", _semantic_vector, query_entity_vectors, collect_entity_vectors, "graph"),
    Leg("semantic:lexical", "hybrid_lexical", _semantic_lexical, query_timeline_lexical, collect_timeline_lexical,
        "postgres"),
    Leg("entities:resolved", "entity_centric", _entity_names, query_resolved_entities, collect_resolved_entities,
        "graph"),
    Leg("strategies", "vector", _procedural, query_strategies, collect_strategies, "graph"),
)
