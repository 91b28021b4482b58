"""Vector search through Neo4j's ``SEARCH`` clause (2026.06+): tenant-filtered inside the index, exact in the end.

These cases need a Neo4j with the clause, so this module starts its own server of :data:`SEARCH_VERSION` (the
suite's main Neo4j is the 5.26 LTS, which has no SEARCH). On 5.26 and on FalkorDB the same statements are exact scans,
covered by every retrieval test of the suite.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from agentx_memory.graph import cypher
from agentx_memory.graph.dialects import Neo4jDialect
from agentx_memory.graph.neo4j import SEARCH_CLAUSE_VERSION, Neo4jGraphStore
from tests.conftest import neo4j_unavailable, run

SEARCH_VERSION = "2026.08.1"
DIM = 16
MODEL = "hash:search-test"


@pytest.fixture(scope="module")
def search_server():
    """A Neo4j with the SEARCH clause, for this module only."""
    from tests.neo4j import server

    version = os.environ.get("AGENTX_TEST_NEO4J_SEARCH_VERSION", SEARCH_VERSION)
    problem = server.missing_tools(version)
    if problem:
        neo4j_unavailable(f"the SEARCH tests need Neo4j {version}: {problem}")
    running = server.start_neo4j(version)
    yield running
    running.stop()


@pytest.fixture
def with_store(search_server):
    """Runs ``body(store)`` on a store over an emptied database with the schema applied (one event loop per test:
    the async driver's connections belong to the loop that opened them)."""

    def runner(body):
        async def go():
            s = Neo4jGraphStore(uri=search_server.uri, max_transaction_retry_time=5)
            try:
                await s.drop_all()
                await s.apply_schema(dimension=DIM, model=MODEL)
                await body(s)
            finally:
                await s.close()

        run(go())

    return runner


def _vectors(n: int, seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).normal(size=(n, DIM))
    return v / np.linalg.norm(v, axis=1, keepdims=True)


async def _store_facts(store, user: str, vectors: np.ndarray, *, superseded_every: int = 0, channel="_global",
                       first: int = 0):
    rows = [{"id": f"{user}-{first + i:04d}", "embedding": [float(x) for x in v],
             "superseded": bool(superseded_every) and i % superseded_every != 0} for i, v in enumerate(vectors)]
    await store.write(
        "UNWIND $rows AS row CREATE (f:Fact {id: row.id, user_id: $user, channel: $channel, claim: row.id, "
        "superseded: row.superseded, created_at: 0, embedding: row.embedding})",
        {"rows": rows, "user": user, "channel": channel})


def _params(query, k=10):
    return {"user_id": "alice", "channels": ["_global"], "embedding": [float(x) for x in query], "k": k,
            "start": None, "end": None, "agent_id": None}


def test_the_server_has_search_and_the_indexes_carry_the_tenant_filters(with_store):
    async def body(store):
        assert store.server_version >= SEARCH_CLAUSE_VERSION
        rows = await store.read(cypher.SHOW_VECTOR_INDEXES)
        assert rows and all({"user_id", "channel"} <= set(r["properties"]) for r in rows), rows
        assert store.tenant_vector_index

    with_store(body)


def test_search_gives_the_exact_ranking_and_never_another_tenants_rows(with_store):
    async def body(store):
        await _store_facts(store, "alice", _vectors(300, 1))
        for n in range(20):  # near-duplicates of alice's vectors crowd any global top-k
            await _store_facts(store, f"user{n:02d}", _vectors(300, 1) + 0.01 * _vectors(300, 100 + n))
        for query in _vectors(8, 7):
            via_index = await store.read_vectors(cypher.SEARCH_FACTS, _params(query))
            exact = await store.read(cypher.SEARCH_FACTS, _params(query))
            assert [r["fact"]["id"] for r in via_index] == [r["fact"]["id"] for r in exact]
            assert len(via_index) == 10 and all(r["fact"]["user_id"] == "alice" for r in via_index)
        assert store.vector_routes == {"search": 8}, store.vector_routes
        # it really went through the index: the SEARCH rendering alone returns the same rows
        rendered = Neo4jDialect(search_clause=True, tenant_filters=True).render(cypher.SEARCH_FACTS)
        assert rendered.startswith("CYPHER 25") and "SEARCH f IN (VECTOR INDEX fact_embeddings" in rendered
        plain = await store._read_rendered(rendered, {**_params(_vectors(1, 7)[0]), "fetch": 40})
        assert len(plain) == 10

    with_store(body)


def test_an_exact_search_compares_every_node_of_the_tenant_through_the_index(with_store):
    """Recall asks for an exact search for a user whose turns are scanned exactly: Neo4j answered it with a scan of the
    tenant's nodes, reading every node's vector in Cypher (~15 µs a node: 70 ms for 4,266 facts); the index compares
    them all itself when asked for more nodes than the tenant holds, and only the nearest are read."""
    async def body(store):
        await _store_facts(store, "alice", _vectors(400, 1))
        await _store_facts(store, "alice", _vectors(50, 4), channel="other", first=1000)  # not searched
        for n in range(20):  # near-duplicates of alice's vectors crowd any global top-k
            await _store_facts(store, f"user{n:02d}", _vectors(400, 1) + 0.01 * _vectors(400, 100 + n))
        for query in _vectors(8, 7):
            exact = await store.read(cypher.SEARCH_FACTS, _params(query))
            got = await store.read_vectors(cypher.SEARCH_FACTS, _params(query), exact=True)
            assert [(r["fact"]["id"], r["fact"]["channel"]) for r in got] == [
                (r["fact"]["id"], r["fact"]["channel"]) for r in exact]
            assert [r["similarity"] for r in got] == pytest.approx([r["similarity"] for r in exact], abs=1e-9)
        assert store.vector_routes == {"exhaustive": 8}, store.vector_routes

    with_store(body)


def test_an_exact_search_whose_nearest_are_mostly_filtered_out_is_answered_by_the_scan(with_store):
    async def body(store):
        # 9 of every 10 of alice's facts are superseded: the 40 nearest of her 500 hold about 4 live ones
        await _store_facts(store, "alice", _vectors(500, 3), superseded_every=10)
        for query in _vectors(5, 11):
            got = await store.read_vectors(cypher.SEARCH_FACTS, _params(query), exact=True)
            exact = await store.read(cypher.SEARCH_FACTS, _params(query))
            assert len(got) == 10 and [r["fact"]["id"] for r in got] == [r["fact"]["id"] for r in exact]
        assert store.vector_routes == {"fallback": 5}, store.vector_routes

    with_store(body)


def test_a_plain_vector_search_asks_the_index_through_search_without_a_deprecation(with_store, caplog):
    """``@vector_search`` (every tenant's nearest: the scale bench's graph floor) used the procedure that Neo4j 2026
    deprecates for SEARCH, and the driver logged a warning for every call."""

    async def body(store):
        vectors = _vectors(200, 5)
        await _store_facts(store, "alice", vectors)
        query = vectors[17]
        with caplog.at_level("INFO", logger="neo4j"):
            rows = await store.read("@vector_search(Fact, $k, $embedding) RETURN node.id AS id, similarity",
                                    {"k": 5, "embedding": [float(x) for x in query]})
        exact = np.argsort(-(vectors @ query))[:5]
        assert [r["id"] for r in rows] == [f"alice-{i:04d}" for i in exact]
        assert rows[0]["similarity"] == pytest.approx(1.0, abs=1e-5)
        assert not [r for r in caplog.records if "deprecated" in r.getMessage()], caplog.text

    with_store(body)


def test_a_store_whose_schema_is_not_applied_yet_searches_without_the_deprecated_procedure(search_server, caplog):
    """The SEARCH dialect used to wait for apply_schema (the tenant-filtered indexes), so a store reading before it
    asked every plain vector search through the procedure Neo4j 2026 deprecates, a warning logged per call."""

    async def go():
        setup = Neo4jGraphStore(uri=search_server.uri, max_transaction_retry_time=5)
        fresh = Neo4jGraphStore(uri=search_server.uri, max_transaction_retry_time=5)
        try:
            await setup.drop_all()
            await setup.apply_schema(dimension=DIM, model=MODEL)
            vectors = _vectors(50, 9)
            await _store_facts(setup, "alice", vectors)
            with caplog.at_level("INFO", logger="neo4j"):
                rows = await fresh.read("@vector_search(Fact, $k, $embedding) RETURN node.id AS id",
                                        {"k": 3, "embedding": [float(x) for x in vectors[4]]})
            assert [r["id"] for r in rows] == [f"alice-{i:04d}" for i in np.argsort(-(vectors @ vectors[4]))[:3]]
            assert not fresh.tenant_vector_index  # @tenant_match still scans until this store applies the schema
            assert not [r for r in caplog.records if "deprecated" in r.getMessage()], caplog.text
        finally:
            await setup.close()
            await fresh.close()

    run(go())


def test_when_filters_leave_too_few_index_candidates_the_exact_scan_answers(with_store):
    async def body(store):
        # 9 of every 10 of alice's facts are superseded: the index's 40 nearest hold about 4 live ones
        await _store_facts(store, "alice", _vectors(500, 3), superseded_every=10)
        for query in _vectors(5, 11):
            got = await store.read_vectors(cypher.SEARCH_FACTS, _params(query))
            exact = await store.read(cypher.SEARCH_FACTS, _params(query))
            assert len(got) == 10 and [r["fact"]["id"] for r in got] == [r["fact"]["id"] for r in exact]

    with_store(body)


def test_an_old_vector_index_without_tenant_filters_is_rebuilt(search_server):
    async def body():
        s = Neo4jGraphStore(uri=search_server.uri, max_transaction_retry_time=5)
        try:
            await s.drop_all()
            await s.write("CREATE VECTOR INDEX fact_embeddings FOR (n:Fact) ON (n.embedding) OPTIONS {indexConfig: "
                          "{`vector.dimensions`: 16, `vector.similarity_function`: 'cosine'}}")
            await s.apply_schema(dimension=DIM, model=MODEL)
            rows = {r["name"]: r["properties"] for r in await s.read(cypher.SHOW_VECTOR_INDEXES)}
            assert {"user_id", "channel"} <= set(rows["fact_embeddings"])
        finally:
            await s.drop_all()
            await s.close()

    run(body())


def test_a_tenant_below_the_crossover_is_scanned_in_one_statement(with_store):
    """A user with few facts (or none: most users have no strategy or rule) is answered by the exact scan alone, not
    by a SEARCH that cannot fill k and then the scan; a count read before the user's facts arrived still returns
    them (the count steers the route, never the rows)."""
    async def body(store):
        await _store_facts(store, "bob", _vectors(300, 2))
        assert await store.read_vectors(cypher.SEARCH_FACTS, _params(_vectors(1, 5)[0])) == []  # alice has none
        assert store.vector_routes == {"scan": 1}, store.vector_routes
        await _store_facts(store, "alice", _vectors(40, 3))  # her count (0) is cached for a minute
        statements = []
        read = store._read_rendered

        async def counted(rendered, params, **kwargs):
            statements.append(rendered)
            return await read(rendered, params, **kwargs)

        store._read_rendered = counted
        for query in _vectors(4, 11):
            got = await store.read_vectors(cypher.SEARCH_FACTS, _params(query))
            exact = await store.read(cypher.SEARCH_FACTS, _params(query))
            assert len(got) == 10 and [r["fact"]["id"] for r in got] == [r["fact"]["id"] for r in exact]
        assert store.vector_routes == {"scan": 5}, store.vector_routes
        assert len(statements) == 8 and not any("SEARCH f IN" in s for s in statements)

    with_store(body)
