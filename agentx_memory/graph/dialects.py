"""The two graph dialects: Neo4j 5 and FalkorDB. Only what differs between the databases lives here.

Score normalization (both return cosine similarity in [-1, 1], higher = closer):

* Neo4j's ``vector.similarity.cosine`` returns ``(1 + cos) / 2`` in [0, 1], so similarity = ``2 * score - 1``. Its
  vector index finds candidates only: their similarity is recomputed exactly (the index may be quantized).
* FalkorDB's ``db.idx.vector.queryNodes`` and ``vec.cosineDistance`` return the cosine *distance* ``1 - cos``, so
  similarity = ``1 - score``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from .port import FULLTEXT_LABELS, NAME_KEY_INDEXES, RANGE_INDEXES, UNIQUE_CONSTRAINTS, VECTOR_LABELS, Dialect

__all__ = ["VECTOR_FILTER_PROPERTIES", "FalkorDialect", "IndexSpec", "Neo4jDialect", "index_name"]


def index_name(label: str, props: Sequence[str], kind: str) -> str:
    """Stable index name, e.g. ``turn_user_id_channel`` or ``turn_embeddings`` (spec 003 names)."""
    if kind == "vector":
        return f"{label.lower()}_embeddings"
    if kind == "fulltext":
        return f"{label.lower()}_fulltext"
    if kind == "unique":
        return f"{label.lower()}_{props[0]}_unique"
    return f"{label.lower()}_{'_'.join(props)}"


@dataclass(frozen=True)
class IndexSpec:
    """One index or constraint of the schema, independent of the database."""

    kind: str  # "unique" | "range" | "vector" | "fulltext" | "names" (exact lookups of a list's elements)
    label: str
    props: tuple[str, ...]


def schema_specs() -> list[IndexSpec]:
    """Every constraint and index of the graph schema, unique keys first (FalkorDB needs the range index first)."""
    specs = [IndexSpec("unique", label, (key,)) for label, key in UNIQUE_CONSTRAINTS]
    specs += [IndexSpec("range", label, props) for label, props in RANGE_INDEXES]
    specs += [IndexSpec("vector", label, ("embedding",)) for label in VECTOR_LABELS]
    specs += [IndexSpec("fulltext", label, props) for label, props in FULLTEXT_LABELS.items()]
    specs += [IndexSpec("names", label, (prop,)) for label, prop in NAME_KEY_INDEXES]
    return specs


#: The in-index filter properties of every vector index on servers with the SEARCH clause: the tenant keys.
VECTOR_FILTER_PROPERTIES: tuple[str, ...] = ("user_id", "channel")


class Neo4jDialect(Dialect):
    """Neo4j 5.23+ and 2025+. With ``search_clause`` (the server has Neo4j 2026.06's ``SEARCH`` clause, ``IN`` in its
    filter included), ``@vector_search`` asks the index through ``SEARCH`` and the schema gives vector indexes the
    tenant keys as filter properties; with ``tenant_filters`` too (the indexes have them: the schema was applied),
    ``@tenant_match`` searches them. The two differ while a store's schema is not applied yet: an unfiltered search
    needs no filter properties. With ``exhaustive`` as well, ``@tenant_match`` is every node of the tenant, in the
    index's exact order (see :meth:`tenant_match`)."""

    name = "neo4j"

    def __init__(self, *, search_clause: bool = False, tenant_filters: bool = False, exhaustive: bool = False):
        if tenant_filters and not search_clause:
            raise ValueError("tenant_filters needs search_clause: filtered vector indexes are searched with SEARCH")
        if exhaustive and not tenant_filters:
            raise ValueError("exhaustive needs tenant_filters: it searches the tenant-filtered vector indexes")
        self.search_clause = search_clause
        self.tenant_filters = tenant_filters
        self.exhaustive = exhaustive
        # SEARCH is Cypher 25; a server whose default language is Cypher 5 needs the version clause.
        self.statement_prefix = "CYPHER 25 " if search_clause else ""

    def tenant_match(self, label: str, var: str, vector: str) -> str:
        if not self.tenant_filters:
            return super().tenant_match(label, var, vector)
        search = (
            f"MATCH ({var}:{label}) SEARCH {var} IN (VECTOR INDEX {index_name(label, (), 'vector')} FOR {vector} "
            f"WHERE {var}.user_id = $user_id AND {var}.channel IN $channels LIMIT "
        )
        if not self.exhaustive:
            return search + "$fetch) SCORE AS _index_score"
        if not vector.isidentifier():
            raise ValueError(f"@tenant_match vector must be a variable to search exhaustively, got {vector!r}")
        # Every node of the tenant (up to $fetch_all): asked for at least as many nodes as its filter matches, the
        # index compares the query with each of them (Lucene's exact path), at ~1 µs a node, where reading each
        # node's vector in Cypher costs ~15 µs. Its score (cosine, quantization off) cuts them to the nearest $fetch,
        # the only ones whose properties the statement then reads (nodes of one score straddling the cut, duplicates,
        # keep whichever the index returned first; the scan would break that tie by id).
        return (search + f"$fetch_all) SCORE AS _index_score "
                f"WITH {var}, {vector}, _index_score ORDER BY _index_score DESC LIMIT $fetch")

    def start_at(self, var: str, label: str, prop: str) -> str:
        # Neo4j picks a plan's start from its statistics, and while they catch up after a bulk write (seconds) it
        # chose a scan of every Turn's user_id index over the unique seek of the ids it was handed; a plan made then
        # is cached. The hint makes the seek the plan whatever the statistics say.
        return f"USING INDEX SEEK {var}:{label}({prop})"

    def vector_value(self, expr: str) -> str:
        return expr

    def cosine(self, stored: str, vector: str) -> str:
        return f"(2 * vector.similarity.cosine({stored}, {vector}) - 1)"

    def nearest_nodes(self, label: str, k: str, vector: str) -> str:
        return f"CALL db.index.vector.queryNodes('{index_name(label, (), 'vector')}', {k}, {vector}) YIELD node"

    def vector_search(self, label: str, k: str, vector: str) -> str:
        # The index finds the candidates; the similarity is computed exactly. (Neo4j 5.23+ quantizes vector indexes
        # by default: scores were then 0.89 for an identical 8-d vector and the top 3 of 10 wrong, so the schema
        # turns quantization off, and the exact score also keeps both backends' rankings identical.) Where SEARCH
        # exists the procedure is deprecated (a warning logged per call), so the clause asks the index instead.
        similarity = f"WITH node, {self.cosine('node.embedding', vector)} AS similarity"
        if self.search_clause:
            return (f"MATCH (node:{label}) SEARCH node IN (VECTOR INDEX {index_name(label, (), 'vector')} "
                    f"FOR {vector} LIMIT {k}) SCORE AS _index_score {similarity}")
        return (f"CALL db.index.vector.queryNodes('{index_name(label, (), 'vector')}', {k}, {vector}) "
                f"YIELD node {similarity}")

    def fulltext_search(self, label: str, query: str) -> str:
        return f"CALL db.index.fulltext.queryNodes('{index_name(label, (), 'fulltext')}', {query}) YIELD node, score"

    def entities_named(self, var: str, keys: str) -> str:
        # One quoted term per key (the keyword analyzer keeps a list element whole), backslashes and quotes escaped.
        lucene = (f"reduce(_q = '', _k IN {keys} | _q + CASE WHEN _q = '' THEN '' ELSE ' OR ' END + '\"' + "
                  "replace(replace(_k, '\\\\', '\\\\\\\\'), '\"', '\\\\\"') + '\"')")
        name = index_name("Entity", ("name_keys",), "names")
        return f"CALL db.index.fulltext.queryNodes('{name}', {lucene}) YIELD node AS {var}"

    def fulltext_query(self, words: Sequence[str]) -> str:
        # Lucene syntax: strip everything but word characters so no operator can be injected, and lowercase, because
        # the classic query parser reads upper-case AND / OR / NOT as operators (the index analyzer lowercases anyway).
        cleaned = [re.sub(r"[^\w]", "", w).lower() for w in words]
        return " OR ".join(w for w in cleaned if w)

    def schema_statements(self, dimension: int) -> list[str]:
        return [statement for _, statement in self.schema_objects(dimension)]

    def schema_objects(self, dimension: int) -> list[tuple[str, str]]:
        """``(name, statement)`` for every index and constraint :meth:`schema_statements` creates, so a caller can
        skip the objects that exist by name."""
        dimension = int(dimension)
        # Neo4j's token lookup indexes (label and relationship-type scans) come with a new database; recreate them
        # where they were dropped, or every label scan becomes a scan of all nodes.
        out = [
            ("node_label_lookup_index",
             "CREATE LOOKUP INDEX node_label_lookup_index IF NOT EXISTS FOR (n) ON EACH labels(n)"),
            ("rel_type_lookup_index",
             "CREATE LOOKUP INDEX rel_type_lookup_index IF NOT EXISTS FOR ()-[r]-() ON EACH type(r)"),
        ]
        for spec in schema_specs():
            name = index_name(spec.label, spec.props, spec.kind)
            on = ", ".join(f"n.{p}" for p in spec.props)
            vector_options = (
                f"OPTIONS {{indexConfig: {{`vector.dimensions`: {dimension}, "
                f"`vector.similarity_function`: 'cosine', `vector.quantization.enabled`: false}}}}"
            )
            if spec.kind == "unique":
                statement = (
                    f"CREATE CONSTRAINT {name} IF NOT EXISTS FOR (n:{spec.label}) REQUIRE n.{spec.props[0]} IS UNIQUE"
                )
            elif spec.kind == "range":
                statement = f"CREATE INDEX {name} IF NOT EXISTS FOR (n:{spec.label}) ON ({on})"
            elif spec.kind == "vector" and self.search_clause:
                filters = ", ".join(f"n.{p}" for p in VECTOR_FILTER_PROPERTIES)
                statement = (
                    f"CYPHER 25 CREATE VECTOR INDEX {name} IF NOT EXISTS FOR (n:{spec.label}) ON n.embedding "
                    f"WITH [{filters}] {vector_options}"
                )
            elif spec.kind == "vector":
                statement = (
                    f"CREATE VECTOR INDEX {name} IF NOT EXISTS FOR (n:{spec.label}) ON (n.embedding) {vector_options}"
                )
            elif spec.kind == "names":
                statement = (f"CREATE FULLTEXT INDEX {name} IF NOT EXISTS FOR (n:{spec.label}) ON EACH [{on}] "
                             "OPTIONS {indexConfig: {`fulltext.analyzer`: 'keyword'}}")
            else:
                statement = f"CREATE FULLTEXT INDEX {name} IF NOT EXISTS FOR (n:{spec.label}) ON EACH [{on}]"
            out.append((name, statement))
        return out


