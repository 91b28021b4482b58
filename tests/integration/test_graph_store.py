"""The graph port on a real database: schema, embedding bookkeeping, constraints, vector and full-text search, batches,
row shapes, string round-trips, plans and error wrapping.

The test bodies are written once against the :class:`GraphStore` port and run on every backend through the
``graph_backend`` fixture (DESIGN.md convention 8). Here the ``backend`` parameter is ``falkordb`` (the session's
embedded FalkorDB, one graph per test); ``tests/neo4j/test_neo4j_store.py`` imports these tests and runs them with
``backend = neo4j``. A backend tells the bodies only what is genuinely different: how to connect, how to list its
schema, and the names of its plan operators.
"""

from __future__ import annotations

import asyncio
import socket
import time
import uuid
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from agentx_memory.errors import (
    ConflictError,
    EmbeddingDimensionMismatchError,
    StorageError,
    StorageUnavailableError,
)
from agentx_memory.graph.dialects import index_name, schema_specs
from agentx_memory.graph.port import GraphStore, Statement
from tests.conftest import falkordb_only, run

DIM = 8
MODEL = "hash:graph-store-test"


# --- backends ------------------------------------------------------------------------------------------------------

class FalkorBackend:
    """The session's embedded FalkorDB; every namespace is a graph of its own (dropped by the ``settings`` fixture)."""

    name = "falkordb"
    index_scan = "Node By Index Scan"  # plan operator of an index lookup
    procedure_call = "ProcedureCall"  # plan operator of a CALL

    def __init__(self, socket_path: Path, new_settings):
        self.socket_path = str(socket_path)
        self._new_settings = new_settings

    def namespace(self) -> str:
        return self._new_settings().graph.name

    def connect(self, namespace: str) -> GraphStore:
        from agentx_memory.graph.falkordb import FalkorGraphStore

        return FalkorGraphStore(graph_name=namespace, unix_socket_path=self.socket_path)

    @asynccontextmanager
    async def unreachable_store(self, tmp_path: Path):
        """A store whose server went away: a throwaway FalkorDB is started, used, and shut down under it."""
        from agentx_memory.graph.falkordb import FalkorGraphStore
        from agentx_memory.runtime.falkordb import FalkorDBServer
        from agentx_memory.runtime.layout import DataLayout
        from agentx_memory.settings import EmbeddedSettings

        layout = DataLayout.for_home(tmp_path / "throwaway")
        layout.socket_dir().mkdir(parents=True, mode=0o700)
        server = FalkorDBServer(layout, EmbeddedSettings(home=layout.home, start_timeout_seconds=30))
        server.ensure_running()
        try:
            store = FalkorGraphStore(graph_name="g", unix_socket_path=str(server.socket))
            try:
                await store.write("CREATE (:Turn {id: 'before'})")
                server.stop()
                assert not server.socket.exists()
                yield store
            finally:
                await store.close()
        finally:
            server.stop()

    @staticmethod
    def connect_to_nothing(tmp_path: Path) -> GraphStore:
        """A store on a stale socket file: it exists, nobody listens (as after a crash)."""
        from agentx_memory.graph.falkordb import FalkorGraphStore

        stale = tmp_path / "stale.sock"
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.bind(str(stale))
        return FalkorGraphStore(graph_name="g", unix_socket_path=str(stale))

    async def schema(self, store: GraphStore) -> set[tuple]:
        """Every index and constraint as ``(kind, label, props)``; FalkorDB indexes properties one by one."""
        out: set[tuple] = set()
        for row in await store.read("CALL db.indexes() YIELD label, types RETURN label, types"):
            for prop, kinds in row["types"].items():
                for kind in kinds:
                    out.add((kind.lower(), row["label"], (prop,)))
        for row in await store.read("CALL db.constraints() YIELD type, label, properties, status "
                                    "RETURN type, label, properties, status"):
            out.add((row["type"].lower(), row["label"], tuple(row["properties"]), row["status"]))
        return out

    def expected_schema(self, store: GraphStore) -> set[tuple]:
        out: set[tuple] = set()
        for spec in schema_specs():
            if spec.kind == "unique":
                out.add(("unique", spec.label, spec.props, "OPERATIONAL"))
                out.add(("range", spec.label, spec.props))
            elif spec.kind == "names":  # a range index over a list property
                out.add(("range", spec.label, spec.props))
            else:
                out |= {(spec.kind, spec.label, (prop,)) for prop in spec.props}
        return out


