"""The two graph dialects: how the shared statements' markers render, the label whitelist, full-text query escaping."""

from __future__ import annotations

import re

import pytest

from agentx_memory.graph.dialects import FalkorDialect, Neo4jDialect, index_name, schema_specs
from agentx_memory.graph.port import FULLTEXT_LABELS, VECTOR_LABELS

NEO4J = Neo4jDialect()
FALKOR = FalkorDialect()
DIALECTS = pytest.mark.parametrize("dialect", [NEO4J, FALKOR], ids=["neo4j", "falkordb"])


# --- @vec ----------------------------------------------------------------------------------------------------------

def test_vec_marker():
    template = "SET t.embedding = @vec(row.embedding), e.embedding = @vec($embedding)"
    assert NEO4J.render(template) == "SET t.embedding = row.embedding, e.embedding = $embedding"
    assert FALKOR.render(template) == "SET t.embedding = vecf32(row.embedding), e.embedding = vecf32($embedding)"


def test_vec_marker_with_a_nested_call():
    assert NEO4J.render("SET n.v = @vec(coalesce($v, [0.0]))") == "SET n.v = coalesce($v, [0.0])"
    assert FALKOR.render("SET n.v = @vec(coalesce($v, [0.0]))") == "SET n.v = vecf32(coalesce($v, [0.0]))"


# --- @cosine -------------------------------------------------------------------------------------------------------

def test_cosine_marker():
    template = "WITH s, @cosine(s.embedding, query_vector) AS similarity"
    # Neo4j's vector.similarity.cosine is (1 + cos) / 2 in [0, 1]: mapped back to [-1, 1]
    assert (
        NEO4J.render(template) == "WITH s, (2 * vector.similarity.cosine(s.embedding, query_vector) - 1) AS similarity"
    )
    # FalkorDB's vec.cosineDistance is 1 - cos; the query vector is bound once with @vec (a vecf32)
    assert FALKOR.render(template) == "WITH s, (1 - vec.cosineDistance(s.embedding, query_vector)) AS similarity"
    assert FALKOR.render("WITH @vec($embedding) AS query_vector") == "WITH vecf32($embedding) AS query_vector"


# --- @vector_search ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("label", VECTOR_LABELS)
def test_vector_search_marker(label):
    template = f"@vector_search({label}, $k, $embedding) WHERE node.user_id = $user_id RETURN node, similarity"
    assert NEO4J.render(template) == (
        f"CALL db.index.vector.queryNodes('{label.lower()}_embeddings', $k, $embedding) "
        "YIELD node WITH node, (2 * vector.similarity.cosine(node.embedding, $embedding) - 1) AS similarity "
        "WHERE node.user_id = $user_id RETURN node, similarity"
    )
    assert FALKOR.render(template) == (
        f"CALL db.idx.vector.queryNodes('{label}', 'embedding', $k, vecf32($embedding)) "
        "YIELD node, score WITH node, 1 - score AS similarity WHERE node.user_id = $user_id RETURN node, similarity"
    )


def test_vector_search_index_name_matches_the_schema():
    created = " ".join(NEO4J.schema_statements(384))
    for label in VECTOR_LABELS:
        rendered = NEO4J.render(f"@vector_search({label}, 5, $v) RETURN node")
        name = re.search(r"queryNodes\('([^']+)'", rendered).group(1)
        assert f"CREATE VECTOR INDEX {name} IF NOT EXISTS FOR (n:{label}) ON (n.embedding)" in created


# --- @fulltext_search ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("label", list(FULLTEXT_LABELS))
def test_fulltext_search_marker(label):
    template = f"@fulltext_search({label}, $query) RETURN node, score"
    assert NEO4J.render(template) == (
        f"CALL db.index.fulltext.queryNodes('{label.lower()}_fulltext', $query) YIELD node, score RETURN node, score"
    )
    assert (
        FALKOR.render(template)
        == f"CALL db.idx.fulltext.queryNodes('{label}', $query) YIELD node, score RETURN node, score"
    )


def test_fulltext_index_name_matches_the_schema():
    created = " ".join(NEO4J.schema_statements(384))
    for label, props in FULLTEXT_LABELS.items():
        on = ", ".join(f"n.{p}" for p in props)
        assert (
            f"CREATE FULLTEXT INDEX {index_name(label, props, 'fulltext')} IF NOT EXISTS FOR (n:{label}) ON EACH [{on}]"
            in created
        )


