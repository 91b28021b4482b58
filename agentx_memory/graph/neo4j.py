"""Neo4j adapter of the graph port (the official ``neo4j`` async driver).

Writes run in managed transactions (``execute_write``), so the driver retries transient errors; reads run auto-commit
in READ access mode (routed to readers in a cluster, ``neo4j://`` URIs) with a bounded retry of their own. Every
session of a store shares one bookmark manager, so a read always sees the store's earlier writes (causal consistency),
even when a cluster or Aura routes it to another member.

On first use the store asks the server its version (``dbms.components()``) and refuses one older than
:data:`MIN_VERSION` with a :class:`~agentx_memory.errors.ConfigurationError` that names both versions. From
:data:`SEARCH_CLAUSE_VERSION` on, vector indexes carry the tenant keys as filter properties and
:meth:`Neo4jGraphStore.read_vectors` searches them with ``SEARCH`` for a tenant with :data:`SEARCH_MIN_NODES` nodes of
the label or more (measured in docs/benchmarks.md: flat ~5-10 ms where the exact scan costs ~10 µs per vector of the
tenant; they cross at ~200-300 vectors; the tenant's count is read once a minute), with the exact scan as the fallback
whenever the index yields fewer than k rows, and as the route of a smaller tenant. An exact search (recall's, for a
user whose turns are scanned exactly) asks ``SEARCH`` for every node of the tenant, which the index compares with the
query exactly at ~1 µs a node (:data:`EXHAUSTIVE_LIMIT`), and reads the properties of the nearest few times k only.
"""

from __future__ import annotations

import asyncio
import random
import re
import time
from collections.abc import Mapping, Sequence
from typing import Any

import neo4j
import neo4j.exceptions
import neo4j.graph
from neo4j import AsyncGraphDatabase

from ..errors import ConfigurationError, ConflictError, StorageError, StorageUnavailableError
from . import cypher
from .dialects import VECTOR_FILTER_PROPERTIES, Neo4jDialect, index_name
from .port import VECTOR_LABELS, GraphStore, Statement, tenant_label

__all__ = ["MIN_VERSION", "SEARCH_CLAUSE_VERSION", "Neo4jGraphStore", "drop_statement", "parse_version"]

#: The oldest Neo4j this engine runs on: ``CALL (n) { ... }`` variable-scope subqueries arrived in 5.23
#: (``vector.similarity.cosine`` in 5.18, vector indexes in 5.11).
MIN_VERSION: tuple[int, ...] = (5, 23)

#: The first release whose SEARCH clause filters a vector index by ``IN`` (a tenant's channels); SEARCH itself
#: arrived in 2026.01 (Cypher 25, Community too).
SEARCH_CLAUSE_VERSION: tuple[int, ...] = (2026, 6)

#: How many candidates per requested result a SEARCH takes from the index before the exact ranking.
SEARCH_OVERFETCH = 4
#: A tenant with fewer nodes of a label than this is scanned, not searched through ``SEARCH``: the scan costs ~10 µs
#: a node, ``SEARCH`` ~5 ms flat, and they cross at 200-300 nodes (docs/benchmarks.md, "Per-tenant vector search on
#: Neo4j"). A tenant with no node of the label (most users have no strategy or rule) costs one empty scan, not an
#: empty SEARCH and then the scan.
SEARCH_MIN_NODES = 250
#: How many nodes an exact search (``read_vectors(exact=True)``) asks ``SEARCH`` for: a tenant with fewer nodes of the
#: label gets all of them, compared exactly by the index (asked for more nodes than its filter matches, Lucene
#: compares the query with every match), so the search is exact for any tenant below it. The figure costs nothing:
#: 1,000,000 took the same time as 5,000 for a tenant of 4,266 facts (docs/benchmarks.md, "Exact searches of a
#: Neo4j tenant through its index").
EXHAUSTIVE_LIMIT = 1_000_000

_VECTOR_INDEX_NAMES = frozenset(index_name(label, (), "vector") for label in VECTOR_LABELS)

#: Schema errors that mean "someone else created it first" (two processes applying the schema at once).
_ALREADY_EXISTS = frozenset({
    "Neo.ClientError.Schema.EquivalentSchemaRuleAlreadyExists",
    "Neo.ClientError.Schema.IndexAlreadyExists",
    "Neo.ClientError.Schema.ConstraintAlreadyExists",
    "Neo.ClientError.Schema.IndexWithNameAlreadyExists",
    "Neo.ClientError.Schema.ConstraintWithNameAlreadyExists",
})