class Neo4jBackend:
    """A Neo4j 5 server (one database: every test starts from an empty one, see tests/neo4j/conftest.py)."""

    name = "neo4j"
    index_scan = "IndexSeek"  # NodeIndexSeek, NodeUniqueIndexSeek
    procedure_call = "ProcedureCall"

    def __init__(self, uri: str, user: str, password: str):
        self.uri, self.user, self.password = uri, user, password

    def namespace(self) -> str:
        return "neo4j"

    def connect(self, namespace: str) -> GraphStore:
        from agentx_memory.graph.neo4j import Neo4jGraphStore

        return Neo4jGraphStore(uri=self.uri, user=self.user, password=self.password)

    @staticmethod
    def connect_to_nothing(tmp_path: Path) -> GraphStore:
        """A store on a port nobody listens on (retrying for at most 0.2 s, not the driver's default 30 s)."""
        from agentx_memory.graph.neo4j import Neo4jGraphStore

        with socket.socket() as s:  # a port that was free a moment ago
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        return Neo4jGraphStore(uri=f"bolt://127.0.0.1:{port}", user="neo4j", password="unused-password",
                               max_transaction_retry_time=0.2)

    @asynccontextmanager
    async def unreachable_store(self, tmp_path: Path):
        """The shared Neo4j server cannot be stopped under a test: a store on a port nobody listens on."""
        store = self.connect_to_nothing(tmp_path)
        try:
            yield store
        finally:
            await store.close()

    async def schema(self, store: GraphStore) -> set[tuple]:
        out: set[tuple] = set()
        for row in await store.read("SHOW INDEXES YIELD name, type, labelsOrTypes, properties, owningConstraint, state "
                                    "WHERE type <> 'LOOKUP' RETURN *"):
            if row["owningConstraint"] is None:
                out.add(
                    (row["type"].lower(), row["labelsOrTypes"][0], tuple(row["properties"]), row["name"], row["state"])
                )
        for row in await store.read("SHOW CONSTRAINTS YIELD name, type, labelsOrTypes, properties RETURN *"):
            kind = "unique" if "UNIQUE" in row["type"].upper() else row["type"].lower()  # UNIQUENESS (5.x)
            out.add((kind, row["labelsOrTypes"][0], tuple(row["properties"]), row["name"]))
        return out

    def expected_schema(self, store: GraphStore) -> set[tuple]:
        """The schema; on servers with SEARCH, vector indexes also carry the tenant filter properties."""
        from agentx_memory.graph.dialects import VECTOR_FILTER_PROPERTIES

        filtered = store.tenant_vector_index
        out: set[tuple] = set()
        for spec in schema_specs():
            name = index_name(spec.label, spec.props, spec.kind)
            if spec.kind == "unique":
                out.add(("unique", spec.label, spec.props, name))
            elif spec.kind == "vector" and filtered:
                out.add((spec.kind, spec.label, spec.props + VECTOR_FILTER_PROPERTIES, name, "ONLINE"))
            elif spec.kind == "names":  # a full-text index with the keyword analyzer
                out.add(("fulltext", spec.label, spec.props, name, "ONLINE"))
            else:
                out.add((spec.kind, spec.label, spec.props, name, "ONLINE"))
        return out


class GraphBackend:
    """What a test body needs: fresh namespaces, stores on them (closed on exit), and the backend's particulars."""

    def __init__(self, backend: FalkorBackend | Neo4jBackend):
        self.backend = backend
        self.name = backend.name

    def namespace(self) -> str:
        return self.backend.namespace()

    @asynccontextmanager
    async def store(
        self, namespace: str | None = None, *, dimension: int = DIM, model: str = MODEL, apply: bool = True
    ):
        store = self.backend.connect(namespace or self.namespace())
        try:
            if apply:
                await store.apply_schema(dimension=dimension, model=model)
            yield store
        finally:
            await store.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.backend, name)


@pytest.fixture
def graph_backend(request, backend) -> GraphBackend:
    """The current backend for the store tests. Neo4j's one database is emptied -- schema included -- before and
    after each test, since these tests create it with their own embedding model and dimension."""
    if backend == "falkordb":
        _, endpoints = request.getfixturevalue("embedded_stack")
        yield GraphBackend(FalkorBackend(endpoints.falkordb_socket, request.getfixturevalue("settings")))
        return
    server = request.getfixturevalue("neo4j_server")
    neo4j = Neo4jBackend(server.uri, server.user, server.password)
    run(_drop_everything(neo4j))
    yield GraphBackend(neo4j)
    run(_drop_everything(neo4j))


async def _drop_everything(backend: Neo4jBackend) -> None:
    store = backend.connect("neo4j")
    try:
        await store.drop_all()
    finally:
        await store.close()


# --- helpers -------------------------------------------------------------------------------------------------------

def unit(*values: float) -> list[float]:
    """A DIM-dimensional vector from its first components (the rest zero)."""
    vector = list(values) + [0.0] * (DIM - len(values))
    return [float(v) for v in vector]


def cosine(a, b) -> float:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


PLAIN_TYPES = (dict, list, str, int, float, bool, type(None))


def assert_plain(value: Any, where: str = "row") -> None:
    """Only dicts, lists and scalars, all the way down (no client objects, no tuples)."""
    assert isinstance(value, PLAIN_TYPES), f"{where} is a {type(value).__module__}.{type(value).__qualname__}"
    if isinstance(value, dict):
        for k, v in value.items():
            assert isinstance(k, str), f"{where} has a non-str key {k!r}"
            assert_plain(v, f"{where}[{k!r}]")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            assert_plain(v, f"{where}[{i}]")


CREATE_TURN = (
    "CREATE (t:Turn {id: $id, user_id: $user_id, channel: $channel, content: $content, embedding: @vec($embedding)})"
)

NASTY_STRINGS = [
    "it's", 'say "hi"', "back\\slash", "trailing backslash\\", "\\'", '\\"', "\\\\", "new\nline", "tab\there",
    "crlf\r\n", "ünïcödé ✓ 日本語 🎉 עברית", "{$x}", "CYPHER x=1 MATCH (n) DETACH DELETE n", "", " ", "a\u2028b",
    "`backtick`", "'); MATCH (n) DETACH DELETE n //", "$param", "%s %d {0}", "\u00a0nbsp", "e\u0301 (combining)",
]


# --- schema ---------------------------------------------------------------------------------------------------------

def test_apply_schema_creates_every_index_and_twice_is_a_no_op(graph_backend):
    async def body():
        namespace = graph_backend.namespace()
        async with graph_backend.store(namespace) as store:
            first = await graph_backend.schema(store)
            missing = graph_backend.expected_schema(store) - first
            assert not missing, f"indexes/constraints missing after apply_schema: {sorted(missing)}"
            await store.apply_schema(dimension=DIM, model=MODEL)
            assert await graph_backend.schema(store) == first
        async with graph_backend.store(namespace) as again:  # a new connection applying it once more
            assert await graph_backend.schema(again) == first
            meta = await again.read(
                "MATCH (m:AgentxMeta) RETURN m.key AS key, m.model AS model, m.dimension AS dimension"
            )
            assert meta == [{"key": "embedding", "model": MODEL, "dimension": DIM}]

    run(body())