@DIALECTS
def test_several_markers_in_one_statement(dialect):
    template = (
        "@vector_search(Fact, $k, $embedding) WITH node AS f, similarity "
        "SET f.embedding = @vec($embedding) RETURN f, @cosine(f.embedding, @vec($embedding)) AS again"
    )
    rendered = dialect.render(template)
    assert "@" not in rendered
    # each marker's vector argument survives; Neo4j's vector search uses it twice (candidates, exact score)
    assert rendered.count("$embedding") == {"neo4j": 4, "falkordb": 3}[dialect.name]


@DIALECTS
def test_text_without_markers_is_unchanged(dialect):
    text = "MATCH (t:Turn {user_id: $user_id}) WHERE t.content CONTAINS '@' RETURN t.email AS email"
    assert dialect.render(text) == text


# --- the label whitelist -------------------------------------------------------------------------------------------

@DIALECTS
@pytest.mark.parametrize(
    "template",
    [
        "@vector_search(Conversation, $k, $v) RETURN node",  # a real label without a vector index
        "@vector_search(turn, $k, $v) RETURN node",  # labels are case-sensitive
        "@vector_search(AgentxMeta, $k, $v) RETURN node",
        "@fulltext_search(User, $q) RETURN node",
        "@fulltext_search(Tool, $q) RETURN node",
        "@fulltext_search(Turn' OR 1=1 //, $q) RETURN node",  # an injection attempt in the label slot
        "@vector_search(Turn:Entity, $k, $v) RETURN node",
    ],
)
def test_a_marker_label_outside_the_whitelist_is_a_value_error(dialect, template):
    with pytest.raises(ValueError, match="label"):
        dialect.render(template)


@DIALECTS
@pytest.mark.parametrize(
    "template",
    [
        "@vector_search(Turn) DETACH DELETE node //, $k, $v) RETURN node",
        "@vector_search(Turn, $k) RETURN node",
        "@fulltext_search(Turn, $q, extra) RETURN node",
        "RETURN @cosine(n.embedding)",
        "SET n.v = @vec()",
        "SET n.v = @vec(a, b)",
    ],
)
def test_a_marker_with_the_wrong_arguments_is_a_value_error(dialect, template):
    with pytest.raises(ValueError, match="argument"):
        dialect.render(template)


def test_whitelists_cover_the_spec_indexes():
    assert set(VECTOR_LABELS) == {"Turn", "Entity", "Fact", "Strategy", "Goal", "Control"}  # Control: seed 001
    assert FULLTEXT_LABELS == {
        "Turn": ("content",), "Fact": ("claim",), "Entity": ("name", "description"),
        "Strategy": ("description",), "Goal": ("description",),
    }


# --- full-text query strings ---------------------------------------------------------------------------------------

INJECTIONS = [
    "foo|bar", "@content:secret", '"exact phrase"', "x~2", "wild*", "-excluded", "+required", "(a OR b)",
    "title:evil", "back\\slash", "{curly}", "[range TO x]", "boost^10", "a&&b", "a||b", "!not", "%fuzzy%",
    "semi;colon", "it's", "'); DROP", "/regex/", "$param", "`tick`", "<tag>", "new\nline",
]


@DIALECTS
@pytest.mark.parametrize("word", INJECTIONS)
def test_fulltext_query_strips_operators(dialect, word):
    query = dialect.fulltext_query([word, "plain"])
    separator = " OR " if dialect is NEO4J else "|"
    terms = query.split(separator)
    assert terms[-1] == "plain"
    for term in terms:
        assert re.fullmatch(r"\w+", term), (word, query)


def test_fulltext_query_joins_words_with_or():
    assert NEO4J.fulltext_query(["lisbon", "moved", "may"]) == "lisbon OR moved OR may"
    assert FALKOR.fulltext_query(["lisbon", "moved", "may"]) == "lisbon|moved|may"


@DIALECTS
def test_fulltext_query_drops_words_that_are_only_operators(dialect):
    query = dialect.fulltext_query(["*", "-", "||", "lisbon", "()", "\"\""])
    assert query == "lisbon"
    assert dialect.fulltext_query(["*", "?"]) == ""


def test_neo4j_fulltext_query_defuses_lucene_keyword_operators():
    # Lucene's classic query parser reads upper-case AND / OR / NOT as operators: "cats OR AND OR dogs" is a
    # syntax error and "NOT" would negate the next word. Words are lowercased (the index analyzer lowercases anyway).
    query = NEO4J.fulltext_query(["cats", "AND", "NOT", "OR", "dogs"])
    assert query == "cats OR and OR not OR or OR dogs"


