"""Tests of the Cypher lint harness itself (tests/cypherlint.py + tests/cypher_lint/lint.mjs).

The harness lints statements with Neo4j's own Cypher front end. These tests show that valid Neo4j 5 statements of
every kind the Neo4j adapter emits pass, and that the kinds of mistakes we rely on it for are caught. Every statement
here goes through one node process (the module-scoped fixture lints them all in one batch).
"""

from __future__ import annotations

import pytest

from tests import cypherlint
from tests.cypherlint import CypherLintUnavailable, errors_of, is_parameter_notice, lint_statements

VALID = {
    "constraint_unique": "CREATE CONSTRAINT entity_id IF NOT EXISTS FOR (e:Entity) REQUIRE e.id IS UNIQUE",
    "constraint_node_key": (
        "CREATE CONSTRAINT entity_key IF NOT EXISTS FOR (e:Entity) "
        "REQUIRE (e.user_id, e.project_id, e.name) IS NODE KEY"
    ),
    "vector_index": (
        "CREATE VECTOR INDEX turn_embedding IF NOT EXISTS FOR (t:Turn) ON (t.embedding) "
        "OPTIONS {indexConfig: {`vector.dimensions`: 384, `vector.similarity_function`: 'cosine'}}"
    ),
    "fulltext_index": (
        "CREATE FULLTEXT INDEX entity_text IF NOT EXISTS FOR (n:Entity|Fact) ON EACH [n.name, n.text] "
        "OPTIONS {indexConfig: {`fulltext.analyzer`: 'english'}}"
    ),
    "composite_index": "CREATE INDEX entity_user_name IF NOT EXISTS FOR (n:Entity) ON (n.user_id, n.name)",
    "relationship_index": "CREATE INDEX relates_type IF NOT EXISTS FOR ()-[r:RELATES]-() ON (r.type)",
    "drop_index": "DROP INDEX turn_embedding IF EXISTS",
    "show_indexes": "SHOW INDEXES YIELD name, type, state WHERE type = 'VECTOR' RETURN name, state",
    "merge": (
        "MERGE (e:Entity {user_id: $user_id, name: $name}) "
        "ON CREATE SET e.id = $id, e.created_at = datetime(), e.salience = $salience "
        "ON MATCH SET e.last_accessed = datetime(), e.access_count = coalesce(e.access_count, 0) + 1 "
        "RETURN e.id AS id"
    ),
    "unwind_merge": (
        "UNWIND $rows AS row MERGE (t:Turn {id: row.id}) SET t += row.props "
        "WITH t, row MATCH (c:Conversation {id: row.conversation_id}) MERGE (c)-[:HAS_TURN]->(t)"
    ),
    "unwind_relationships": (
        "UNWIND $rows AS row MATCH (a:Entity {id: row.src}) MATCH (b:Entity {id: row.dst}) "
        "MERGE (a)-[r:RELATES {type: row.type}]->(b) ON CREATE SET r.created_at = datetime() RETURN count(r) AS n"
    ),
    "vector_query": (
        "CALL db.index.vector.queryNodes('turn_embedding', $k, $vector) YIELD node, score "
        "WHERE node.user_id = $user_id RETURN node.id AS id, score ORDER BY score DESC LIMIT $limit"
    ),
    "fulltext_query": (
        "CALL db.index.fulltext.queryNodes('entity_text', $query) YIELD node, score "
        "RETURN node.id AS id, score LIMIT $limit"
    ),
    "vector_similarity_function": (
        "MATCH (e:Entity {user_id: $user_id}) WHERE e.embedding IS NOT NULL "
        "WITH e, vector.similarity.cosine(e.embedding, $vector) AS s ORDER BY s DESC LIMIT $k RETURN e.id AS id, s"
    ),
    "set_vector_property": "MATCH (t:Turn {id: $id}) CALL db.create.setNodeVectorProperty(t, 'embedding', $vector)",
    "in_transactions": (
        "MATCH (t:Turn) WHERE t.created_at < $cutoff CALL (t) { DETACH DELETE t } IN TRANSACTIONS OF 1000 ROWS"
    ),
    "subquery_union": (
        "CALL () { MATCH (f:Fact {user_id: $user_id}) RETURN f.id AS id UNION "
        "MATCH (g:Goal {user_id: $user_id}) RETURN g.id AS id } RETURN id LIMIT 100"
    ),
    "traversal": (
        "MATCH (e:Entity {id: $id})-[r*1..2]-(n:Entity) WHERE n.user_id = $user_id "
        "RETURN DISTINCT n.id AS id, size(r) AS hops LIMIT $limit"
    ),
    "optional_match_collect": (
        "MATCH (c:Conversation {id: $id}) OPTIONAL MATCH (c)-[:HAS_TURN]->(t:Turn) "
        "WITH c, t ORDER BY t.seq RETURN c.id AS id, collect(t {.id, .content}) AS turns"
    ),
    "explicit_cypher5_prefix": "CYPHER 5 MATCH (n:Entity {user_id: $user_id}) RETURN count(n) AS n",
}

