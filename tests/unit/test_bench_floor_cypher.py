"""The scale benchmark's write-floor Cypher is shared text: rendered by each dialect, it is that database's Cypher.

FalkorDB's rendering is the statements the floor ran before they were shared (``vecf32``); Neo4j's rendering is
linted with Neo4j's own Cypher front end, like the engine's statements (``tests/unit/test_neo4j_lint.py``; needs
``node`` and ``npm ci --prefix tests/cypher_lint``, and fails with that instruction without them).
"""

from __future__ import annotations

import pytest

from agentx_memory.bench.scale import statements
from agentx_memory.bench.scale.floors_read import GRAPH_VECTOR_TOP_K
from agentx_memory.graph.dialects import FalkorDialect, Neo4jDialect
from agentx_memory.models import RELATIONSHIP_TYPES
from tests.cypherlint import errors_of, lint_statements, lint_unavailable_reason
from tests.unit.test_neo4j_lint import cypher_module_statements

STATEMENTS = {**cypher_module_statements(statements), "GRAPH_VECTOR_TOP_K": GRAPH_VECTOR_TOP_K}


def test_every_floor_statement_is_collected():
    assert {"FLOOR_TURNS", "FLOOR_FOLLOWED_BY", "FLOOR_ENTITIES", "FLOOR_FACTS", "FLOOR_ABOUT"} <= set(STATEMENTS)
    assert {f"FLOOR_RELATIONSHIPS[{t!r}]" for t in RELATIONSHIP_TYPES} <= set(STATEMENTS)
    assert {f"DELETE_FLOOR_NODES[{label!r}]" for label in ("Turn", "Entity", "Fact", "Conversation")} <= set(STATEMENTS)


def test_vectors_go_through_the_dialect():
    for name in ("FLOOR_TURNS", "FLOOR_ENTITIES", "FLOOR_FACTS"):
        assert "vecf32" not in STATEMENTS[name] and "@vec(row.embedding)" in STATEMENTS[name]
        assert "vecf32(row.embedding)" in FalkorDialect().render(STATEMENTS[name])
        assert "row.embedding" in Neo4jDialect().render(STATEMENTS[name])
        assert "@" not in Neo4jDialect().render(STATEMENTS[name])


def test_every_dialect_has_a_namespace_rule():
    assert set(statements.OWN_GRAPH_PER_NAME) == {FalkorDialect.name, Neo4jDialect.name}
    assert statements.OWN_GRAPH_PER_NAME[FalkorDialect.name] and not statements.OWN_GRAPH_PER_NAME[Neo4jDialect.name]


@pytest.fixture(scope="module")
def diagnostics() -> dict[str, list[dict]]:
    """Every statement's Neo4j rendering linted in one node process."""
    reason = lint_unavailable_reason()
    if reason:
        pytest.fail(f"the Neo4j Cypher linter cannot run: {reason}")
    names = list(STATEMENTS)
    results = lint_statements([Neo4jDialect().render(STATEMENTS[n]) for n in names])
    return dict(zip(names, results, strict=True))


@pytest.mark.parametrize("name", list(STATEMENTS))
def test_floor_statement_passes_neo4j_lint(name, diagnostics):
    errors = errors_of(diagnostics[name])
    assert not errors, (f"{name} fails Neo4j's Cypher lint:\n" + "\n".join(errors)
                        + f"\n--- statement ---\n{Neo4jDialect().render(STATEMENTS[name])}")