@pytest.mark.parametrize(("dimension", "model"), [(DIM * 2, MODEL), (DIM, "hash:another-model")])
def test_opening_with_another_dimension_or_model_is_refused(graph_backend, dimension, model):
    async def body():
        namespace = graph_backend.namespace()
        async with graph_backend.store(namespace):
            pass
        async with graph_backend.store(namespace, apply=False) as other:
            with pytest.raises(EmbeddingDimensionMismatchError) as caught:
                await other.apply_schema(dimension=dimension, model=model)
            message = str(caught.value)
            assert MODEL in message and str(DIM) in message and model in message and str(dimension) in message
            # nothing was overwritten: the original settings still open it
            await other.apply_schema(dimension=DIM, model=MODEL)

    run(body())


# --- constraints ---------------------------------------------------------------------------------------------------

def test_a_duplicate_id_is_a_conflict(graph_backend):
    async def body():
        async with graph_backend.store() as store:
            params = {"id": "t1", "user_id": "u", "channel": "_global", "content": "x", "embedding": unit(1)}
            await store.write(CREATE_TURN, params)
            with pytest.raises(ConflictError) as caught:
                await store.write(CREATE_TURN, params)
            assert caught.value.__cause__ is not None  # the driver error is chained
            with pytest.raises(ConflictError):
                await store.write("CREATE (:Entity {id: 'e1', key: 'k'}), (:Entity {id: 'e2', key: 'k'})")
            with pytest.raises(ConflictError):
                await store.batch([Statement(CREATE_TURN, {**params, "id": "t2"}), Statement(CREATE_TURN, params)])
            rows = await store.read("MATCH (t:Turn {id: 't1'}) RETURN count(t) AS n")
            assert rows == [{"n": 1}]

    run(body())


# --- vector search and cosine --------------------------------------------------------------------------------------

def _known_vectors() -> dict[str, list[float]]:
    rng = np.random.default_rng(7)
    vectors = {
        "same": unit(1),
        "close": unit(0.9, 0.1),
        "diagonal": unit(0.6, 0.8),
        "orthogonal": unit(0, 0, 1),
        "opposite": unit(-1),
        "mostly-opposite": unit(-0.8, 0.2, 0.1),
    }
    for i in range(4):
        vectors[f"random{i}"] = [float(x) for x in rng.normal(size=DIM)]
    return vectors


async def _store_vectors(store: GraphStore, vectors: dict[str, list[float]], user_id: str = "u") -> None:
    await store.write(
        "UNWIND $rows AS row CREATE (t:Turn {id: row.id, user_id: $user_id, channel: '_global', content: row.id, "
        "embedding: @vec(row.embedding)})",
        {"rows": [{"id": k, "embedding": v} for k, v in vectors.items()], "user_id": user_id},
    )


def test_vector_search_returns_cosine_similarity_higher_is_closer(graph_backend):
    async def body():
        async with graph_backend.store() as store:
            vectors = _known_vectors()
            await _store_vectors(store, vectors)
            query = unit(1)
            rows = await store.read(
                "@vector_search(Turn, $k, $embedding) RETURN node.id AS id, similarity ORDER BY similarity DESC",
                {"k": len(vectors), "embedding": query},
            )
            assert [r["id"] for r in rows][:2] == ["same", "close"]
            assert len(rows) == len(vectors)
            got = {r["id"]: r["similarity"] for r in rows}
            for key, vector in vectors.items():
                assert got[key] == pytest.approx(cosine(vector, query), abs=1e-5), key
                assert -1.0 - 1e-6 <= got[key] <= 1.0 + 1e-6
            assert got["same"] == pytest.approx(1.0, abs=1e-5)
            assert got["orthogonal"] == pytest.approx(0.0, abs=1e-5)
            assert got["opposite"] == pytest.approx(-1.0, abs=1e-5)

            # another query direction, fewer results: still the k nearest, best first
            query = [float(x) for x in np.random.default_rng(11).normal(size=DIM)]
            rows = await store.read("@vector_search(Turn, $k, $embedding) RETURN node.id AS id, similarity",
                                    {"k": 3, "embedding": query})
            expected = sorted(vectors, key=lambda k: -cosine(vectors[k], query))[:3]
            assert sorted(r["id"] for r in rows) == sorted(expected)
            for r in rows:
                assert r["similarity"] == pytest.approx(cosine(vectors[r["id"]], query), abs=1e-5)

    run(body())


def test_cosine_marker_agrees_with_numpy(graph_backend):
    async def body():
        async with graph_backend.store() as store:
            vectors = _known_vectors()
            await _store_vectors(store, vectors)
            for query in (unit(1), unit(0.3, -0.2, 0.9), [float(x) for x in np.random.default_rng(3).normal(size=DIM)]):
                rows = await store.read(
                    "WITH @vec($embedding) AS query_vector MATCH (t:Turn {user_id: $user_id}) "
                    "WITH t, @cosine(t.embedding, query_vector) AS similarity "
                    "RETURN t.id AS id, similarity ORDER BY similarity DESC",
                    {"user_id": "u", "embedding": query},
                )
                assert [r["id"] for r in rows] == sorted(vectors, key=lambda k: -cosine(vectors[k], query))
                for r in rows:
                    assert r["similarity"] == pytest.approx(cosine(vectors[r["id"]], query), abs=1e-5), r["id"]
            rows = await store.read(
                "MATCH (t:Turn {id: 'opposite'}) RETURN @cosine(t.embedding, @vec($e)) AS s", {"e": unit(1)}
            )
            assert rows[0]["s"] == pytest.approx(-1.0, abs=1e-5)

    run(body())