INVALID = {
    # the three classes the brief requires
    "syntax_error": ("MATCH (n:Entity RETURN n", "Invalid input 'RETURN'"),
    "unknown_procedure": ("CALL db.nonexistent()", "Procedure db.nonexistent is not present in the database"),
    "undefined_variable": ("MATCH (n:Entity) RETURN m", "Variable `m` not defined"),
    # further classes it catches
    "misspelled_keyword": ("MATCH (n:Entity) RETRN n", "Invalid input 'RETRN'"),
    "unknown_function": ("RETURN nosuchfn(1) AS x", "Function nosuchfn is not present in the database"),
    "apoc_not_installed": (
        "RETURN apoc.coll.sum([1, 2]) AS x",
        "Function apoc.coll.sum is not present in the database",
    ),
    "procedure_arity": (
        "CALL db.index.vector.queryNodes('turn_embedding', 10) YIELD node RETURN node",
        "Procedure call does not provide the required number of arguments",
    ),
    "unknown_yield_column": (
        "CALL db.index.vector.queryNodes('turn_embedding', 10, $v) YIELD nodes RETURN nodes",
        "Unknown procedure output: `nodes`",
    ),
    "variable_not_imported_into_subquery": (
        "MATCH (n) CALL () { RETURN n.x AS y } RETURN y",
        "Variable `n` not defined",
    ),
    "aggregation_scope": (
        "MATCH (n:Entity) WITH n.name AS name, count(*) AS c ORDER BY n.salience RETURN name",
        "it is not possible to access variables declared before the WITH/RETURN",
    ),
    "undirected_create": (
        "CREATE (a:Entity)-[:RELATES]-(b:Entity)",
        "Only directed relationships are supported in CREATE",
    ),
    "type_mismatch": ("RETURN 'a' * 3 AS x", "Type mismatch"),
    "return_not_last": ("MATCH (n) RETURN n MATCH (m) RETURN m", "RETURN can only be used at the end of the query"),
    "second_statement_checked": ("MATCH (n) RETURN n; MATCH (m) RETURN q", "Variable `q` not defined"),
    # statements without a version prefix are Cypher 5: LET is a Cypher 25 clause
    "cypher25_clause_in_cypher5": ("MATCH (n) LET x = 1 RETURN x", "Invalid input 'LET'"),
}

# Cypher 5 still accepts CALL { } without a scope clause, with a deprecation warning (not an error).
DEPRECATED = "MATCH (n) CALL { WITH n RETURN n.x AS y } RETURN y"


@pytest.fixture(scope="module")
def linted() -> dict[str, list[dict]]:
    names = list(VALID) + list(INVALID) + ["deprecated"]
    statements = list(VALID.values()) + [statement for statement, _ in INVALID.values()] + [DEPRECATED]
    return dict(zip(names, lint_statements(statements), strict=True))


@pytest.mark.parametrize("name", list(VALID))
def test_valid_neo4j5_statement_passes(linted, name):
    diagnostics = linted[name]
    assert errors_of(diagnostics) == [], f"{VALID[name]}\n{diagnostics}"


@pytest.mark.parametrize("name", list(INVALID))
def test_invalid_statement_is_caught(linted, name):
    statement, expected = INVALID[name]
    errors = errors_of(linted[name])
    assert errors, f"not caught: {statement}\n{linted[name]}"
    assert any(expected in e for e in errors), f"{statement}: expected {expected!r} in {errors}"


def test_parameters_yield_only_notices_that_errors_of_drops(linted):
    diagnostics = linted["vector_query"]
    notices = [d for d in diagnostics if is_parameter_notice(d)]
    assert {d["message"] for d in notices} == {
        "Parameter $k is not defined.",
        "Parameter $vector is not defined.",
        "Parameter $user_id is not defined.",
        "Parameter $limit is not defined.",
    }
    assert all(d["severity"] == "error" for d in notices)  # the linter calls them errors: only errors_of drops them
    assert errors_of(diagnostics) == []


def test_errors_of_keeps_real_errors_and_drops_warnings():
    diagnostics = [
        {"severity": "error", "message": "Parameter $`a b` is not defined.", "line": 1, "column": 8},
        {"severity": "warning", "message": "Function id is deprecated.", "line": 1, "column": 1},
        {"severity": "error", "message": "Variable `m` not defined", "line": 2, "column": 3},
        {"severity": "error", "message": "Parameter $x is not defined. Also something else", "line": 1, "column": 1},
    ]
    assert errors_of(diagnostics) == [
        "line 2, column 3: Variable `m` not defined",
        "line 1, column 1: Parameter $x is not defined. Also something else",
    ]


def test_diagnostic_shape(linted):
    (diagnostic,) = linted["undefined_variable"]
    assert diagnostic["severity"] == "error"
    assert diagnostic["line"] == 1 and diagnostic["column"] == len("MATCH (n:Entity) RETURN ") + 1
    assert diagnostic["offsets"] == {"start": 24, "end": 25}


def test_warnings_are_reported_but_are_not_errors(linted):
    result = linted["deprecated"]
    assert any(d["severity"] == "warning" and "deprecated" in d["message"] for d in result)
    assert errors_of(result) == []


def test_results_keep_input_order_and_duplicates(linted):
    statements = [VALID["merge"], INVALID["syntax_error"][0], VALID["merge"]]
    results = lint_statements(statements)
    assert len(results) == 3
    assert errors_of(results[0]) == errors_of(results[2]) == []
    assert errors_of(results[1])


def test_missing_package_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setattr(cypherlint, "PACKAGE", tmp_path / "missing" / "package.json")
    with pytest.raises(CypherLintUnavailable, match=r"npm ci --prefix tests/cypher_lint"):
        lint_statements(["RETURN 'missing package' AS x"])


def test_missing_node_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(cypherlint, "_node", lambda: None)
    with pytest.raises(CypherLintUnavailable, match=r"`node` is not on PATH.*npm ci --prefix tests/cypher_lint"):
        lint_statements(["RETURN 'missing node' AS x"])


def test_non_string_statement_is_rejected():
    with pytest.raises(TypeError):
        lint_statements([b"RETURN 1"])  # type: ignore[list-item]
