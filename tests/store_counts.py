"""Count everything one test namespace holds, in every store, to show that a call wrote nothing.

:func:`store_counts` reads, through a sync :class:`~agentx_memory.AgentMemory`'s own connections:

- the graph: its nodes and its relationships (on Neo4j the one shared database, which a test has to itself);
- PostgreSQL: the rows of every table of the namespace's schema (a partitioned table, such as the audit log, is
  counted once, through its parent, so a new row in any partition counts);
- Redis: every key the working store writes under the namespace's key prefix (one per key family of
  :attr:`~agentx_memory.working.WorkingStore.KEY_FAMILIES`), and the size of each such key (hash fields, list
  items or string bytes), so a rejected push onto an existing list shows too.

Two snapshots taken before and after a call compare equal exactly when no store gained or lost anything.
"""

from __future__ import annotations

from typing import Any

from psycopg import sql as pgsql

from agentx_memory.working import WorkingStore
from tests.conftest import gread
from tests.conftest import sql as run_sql

__all__ = ["store_counts"]

_TABLES_OF_SCHEMA = (
    "SELECT c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
    "WHERE n.nspname = %s AND c.relkind IN ('r', 'p') AND NOT c.relispartition ORDER BY c.relname"
)

#: The count query of each namespace's schema (its tables do not change while a test runs).
_COUNT_QUERIES: dict[str, pgsql.Composed] = {}


def _count_query(memory: Any) -> pgsql.Composed:
    schema = memory.settings.postgres.db_schema
    if schema not in _COUNT_QUERIES:
        tables = [row["name"] for row in run_sql(memory, _TABLES_OF_SCHEMA, [schema])]
        assert tables, f"schema {schema!r} has no tables"
        counts = [
            pgsql.SQL("(SELECT count(*) FROM {}.{}) AS {}").format(
                pgsql.Identifier(schema), pgsql.Identifier(table), pgsql.Identifier(table))
            for table in tables
        ]
        _COUNT_QUERIES[schema] = pgsql.SQL("SELECT ") + pgsql.SQL(", ").join(counts)
    return _COUNT_QUERIES[schema]


async def _redis_sizes(store: WorkingStore) -> dict[str, int]:
    """Each working-store key under the prefix, with its size (HLEN / LLEN / STRLEN)."""
    escaped = "".join("\\" + c if c in "*?[]\\" else c for c in store.prefix)
    keys: list[str] = []
    for family in WorkingStore.KEY_FAMILIES:
        keys.extend([key async for key in store.client.scan_iter(match=f"{escaped}{family}:*", count=1000)])
    if not keys:
        return {}
    async with store.client.pipeline(transaction=False) as pipe:
        for key in keys:
            pipe.type(key)
        types = await pipe.execute()
    size_of = {"hash": "hlen", "list": "llen", "string": "strlen", "set": "scard", "zset": "zcard"}
    async with store.client.pipeline(transaction=False) as pipe:
        for key, kind in zip(keys, types, strict=True):
            getattr(pipe, size_of.get(_text(kind), "exists"))(key)
        sizes = await pipe.execute()
    return {_text(key): int(size) for key, size in zip(keys, sizes, strict=True)}


def _text(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else value


def store_counts(memory: Any) -> dict[str, Any]:
    """A snapshot of what the namespace of the sync ``memory`` holds: graph nodes and relationships, rows per
    PostgreSQL table of its schema, and its Redis keys with their sizes."""
    counts: dict[str, Any] = {
        "graph.nodes": gread(memory, "MATCH (n) RETURN count(n) AS n")[0]["n"],
        "graph.relationships": gread(memory, "MATCH ()-[r]->() RETURN count(r) AS n")[0]["n"],
    }
    rows_per_table = memory._portal.run(memory.core.ctx.postgres.fetch(_count_query(memory)))[0]
    for table, rows in rows_per_table.items():
        counts[f"postgres.{table}"] = rows
    counts["redis"] = memory._portal.run(_redis_sizes(memory.core.ctx.working))
    return counts
