"""The graph-store tests of ``tests/integration/test_graph_store.py``, run on Neo4j 5.

The bodies are shared, not copied: this module takes every ``test_*`` function and the ``graph_backend`` fixture
from there and overrides the ``backend`` parameter with ``neo4j`` (the server comes from ``tests/neo4j/conftest.py``:
``AGENTX_TEST_NEO4J_URI`` or testcontainers; without either the tests are skipped with a reason that says how to run
them). The last test needs no server and always runs.
"""

from __future__ import annotations

import pytest

from tests.conftest import run
from tests.integration import test_graph_store as shared

pytestmark = pytest.mark.neo4j

# Every shared test body, collected here as well (pytest collects test functions found in a module's namespace).
globals().update({name: obj for name, obj in vars(shared).items() if name.startswith("test_") and callable(obj)})
graph_backend = shared.graph_backend


@pytest.fixture(params=["neo4j"])
def backend(request) -> str:
    """Run the shared store tests on Neo4j."""
    return request.param


def test_unreachable_neo4j_is_storage_unavailable_without_any_server(tmp_path):
    """The driver's errors are wrapped even when no Neo4j exists anywhere (runs without a server)."""

    async def body():
        store = shared.Neo4jBackend.connect_to_nothing(tmp_path)
        try:
            await shared._assert_every_call_is_unavailable(store)
        finally:
            await store.close()

    run(body())
