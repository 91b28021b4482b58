"""Shared fixtures: real servers for the session, one isolated namespace per test, every graph test on both backends.

Servers. The embedded FalkorDB + PostgreSQL 18 (from the pip wheels) start once in a temporary data directory. A real
Neo4j Community server starts once too, from its Maven jars (``tests/neo4j/server.py``), the first time a test asks
for the ``neo4j`` backend; ``AGENTX_TEST_NEO4J_URI`` (+ ``_USER`` / ``_PASSWORD``) points the tests at a server of
yours instead (**they wipe it**), and ``AGENTX_TEST_NEO4J_VERSION`` picks another Neo4j release for the launcher.

Backends. Every test that uses ``settings`` / ``memory`` (or ``backend`` itself) runs once per graph backend:
``backend`` is a session-scoped fixture parameterized over FalkorDB and Neo4j, so pytest runs all FalkorDB cases, then
all Neo4j cases, on one server each. A test that is about the embedded runtime itself opts out with
:data:`falkordb_only`. Where Java or Maven is missing the Neo4j cases skip with a reason that says what to install;
with ``AGENTX_TEST_REQUIRE_NEO4J=1`` (set by ``.ci/run``) any skipped Neo4j case is a failure instead.

Isolation. Each test gets its own PostgreSQL schema and Redis key prefix. On FalkorDB it also gets its own graph. Neo4j
Community has a single user database, so Neo4j tests share it and it is emptied before and after each test (nodes
only; the schema stays unless the test used another embedding model, then everything is dropped).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest
import redis.asyncio as aioredis
from psycopg import sql as pgsql

from agentx_memory.backends import make_graph_store
from agentx_memory.graph.port import GraphStore
from agentx_memory.runtime import EmbeddedStack
from agentx_memory.settings import Settings, load_settings

TEST_DIMENSION = 64
TEST_MODEL = "hash:test"
GRAPH_BACKENDS = ("falkordb", "neo4j")
REQUIRE_NEO4J = "AGENTX_TEST_REQUIRE_NEO4J"

#: Marks a test that is about the embedded FalkorDB runtime itself: it runs on FalkorDB only (no Neo4j case).
falkordb_only = pytest.mark.parametrize("backend", ["falkordb"], indirect=True)


# --- servers ---------------------------------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def embedded_home() -> Path:
    """Data directory of the session's embedded stack (AGENTX_TEST_HOME reuses a fixed one).

    Not under pytest's tmp_path: when tests run as root, PostgreSQL runs as an unprivileged account that must be
    able to traverse the path, and pytest's temporary root is private (0700).
    """
    fixed = os.environ.get("AGENTX_TEST_HOME")
    if fixed:
        return Path(fixed)
    home = Path(tempfile.mkdtemp(prefix="agentx-test-"))
    home.chmod(0o755)
    return home


@pytest.fixture(scope="session")
def embedded_stack(embedded_home):
    """The embedded FalkorDB + PostgreSQL, started once for the whole session and stopped at the end."""
    settings = load_settings(embedded={"home": embedded_home})
    stack = EmbeddedStack(settings.embedded)
    endpoints = stack.ensure_running()
    yield stack, endpoints
    if not os.environ.get("AGENTX_TEST_HOME"):
        stack.stop()
        shutil.rmtree(embedded_home, ignore_errors=True)


@dataclass(frozen=True)
class Neo4jEndpoint:
    """Where the session's Neo4j answers."""

    uri: str
    user: str
    password: str
    version: str


