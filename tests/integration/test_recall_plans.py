"""Query plans of retrieval use the indexes (issue 4, "Performance"): PostgreSQL's full-text GIN index and pgvector's
HNSW index, FalkorDB's range indexes for every user-scoped lookup and its vector index procedure.

Plans are read with EXPLAIN on the memory's own connections, with the parameters the retriever passes.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from agentx_memory import AgentMemory, Turn
from agentx_memory.graph import cypher
from agentx_memory.sql import search
from tests.conftest import run

REF = datetime(2024, 3, 20, 12, 0, tzinfo=UTC)
WORDS = ["apple", "river", "engine", "violin", "garden", "rocket", "pillow", "market", "canyon", "lantern"]
# alice has a few hundred turns; zoe is one of many small users
USERS = {**{f"user{n:02d}": 20 for n in range(10)}, "zoe": 30, "alice": 300}
#: The btree indexes that can also serve a user's rows; dropped (in a rolled-back transaction) to isolate one plan.
USER_INDEXES = ("DROP INDEX idx_logs_user_channel_time", "DROP INDEX idx_logs_channel")


def _content(user: str, i: int) -> str:
    rare = " and the harp" if i % 50 == 7 else ""
    return f"note {i}: the {WORDS[i % 10]} and the {WORDS[(i * 7) % 10]}{rare} for {user}"


@pytest.fixture(scope="module")
def loaded(namespaces):
    """A few hundred turns of alice and 30 each of eleven other users, analyzed; one memory for the module."""
    s = namespaces.new()
    memory = AgentMemory(s)
    try:
        memory.store_turns([
            Turn(conversation_id=f"{user}-c{i // 10}", user_id=user, timestamp=REF - timedelta(hours=i),
                 content=_content(user, i))
            for user, count in USERS.items() for i in range(count)])
        memory._portal.run(memory.core.ctx.postgres.execute("ANALYZE conversation_logs"))
        yield memory
    finally:
        memory.close()
        run(namespaces.drop(s))


def pg(memory, query: str, params=None, *, setup: tuple[str, ...] = ()) -> list[dict]:
    """Run ``query`` on one pooled connection inside a transaction that is rolled back (``setup`` runs first)."""
    async def go():
        async with memory.core.ctx.postgres.connection() as conn:
            tx = conn.transaction(force_rollback=True)
            async with tx:
                for statement in setup:
                    await conn.execute(statement)
                cur = await conn.execute(query, params)
                return await cur.fetchall() if cur.description else []
    return memory._portal.run(go())


def candidate_params(memory, text: str, *, lexical: bool = True, limit: int = 100, user: str = "alice") -> dict:
    """The parameters MemoryRetriever._turn_candidates passes (no time window, no time phrase; for the statements
    that look past repeated texts, one copy of one text: none of the user's turns is a copy of it but itself)."""
    vector = memory._portal.run(memory.core.ctx.embedder.embed([text], is_query=True))[0]
    scope = search.SearchScope(user, ["_global"])
    docs, avgdl = memory._portal.run(memory.core.ctx.sql.search.turn_stats(scope)) if lexical else (0, 0.0)
    return {**scope.params(), "limit": limit, "text": text, "embedding": vector, "lexical": lexical,
            "boost_start": None, "boost_end": None, "docs": docs, "avgdl": avgdl, **search.Bm25().params(),
            "copies": ["no-such-turn"], "keep": []}


def plan_text(rows: list[dict]) -> str:
    return "\n".join(r["QUERY PLAN"] for r in rows)


def cte(plan: str, name: str) -> str:
    """The part of an EXPLAIN text under ``CTE <name>`` (up to the next CTE / InitPlan)."""
    part = plan.split(f"CTE {name}\n", 1)[1]
    for marker in ("\n  CTE ", "\n  InitPlan"):
        part = part.split(marker, 1)[0]
    return part


CANDIDATE_STATEMENTS = ["TURN_CANDIDATES_EXACT", "TURN_CANDIDATES_INDEX", "TURN_CANDIDATES_EXACT_PAST_COPIES",
                        "TURN_CANDIDATES_INDEX_PAST_COPIES"]


@pytest.mark.parametrize("statement", CANDIDATE_STATEMENTS)
def test_lexical_candidates_use_the_full_text_index(loaded, statement):
    query = getattr(search, statement)
    params = candidate_params(loaded, "When did I buy the harp?")
    # On a table of a few hundred rows the planner rightly prefers a sequential scan, so sequential scans are
    # disabled in this (rolled-back) session. It then reads alice's rows through a user/channel btree index, which
    # at this size is cheaper than the GIN index but is no full scan either:
    lex = cte(plan_text(pg(loaded, "EXPLAIN " + query, params, setup=("SET LOCAL enable_seqscan = off",))), "matched")
    assert "Seq Scan" not in lex and "Index Scan" in lex, lex
    # With those btree indexes out of the way (dropped inside the same rolled-back transaction), the matching CTE
    # must be able to use the user-keyed GIN index (migration 0025): the statement's match condition is its expression.
    setup = (*USER_INDEXES, "SET LOCAL enable_seqscan = off")
    lex = cte(plan_text(pg(loaded, "EXPLAIN " + query, params, setup=setup)), "matched")
    assert "Bitmap Index Scan on idx_logs_user_lexemes" in lex, lex
    assert "Seq Scan" not in lex
    # and the statement really runs that way and finds alice's harp turns, and only hers
    rows = pg(loaded, query, params, setup=setup)
    assert rows and all(r["user_id"] == "alice" for r in rows)
    harp = [r for r in rows if "harp" in r["content"]]
    assert len(harp) == 6 and all(r["lexical"] > 0 for r in harp) and rows[0]["lexical_hits"] >= 6


@pytest.mark.parametrize("statement", ["TURN_CANDIDATES_INDEX", "TURN_CANDIDATES_INDEX_PAST_COPIES"])
def test_the_vector_index_path_is_not_starved_by_other_users(loaded, statement):
    """When the planner takes the HNSW index (large users), a user's filter must not starve the result.

    Forcing that plan on a small table: the user indexes are dropped and sequential scans disabled inside a
    rolled-back transaction on one of the memory's own pooled connections, so the session settings the
    retriever's connections carry (e.g. ``hnsw.iterative_scan``) are in effect.
    """
    params = candidate_params(loaded, "violin lessons", lexical=False, limit=20, user="zoe")
    setup = (*USER_INDEXES, "SET LOCAL enable_seqscan = off")
    plan = plan_text(pg(loaded, "EXPLAIN " + getattr(search, statement), params, setup=setup))
    assert "Index Scan using idx_logs_embedding" in cte(plan, "den"), plan
    rows = pg(loaded, getattr(search, statement), params, setup=setup)
    assert all(r["user_id"] == "zoe" for r in rows)
    # zoe has 30 of the 530 turns: her 20 nearest must come back, although the 40 globally nearest neighbours that
    # one HNSW pass yields are mostly other users'
    assert len(rows) == 20, f"{len(rows)} of zoe's 20 nearest turns came back through the HNSW index"


@pytest.mark.parametrize("statement", ["TURN_CANDIDATES_EXACT", "TURN_CANDIDATES_EXACT_PAST_COPIES"])
def test_exact_scan_path_reads_the_users_rows_through_an_index_not_the_vector_index(loaded, statement):
    params = candidate_params(loaded, "violin lessons", lexical=False, limit=20, user="zoe")
    plan = plan_text(pg(loaded, "EXPLAIN " + getattr(search, statement), params,
                        setup=("SET LOCAL enable_seqscan = off",)))
    den = cte(plan, "den")
    assert "idx_logs_embedding" not in den  # exact: the user's own vectors, all of them
    assert "idx_logs_user_channel_time" in den, den
    rows = pg(loaded, getattr(search, statement), params)
    assert len(rows) == 20 and all(r["user_id"] == "zoe" for r in rows)


#: Facts and entities of every user in the timeline (beside the turns' rows), for the timeline's full-text leg.
TIMELINE_ROWS = (
    "INSERT INTO memory_timeline (user_id, memory_type, neo4j_node_id, event_time, summary, channel)"
    " SELECT u.user_id, t.type, t.type || '-' || u.user_id || '-' || g, now(),"
    "        'the ' || (ARRAY['apple', 'river', 'harp'])[1 + g % 3] || ' of ' || u.user_id, '_global'"
    " FROM (SELECT DISTINCT user_id FROM conversation_logs) AS u, (VALUES ('fact'), ('entity')) AS t(type),"
    "      generate_series(1, 60) AS g",
    "ANALYZE memory_timeline",
)


def test_the_timeline_search_reads_the_users_facts_and_entities_through_one_index(loaded):
    """The full-text leg over facts and entities reads the user's rows of those types, not every user's facts and
    entities intersected with all of the user's rows (turns included): the (user, type, channel) index answers."""
    params = {"user_id": "alice", "channels": ["_global"], "types": ["fact", "entity"], "text": "the harp",
              "limit": 50, "agent_id": None, "start": None, "end": None}
    setup = (*TIMELINE_ROWS, "SET LOCAL enable_seqscan = off")
    plan = plan_text(pg(loaded, "EXPLAIN " + search.LEXICAL_TIMELINE, params, setup=setup))
    assert "idx_timeline_user_type_channel" in plan, plan
    assert "idx_timeline_type" not in plan, plan  # every user's facts and entities are not read
    rows = pg(loaded, search.LEXICAL_TIMELINE, params, setup=setup)
    assert len(rows) == 40 and {r["node_id"].split("-")[1] for r in rows} == {"alice"}
    assert {r["memory_type"] for r in rows} == {"fact", "entity"}


GRAPH_LOOKUPS = {
    "SEARCH_FACTS": {"user_id": "alice", "channels": ["_global"], "k": 10, "start": None, "end": None,
                     "agent_id": None},
    "SEARCH_ENTITIES": {"user_id": "alice", "channels": ["_global"], "k": 10},
    "SEARCH_STRATEGIES": None,  # parameters filled below from the statement's own names
    "RESOLVE_ENTITIES": {"user_id": "alice", "channels": ["_global"], "names": ["lisbon"], "k": 10},
    "GET_ENTITIES": {"user_id": "alice", "ids": ["e1"]},
    "GET_FACTS": {"user_id": "alice", "ids": ["f1"], "channels": ["_global"], "agent_id": None},
    "FACTS_ABOUT": {"user_id": "alice", "ids": ["e1"], "seeds": ["e1"], "limit": 10, "agent_id": "planner"},
    "ENTITY_NEIGHBOURS_2": {"user_id": "alice", "ids": ["e1"], "limit": 10},
    "ENTITY_EDGES": {"user_id": "alice", "ids": ["e1"], "limit": 10},
    "REINFORCE_FACTS": {"rows": [{"id": "f1", "user_id": "alice", "count": 2, "last": 0}]},
    "REINFORCE_ENTITIES": {"rows": [{"id": "e1", "user_id": "alice", "count": 2, "last": 0}]},
}


#: Plan operators per backend: an index lookup, and the scans that must never appear.
PLAN_OPERATORS = {
    "falkordb": ("Node By Index Scan", ("All Node Scan", "Node By Label Scan")),
    "neo4j": ("IndexSeek", ("AllNodesScan", "NodeByLabelScan")),
}


@pytest.mark.parametrize("name", list(GRAPH_LOOKUPS))
def test_graph_lookups_of_retrieval_use_an_index(loaded, backend, name):
    import re

    statement = getattr(cypher, name)
    params = dict(GRAPH_LOOKUPS[name] or {})
    for param in set(re.findall(r"\$(\w+)", loaded.core.ctx.graph.dialect.render(statement))):
        params.setdefault(param, [0.1] * 64 if param == "embedding" else ["_global"] if param == "channels"
                          else 10 if param in ("k", "limit") else "alice" if param == "user_id" else None)
    plan = loaded._portal.run(loaded.core.ctx.graph.explain(statement, params))
    index_seek, scans = PLAN_OPERATORS[backend]
    assert INDEX_CALLS.get((backend, name), index_seek) in plan, plan
    assert not any(scan in plan for scan in scans), plan


#: Lookups that a backend answers from an index it reads through a procedure: Neo4j's range indexes do not hold a
#: list's elements, so an entity's name keys are a keyword full-text index there.
INDEX_CALLS = {("neo4j", "RESOLVE_ENTITIES"): "db.index.fulltext.queryNodes"}


#: Statements handed node ids, by the node their plan must start from (its id index): FalkorDB started FACTS_ABOUT at
#: the user's facts and REPLACED_FACT_SOURCES at every replaced fact of the user, reading all of them per recall.
#: Neo4j's cost-based planner chose the start from its statistics: a rehearsal read a range scan of every Turn id for
#: FORGET_DERIVED_FACTS right after the module's turns were written, and with settled statistics it started at the
#: user's facts (a seek, but of every fact of the user). ``@start_at`` makes it seek the given ids; where it believes
#: the other side holds few nodes it may seek those too and join the two.
ANCHORED_LOOKUPS = {
    "FACTS_ABOUT": ("e:Entity", GRAPH_LOOKUPS["FACTS_ABOUT"]),
    "REPLACED_FACT_SOURCES": ("f:Fact", {"user_id": "alice", "ids": ["f1"]}),
    # a promotion's global copy, and the facts derived from forgotten turns: from the given ids, not the user's facts
    "FIND_PROMOTION": ("src:Fact", {"user_id": "alice", "source_id": "f1"}),
    "FORGET_DERIVED_FACTS": ("t:Turn", {"user_id": "alice", "ids": ["t1"]}),
    "FORGET_REDIRECTS": ("e:Entity", {"user_id": "alice", "ids": ["e1"]}),
    # the contradiction check's candidates: the facts of one slot, not every fact of the user
    "SLOT_CANDIDATES": ("f:Fact", {"slot_key": "alice\x1fuser lives in", "user_id": "alice", "channels": ["_global"],
                                   "exclude": [], "private_to": "", "k": 200}),
}


@pytest.mark.parametrize("name", list(ANCHORED_LOOKUPS))
def test_lookups_from_given_ids_start_at_those_nodes(loaded, backend, name):
    anchor, params = ANCHORED_LOOKUPS[name]
    plan = loaded._portal.run(loaded.core.ctx.graph.explain(getattr(cypher, name), params))
    lines = plan.strip().splitlines()
    seek = PLAN_OPERATORS[backend][0]
    assert seek in lines[-1], plan  # the last line is where the match starts
    if backend == "falkordb":  # its plans are linear, from where the statement starts
        assert anchor in lines[-1], plan
    else:  # the anchor is sought, never scanned; the other side is the planner's choice
        assert any(seek in line and anchor in line for line in lines), plan
        assert not any("NodeIndexScan" in line and anchor in line for line in lines), plan


def test_vector_index_search_is_a_procedure_call(loaded):
    statement = "@vector_search(Turn, $k, $embedding) RETURN node.id AS id, similarity"
    plan = loaded._portal.run(loaded.core.ctx.graph.explain(statement, {"k": 5, "embedding": [0.1] * 64}))
    assert "ProcedureCall" in plan, plan
    rows = loaded._portal.run(loaded.core.ctx.graph.read(statement, {"k": 5, "embedding": [0.1] * 64}))
    assert len(rows) == 5 and all(-1.0 <= r["similarity"] <= 1.0 for r in rows)