@DIALECTS
def test_fulltext_query_keeps_unicode_words(dialect):
    assert "café" in dialect.fulltext_query(["café"]) and "日本語" in dialect.fulltext_query(["日本語!"])


# --- schema DDL ----------------------------------------------------------------------------------------------------

def test_neo4j_schema_is_idempotent_ddl_with_the_configured_dimension():
    statements = NEO4J.schema_statements(256)
    assert statements and all("IF NOT EXISTS" in s for s in statements)
    vector = [s for s in statements if s.startswith("CREATE VECTOR INDEX")]
    assert len(vector) == len(VECTOR_LABELS)
    assert all("`vector.dimensions`: 256" in s and "'cosine'" in s for s in vector)
    assert sum(s.startswith("CREATE CONSTRAINT") for s in statements) == sum(
        1 for s in schema_specs() if s.kind == "unique"
    )
    assert "CREATE INDEX turn_user_id_channel IF NOT EXISTS FOR (n:Turn) ON (n.user_id, n.channel)" in statements


def test_falkordb_schema_has_the_configured_dimension_and_every_index():
    statements = FALKOR.schema_statements(256)
    vector = [s for s in statements if s.startswith("CREATE VECTOR INDEX")]
    assert len(vector) == len(VECTOR_LABELS)
    assert all("dimension: 256" in s and "similarityFunction: 'cosine'" in s for s in vector)
    # composite indexes become one range index per property; unique keys need a range index first
    assert "CREATE INDEX FOR (n:Turn) ON (n.user_id)" in statements
    assert "CREATE INDEX FOR (n:Turn) ON (n.channel)" in statements
    assert "CREATE INDEX FOR (n:Entity) ON (n.key)" in statements
    assert "CREATE FULLTEXT INDEX FOR (n:Entity) ON (n.name, n.description)" in statements
    assert len(statements) == len(set(statements))


@DIALECTS
def test_schema_dimension_must_be_an_integer(dialect):
    with pytest.raises((ValueError, TypeError)):
        dialect.schema_statements("384) DETACH DELETE n //")


# --- @tenant_match ---------------------------------------------------------------------------------------------------

def test_tenant_match_is_an_exact_scan_of_the_tenants_nodes_by_default():
    template = "WITH @vec($embedding) AS query_vector @tenant_match(Fact, f, query_vector) RETURN f"
    assert NEO4J.render(template) == (
        "WITH $embedding AS query_vector MATCH (f:Fact {user_id: $user_id}) WHERE f.channel IN $channels RETURN f")
    assert FALKOR.render(template) == (
        "WITH vecf32($embedding) AS query_vector MATCH (f:Fact {user_id: $user_id}) "
        "WHERE f.channel IN $channels RETURN f"
    )


def test_tenant_match_with_the_search_clause_filters_by_tenant_inside_the_index():
    search = Neo4jDialect(search_clause=True, tenant_filters=True)
    rendered = search.render("WITH @vec($embedding) AS query_vector @tenant_match(Entity, e, query_vector) RETURN e")
    assert rendered == (
        "CYPHER 25 WITH $embedding AS query_vector MATCH (e:Entity) SEARCH e IN (VECTOR INDEX entity_embeddings "
        "FOR query_vector WHERE e.user_id = $user_id AND e.channel IN $channels LIMIT $fetch) SCORE AS _index_score "
        "RETURN e")
    assert search.render("MATCH (n) RETURN n") == "MATCH (n) RETURN n"  # the version clause only where SEARCH is
    ddl = " ".join(search.schema_statements(384))
    assert "CYPHER 25 CREATE VECTOR INDEX fact_embeddings IF NOT EXISTS FOR (n:Fact) ON n.embedding " \
           "WITH [n.user_id, n.channel]" in ddl