def neo4j_unavailable(reason: str) -> None:
    """Skip a Neo4j case saying what to install -- or fail it where Neo4j is required (CI)."""
    if os.environ.get(REQUIRE_NEO4J):
        pytest.fail(f"{REQUIRE_NEO4J} is set and Neo4j is unavailable: {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def neo4j_server():
    """The session's Neo4j: ``AGENTX_TEST_NEO4J_URI`` if set, else a Community server from Maven jars."""
    uri = os.environ.get("AGENTX_TEST_NEO4J_URI")
    if uri:
        yield Neo4jEndpoint(uri, os.environ.get("AGENTX_TEST_NEO4J_USER", "neo4j"),
                            os.environ.get("AGENTX_TEST_NEO4J_PASSWORD", ""), "external")
        return
    from tests.neo4j import server

    version = os.environ.get("AGENTX_TEST_NEO4J_VERSION", server.DEFAULT_VERSION)
    problem = server.missing_tools(version)
    if problem:
        neo4j_unavailable(f"Neo4j tests need Java and Maven to start Neo4j {version}: {problem}")
    running = server.start_neo4j(version)
    try:
        yield Neo4jEndpoint(running.uri, "neo4j", "", running.version)
    finally:
        running.stop()


@pytest.fixture(scope="session", params=GRAPH_BACKENDS)
def backend(request) -> str:
    """The graph database a test runs on: every graph-touching test runs once per backend."""
    return request.param


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Where Neo4j is required (CI), a skipped Neo4j case is reported as a failure, whatever skipped it."""
    outcome = yield
    report = outcome.get_result()
    callspec = getattr(item, "callspec", None)
    if (report.skipped and os.environ.get(REQUIRE_NEO4J) and callspec is not None
            and callspec.params.get("backend") == "neo4j"):
        report.outcome = "failed"
        report.longrepr = f"{REQUIRE_NEO4J} is set: a skipped Neo4j case fails ({report.longrepr})"


# --- namespaces ------------------------------------------------------------------------------------------------------

class Namespaces:
    """Makes and drops isolated test namespaces on one backend (see the module docstring for what isolates them)."""

    def __init__(self, backend: str, home: Path, endpoints, neo4j: Neo4jEndpoint | None):
        self.backend, self.home, self.endpoints, self.neo4j = backend, home, endpoints, neo4j

    def new(self, **overrides) -> Settings:
        """Settings for a fresh namespace; ``overrides`` are per-section dicts (``embedding={...}``)."""
        tag = "t" + uuid.uuid4().hex[:12]
        base: dict = {
            "embedded": {"home": self.home},
            "graph": {"name": tag},
            "postgres": {"db_schema": tag, "pool_min_size": 1, "pool_max_size": 8},
            "redis": {"key_prefix": f"{tag}:"},
            "embedding": {"model": TEST_MODEL, "dimension": TEST_DIMENSION},
        }
        if self.neo4j is not None:
            base["graph"].update(uri=self.neo4j.uri, user=self.neo4j.user, password=self.neo4j.password,
                                 database="neo4j", max_retry_seconds=5)
        for section, values in overrides.items():
            base.setdefault(section, {}).update(values)
        return load_settings(**base)

    def graph_store(self, settings: Settings) -> GraphStore:
        """A raw graph store on the namespace's graph (the adapter the settings select, as the engine opens it)."""
        return make_graph_store(settings, falkordb_socket=str(self.endpoints.falkordb_socket))

    async def drop_graph(self, settings: Settings) -> None:
        """Empty the namespace's graph (on Neo4j: the shared database, see :func:`wipe_neo4j`)."""
        graph = self.graph_store(settings)
        try:
            if self.neo4j is not None:
                await wipe_neo4j(graph)
            else:
                await graph.drop_all()
        finally:
            await graph.close()

    async def drop(self, settings: Settings) -> None:
        """Remove everything the namespace stored: graph, PostgreSQL schema, Redis keys."""
        await self.drop_graph(settings)
        redis = aioredis.Redis(unix_socket_path=str(self.endpoints.falkordb_socket))
        try:
            keys = [k async for k in redis.scan_iter(match=settings.redis.key_prefix + "*")]
            if keys:
                await redis.delete(*keys)
        finally:
            await redis.aclose()
        async with await psycopg.AsyncConnection.connect(self.endpoints.postgres_dsn, autocommit=True) as conn:
            await conn.execute(pgsql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(
                pgsql.Identifier(settings.postgres.db_schema)))


async def wipe_neo4j(graph: GraphStore) -> None:
    """Empty the shared Neo4j database: every node; the schema too if it was made for another embedding model."""
    meta = await graph.read("MATCH (m:AgentxMeta {key: 'embedding'}) RETURN m.model AS model, m.dimension AS dimension")
    if meta and meta[0] != {"model": TEST_MODEL, "dimension": TEST_DIMENSION}:
        await graph.drop_all()
    else:
        await graph.write("MATCH (n) DETACH DELETE n")


@pytest.fixture(scope="session")
def namespaces_by_backend(embedded_stack, embedded_home):
    """One :class:`Namespaces` per backend, made when first asked for (Neo4j starts only then)."""
    made: dict[str, Namespaces] = {}

    def get(backend: str, request) -> Namespaces:
        if backend not in made:
            neo4j = request.getfixturevalue("neo4j_server") if backend == "neo4j" else None
            made[backend] = Namespaces(backend, embedded_home, embedded_stack[1], neo4j)
        return made[backend]

    return get


@pytest.fixture(scope="session")
def namespaces(request, backend, namespaces_by_backend) -> Namespaces:
    """The namespace maker of the current backend (session scope, so module-scoped fixtures can use it)."""
    return namespaces_by_backend(backend, request)


def make_settings(home: Path, **overrides) -> Settings:
    """Settings for an isolated namespace on the embedded FalkorDB (for tests that run their own servers)."""
    return Namespaces("falkordb", home, None, None).new(**overrides)


@pytest.fixture
def settings(namespaces):
    """A factory of fresh, isolated settings on the current backend, all cleaned up after the test."""
    made: list[Settings] = []
    if namespaces.neo4j is not None:  # a previous test that died half-way must not leak into this one
        asyncio.run(namespaces.drop_graph(namespaces.new()))

    def factory(**overrides) -> Settings:
        s = namespaces.new(**overrides)
        made.append(s)
        return s

    yield factory
    for s in made:
        asyncio.run(namespaces.drop(s))


@pytest.fixture
def memory(settings):
    """A sync AgentMemory on an isolated namespace, with the deterministic test embedder; its default user is
    alice (other users are passed explicitly)."""
    from agentx_memory import AgentMemory

    with AgentMemory(settings(), user_id="alice") as mem:
        yield mem


# --- helpers ---------------------------------------------------------------------------------------------------------

def cli_env(settings: Settings, **extra: str) -> dict[str, str]:
    """The process environment that points a CLI subprocess at a test namespace (no inherited AGENTX_ variable)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTX_")}
    env.update({
        "AGENTX_HOME": str(settings.embedded.home),
        "AGENTX_GRAPH__NAME": settings.graph.name,
        "AGENTX_POSTGRES__DB_SCHEMA": settings.postgres.db_schema,
        "AGENTX_REDIS__KEY_PREFIX": settings.redis.key_prefix,
        "AGENTX_EMBEDDING__MODEL": settings.embedding.model,
        "AGENTX_EMBEDDING__DIMENSION": str(settings.embedding.dimension),
    })
    if settings.graph.uri:
        env.update({
            "AGENTX_GRAPH__URI": settings.graph.uri, "AGENTX_GRAPH__USER": settings.graph.user,
            "AGENTX_GRAPH__PASSWORD": settings.graph.password, "AGENTX_GRAPH__DATABASE": settings.graph.database,
            "AGENTX_GRAPH__MAX_RETRY_SECONDS": str(settings.graph.max_retry_seconds),
        })
    env.update(extra)
    return env


def gread(memory, query: str, params: dict | None = None) -> list[dict]:
    """An ad-hoc read query on a sync memory's own graph connection (run on its event loop)."""
    return memory._portal.run(memory.core.ctx.graph.read(query, params or {}))


def sql(memory, query: str, params=None) -> list[dict]:
    """An ad-hoc SQL query in a sync memory's own PostgreSQL schema."""
    return memory._portal.run(memory.core.ctx.postgres.fetch(query, params))


def run(coro):
    """Run a coroutine to completion (for async-API tests without a plugin)."""
    return asyncio.run(coro)
