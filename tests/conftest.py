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

Isolation. Each test gets its own PostgreSQL schema and Redis key prefix, under a random tag no other test used. On
FalkorDB it also gets its own graph. Neo4j Community has a single user database, so Neo4j tests share it: it is emptied
after each test and checked empty before the next (nodes only; the schema stays unless the test used another embedding
model, then everything is dropped).

Template. A namespace's PostgreSQL schema comes already migrated, so a test does not pay for the migrations when its
memory opens: the schema was made ahead of time, by the engine's own ``migrate``, while the previous test's body ran
(see ``_SpareNamespace``). ``settings(migrated=False)`` gives an empty one, for tests of migration itself. Graphs are
not templated (see ``_SpareNamespace`` for why).
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import tempfile
import threading
import uuid
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, LiteralString, TypeVar

import pytest

from agentx_memory.backends import StoreLocations, drop_namespace, locate_stores, make_graph_store
from agentx_memory.graph.port import GraphStore
from agentx_memory.runtime import EmbeddedStack
from agentx_memory.settings import Settings, load_settings
from agentx_memory.sql.postgres import migrate

if TYPE_CHECKING:
    import neo4j as neo4j_driver

T = TypeVar("T")

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
    """Where Neo4j is required (CI), a skipped Neo4j case is reported as a failure, whatever skipped it. (A strict
    xfail ran and failed as recorded: it is a known defect on record, not a skip.)"""
    outcome = yield
    report = outcome.get_result()
    callspec = getattr(item, "callspec", None)
    if (report.skipped and not hasattr(report, "wasxfail") and os.environ.get(REQUIRE_NEO4J) and callspec is not None
            and callspec.params.get("backend") == "neo4j"):
        report.outcome = "failed"
        report.longrepr = f"{REQUIRE_NEO4J} is set: a skipped Neo4j case fails ({report.longrepr})"


# --- namespaces ------------------------------------------------------------------------------------------------------

def _run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine to completion from sync code, also when this thread already runs an event loop (a factory
    called inside an async test body): then on a thread of its own."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()


class _SpareNamespace:
    """One namespace whose PostgreSQL schema was migrated ahead of time, handed out by :meth:`Namespaces.new`.

    Its schema is made by the engine's own ``migrate`` under a fresh random tag no test has used, so taking it costs
    nothing and a test sees exactly what a freshly migrated schema has. The graph is left alone: a new graph gets its
    schema in ~15 ms when the memory opens (a FalkorDB ``GRAPH.COPY`` of a template graph keeps the indexes and
    constraints but takes ~60 ms), Neo4j's one database keeps its schema across tests anyway, and store tests apply
    their own graph schema to a namespace's graph.

    After a test took the spare, the next one is made on a background thread while that test's body runs
    (:func:`pytest_runtest_call`), so the migration overlaps the test instead of adding to the next test's setup; a
    test body that opens a memory of its own may wait for it on the migrations' advisory lock, no longer than it used
    to migrate its own schema. A spare made on an earlier UTC day is thrown away: the audit-log day partitions a
    migration creates depend on the date.
    """

    def __init__(self, namespaces: Namespaces, stores: StoreLocations) -> None:
        self._namespaces, self._stores = namespaces, stores
        self._tag: str | None = None
        self._day: date | None = None
        self._worker: threading.Thread | None = None

    def _ready(self) -> bool:
        return self._tag is not None and self._day == _utc_day()

    async def _make(self) -> None:
        """Make a spare unless a usable one is waiting."""
        if self._ready():
            return
        await self._drop_waiting()
        tag, day = _new_tag(), _utc_day()
        await migrate(self._stores.postgres_dsn, tag, dimension=TEST_DIMENSION, model=TEST_MODEL)
        self._tag, self._day = tag, day

    async def _drop_waiting(self) -> None:
        tag, self._tag = self._tag, None
        if tag is not None:
            await drop_namespace(self._namespaces.settings_for(tag), graph=False, stores=self._stores)

    def _join(self) -> None:
        if self._worker is not None:
            self._worker.join()
            self._worker = None

    def make_in_background(self) -> None:
        """Start making the next spare on a thread of its own, unless one is waiting or being made."""
        if self._worker is not None or self._ready():
            return

        def work() -> None:
            # A failure leaves no spare: take() then makes one itself and reports the error.
            with suppress(Exception):
                asyncio.run(self._make())

        self._worker = threading.Thread(target=work, name="agentx-test-spare-namespace", daemon=True)
        self._worker.start()

    def take(self) -> str:
        """The spare's tag (made now if none is waiting); the caller owns that namespace from now on."""
        self._join()
        if not self._ready():
            _run_sync(self._make())
        tag, self._tag = self._tag, None
        assert tag is not None
        return tag

    def discard(self) -> None:
        """Drop the waiting spare, if any (end of session)."""
        self._join()
        _run_sync(self._drop_waiting())