class FalkorDialect(Dialect):
    """FalkorDB 4.x (RediSearch-backed indexes)."""

    name = "falkordb"

    def vector_value(self, expr: str) -> str:
        return f"vecf32({expr})"

    def cosine(self, stored: str, vector: str) -> str:
        return f"(1 - vec.cosineDistance({stored}, {vector}))"

    def nearest_nodes(self, label: str, k: str, vector: str) -> str:
        return f"CALL db.idx.vector.queryNodes('{label}', 'embedding', {k}, {vector}) YIELD node"

    def vector_search(self, label: str, k: str, vector: str) -> str:
        return (
            f"CALL db.idx.vector.queryNodes('{label}', 'embedding', {k}, vecf32({vector})) "
            "YIELD node, score WITH node, 1 - score AS similarity"
        )

    def fulltext_search(self, label: str, query: str) -> str:
        return f"CALL db.idx.fulltext.queryNodes('{label}', {query}) YIELD node, score"

    def entities_named(self, var: str, keys: str) -> str:
        return f"UNWIND {keys} AS _name_key MATCH ({var}:Entity) WHERE _name_key IN {var}.name_keys WITH DISTINCT {var}"

    def fulltext_query(self, words: Sequence[str]) -> str:
        # RediSearch syntax: '|' is OR; strip everything but word characters so no operator can be injected.
        cleaned = [re.sub(r"[^\w]", "", w) for w in words]
        return "|".join(w for w in cleaned if w)

    def index_plan(self, dimension: int) -> list[tuple[str, str, str, str]]:
        """``(label, property, kind, statement)`` per index. FalkorDB indexes properties one by one (a composite
        index is one range index per property), and unique constraints need a range index on the property first;
        the constraints themselves are ``GRAPH.CONSTRAINT`` commands issued by the adapter."""
        dimension = int(dimension)
        plan: list[tuple[str, str, str, str]] = []
        seen: set[tuple[str, str, str]] = set()
        for spec in schema_specs():
            kind = "range" if spec.kind in ("unique", "names") else spec.kind  # a range index holds a list's elements
            for prop in spec.props:
                if (spec.label, prop, kind) in seen:
                    continue
                seen.add((spec.label, prop, kind))
                if kind == "range":
                    statement = f"CREATE INDEX FOR (n:{spec.label}) ON (n.{prop})"
                elif kind == "vector":
                    statement = (
                        f"CREATE VECTOR INDEX FOR (n:{spec.label}) ON (n.{prop}) "
                        f"OPTIONS {{dimension: {dimension}, similarityFunction: 'cosine'}}"
                    )
                else:
                    continue  # full-text: one index over all the label's properties, below
                plan.append((spec.label, prop, kind, statement))
            if spec.kind == "fulltext":
                on = ", ".join(f"n.{p}" for p in spec.props)
                plan.append(
                    (
                        spec.label,
                        ",".join(spec.props),
                        "fulltext",
                        f"CREATE FULLTEXT INDEX FOR (n:{spec.label}) ON ({on})",
                    )
                )
        return plan

    #: Every index of the graph with its state: per label, its documents (nodes) and the highest document id, which
    #: counts every node version indexed since the index was built (an update re-indexes the node under a new id and
    #: the vector index keeps the old vector, dead, until it is rebuilt).
    INDEX_USAGE = ("CALL db.indexes() YIELD label, types, options, status, info "
                   "RETURN label, types, options, status, info.numDocuments AS documents, info.maxDocId AS versions")

    def drop_vector_index_statement(self, label: str) -> str:
        """DDL dropping the vector index of ``label`` (a label of :data:`VECTOR_LABELS`)."""
        if label not in VECTOR_LABELS:
            raise ValueError(f"label {label!r} has no vector index (allowed: {VECTOR_LABELS})")
        return f"DROP VECTOR INDEX FOR (n:{label}) ON (n.embedding)"

    def schema_statements(self, dimension: int) -> list[str]:
        """Cypher DDL for the indexes (see :meth:`index_plan`)."""
        return [statement for *_, statement in self.index_plan(dimension)]