def test_an_exhaustive_tenant_match_asks_for_every_node_of_the_tenant_and_keeps_the_nearest_by_the_index():
    """An exact search on Neo4j: SEARCH up to $fetch_all (more than the tenant holds, so the index compares the query
    with every node of the tenant), cut to the $fetch nearest by the index's own score before any property is read."""
    exhaustive = Neo4jDialect(search_clause=True, tenant_filters=True, exhaustive=True)
    rendered = exhaustive.render("WITH @vec($embedding) AS query_vector @tenant_match(Fact, f, query_vector) "
                                 "WITH f, query_vector RETURN f")
    assert rendered == (
        "CYPHER 25 WITH $embedding AS query_vector MATCH (f:Fact) SEARCH f IN (VECTOR INDEX fact_embeddings "
        "FOR query_vector WHERE f.user_id = $user_id AND f.channel IN $channels LIMIT $fetch_all) SCORE AS "
        "_index_score WITH f, query_vector, _index_score ORDER BY _index_score DESC LIMIT $fetch "
        "WITH f, query_vector RETURN f")
    with pytest.raises(ValueError, match="exhaustive needs tenant_filters"):
        Neo4jDialect(search_clause=True, exhaustive=True)
    with pytest.raises(ValueError, match="must be a variable"):
        exhaustive.render("@tenant_match(Fact, f, $embedding) RETURN f")


def test_vector_search_uses_the_search_clause_where_the_server_has_it():
    template = "@vector_search(Turn, $k, $embedding) RETURN node.id AS id, similarity"
    assert Neo4jDialect(search_clause=True).render(template) == (
        "CYPHER 25 MATCH (node:Turn) SEARCH node IN (VECTOR INDEX turn_embeddings FOR $embedding LIMIT $k) "
        "SCORE AS _index_score WITH node, (2 * vector.similarity.cosine(node.embedding, $embedding) - 1) AS similarity "
        "RETURN node.id AS id, similarity")
    assert NEO4J.render(template).startswith("CALL db.index.vector.queryNodes('turn_embeddings', $k, $embedding)")


def test_before_the_indexes_have_tenant_filters_tenant_match_scans_while_vector_search_uses_search():
    """A server with SEARCH whose schema is not applied yet: the vector indexes may lack the filter properties, so
    @tenant_match is the exact scan; an unfiltered search needs none, so @vector_search asks the index already."""
    search = Neo4jDialect(search_clause=True)
    tenant = "WITH @vec($embedding) AS query_vector @tenant_match(Entity, e, query_vector) RETURN e"
    assert search.render(tenant) == "CYPHER 25 " + NEO4J.render(tenant)
    assert "SEARCH" not in search.render(tenant)
    assert "SEARCH node IN (VECTOR INDEX" in search.render("@vector_search(Turn, $k, $embedding) RETURN node")
    with pytest.raises(ValueError, match="tenant_filters needs search_clause"):
        Neo4jDialect(tenant_filters=True)


@pytest.mark.parametrize("bad", ["@tenant_match(Conversation, c, v)", "@tenant_match(Fact, f x, v)"])
def test_tenant_match_refuses_unknown_labels_and_odd_variables(bad):
    with pytest.raises(ValueError):
        NEO4J.render(bad)


def test_reembedding_visits_every_vector_indexed_label_and_drops_only_their_indexes():
    from agentx_memory.graph import cypher

    assert cypher.REEMBED_LABELS == VECTOR_LABELS
    assert FalkorDialect().drop_vector_index_statement("Fact") == "DROP VECTOR INDEX FOR (n:Fact) ON (n.embedding)"
    with pytest.raises(ValueError, match="no vector index"):
        FalkorDialect().drop_vector_index_statement("User")


# --- @start_at -----------------------------------------------------------------------------------------------------

def test_start_at_makes_neo4j_seek_the_given_nodes_and_leaves_falkordb_as_written():
    template = "MATCH (t:Turn) @start_at(t, Turn, id) WHERE t.id IN $ids"
    assert NEO4J.render(template) == "MATCH (t:Turn) USING INDEX SEEK t:Turn(id) WHERE t.id IN $ids"
    assert FALKOR.render(template) == "MATCH (t:Turn)  WHERE t.id IN $ids"  # its planner starts where it says
    assert NEO4J.render("MATCH (f:Fact {slot_key: $k}) @start_at(f, Fact, slot_key)").endswith(
        "USING INDEX SEEK f:Fact(slot_key)")


@DIALECTS
@pytest.mark.parametrize("bad", ["@start_at(t, Turn, content)", "@start_at(t, Nope, id)", "@start_at(t x, Turn, id)",
                                 "@start_at(t, Turn)"])
def test_start_at_refuses_properties_without_an_index_of_their_own(dialect, bad):
    """A hint on a property with no index of its own would make Neo4j refuse the statement at run time."""
    with pytest.raises(ValueError):
        dialect.render(bad)