class Namespaces:
    """Makes and drops isolated test namespaces on one backend (see the module docstring for what isolates them)."""

    def __init__(self, backend: str, home: Path, endpoints, neo4j: Neo4jEndpoint | None):
        self.backend, self.home, self.endpoints, self.neo4j = backend, home, endpoints, neo4j
        self._stores = None if endpoints is None else StoreLocations(
            postgres_dsn=endpoints.postgres_dsn, redis_url=endpoints.falkordb_url,
            falkordb_socket=str(endpoints.falkordb_socket))
        self._spare = None if self._stores is None else _SpareNamespace(self, self._stores)
        self._driver: neo4j_driver.Driver | None = None
        #: True once :meth:`new` handed out the spare; :func:`pytest_runtest_call` then makes the next one.
        self.spare_taken = False

    def settings_for(self, tag: str, **overrides) -> Settings:
        """Settings for the namespace ``tag``; ``overrides`` are per-section dicts (``embedding={...}``)."""
        base: dict = {
            "embedded": {"home": self.home},
            "graph": {"name": tag},
            "postgres": {"db_schema": tag, "pool_min_size": 1, "pool_max_size": 8},
            "redis": {"key_prefix": f"{tag}:"},
            "embedding": {"model": TEST_MODEL, "dimension": TEST_DIMENSION},
            "llm": {"allow_paid_calls": False},  # no test reaches a paid API; local wire-format servers still answer
        }
        if self.neo4j is not None:
            base["graph"].update(uri=self.neo4j.uri, user=self.neo4j.user, password=self.neo4j.password,
                                 database="neo4j", max_retry_seconds=5)
        for section, values in overrides.items():
            base.setdefault(section, {}).update(values)
        return load_settings(**base)

    def new(self, *, migrated: bool = True, **overrides) -> Settings:
        """Settings for a fresh namespace no test has used; ``overrides`` are per-section dicts (``embedding={...}``).

        With the test embedding model (and the session's servers known), its PostgreSQL schema comes already migrated
        (see :class:`_SpareNamespace`); its graph is empty. ``migrated=False``, another embedding model, or an
        explicit graph name / schema give an empty schema, for tests of migration itself.
        """
        embedding = {"model": TEST_MODEL, "dimension": TEST_DIMENSION, **overrides.get("embedding", {})}
        named = "name" in overrides.get("graph", {}) or "db_schema" in overrides.get("postgres", {})
        if (not migrated or self._spare is None or named
                or (embedding["model"], embedding["dimension"]) != (TEST_MODEL, TEST_DIMENSION)):
            return self.settings_for(_new_tag(), **overrides)
        self.spare_taken = True
        return self.settings_for(self._spare.take(), **overrides)

    def graph_store(self, settings: Settings) -> GraphStore:
        """A raw graph store on the namespace's graph (the adapter the settings select, as the engine opens it)."""
        return make_graph_store(settings, falkordb_socket=str(self.endpoints.falkordb_socket))

    # Neo4j: one database for every test, emptied through a session-long driver (a driver per wipe costs more than
    # the wipe itself).

    def _wipe_driver(self) -> neo4j_driver.Driver:
        assert self.neo4j is not None
        if self._driver is None:
            import neo4j

            auth = (self.neo4j.user, self.neo4j.password) if self.neo4j.password else None
            self._driver = neo4j.GraphDatabase.driver(self.neo4j.uri, auth=auth)
        return self._driver

    def _neo4j_query(self, query: LiteralString) -> list[dict]:
        records, _, _ = self._wipe_driver().execute_query(query, database_="neo4j")
        return [record.data() for record in records]

    def ensure_empty(self) -> None:
        """On Neo4j: empty the shared database if anything is in it (a test that died half-way, a store test)."""
        if self.neo4j is not None and self._neo4j_query("MATCH (n) RETURN 1 AS found LIMIT 1"):
            _run_sync(self.drop_graph(self.settings_for(_new_tag())))

    async def drop_graph(self, settings: Settings) -> None:
        """Empty the namespace's graph (on Neo4j: the shared database, see :func:`wipe_neo4j`)."""
        if self.neo4j is not None:
            meta = await asyncio.to_thread(self._neo4j_query, _META_QUERY)
            if not meta or meta[0] == _TEST_META:
                await asyncio.to_thread(self._neo4j_query, "MATCH (n) DETACH DELETE n")
                return
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
        if self.neo4j is not None:
            await self.drop_graph(settings)
        await drop_namespace(settings, graph=self.neo4j is None, stores=self._stores or await locate_stores(settings))

    def make_next_spare(self) -> None:
        """If :meth:`new` handed out the spare, start making the next one in the background."""
        if self._spare is not None and self.spare_taken:
            self.spare_taken = False
            self._spare.make_in_background()

    def close(self) -> None:
        """End of session: drop the waiting spare and close the Neo4j driver."""
        try:
            if self._spare is not None:
                self._spare.discard()
        finally:
            if self._driver is not None:
                self._driver.close()