def parse_version(text: str) -> tuple[int, ...]:
    """``"5.26.30"`` → ``(5, 26, 30)``; ``"2026.08.1"`` → ``(2026, 8, 1)`` (suffixes such as ``-aura`` ignored)."""
    numbers = []
    for part in text.split("."):
        digits = "".join(ch for ch in part.split("-")[0] if ch.isdigit())
        if not digits:
            break
        numbers.append(int(digits))
    return tuple(numbers)


def _wrap(exc: Exception, query: str) -> Exception:
    if isinstance(exc, (neo4j.exceptions.ServiceUnavailable, neo4j.exceptions.SessionExpired, OSError)):
        return StorageUnavailableError(f"Neo4j unreachable: {exc}")
    if isinstance(exc, neo4j.exceptions.ConstraintError):
        return ConflictError(f"Neo4j constraint violation: {exc}")
    return StorageError(f"Neo4j query failed: {exc} (query: {query[:200]!r})")


def drop_statement(kind: str, name: str) -> str:
    """``DROP INDEX|CONSTRAINT `name` IF EXISTS`` for a name listed by the database itself (DROP takes no
    parameters; a backtick inside the name is escaped by doubling it)."""
    if kind not in ("INDEX", "CONSTRAINT"):
        raise ValueError(f"kind must be INDEX or CONSTRAINT, not {kind!r}")
    escaped = name.replace("`", "``")
    return f"DROP {kind} `{escaped}` IF EXISTS"


def _plain(value: Any) -> Any:
    """Convert driver values to the port's one shape (the same as the FalkorDB adapter's): a node or relationship
    becomes the dict of its properties, a path the list of its nodes and relationships in order."""
    if isinstance(value, (neo4j.graph.Node, neo4j.graph.Relationship)):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, neo4j.graph.Path):
        out: list[Any] = [_plain(value.nodes[0])]
        for rel, node in zip(value.relationships, value.nodes[1:], strict=True):
            out += [_plain(rel), _plain(node)]
        return out
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


_VERSION_CLAUSE = re.compile(r"\s*(CYPHER\s+\d+\s+)")


def _collected_form(rendered: str, keys: Sequence[str]) -> str | None:
    """``rendered`` as a subquery whose rows come back as one list of ``[column values]`` (None for a statement with
    a ``CYPHER`` clause other than a language version, or without columns)."""
    clause = _VERSION_CLAUSE.match(rendered)
    version, body = (clause.group(1), rendered[clause.end():]) if clause else ("", rendered)
    if not keys or body.lstrip().upper().startswith("CYPHER"):
        return None
    columns = ", ".join("`" + key.replace("`", "``") + "`" for key in keys)
    return f"{version}CALL () {{\n{body}\n}}\nRETURN collect([{columns}]) AS rows"


def _plan_text(plan: Mapping[str, Any] | None, depth: int = 0) -> str:
    if not plan:
        return ""
    args = plan.get("args", {})
    detail = args.get("Details", "")
    line = "    " * depth + f"{plan.get('operatorType', '?')} {detail}".rstrip()
    children = [_plan_text(child, depth + 1) for child in plan.get("children", [])]
    return "\n".join([line, *children])


