"""A real Neo4j 5 for the tests in this directory, or a skip that says how to get one.

Where the server comes from, in order:

1. ``AGENTX_TEST_NEO4J_URI`` (with ``AGENTX_TEST_NEO4J_USER``, default ``neo4j``, and ``AGENTX_TEST_NEO4J_PASSWORD``):
   a server you run, e.g. ``NEO4J_PASSWORD=agentx-dev-password docker compose up -d neo4j`` then
   ``AGENTX_TEST_NEO4J_URI=bolt://localhost:7687 AGENTX_TEST_NEO4J_PASSWORD=agentx-dev-password python -m pytest tests/neo4j``.
   **The tests wipe that database** (every node, index and constraint), so never point them at data you keep.
2. A Docker engine: testcontainers starts ``neo4j:5.26`` for the session and removes it afterwards.
3. Otherwise every test that needs the server is skipped with the reason above.

Neo4j Community has one user database, so the tests run one after another on it and ``neo4j_database`` empties it
before and after each test.
"""

from __future__ import annotations

import asyncio
import os
import secrets

import pytest

NEO4J_IMAGE = "neo4j:5.26"

HOW_TO_RUN = (
    "set AGENTX_TEST_NEO4J_URI=bolt://localhost:7687 (plus AGENTX_TEST_NEO4J_USER / AGENTX_TEST_NEO4J_PASSWORD; "
    "the tests WIPE that database), e.g. `NEO4J_PASSWORD=agentx-dev-password docker compose up -d neo4j` then "
    "`AGENTX_TEST_NEO4J_URI=bolt://localhost:7687 AGENTX_TEST_NEO4J_PASSWORD=agentx-dev-password "
    f"python -m pytest tests/neo4j`; or make a Docker engine reachable so testcontainers can run {NEO4J_IMAGE}"
)


def _docker_problem() -> str | None:
    """Why no Docker engine can be used (None when one answers)."""
    try:
        import docker
    except ImportError:
        return "the docker package is missing (pip install -e '.[dev]')"
    try:
        client = docker.from_env(timeout=5)
        try:
            client.ping()
        finally:
            client.close()
    except Exception as exc:  # docker raises DockerException, requests/urllib3 errors, FileNotFoundError, ...
        return f"no Docker engine ({type(exc).__name__}: {str(exc)[:160]})"
    return None


@pytest.fixture(scope="session")
def neo4j_server():
    """``(uri, user, password)`` of a Neo4j 5 server for the session, or skip saying how to run these tests."""
    uri = os.environ.get("AGENTX_TEST_NEO4J_URI")
    if uri:
        yield uri, os.environ.get("AGENTX_TEST_NEO4J_USER", "neo4j"), os.environ.get("AGENTX_TEST_NEO4J_PASSWORD", "")
        return
    problem = _docker_problem()
    if problem:
        pytest.skip(f"Neo4j tests need a Neo4j 5 server and none is configured: {problem}. To run them: {HOW_TO_RUN}")
    from testcontainers.community.neo4j import Neo4jContainer

    password = "agentx-" + secrets.token_hex(8)
    container = Neo4jContainer(NEO4J_IMAGE, password=password)
    container.start()
    try:
        yield container.get_connection_url(), "neo4j", password
    finally:
        container.stop()


async def _wipe(uri: str, user: str, password: str) -> None:
    from agentx_memory.graph.neo4j import Neo4jGraphStore

    store = Neo4jGraphStore(uri=uri, user=user, password=password)
    try:
        await store.drop_all()
    finally:
        await store.close()


@pytest.fixture
def neo4j_database(neo4j_server):
    """The session's Neo4j, emptied (nodes, indexes, constraints) before and after the test."""
    asyncio.run(_wipe(*neo4j_server))
    yield neo4j_server
    asyncio.run(_wipe(*neo4j_server))
