"""Neo4j adapter of the graph port (the official ``neo4j`` async driver).

Reads and writes run in managed transactions (``execute_read`` / ``execute_write``), so the driver retries transient
errors and routes reads to replicas in a cluster (``neo4j://`` URIs).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import neo4j
import neo4j.exceptions
import neo4j.graph
from neo4j import AsyncGraphDatabase

from ..errors import ConflictError, StorageError, StorageUnavailableError
from . import cypher
from .dialects import Neo4jDialect
from .port import GraphStore, Statement

__all__ = ["Neo4jGraphStore", "drop_statement"]


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
        for rel, node in zip(value.relationships, value.nodes[1:]):
            out += [_plain(rel), _plain(node)]
        return out
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


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

    dialect = Neo4jDialect()

    def __init__(self, *, uri: str, user: str = "neo4j", password: str = "", database: str = "",
                 max_transaction_retry_time: float | None = None):
        # The driver retries managed transactions on transient errors -- including an unreachable server -- for
        # max_transaction_retry_time seconds (driver default 30 s) before giving up.
        config = {} if max_transaction_retry_time is None else {"max_transaction_retry_time": max_transaction_retry_time}
        self._driver = AsyncGraphDatabase.driver(uri, auth=(user, password) if password else None, **config)
        self._database = database or None

    def _session(self):
        return self._driver.session(database=self._database)

    async def _managed(self, query: str, params: Mapping[str, Any] | None, *, read_only: bool) -> list[dict[str, Any]]:
        rendered = self.dialect.render(query)

        async def work(tx):
            result = await tx.run(rendered, dict(params or {}))
            return [{key: _plain(value) for key, value in record.items()} async for record in result]

        try:
            async with self._session() as session:
                runner = session.execute_read if read_only else session.execute_write
                return await runner(work)
        except neo4j.exceptions.Neo4jError as exc:
            raise _wrap(exc, rendered) from exc
        except (neo4j.exceptions.DriverError, OSError) as exc:
            raise _wrap(exc, rendered) from exc

    async def read(self, query, params=None):
        return await self._managed(query, params, read_only=True)

    async def write(self, query, params=None):
        return await self._managed(query, params, read_only=False)

    async def batch(self, statements: Sequence[Statement]) -> None:
        if not statements:
            return
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
        rendered = self.dialect.render(query)
        try:
            async with self._session() as session:
                result = await session.run("EXPLAIN " + rendered, dict(params or {}))
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

    async def apply_schema(self, *, dimension: int, model: str) -> None:
        # Constraints first: the meta node's MERGE relies on the AgentxMeta key constraint under concurrency.
        for statement in self.dialect.schema_statements(dimension):
            await self._auto_commit(statement)
        await self._auto_commit(cypher.AWAIT_INDEXES)
        await cypher.check_embedding_meta(self, dimension=dimension, model=model)

    async def drop_all(self) -> None:
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