class Neo4jGraphStore(GraphStore):
    """A Neo4j database behind the :class:`GraphStore` port."""

    #: Until the server's version is known; then the server's own (``SEARCH`` from 2026.06, see :meth:`_connect`).
    dialect = Neo4jDialect()

    def __init__(self, *, uri: str, user: str = "neo4j", password: str = "", database: str = "neo4j",
                 max_transaction_retry_time: float | None = None):
        super().__init__()
        # The driver retries managed transactions on transient errors -- including an unreachable server -- for
        # max_transaction_retry_time seconds (driver default 30 s) before giving up.
        config: dict[str, Any] = (
            {} if max_transaction_retry_time is None else {"max_transaction_retry_time": max_transaction_retry_time}
        )
        # "Unrecognized" notifications (a relationship type no edge has yet) are routine for a sparse graph: not logged.
        self._driver = AsyncGraphDatabase.driver(uri, auth=(user, password) if password else None,
                                                 notifications_disabled_classifications=["UNRECOGNIZED"], **config)
        # A named database spares the driver a home-database lookup per session.
        self._database = database or None
        self._bookmarks = AsyncGraphDatabase.bookmark_manager()
        self._uri = uri
        self._retry_seconds = 30.0 if max_transaction_retry_time is None else max_transaction_retry_time
        self.server_version: tuple[int, ...] | None = None
        #: The dialect whose @tenant_match searches the tenant-filtered vector indexes (set by apply_schema on
        #: servers that have the SEARCH clause); None means every @tenant_match is an exact scan.
        self._search_dialect: Neo4jDialect | None = None
        #: The same for exact searches: every node of the tenant, compared exactly by the index.
        self._exhaustive_dialect: Neo4jDialect | None = None
        #: Each rendered statement of cypher.FEW_ROW_READS read so far: its columns and its one-record form (None:
        #: read it as rows).
        self._one_record_forms: dict[str, tuple[tuple[str, ...], str] | None] = {}

    def _session(self, access_mode: str = neo4j.WRITE_ACCESS):
        return self._driver.session(database=self._database, bookmark_manager=self._bookmarks,
                                    default_access_mode=access_mode)

    @property
    def _search_capable(self) -> bool:
        """The server has the SEARCH clause with IN filters (known after the first call)."""
        return self.server_version is not None and self.server_version >= SEARCH_CLAUSE_VERSION

    async def _connect(self) -> None:
        """Check the server version once (the first call of any operation)."""
        if self.server_version is not None:
            return

        async def work(tx):
            return await (await tx.run(cypher.SERVER_VERSION)).data()

        try:
            async with self._session() as session:
                rows = await session.execute_read(work)  # managed: retried while the server is starting
        except (neo4j.exceptions.Neo4jError, neo4j.exceptions.DriverError, OSError) as exc:
            raise _wrap(exc, cypher.SERVER_VERSION) from exc
        text = str(rows[0]["version"]) if rows else ""
        version = parse_version(text)
        if version < MIN_VERSION:
            raise ConfigurationError(
                f"the Neo4j server at {self._uri} is version {text or 'unknown'}; agentx-memory needs Neo4j "
                f"{'.'.join(map(str, MIN_VERSION))} or newer (CALL (n) {{...}} subqueries). "
                "Use 5.26 LTS or a 2025+ release."
            )
        self.server_version = version
        # Plain vector searches use SEARCH from now on; @tenant_match waits for the filtered indexes (apply_schema).
        self.dialect = Neo4jDialect(search_clause=self._search_capable)

    async def _managed_write(self, query: str, params: Mapping[str, Any] | None) -> list[dict[str, Any]]:
        """One statement in a managed write transaction (the driver retries transient errors)."""
        await self._connect()
        rendered = self.dialect.render(query)

        async def work(tx):
            result = await tx.run(rendered, dict(params or {}))
            return [{key: _plain(value) for key, value in record.items()} async for record in result]

        try:
            async with self._session() as session:
                return await session.execute_write(work)
        except neo4j.exceptions.Neo4jError as exc:
            raise _wrap(exc, rendered) from exc
        except (neo4j.exceptions.DriverError, OSError) as exc:
            raise _wrap(exc, rendered) from exc

    async def read(self, query, params=None):
        await self._connect()
        return await self._read_rendered(self.dialect.render(query), params, few_rows=query in cypher.FEW_ROW_READS)

    @property
    def tenant_vector_index(self) -> bool:
        return self._search_dialect is not None

    async def read_vectors(self, query, params, *, exact=False):
        if self._search_dialect is None or self._exhaustive_dialect is None:
            return await super().read_vectors(query, params, exact=exact)
        k = int(params["k"])
        few_rows = query in cypher.FEW_ROW_READS
        own = await self._tenant_count(tenant_label(query), str(params["user_id"]), list(params["channels"]))
        if own < max(k, SEARCH_MIN_NODES) or (exact and own >= EXHAUSTIVE_LIMIT):
            self.vector_routes["scan"] += 1
            return await self._read_rendered(self.dialect.render(query), params, few_rows=few_rows)
        # The index's nearest few times k, filtered by tenant inside the index, then the statement's own filters and
        # exact ranking; too few rows left (a small tenant, many superseded facts, a time window) means the index
        # cannot be trusted to hold the k best: the exact scan answers instead. An exact search takes them from every
        # node of the tenant in the index's exact order (the exhaustive dialect): then the k best of the filtered
        # rows are the k best of the tenant whenever k rows are left.
        fetch = max(k * SEARCH_OVERFETCH, k + 20)
        if exact:
            route, rendered = "exhaustive", self._exhaustive_dialect.render(query)
            params = {**params, "fetch": fetch, "fetch_all": EXHAUSTIVE_LIMIT}
        else:
            route, rendered = "search", self._search_dialect.render(query)
            params = {**params, "fetch": fetch}
        rows = await self._read_rendered(rendered, params, few_rows=few_rows)
        if len(rows) >= k:
            self.vector_routes[route] += 1
            return rows
        self.vector_routes["fallback"] += 1
        return await self._read_rendered(self.dialect.render(query), params, few_rows=few_rows)

    async def read_index(self, query, params):
        await self._connect()
        return await self._read_rendered(self.dialect.render(query, tenant_index=True), params,
                                         few_rows=query in cypher.FEW_ROW_READS)

    async def _read_rendered(self, rendered: str, params: Mapping[str, Any] | None, *,
                             few_rows: bool = False) -> list[dict[str, Any]]:
        # Auto-commit, not execute_read: no BEGIN/COMMIT exchange, 0.65 against 0.95 ms p50 per read on loopback
        # (warm 5.26 server), and one recall makes several graph reads. A read is idempotent, so it is retried here
        # on the errors the driver marks retryable, within max_transaction_retry_time; READ access mode routes it to
        # a reader in a cluster, and the bookmark manager still gives read-your-writes. A statement of
        # cypher.FEW_ROW_READS has its rows sent as one record once its columns are known (see _collected_rows).
        deadline = time.monotonic() + self._retry_seconds
        delay = 0.05
        while True:
            try:
                collected = self._one_record_forms.get(rendered) if few_rows else None
                if collected is not None:
                    rows = await self._collected_rows(rendered, params, *collected)
                    if rows is not None:
                        return rows
                async with self._session(neo4j.READ_ACCESS) as session:
                    result = await session.run(rendered, dict(params or {}))
                    if few_rows and rendered not in self._one_record_forms:
                        keys = tuple(result.keys())
                        form = _collected_form(rendered, keys)
                        self._one_record_forms[rendered] = None if form is None else (keys, form)
                    return [{key: _plain(value) for key, value in record.items()} async for record in result]
            except (neo4j.exceptions.Neo4jError, neo4j.exceptions.DriverError) as exc:
                if not exc.is_retryable() or time.monotonic() + delay > deadline:
                    raise _wrap(exc, rendered) from exc
            except OSError as exc:
                raise _wrap(exc, rendered) from exc
            await asyncio.sleep(delay * random.uniform(0.8, 1.2))
            delay = min(delay * 2, 1.0)

    async def _collected_rows(self, rendered: str, params: Mapping[str, Any] | None, keys: tuple[str, ...],
                              collected: str) -> list[dict[str, Any]] | None:
        """The statement's rows, sent by the server as one record: ``CALL () { statement } RETURN collect([columns])``.
        The driver spends ~0.08 ms of client CPU on each record it reads (a task and a timer per socket read on
        Python 3.11), so 100 rows cost 8.8 ms as records and 0.9-1.4 ms as one list (docs/benchmarks.md). None when
        the server refuses the form (the statement is then read as rows from now on)."""
        try:
            async with self._session(neo4j.READ_ACCESS) as session:
                result = await session.run(collected, dict(params or {}))
                record = await result.single(strict=True)
        except neo4j.exceptions.ClientError as exc:
            if not str(exc.code or "").startswith("Neo.ClientError.Statement."):
                raise
            self._one_record_forms[rendered] = None
            return None
        return [{key: _plain(value) for key, value in zip(keys, row, strict=True)} for row in record[0]]

    async def write(self, query, params=None):
        return await self._managed_write(query, params)

    async def batch(self, statements: Sequence[Statement]) -> None:
        if not statements:
            return
        await self._connect()
        rendered = [(self.dialect.render(st.query), dict(st.params)) for st in statements]

        async def work(tx):
            for text, params in rendered:
                result = await tx.run(text, params)
                await result.consume()

        try:
            async with self._session() as session:
                await session.execute_write(work)
        except (neo4j.exceptions.Neo4jError, neo4j.exceptions.DriverError, OSError) as exc:
            raise _wrap(exc, rendered[0][0]) from exc

    async def explain(self, query, params=None) -> str:
        await self._connect()
        rendered = self.dialect.render(query)
        try:
            async with self._session() as session:
                # replan=force: the plan the planner picks from the statistics of now, not one cached earlier
                result = await session.run("EXPLAIN CYPHER replan=force " + rendered, dict(params or {}))
                summary = await result.consume()
        except (neo4j.exceptions.Neo4jError, neo4j.exceptions.DriverError, OSError) as exc:
            raise _wrap(exc, rendered) from exc
        return _plan_text(summary.plan)

    async def _auto_commit(self, statement: str) -> None:
        try:
            async with self._session() as session:
                result = await session.run(statement)
                await result.consume()
        except (neo4j.exceptions.Neo4jError, neo4j.exceptions.DriverError, OSError) as exc:
            raise _wrap(exc, statement) from exc

    async def _schema_write(self, statement: str) -> None:
        """One schema statement in a managed transaction, so concurrent schema changes that deadlock are retried;
        "already exists" (another process created it between our IF NOT EXISTS check and our commit) is success."""

        async def work(tx):
            await (await tx.run(statement)).consume()

        try:
            async with self._session() as session:
                await session.execute_write(work)
        except neo4j.exceptions.Neo4jError as exc:
            if exc.code not in _ALREADY_EXISTS:
                raise _wrap(exc, statement) from exc
        except (neo4j.exceptions.DriverError, OSError) as exc:
            raise _wrap(exc, statement) from exc

    async def apply_schema(self, *, dimension: int, model: str) -> None:
        await self._connect()
        if self._search_capable:
            await self._drop_vector_indexes_without_tenant_filters()
        # Opening a memory re-applies the schema: one listing instead of ~45 round trips of IF NOT EXISTS no-ops.
        # A statement whose object exists by name is skipped, which is what IF NOT EXISTS would have done.
        existing = await self._schema_object_names()
        # Constraints first: the meta node's MERGE relies on the AgentxMeta key constraint under concurrency.
        for name, statement in self.dialect.schema_objects(dimension):
            if name not in existing:
                await self._schema_write(statement)
        await self._auto_commit(cypher.AWAIT_INDEXES)
        await cypher.check_embedding_meta(self, dimension=dimension, model=model)
        if self._search_capable:  # vector searches may use the filtered indexes from now on
            self._search_dialect = Neo4jDialect(search_clause=True, tenant_filters=True)
            self._exhaustive_dialect = Neo4jDialect(search_clause=True, tenant_filters=True, exhaustive=True)

    async def _schema_object_names(self) -> set[str]:
        rows = await self.read(cypher.SHOW_CONSTRAINT_NAMES) + await self.read(cypher.SHOW_ALL_INDEX_NAMES)
        return {row["name"] for row in rows}

    async def _drop_vector_indexes_without_tenant_filters(self) -> None:
        """Vector indexes made before the server had SEARCH (or by an older agentx-memory) lack the tenant filter
        properties SEARCH needs: drop them so apply_schema rebuilds them with the filters."""
        for row in await self.read(cypher.SHOW_VECTOR_INDEXES):
            if row["name"] in _VECTOR_INDEX_NAMES and not set(VECTOR_FILTER_PROPERTIES) <= set(row["properties"] or []):
                await self._auto_commit(drop_statement("INDEX", row["name"]))

    async def drop_vector_index(self, label: str) -> None:
        if label not in VECTOR_LABELS:
            raise ValueError(f"label {label!r} has no vector index (allowed: {VECTOR_LABELS})")
        await self._connect()
        await self._auto_commit(drop_statement("INDEX", index_name(label, (), "vector")))

    async def create_vector_index(self, label: str, *, dimension: int) -> None:
        await self.drop_vector_index(label)
        name = index_name(label, (), "vector")
        statements = dict(self.dialect.schema_objects(dimension))
        await self._schema_write(statements[name])
        await self._auto_commit(cypher.AWAIT_INDEXES)

    async def drop_all(self) -> None:
        await self._connect()
        await self._auto_commit(cypher.DELETE_ALL_NODES)
        for kind, listing in (("CONSTRAINT", cypher.SHOW_CONSTRAINT_NAMES), ("INDEX", cypher.SHOW_INDEX_NAMES)):
            try:
                async with self._session() as session:
                    result = await session.run(listing)
                    names = [row["name"] for row in await result.data()]
            except (neo4j.exceptions.Neo4jError, neo4j.exceptions.DriverError, OSError) as exc:
                raise _wrap(exc, listing) from exc
            for name in names:
                await self._auto_commit(drop_statement(kind, name))

    async def close(self) -> None:
        await self._driver.close()
