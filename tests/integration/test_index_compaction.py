"""Vector indexes that fill with dead vectors: FalkorDB keeps a node's old vector in its index whenever the node is
updated (any property: a recall's reinforcement does it), searches stay exact meanwhile, and ``compact_vector_indexes``
(the worker's ``compact_indexes`` job) rebuilds an index once half of it is dead. On Neo4j, which reclaims deleted
vectors itself, there is nothing to compact."""

from __future__ import annotations

import time

import pytest

from agentx_memory import AgentMemory, Fact
from agentx_memory.errors import ValidationError
from agentx_memory.graph import cypher
from agentx_memory.settings import Settings
from tests.conftest import TEST_DIMENSION, gread

FACTS = 60


def _nearest(memory: AgentMemory, user: str, k: int, *, exact: bool) -> list[str]:
    return [fact_id for fact_id, _ in _ranked(memory, user, k, exact=exact)]


def _ranked(memory: AgentMemory, user: str, k: int, *, exact: bool) -> list[tuple[str, float]]:
    vector = memory._portal.run(memory.core.ctx.embedder.embed(["where does the user live"], is_query=True))[0]
    rows = memory._portal.run(memory.core.ctx.graph.read_vectors(cypher.SEARCH_FACTS, {
        "user_id": user, "channels": ["_global"], "embedding": vector.tolist(), "k": k, "start": None, "end": None,
        "agent_id": None}, exact=exact))
    return [(r["fact"]["id"], r["similarity"]) for r in rows]


def _index_hits(memory: AgentMemory, k: int) -> int:
    """How many nodes the Fact vector index itself returns for a search of ``k`` (FalkorDB's own call)."""
    return gread(memory, "CALL db.idx.vector.queryNodes('Fact', 'embedding', $k, vecf32($v)) YIELD node "
                         "RETURN count(node) AS n", {"k": k, "v": [0.1] * TEST_DIMENSION})[0]["n"]


def _until_built(memory: AgentMemory) -> dict:
    deadline = time.monotonic() + 60
    while True:
        usage = memory._portal.run(memory.core.ctx.graph.vector_index_usage())
        if not any(u.building for u in usage.values()) or time.monotonic() > deadline:
            return usage
        time.sleep(0.1)


@pytest.fixture
def churned(settings):
    """Two users with 60 facts each, every fact then updated three times (as three reinforcements would)."""
    s: Settings = settings(worker={"compact_min_dead": 10})
    with AgentMemory(s, user_id="alice") as memory:
        for user in ("alice", "bob"):
            memory.store_facts([Fact(user_id=user, claim=f"{user} fact {i}: lives near landmark {i}")
                                for i in range(FACTS)])
        for _ in range(3):
            memory._portal.run(memory.core.ctx.graph.write(
                "MATCH (f:Fact) SET f.access_count = coalesce(f.access_count, 0) + 1"))
        yield memory


def test_searches_stay_exact_and_compaction_rebuilds_a_dead_index(churned, backend):
    exact = _nearest(churned, "alice", 5, exact=True)
    alices = {r["id"] for r in gread(churned, "MATCH (f:Fact {user_id: 'alice'}) RETURN f.id AS id")}
    assert len(exact) == 5 and set(exact) <= alices

    if backend == "neo4j":  # the database reclaims deleted vectors: nothing is reported, nothing rebuilt
        assert churned.compact_vector_indexes() == {}
        # (its SEARCH route is approximate by design, docs/benchmarks.md: alice's facts, not necessarily the 5 best)
        assert len(found := _nearest(churned, "alice", 5, exact=False)) == 5 and set(found) <= alices
        return

    # FalkorDB: the dead vectors are counted into the fetch, which then costs more than alice's 60 nodes: a scan
    routes = churned.core.ctx.graph.vector_routes
    scans = routes["scan"]
    assert _nearest(churned, "alice", 5, exact=False) == exact and routes["scan"] == scans + 1, routes

    # 120 facts, each holding its vector four times (three updates); the index's nearest 50 hold a fraction of 50
    # nodes. The probes measure about 480 vectors (the database's own count says more, see the test below)
    before = churned.compact_vector_indexes(dry_run=True)["Fact"]
    assert before["live"] == 2 * FACTS and before["entries"] >= 3 * 2 * FACTS and before["dead_share"] >= 0.65
    assert before["rebuilt"] and not before["building"]
    assert _index_hits(churned, 50) < 50
    # a dry run changes nothing
    assert churned.compact_vector_indexes(dry_run=True)["Fact"]["entries"] == before["entries"]

    with pytest.raises(ValidationError, match="wait_seconds"):  # refused before anything is rebuilt
        churned.compact_vector_indexes(wait_seconds=-1)
    assert churned.compact_vector_indexes(dry_run=True)["Fact"]["entries"] == before["entries"]

    report = churned.compact_vector_indexes(wait_seconds=60)  # returns once the rebuilt index is built
    assert report["Fact"]["rebuilt"] and report["Turn"]["rebuilt"] is False  # no turns: nothing dead, left alone
    after = churned._portal.run(churned.core.ctx.graph.vector_index_usage())["Fact"]
    assert (after.live, after.entries, after.building) == (2 * FACTS, 2 * FACTS, False)
    assert _index_hits(churned, 50) == 50
    # the index answers again (its nearest, kept when alice's: approximate, as HNSW is)
    index = routes["index"]
    assert len(found := _nearest(churned, "alice", 5, exact=False)) == 5 and set(found) <= alices
    assert routes["index"] == index + 1, routes
    assert churned.compact_vector_indexes()["Fact"]["rebuilt"] is False  # healthy now


