"""Neo4j kept honest without a Neo4j: every statement the Neo4j adapter can emit is rendered through the Neo4j dialect
and linted with Neo4j's own Cypher front end (npm ``@neo4j-cypher/language-support``, see ``tests/cypherlint.py``).

Coverage is automatic: every public module-level ``str`` constant of :mod:`agentx_memory.graph.cypher`, and every
value of a public module-level ``dict`` of strings there (``CREATE_RELATIONSHIP``, ``ENTITY_NEIGHBOURS``, ...), plus
the schema DDL and the adapter's own statement forms. A new statement added to ``cypher.py`` is linted without
editing this file; a test below checks that domain code does not run inline Cypher that would escape this net.

Needs ``node`` (>= 18) and ``npm ci --prefix tests/cypher_lint``; without them the tests fail with that instruction
(they do not skip: CI must not pass silently without the lint).
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from pathlib import Path

import pytest

from agentx_memory.graph import cypher
from agentx_memory.graph.dialects import FalkorDialect, Neo4jDialect
from agentx_memory.graph.neo4j import drop_statement
from tests.cypherlint import errors_of, lint_statements, lint_unavailable_reason

REPO = Path(__file__).resolve().parents[2]
DIALECT = Neo4jDialect()
SCHEMA_DIMENSION = 384


def cypher_module_statements(module=cypher) -> dict[str, str]:
    """Every public module-level str constant, and every value of a public dict-of-str constant, by name."""
    found: dict[str, str] = {}
    for name, value in vars(module).items():
        if name.startswith("_"):
            continue
        if isinstance(value, str):
            found[name] = value
        elif isinstance(value, Mapping) and value and all(isinstance(v, str) for v in value.values()):
            for key, text in value.items():
                found[f"{name}[{key!r}]"] = text
    return found


def neo4j_statements() -> dict[str, str]:
    """Every statement the Neo4j adapter can send, rendered through the Neo4j dialect, by a readable name."""
    out = {name: DIALECT.render(text) for name, text in cypher_module_statements().items()}
    for i, text in enumerate(DIALECT.schema_statements(SCHEMA_DIMENSION)):
        out[f"schema[{i}] {' '.join(text.split()[:3])}"] = text
    # Neo4jGraphStore.drop_all: DROP for every name SHOW INDEXES / SHOW CONSTRAINTS lists
    out["drop_all: DROP INDEX"] = drop_statement("INDEX", "turn_embeddings")
    out["drop_all: DROP CONSTRAINT"] = drop_statement("CONSTRAINT", "turn_id_unique")
    out["drop_all: DROP INDEX (odd name)"] = drop_statement("INDEX", "index_`odd` name-1")
    # Neo4jGraphStore.explain prefixes a rendered statement with EXPLAIN
    out["explain: EXPLAIN SEARCH_STRATEGIES"] = "EXPLAIN " + DIALECT.render(cypher.SEARCH_STRATEGIES)
    return out


STATEMENTS = neo4j_statements()


@pytest.fixture(scope="module", autouse=True)
def diagnostics() -> dict[str, list[dict]]:
    """Lint every statement of this module, good and broken, in one node process (the harness caches the
    diagnostics per statement text, so the tests below start no further node process)."""
    reason = lint_unavailable_reason()
    if reason:
        pytest.fail(f"the Neo4j Cypher linter cannot run: {reason}")
    names = list(STATEMENTS)
    results = lint_statements([STATEMENTS[n] for n in names] + _negative_statements())
    return dict(zip(names, results, strict=False))  # the negative statements come after the named ones


@pytest.mark.parametrize("name", list(STATEMENTS))
def test_statement_passes_neo4j_lint(name, diagnostics):
    errors = errors_of(diagnostics[name])
    assert not errors, (
        f"{name} fails Neo4j's Cypher lint:\n" + "\n".join(errors) + f"\n--- statement ---\n{STATEMENTS[name]}"
    )


def test_every_statement_is_fully_rendered():
    for name, text in STATEMENTS.items():
        for marker in ("@vec(", "@cosine(", "@vector_search(", "@fulltext_search("):
            assert marker not in text, f"{name} still contains {marker}"


def test_collection_covers_the_module_and_its_dicts():
    names = set(cypher_module_statements())
    assert set(cypher.all_statements()) <= names  # the module's own list is a subset of what is linted
    for rel_type in cypher.CREATE_RELATIONSHIP:
        assert f"CREATE_RELATIONSHIP[{rel_type!r}]" in names
    for depth in cypher.ENTITY_NEIGHBOURS:
        assert f"ENTITY_NEIGHBOURS[{depth!r}]" in names
    for required in (
        "AWAIT_INDEXES",
        "EMBEDDING_META",
        "DELETE_ALL_NODES",
        "SHOW_CONSTRAINT_NAMES",
        "SHOW_INDEX_NAMES",
    ):
        assert required in names
    assert sum(n.startswith("schema[") for n in STATEMENTS) == len(DIALECT.schema_statements(SCHEMA_DIMENSION))


FUTURE_STATEMENT = "MATCH (n:Turn) RETURN n LIMT 5"
FUTURE_DICT = {"a": "MATCH (n:Turn RETURN n"}


def test_a_new_constant_is_collected_and_linted_automatically(monkeypatch):
    monkeypatch.setattr(cypher, "SOME_FUTURE_STATEMENT", FUTURE_STATEMENT, raising=False)
    monkeypatch.setattr(cypher, "SOME_FUTURE_DICT", FUTURE_DICT, raising=False)
    collected = cypher_module_statements()
    assert "SOME_FUTURE_STATEMENT" in collected and "SOME_FUTURE_DICT['a']" in collected
    results = lint_statements(
        [DIALECT.render(collected["SOME_FUTURE_STATEMENT"]), DIALECT.render(collected["SOME_FUTURE_DICT['a']"])]
    )
    assert all(errors_of(d) for d in results)


# --- the linter catches what it must (negative tests) --------------------------------------------------------------

BROKEN = {
    "syntax error": "@vector_search(Turn, $k, $embedding) WHERE node.user_id = $user_id RETRUN node, similarity",
    "unclosed pattern": "MATCH (t:Turn {id: $id RETURN t",
    "undefined variable": "MATCH (t:Turn {user_id: $user_id}) RETURN t.id AS id, x.name AS name",
    "unknown procedure": (
        "CALL db.index.vector.queryNode('turn_embeddings', $k, $embedding) YIELD node, score RETURN node"
    ),
    "unknown function": "MATCH (s:Strategy) RETURN vector.similarity.cosin(s.embedding, $embedding) AS similarity",
    "wrong yield column": "CALL db.index.fulltext.queryNodes('turn_fulltext', $q) YIELD node, similarity RETURN node",
}


@pytest.mark.parametrize("name", list(BROKEN))
def test_a_broken_statement_is_caught(name):
    (diags,) = lint_statements([DIALECT.render(BROKEN[name])])
    assert errors_of(diags), f"the linter accepted a broken statement ({name}): {diags}"


# The FalkorDB dialect's procedures and vecf32() do not exist on Neo4j: rendering through the wrong dialect must be
# caught, which shows the lint checks procedure and function names, not only syntax.
FALKOR_RENDERED = [
    FalkorDialect().render("@vector_search(Turn, $k, $embedding) RETURN node.id AS id, similarity"),
    FalkorDialect().render("MATCH (t:Turn {id: $id}) SET t.embedding = @vec($embedding)"),
    FalkorDialect().render("@fulltext_search(Turn, $q) RETURN node.id AS id, score"),
]
UNRENDERED = "MATCH (t:Turn {id: $id}) SET t.embedding = @vec($embedding) RETURN t"
PARAMETER_ONLY = "MATCH (t:Turn {id: $id}) RETURN t.content AS content"


def _negative_statements() -> list[str]:
    return ([DIALECT.render(t) for t in BROKEN.values()] + FALKOR_RENDERED + [UNRENDERED, PARAMETER_ONLY]
            + [DIALECT.render(FUTURE_STATEMENT)] + [DIALECT.render(t) for t in FUTURE_DICT.values()])


def test_falkordb_rendering_is_not_neo4j_cypher():
    for text, diags in zip(FALKOR_RENDERED, lint_statements(FALKOR_RENDERED), strict=True):
        assert errors_of(diags), f"not flagged: {text}"


def test_an_unrendered_marker_is_caught():
    (diags,) = lint_statements([UNRENDERED])
    assert errors_of(diags)


def test_parameter_notices_are_not_errors():
    (diags,) = lint_statements([PARAMETER_ONLY])
    assert any(d["severity"] == "error" for d in diags)  # the linter does report the undeclared $id ...
    assert errors_of(diags) == []  # ... and errors_of drops exactly that notice


# --- no inline Cypher outside the graph package --------------------------------------------------------------------

def _inline_cypher_calls(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        func = node.func
        is_graph_call = isinstance(func, ast.Attribute) and func.attr in {"read", "write", "explain"} and (
            (isinstance(func.value, ast.Attribute) and func.value.attr == "graph")
            or (isinstance(func.value, ast.Name) and func.value.id == "graph")
        )
        is_statement = (isinstance(func, ast.Name) and func.id == "Statement") or (
            isinstance(func, ast.Attribute) and func.attr == "Statement"
        )
        first = node.args[0]
        literal = isinstance(first, (ast.JoinedStr, ast.BinOp)) or (
            isinstance(first, ast.Constant) and isinstance(first.value, str)
        )
        if (is_graph_call or is_statement) and literal:
            found.append(f"{path.relative_to(REPO)}:{node.lineno}")
    return found


def test_domain_code_runs_only_statements_from_the_cypher_module():
    """Inline Cypher in domain code would never be linted: statements belong in agentx_memory/graph/cypher.py."""
    offenders = []
    for root in (REPO / "agentx_memory", REPO / "workers"):
        for path in sorted(root.rglob("*.py")) if root.is_dir() else []:
            if path.parent.name == "graph" and path.parent.parent.name == "agentx_memory":
                continue
            offenders += _inline_cypher_calls(path)
    assert not offenders, "inline Cypher passed to the graph store (move it to graph/cypher.py): " + ", ".join(
        offenders
    )