def test_stored_vectors_come_back_as_float_lists(graph_backend):
    async def body():
        async with graph_backend.store() as store:
            await _store_vectors(store, {"v": unit(0.5, -0.25, 1)})
            rows = await store.read("MATCH (t:Turn {id: 'v'}) RETURN t.embedding AS embedding")
            assert isinstance(rows[0]["embedding"], list)
            assert rows[0]["embedding"] == pytest.approx(unit(0.5, -0.25, 1))

    run(body())


# --- full-text search ----------------------------------------------------------------------------------------------

def test_fulltext_search_finds_nodes_containing_a_word(graph_backend):
    async def body():
        async with graph_backend.store() as store:
            contents = {
                "t1": "I moved to Lisbon in May",
                "t2": "The weather in Porto is mild",
                "t3": "Lisbon has great pastries",
                "t4": "Nothing to see here",
            }
            for key, content in contents.items():
                await store.write(CREATE_TURN, {"id": key, "user_id": "u", "channel": "_global", "content": content,
                                                "embedding": unit(1)})
            await store.write("CREATE (:Entity {id: 'e1', key: 'k1', user_id: 'u', name: 'Ana', "
                              "description: 'a friend from Lisbon'})")

            async def search(label: str, words: list[str]) -> set[str]:
                query = store.dialect.fulltext_query(words)
                rows = await store.read(
                    f"@fulltext_search({label}, $query) RETURN node.id AS id, score", {"query": query}
                )
                for r in rows:
                    assert isinstance(r["score"], (int, float))
                return {r["id"] for r in rows}

            assert await search("Turn", ["lisbon"]) == {"t1", "t3"}
            assert await search("Turn", ["Lisbon"]) == {"t1", "t3"}  # case-insensitive
            assert await search("Turn", ["porto", "pastries"]) == {"t2", "t3"}  # any of the words
            assert await search("Turn", ["zanzibar"]) == set()
            # operator characters and keywords in user text are defused, not interpreted
            assert await search("Turn", ["Lisbon)", "|", "AND", "-weather", "@content:x", '"', "*", "OR"]) >= {
                "t1",
                "t3",
            }
            assert await search("Entity", ["lisbon"]) == {"e1"}  # description is indexed
            assert await search("Entity", ["ana"]) == {"e1"}  # and name

    run(body())


# --- batches -------------------------------------------------------------------------------------------------------

def test_batch_runs_several_statements(graph_backend):
    async def body():
        async with graph_backend.store() as store:
            assert await store.batch([]) is None
            statements = [Statement(CREATE_TURN, {"id": f"b{i}", "user_id": "u", "channel": "_global",
                                                  "content": f"turn {i}", "embedding": unit(1, i)}) for i in range(3)]
            statements.append(Statement(
                "MATCH (a:Turn {id: $a}), (b:Turn {id: $b}) CREATE (a)-[:FOLLOWED_BY]->(b)", {"a": "b0", "b": "b1"}))
            statements.append(
                Statement("MATCH (t:Turn {id: $id}) SET t.content = $content", {"id": "b2", "content": "edited"})
            )
            assert await store.batch(statements) is None
            rows = await store.read("MATCH (t:Turn) RETURN t.id AS id, t.content AS content ORDER BY id")
            assert rows == [
                {"id": "b0", "content": "turn 0"},
                {"id": "b1", "content": "turn 1"},
                {"id": "b2", "content": "edited"},
            ]
            rows = await store.read("MATCH (:Turn {id: 'b0'})-[:FOLLOWED_BY]->(t:Turn) RETURN t.id AS id")
            assert rows == [{"id": "b1"}]

    run(body())


# --- row shapes and values -----------------------------------------------------------------------------------------

def test_rows_are_plain_dicts_and_lists(graph_backend):
    async def body():
        async with graph_backend.store() as store:
            await store.write(
                "CREATE (a:Entity {id: 'a', key: 'ka', name: 'A', aliases: ['x', 'y'], salience: 0.5, n: 3, ok: true})"
                "-[:RELATED_TO {weight: 2}]->(b:Entity {id: 'b', key: 'kb', name: 'B'})"
            )
            rows = await store.read(
                "MATCH p = (a:Entity {id: 'a'})-[r:RELATED_TO]->(b:Entity) "
                "RETURN a, r, p, b.name AS name, a.aliases AS aliases, collect(b) AS nodes, "
                "{node: a, list: [b, 1, 'two', null], nested: {deep: [[1, 2], [3]]}} AS map, "
                "a.salience AS salience, a.n AS n, a.ok AS ok, a.missing AS missing, "
                "a {.id, .name} AS projection"
            )
            assert len(rows) == 1
            row = rows[0]
            assert type(row) is dict
            assert_plain(row)
            assert row["a"] == {
                "id": "a",
                "key": "ka",
                "name": "A",
                "aliases": ["x", "y"],
                "salience": 0.5,
                "n": 3,
                "ok": True,
            }
            assert row["r"] == {"weight": 2}
            assert row["p"] == [row["a"], {"weight": 2}, {"id": "b", "key": "kb", "name": "B"}]
            assert row["name"] == "B" and row["aliases"] == ["x", "y"]
            assert row["nodes"] == [{"id": "b", "key": "kb", "name": "B"}]
            assert row["map"] == {
                "node": row["a"],
                "list": [row["nodes"][0], 1, "two", None],
                "nested": {"deep": [[1, 2], [3]]},
            }
            assert (row["salience"], row["n"], row["ok"], row["missing"]) == (0.5, 3, True, None)
            assert type(row["n"]) is int and type(row["salience"]) is float and type(row["ok"]) is bool
            assert row["projection"] == {"id": "a", "name": "A"}
            assert await store.read("MATCH (n:Nothing) RETURN n") == []

            # no node, edge or path in the reply: FalkorDB's rows are read without its client (falkordb_result)
            rows = await store.read(
                "MATCH (a:Entity {id: 'a'}) "
                "RETURN a {.id, .aliases, .salience, .n, .ok, .missing} AS entity, "
                "[{flag: false, big: 4611686018427387904, neg: -2.5, tiny: 1.0e-300}, [], {}, 'x'] AS mixed, "
                "{list: [true, null, 7], text: 'é \"q\" \\\\'} AS nested, 3.0 AS three, -1 AS minus, null AS nothing"
            )
            assert rows == [{
                "entity": {"id": "a", "aliases": ["x", "y"], "salience": 0.5, "n": 3, "ok": True, "missing": None},
                "mixed": [{"flag": False, "big": 4611686018427387904, "neg": -2.5, "tiny": 1.0e-300}, [], {}, "x"],
                "nested": {"list": [True, None, 7], "text": 'é "q" \\'},
                "three": 3.0, "minus": -1, "nothing": None,
            }]
            row = rows[0]
            assert_plain(row)
            assert type(row["three"]) is float and type(row["entity"]["n"]) is int
            assert type(row["mixed"][0]["flag"]) is bool and type(row["entity"]["ok"]) is bool

    run(body())


