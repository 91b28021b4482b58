"""The one-record form of a few-row read on Neo4j (``graph/neo4j.py``): the statement as a subquery, its columns
collected in order, a language version clause kept in front."""

from __future__ import annotations

from agentx_memory.graph.neo4j import _collected_form


def test_a_statement_becomes_a_subquery_whose_columns_are_collected_in_order():
    assert _collected_form("MATCH (n) RETURN n.id AS id, n.name AS name", ("id", "name")) == (
        "CALL () {\nMATCH (n) RETURN n.id AS id, n.name AS name\n}\nRETURN collect([`id`, `name`]) AS rows")


def test_the_language_version_stays_in_front_and_odd_column_names_are_quoted():
    form = _collected_form("CYPHER 25 MATCH (n) RETURN count(n), n.x AS `a``b`", ("count(n)", "a`b"))
    assert form == ("CYPHER 25 CALL () {\nMATCH (n) RETURN count(n), n.x AS `a``b`\n}\n"
                    "RETURN collect([`count(n)`, `a``b`]) AS rows")


def test_other_cypher_clauses_and_statements_without_columns_are_read_as_rows():
    assert _collected_form("CYPHER replan=force MATCH (n) RETURN n", ("n",)) is None
    assert _collected_form("MATCH (n) RETURN n", ()) is None