_META_QUERY: LiteralString = (
    "MATCH (m:AgentxMeta {key: 'embedding'}) RETURN m.model AS model, m.dimension AS dimension"
)
_TEST_META = {"model": TEST_MODEL, "dimension": TEST_DIMENSION}


def _new_tag() -> str:
    return "t" + uuid.uuid4().hex[:12]


def _utc_day() -> date:
    return datetime.now(UTC).date()


async def wipe_neo4j(graph: GraphStore) -> None:
    """Empty the shared Neo4j database: every node; the schema too if it was made for another embedding model."""
    meta = await graph.read(_META_QUERY)
    if meta and meta[0] != _TEST_META:
        await graph.drop_all()
    else:
        await graph.write("MATCH (n) DETACH DELETE n")


#: The session's :class:`Namespaces`, one per backend in use (see :func:`namespaces_by_backend`).
_SESSION_NAMESPACES: dict[str, Namespaces] = {}


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    """As a test body starts, make the next spare namespace in the background if its setup took the waiting one."""
    for namespaces in _SESSION_NAMESPACES.values():
        namespaces.make_next_spare()
    yield


@pytest.fixture(scope="session")
def namespaces_by_backend(embedded_stack, embedded_home):
    """One :class:`Namespaces` per backend, made when first asked for (Neo4j starts only then)."""
    made = _SESSION_NAMESPACES

    def get(backend: str, request) -> Namespaces:
        if backend not in made:
            neo4j = request.getfixturevalue("neo4j_server") if backend == "neo4j" else None
            made[backend] = Namespaces(backend, embedded_home, embedded_stack[1], neo4j)
        return made[backend]

    yield get
    try:
        for namespaces in made.values():
            namespaces.close()
    finally:
        made.clear()


@pytest.fixture(scope="session")
def namespaces(request, backend, namespaces_by_backend) -> Namespaces:
    """The namespace maker of the current backend (session scope, so module-scoped fixtures can use it)."""
    return namespaces_by_backend(backend, request)


def make_settings(home: Path, **overrides) -> Settings:
    """Settings for an isolated namespace on the embedded FalkorDB (for tests that run their own servers)."""
    return Namespaces("falkordb", home, None, None).new(**overrides)


@pytest.fixture
def settings(namespaces):
    """A factory of fresh, isolated namespaces on the current backend, their PostgreSQL schema already migrated
    (``settings(migrated=False)``: not migrated), all dropped after the test."""
    made: list[Settings] = []
    namespaces.ensure_empty()  # Neo4j: whatever a previous test left behind must not leak into this one

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
        "AGENTX_LLM__ALLOW_PAID_CALLS": str(settings.llm.allow_paid_calls).lower(),
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


def gwrite(memory, query: str, params: dict | None = None) -> list[dict]:
    """An ad-hoc write query on a sync memory's own graph connection (run on its event loop)."""
    return memory._portal.run(memory.core.ctx.graph.write(query, params or {}))


def sql(memory, query: str, params=None) -> list[dict]:
    """An ad-hoc SQL query in a sync memory's own PostgreSQL schema."""
    return memory._portal.run(memory.core.ctx.postgres.fetch(query, params))


_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.IGNORECASE)


def content_text(value: object) -> str:
    """The text a value holds, to search for leaked content: every string in it (dict keys included), with ids left
    out. Numbers, timestamps and ids are not content, and they can contain any four digits: the PIN 4711 was once
    "found" in a microsecond 471123 and once in a fact id ``…-047a-4711-b498-…``."""
    parts: list[str] = []

    def walk(item: object) -> None:
        if isinstance(item, str):
            parts.append(_UUID.sub("<id>", item))
        elif isinstance(item, dict):
            for key, sub in item.items():
                walk(key)
                if not (isinstance(key, str) and (key == "id" or key.endswith(("_id", "_ids")))):
                    walk(sub)
        elif isinstance(item, (list, tuple, set, frozenset)):
            for sub in item:
                walk(sub)

    walk(value)
    return "\n".join(parts)


def run(coro):
    """Run a coroutine to completion (for async-API tests without a plugin)."""
    return asyncio.run(coro)