def test_strings_round_trip_exactly(graph_backend):
    async def body():
        async with graph_backend.store() as store:
            for i, text in enumerate(NASTY_STRINGS):
                await store.write("CREATE (:Fact {id: $id, claim: $claim, tags: $tags})",
                                  {"id": f"w{i}", "claim": text, "tags": [text, "plain"]})
            await store.batch([Statement("CREATE (:Fact {id: $id, claim: $claim, tags: $tags})",
                                         {"id": f"b{i}", "claim": text, "tags": [text, "plain"]})
                               for i, text in enumerate(NASTY_STRINGS)])
            for prefix in ("w", "b"):
                rows = await store.read(
                    "UNWIND $ids AS id MATCH (f:Fact {id: id}) RETURN f.id AS id, f.claim AS claim, f.tags AS tags, "
                    "f.claim = $texts[toInteger(substring(id, 1))] AS equal_in_db",
                    {"ids": [f"{prefix}{i}" for i in range(len(NASTY_STRINGS))], "texts": NASTY_STRINGS},
                )
                assert len(rows) == len(NASTY_STRINGS)
                for row in rows:
                    text = NASTY_STRINGS[int(row["id"][1:])]
                    assert row["claim"] == text, (prefix, text)
                    assert row["tags"] == [text, "plain"], (prefix, text)
                    assert row["equal_in_db"] is True, (prefix, text)
            # as a parameter echoed straight back, inside maps and lists too
            rows = await store.read(
                "RETURN $texts AS texts, $map AS map",
                {"texts": NASTY_STRINGS, "map": {"k'\"\\": NASTY_STRINGS[0], "nested": NASTY_STRINGS}},
            )
            assert rows == [{"texts": NASTY_STRINGS, "map": {"k'\"\\": NASTY_STRINGS[0], "nested": NASTY_STRINGS}}]

    run(body())


# --- plans ---------------------------------------------------------------------------------------------------------

def test_explain_shows_index_use(graph_backend):
    async def body():
        async with graph_backend.store() as store:
            plan = await store.explain(
                "MATCH (t:Turn {user_id: $user_id}) WHERE t.channel IN $channels RETURN t.id AS id",
                {"user_id": "u", "channels": ["_global"]},
            )
            assert isinstance(plan, str)
            assert graph_backend.index_scan in plan, plan
            plan = await store.explain("MATCH (f:Fact {id: $id}) RETURN f.claim AS claim", {"id": "f1"})
            assert graph_backend.index_scan in plan, plan
            plan = await store.explain("@vector_search(Turn, $k, $embedding) RETURN node.id AS id, similarity",
                                       {"k": 5, "embedding": unit(1)})
            assert graph_backend.procedure_call in plan, plan
            assert "Label Scan" not in plan and "AllNodesScan" not in plan, plan

    run(body())


# --- errors --------------------------------------------------------------------------------------------------------

async def _assert_every_call_is_unavailable(store: GraphStore) -> None:
    calls = {
        "read": lambda: store.read("RETURN 1 AS one"),
        "write": lambda: store.write("CREATE (:Turn {id: 'x'})"),
        "batch": lambda: store.batch([Statement("CREATE (:Turn {id: $id})", {"id": "y"})]),
        "explain": lambda: store.explain("MATCH (t:Turn) RETURN t"),
        "apply_schema": lambda: store.apply_schema(dimension=DIM, model=MODEL),
    }
    for name, call in calls.items():
        with pytest.raises(StorageUnavailableError) as caught:
            await call()
        assert caught.value.__cause__ is not None, f"{name}: the driver error must be chained (raise ... from)"


def test_a_server_that_went_away_is_storage_unavailable(graph_backend, tmp_path):
    async def body():
        async with graph_backend.unreachable_store(tmp_path) as store:
            await _assert_every_call_is_unavailable(store)

    run(body())


def test_connecting_to_nothing_is_storage_unavailable(graph_backend, tmp_path):
    async def body():
        try:
            store = graph_backend.connect_to_nothing(tmp_path)
        except StorageUnavailableError as exc:  # clients that probe the server while connecting fail here
            assert exc.__cause__ is not None
            return
        try:
            await _assert_every_call_is_unavailable(store)
        finally:
            await store.close()

    run(body())


def test_a_bad_statement_is_a_storage_error_naming_the_query(graph_backend):
    async def body():
        async with graph_backend.store() as store:
            with pytest.raises(StorageError) as caught:
                await store.read("MATCH (t:Turn) RETRUN t")
            assert not isinstance(caught.value, (StorageUnavailableError, ConflictError))
            assert "RETRUN" in str(caught.value)
            assert caught.value.__cause__ is not None
            # the store still works afterwards
            assert await store.read("RETURN 1 AS one") == [{"one": 1}]

    run(body())


