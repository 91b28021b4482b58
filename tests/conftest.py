"""Shared fixtures: one embedded stack per test session, one isolated namespace per test.

Every integration test runs against the real embedded servers (FalkorDB + PostgreSQL 18 from the pip wheels),
started once in a temporary data directory. Each test gets its own graph name, PostgreSQL schema and Redis key
prefix, dropped afterwards, so tests never see each other's data.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import uuid
from pathlib import Path

import psycopg
import pytest
from psycopg import sql as pgsql

from agentx_memory.graph.falkordb import FalkorGraphStore
from agentx_memory.runtime import EmbeddedStack
from agentx_memory.settings import Settings, load_settings

TEST_DIMENSION = 64


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


def make_settings(home: Path, **overrides) -> Settings:
    """Settings for one isolated test namespace on the session's embedded stack."""
    tag = "t" + uuid.uuid4().hex[:12]
    base = {
        "embedded": {"home": home},
        "graph": {"name": tag},
        "postgres": {"db_schema": tag, "pool_min_size": 1, "pool_max_size": 8},
        "redis": {"key_prefix": f"{tag}:"},
        "embedding": {"model": "hash:test", "dimension": TEST_DIMENSION},
    }
    for section, values in overrides.items():
        base.setdefault(section, {}).update(values)
    return load_settings(**base)


async def _drop_namespace(settings: Settings, endpoints) -> None:
    graph = FalkorGraphStore(graph_name=settings.graph.name, unix_socket_path=str(endpoints.falkordb_socket))
    await graph.drop_all()
    keys = [k async for k in graph.redis.scan_iter(match=settings.redis.key_prefix + "*")]
    if keys:
        await graph.redis.delete(*keys)
    await graph.close()
    async with await psycopg.AsyncConnection.connect(endpoints.postgres_dsn, autocommit=True) as conn:
        await conn.execute(pgsql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(pgsql.Identifier(settings.postgres.db_schema)))


@pytest.fixture
def settings(embedded_stack, embedded_home):
    """Fresh, isolated settings (own graph, schema and key prefix), cleaned up after the test."""
    made = []

    def factory(**overrides) -> Settings:
        s = make_settings(embedded_home, **overrides)
        made.append(s)
        return s

    yield factory
    _, endpoints = embedded_stack
    for s in made:
        asyncio.run(_drop_namespace(s, endpoints))


@pytest.fixture
def memory(settings):
    """A sync AgentMemory on an isolated namespace, with the deterministic test embedder; its default user is
    alice (other users are passed explicitly)."""
    from agentx_memory import AgentMemory

    with AgentMemory(settings(), user_id="alice") as mem:
        yield mem


def gread(memory, query: str, params: dict | None = None) -> list[dict]:
    """An ad-hoc read query on a sync memory's own graph connection (run on its event loop)."""
    return memory._portal.run(memory.core.ctx.graph.read(query, params or {}))


def sql(memory, query: str, params=None) -> list[dict]:
    """An ad-hoc SQL query in a sync memory's own PostgreSQL schema."""
    return memory._portal.run(memory.core.ctx.postgres.fetch(query, params))


def run(coro):
    """Run a coroutine to completion (for async-API tests without a plugin)."""
    return asyncio.run(coro)