def test_facts_written_once_hold_no_dead_vectors_and_are_left_alone(settings, backend):
    """Storing a fact re-indexes its node several times before it holds its one vector (FalkorDB's document count says
    4 per fact): that is no dead vector, and no reason to rebuild."""
    with AgentMemory(settings(), user_id="alice") as memory:
        memory.store_facts([Fact(user_id="alice", claim=f"alice fact {i}: lives near landmark {i}")
                            for i in range(FACTS)])
        report = memory.compact_vector_indexes(dry_run=True)
        if backend == "neo4j":
            assert report == {}
            return
        index = memory._portal.run(memory.core.ctx.graph._index_state(fresh=True))["Fact"]
        assert index.entries > index.live == FACTS  # what the database's own count says
        assert report["Fact"] == {"live": FACTS, "entries": FACTS, "dead_share": 0.0, "building": False,
                                  "rebuilt": False}
        assert _index_hits(memory, FACTS) == FACTS  # every entry the index holds is a live fact


def test_a_large_users_facts_stored_once_are_searched_through_the_index(settings, backend):
    """Facts stored once make FalkorDB's document count four times the live vectors: sized by it, the fetch for a user
    with half the facts cost more than scanning them, so every such search scanned. Sized by the probes' measure it
    reads the index, and returns her nearest facts."""
    with AgentMemory(settings(), user_id="alice") as memory:
        for user in ("alice", "bob"):
            memory.store_facts([Fact(user_id=user, claim=f"{user} fact {i}: lives near landmark {i}")
                                for i in range(300)])
        alices = {r["id"] for r in gread(memory, "MATCH (f:Fact {user_id: 'alice'}) RETURN f.id AS id")}
        graph = memory.core.ctx.graph
        routes = graph.vector_routes.copy()
        exact = _ranked(memory, "alice", 10, exact=True)
        found = _ranked(memory, "alice", 10, exact=False)
        # her ten nearest (the test embedder ties many facts: the same similarities, not always the same ids)
        assert len(found) == 10 and {fact_id for fact_id, _ in found} <= alices
        assert [s for _, s in found] == pytest.approx([s for _, s in exact], abs=1e-6)
        assert graph.vector_routes["index"] == routes["index"] + 1, graph.vector_routes
        if backend == "falkordb":
            index = memory._portal.run(graph._index_state(fresh=True))["Fact"]
            assert index.entries >= 3 * index.live == 3 * 600  # what the database's own count says


@pytest.fixture
def many_facts(settings):
    """Two users with 1,500 facts each: enough that rebuilding their index takes the database a while."""
    with AgentMemory(settings(), user_id="alice") as memory:
        for user in ("alice", "bob"):
            for start in (0, 750):
                memory.store_facts([Fact(user_id=user, claim=f"{user} fact {i}: lives near landmark {i}")
                                    for i in range(start, start + 750)])
        yield memory


def test_an_index_being_rebuilt_is_not_searched(many_facts, backend):
    """While the database builds an index again it answers from the nodes indexed so far: a search must not trust it
    (on FalkorDB it scans; it returned wrong rows before). Neo4j's tenant-filtered SEARCH is approximate by design, so
    there the search must keep answering with alice's facts, without an error."""
    memory, graph = many_facts, many_facts.core.ctx.graph
    exact = _nearest(memory, "alice", 5, exact=True)
    alices = {r["id"] for r in gread(memory, "MATCH (f:Fact {user_id: 'alice'}) RETURN f.id AS id")}
    memory._portal.run(graph.create_vector_index("Fact", dimension=TEST_DIMENSION))  # drop, then build again
    building = memory._portal.run(graph.vector_index_usage()).get("Fact")
    routes = graph.vector_routes.copy()
    during = _nearest(memory, "alice", 5, exact=False)
    index_reads = graph.vector_routes["index"] - routes["index"]
    _until_built(memory)
    after = _nearest(memory, "alice", 5, exact=False)
    if backend == "falkordb":
        assert building is not None and building.building  # the search below ran while the index was being built
        assert during == exact and index_reads == 0, graph.vector_routes
        assert len(after) == 5 and set(after) <= alices
    else:
        assert len(during) == len(after) == 5 and set(during) | set(after) <= alices