def test_a_statement_that_runs_longer_than_five_seconds_returns_its_rows(graph_backend):
    """A statement is not cut by the client however long it runs: redis-py 8 reads a reply with a 5 s timeout unless
    told otherwise, which turned a batch write on a big graph into "FalkorDB unreachable" while the server went on
    writing."""
    count = "UNWIND range(1, $n) AS x WITH x WHERE x % 7 = 3 RETURN count(x) AS n"

    async def body():
        async with graph_backend.store() as store:
            n, took = 2_000_000, 0.0
            while took <= 5.0:  # long enough to have been cut, else the test shows nothing (warm-up runs first)
                n = int(n * min(10.0, 6.5 / max(took, 0.1)))
                started = time.monotonic()
                rows = await store.read(count, {"n": n})
                took = time.monotonic() - started
                assert rows == [{"n": (n + 4) // 7}]

    run(body())


@falkordb_only  # Neo4j Community has one user database: Neo4j tests share it, emptied between tests
def test_namespaces_are_isolated(graph_backend):
    async def body():
        first, second = graph_backend.namespace(), graph_backend.namespace()
        async with graph_backend.store(first) as a, graph_backend.store(second) as b:
            await a.write(CREATE_TURN, {"id": "only-in-a", "user_id": "u", "channel": "_global", "content": "x",
                                        "embedding": unit(1)})
            assert await b.read("MATCH (t:Turn) RETURN t.id AS id") == []
            assert await a.read("MATCH (t:Turn) RETURN t.id AS id") == [{"id": "only-in-a"}]

    run(body())


def test_drop_all_empties_the_namespace(graph_backend):
    async def body():
        namespace = graph_backend.namespace()
        async with graph_backend.store(namespace) as store:
            await _store_vectors(store, {"x": unit(1)})
            await store.drop_all()
            assert await store.read("MATCH (n) RETURN count(n) AS n") in ([{"n": 0}], [])
        async with graph_backend.store(namespace, apply=False) as store:
            assert not {entry for entry in await graph_backend.schema(store) if entry[0] != "lookup"}
            # a dropped namespace can be created again, with another embedding model even
            await store.apply_schema(dimension=DIM * 2, model=MODEL + "-2")

    run(body())


def test_unique_ids_per_namespace_do_not_leak_between_tests(graph_backend):
    # Guards the fixture: a namespace handed to a test is empty.
    async def body():
        async with graph_backend.store() as store:
            rows = await store.read("MATCH (n) WHERE NOT n:AgentxMeta RETURN count(n) AS n")
            assert rows == [{"n": 0}]
            await store.write("CREATE (:Turn {id: $id})", {"id": uuid.uuid4().hex})

    run(body())


def test_unreachable_neo4j_is_storage_unavailable_without_any_server(tmp_path):
    """The Neo4j driver's errors are wrapped even when no Neo4j exists anywhere (runs without a server)."""

    async def body():
        store = Neo4jBackend.connect_to_nothing(tmp_path)
        try:
            await _assert_every_call_is_unavailable(store)
        finally:
            await store.close()

    run(body())


# --- Neo4j defects, each proven on a real server (issue 9) ----------------------------------------------------------

neo4j_only = pytest.mark.parametrize("backend", ["neo4j"], indirect=True)


@neo4j_only
def test_neo4j_reads_carry_the_bookmarks_of_the_stores_writes(graph_backend):
    # Read-your-writes on a cluster or Aura: every session of a store shares one bookmark manager, so a read is
    # served by a member that has applied the store's earlier writes.
    async def body():
        async with graph_backend.store() as store:
            await store.write("CREATE (:Turn {id: 'written'})")
            bookmarks = await store._bookmarks.get_bookmarks()
            assert bookmarks, "the write's bookmark was not kept"
            session = store._session()
            try:
                assert session._config.bookmark_manager is store._bookmarks
            finally:
                await session.close()
            assert await store.read("MATCH (t:Turn {id: 'written'}) RETURN t.id AS id") == [{"id": "written"}]

    run(body())


@neo4j_only
def test_neo4j_drop_all_keeps_the_token_lookup_indexes(graph_backend):
    async def body():
        async with graph_backend.store() as store:
            await store.drop_all()
            lookups = await store.read("SHOW INDEXES YIELD type, entityType WHERE type = 'LOOKUP' RETURN entityType")
            assert sorted(r["entityType"] for r in lookups) == ["NODE", "RELATIONSHIP"]
            plan = await store.explain("MATCH (n:Conversation) RETURN n")
            assert "NodeByLabelScan" in plan and "AllNodesScan" not in plan, plan
            # and apply_schema recreates them where someone dropped them
            for row in await store.read("SHOW INDEXES YIELD name, type WHERE type = 'LOOKUP' RETURN name"):
                await store.write(f"DROP INDEX `{row['name']}`")
            await store.apply_schema(dimension=DIM, model=MODEL)
            lookups = await store.read("SHOW INDEXES YIELD type WHERE type = 'LOOKUP' RETURN type")
            assert len(lookups) == 2

    run(body())


def test_concurrent_apply_schema_on_a_new_graph_succeeds(graph_backend):
    # An app and its worker starting together both create the schema; neither may fail on "already exists".
    async def body():
        namespace = graph_backend.namespace()
        stores = [graph_backend.backend.connect(namespace) for _ in range(4)]
        try:
            await asyncio.gather(*(s.apply_schema(dimension=DIM, model=MODEL) for s in stores))
            missing = graph_backend.expected_schema(stores[0]) - await graph_backend.schema(stores[0])
            assert not missing, sorted(missing)
        finally:
            for s in stores:
                await s.close()

    run(body())


@neo4j_only
def test_neo4j_older_than_the_minimum_is_refused_at_connect(graph_backend, monkeypatch):
    from agentx_memory.errors import ConfigurationError
    from agentx_memory.graph import neo4j as adapter

    async def body():
        async with graph_backend.store(apply=False) as store:
            await store.read("RETURN 1 AS one")
            running = ".".join(map(str, store.server_version))
        monkeypatch.setattr(adapter, "MIN_VERSION", (9999, 1))  # the server we have is "too old" for this check
        async with graph_backend.store(apply=False) as store:
            with pytest.raises(ConfigurationError) as caught:
                await store.read("RETURN 1 AS one")
            assert "9999.1" in str(caught.value) and running.split(".")[0] in str(caught.value)

    run(body())


@pytest.mark.parametrize(("text", "parsed"), [("5.26.30", (5, 26, 30)), ("2026.08.1", (2026, 8, 1)),
                                              ("5.23.0-aura", (5, 23, 0)), ("", ())])
def test_neo4j_version_strings_parse(text, parsed):
    from agentx_memory.graph.neo4j import MIN_VERSION, parse_version

    assert parse_version(text) == parsed
    assert (parse_version("5.22.0") < MIN_VERSION) and (parse_version("5.26.0") >= MIN_VERSION)


def test_a_node_without_a_usable_vector_is_never_ranked(graph_backend):
    # Neo4j sorts null first under ORDER BY ... DESC: a fact without a vector used to top the list and crash float().
    from agentx_memory.graph import cypher

    async def body():
        async with graph_backend.store() as store:
            await store.write(
                "CREATE (:Fact {id: 'good', user_id: 'u', channel: '_global', claim: 'x', embedding: @vec($v)}), "
                "(:Fact {id: 'no-vector', user_id: 'u', channel: '_global', claim: 'y'})", {"v": unit(1, 1)})
            rows = await store.read(cypher.SEARCH_FACTS, {"user_id": "u", "channels": ["_global"], "k": 5,
                                                          "embedding": unit(1), "start": None, "end": None,
                                                          "agent_id": None})
            assert [r["fact"]["id"] for r in rows] == ["good"]
            assert isinstance(rows[0]["similarity"], float)

    run(body())


def test_more_concurrent_calls_than_pooled_connections_wait_for_one(settings):
    """64 concurrent writes and 64 concurrent recalls on one memory (the graph pool holds 32 connections) all
    succeed: a call waits for a free connection instead of failing as "unreachable: Too many connections" (found by
    the injection corpus)."""
    from agentx_memory import AsyncAgentMemory, Entity

    async def scenario() -> tuple[int, list[int]]:
        async with await AsyncAgentMemory.open(settings(), user_id="alice") as memory:
            entities = await asyncio.gather(*(memory.upsert_entity(Entity(user_id="alice", name=f"Place {i}"))
                                              for i in range(64)))
            bundles = await asyncio.gather(*(memory.remember(f"Place {i}") for i in range(64)))
            return len({e.id for e in entities}), [len(b.entities) > 0 for b in bundles].count(True)

    assert asyncio.run(scenario()) == (64, 64)


async def _store_facts(store: GraphStore, user_id: str, vectors: np.ndarray, *, superseded_every: int = 0) -> None:
    rows = [{"id": f"{user_id}-{i:04d}", "embedding": [float(x) for x in v],
             "superseded": bool(superseded_every) and i % superseded_every != 0} for i, v in enumerate(vectors)]
    await store.write(
        "UNWIND $rows AS row CREATE (f:Fact {id: row.id, user_id: $user_id, channel: '_global', claim: row.id, "
        "superseded: row.superseded, created_at: 0, embedding: @vec(row.embedding)})",
        {"rows": rows, "user_id": user_id})


def _unit_rows(n: int, seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).normal(size=(n, DIM))
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _fact_search(user_id: str, query: np.ndarray, k: int = 10) -> dict[str, Any]:
    return {"user_id": user_id, "channels": ["_global"], "embedding": [float(x) for x in query], "k": k,
            "start": None, "end": None, "agent_id": None}


def test_a_large_tenants_vector_search_reads_the_index_and_ranks_as_the_scan(graph_backend):
    """A user with a third of the facts is answered from the label's vector index (not a scan of their thousand
    facts), with the scan's ranking, and never another user's fact, though the others' facts are near-duplicates of
    theirs; a small user, or ``exact=True``, is scanned."""
    from agentx_memory.graph import cypher

    async def body():
        async with graph_backend.store() as store:
            await _store_facts(store, "alice", _unit_rows(1000, 1))
            for n in range(4):  # the others' facts sit right next to alice's: any global top-k mixes them in
                await _store_facts(store, f"other{n}", _unit_rows(1000, 1)[::2] + 0.01 * _unit_rows(500, 10 + n))
            await _store_facts(store, "small", _unit_rows(30, 5))
            for query in _unit_rows(6, 7):
                routes = dict(store.vector_routes)
                got = await store.read_vectors(cypher.SEARCH_FACTS, _fact_search("alice", query))
                assert store.vector_routes["index"] == routes.get("index", 0) + 1, store.vector_routes
                exact = await store.read_vectors(cypher.SEARCH_FACTS, _fact_search("alice", query), exact=True)
                assert [r["fact"]["id"] for r in got] == [r["fact"]["id"] for r in exact]
                assert len(got) == 10 and all(r["fact"]["user_id"] == "alice" for r in got)
                assert [r["similarity"] for r in got] == pytest.approx([r["similarity"] for r in exact], abs=1e-6)
            scans = store.vector_routes["scan"]
            small = await store.read_vectors(cypher.SEARCH_FACTS, _fact_search("small", _unit_rows(1, 8)[0]))
            assert store.vector_routes["scan"] == scans + 1
            assert len(small) == 10 and all(r["fact"]["user_id"] == "small" for r in small)

    run(body())


def test_when_the_index_keeps_too_few_of_the_tenants_rows_the_scan_answers(graph_backend):
    """Nine of every ten of alice's facts are superseded: the index's nearest hold too few live ones, so the search
    falls back to the scan and still returns her ten best live facts."""
    from agentx_memory.graph import cypher

    async def body():
        async with graph_backend.store() as store:
            await _store_facts(store, "alice", _unit_rows(1200, 3), superseded_every=10)
            await _store_facts(store, "bob", _unit_rows(1200, 4))
            for query in _unit_rows(4, 11):
                fallbacks = store.vector_routes["fallback"]
                got = await store.read_vectors(cypher.SEARCH_FACTS, _fact_search("alice", query))
                assert store.vector_routes["fallback"] == fallbacks + 1
                exact = await store.read(cypher.SEARCH_FACTS, _fact_search("alice", query))
                assert len(got) == 10 and [r["fact"]["id"] for r in got] == [r["fact"]["id"] for r in exact]
                assert all(int(r["fact"]["id"].split("-")[1]) % 10 == 0 for r in got)  # live facts only

    run(body())


# --- recall's few-row reads ----------------------------------------------------------------------------------------

async def _store_neighbourhood(store: GraphStore, user_id: str = "u") -> None:
    """60 entities in a ring (RELATED_TO the next), each with two facts about it; vectors from a seeded generator."""
    rng = np.random.default_rng(3)
    entities = [{"id": f"e{i:02d}", "name": f"entity {i}", "embedding": [float(x) for x in rng.normal(size=DIM)],
                 "next": f"e{(i + 1) % 60:02d}"} for i in range(60)]
    facts = [{"id": f"f{i:03d}", "about": f"e{i % 60:02d}", "claim": f"claim {i}",
              "embedding": [float(x) for x in rng.normal(size=DIM)]} for i in range(120)]
    await store.write(
        "UNWIND $rows AS row CREATE (e:Entity {id: row.id, user_id: $user_id, channel: '_global', name: row.name, "
        "salience: 0.5, embedding: @vec(row.embedding)})", {"rows": entities, "user_id": user_id})
    await store.write(
        "UNWIND $rows AS row MATCH (a:Entity {id: row.id}), (b:Entity {id: row.next}) CREATE (a)-[:RELATED_TO]->(b)",
        {"rows": entities})
    await store.write(
        "UNWIND $rows AS row MATCH (e:Entity {id: row.about}) CREATE (f:Fact {id: row.id, user_id: $user_id, "
        "channel: '_global', claim: row.claim, created_at: 0, embedding: @vec(row.embedding)})-[:ABOUT]->(e)",
        {"rows": facts, "user_id": user_id})


def test_recalls_few_row_reads_give_the_same_rows_in_the_same_order_every_time(graph_backend):
    """Neo4j reads the statements of cypher.FEW_ROW_READS as one record of rows from their second run on (its driver
    pays per record); the rows, their order and their values must be what the statement itself returns."""
    from agentx_memory.graph import cypher

    async def body():
        async with graph_backend.store() as store:
            await _store_neighbourhood(store)
            query = [float(x) for x in np.random.default_rng(11).normal(size=DIM)]
            ids = [f"e{i:02d}" for i in range(0, 60, 7)]
            cases = {
                "SEARCH_FACTS": {"user_id": "u", "channels": ["_global"], "embedding": query, "k": 40, "start": None,
                                 "end": None, "agent_id": None},
                "SEARCH_ENTITIES": {"user_id": "u", "channels": ["_global"], "embedding": query, "k": 25},
                "GET_ENTITIES": {"user_id": "u", "ids": ids},
                "GET_FACTS": {"user_id": "u", "ids": ["f001", "f061", "f119", "nope"], "channels": ["_global"],
                              "agent_id": None},
                "FACTS_ABOUT": {"user_id": "u", "ids": ids, "seeds": ids[:2], "limit": 50, "agent_id": None},
                "ENTITY_NEIGHBOURS_2": {"user_id": "u", "ids": ids[:3], "limit": 30},
                "ENTITY_EDGES": {"user_id": "u", "ids": [*ids, "e01", "e08"], "limit": 100},
            }
            expected = {}
            for name, params in cases.items():
                statement = getattr(cypher, name)
                assert statement in cypher.FEW_ROW_READS, name
                first = await store.read(statement, params)
                again = await store.read(statement, params)  # on Neo4j: the collected form
                assert first, name
                assert again == first, name
                assert_plain(again, name)
                expected[name] = first
            similarities = [r["similarity"] for r in await store.read(cypher.SEARCH_FACTS, cases["SEARCH_FACTS"])]
            assert len(similarities) == 40 and similarities == sorted(similarities, reverse=True)
            assert await store.read(cypher.GET_ENTITIES, {"user_id": "u", "ids": ["none"]}) == []
            if graph_backend.name == "neo4j":  # the second runs took the one-record form
                rendered = {store.dialect.render(getattr(cypher, name)) for name in cases}
                forms = store._one_record_forms
                assert all(forms.get(text, None) is not None for text in rendered), forms
                # a one-record form the server refuses: the rows are read as rows, and from then on
                text = store.dialect.render(cypher.GET_ENTITIES)
                keys, _ = store._one_record_forms[text]
                store._one_record_forms[text] = (keys, "CALL () { RETURN 1 AS x } RETURN no_such_variable AS rows")
                assert await store.read(cypher.GET_ENTITIES, cases["GET_ENTITIES"]) == expected["GET_ENTITIES"]
                assert store._one_record_forms[text] is None

    run(body())
