"""Drop a benchmark namespace: find the servers the settings name, then drop the namespace's graph and schema.

This is the bench's one copy of "find the servers, then drop a namespace" (``cli._reset_namespace`` is another);
a shared helper in :mod:`agentx_memory.backends` is meant to replace both.
"""

from __future__ import annotations

import asyncio

from ...settings import Settings

__all__ = ["drop_namespace"]


async def drop_namespace(settings: Settings, *, graph: bool = True) -> None:
    """Find the servers of ``settings`` (starting the embedded ones when they are not running), then drop the
    namespace: its graph (every node and index; skipped when ``graph`` is false, for a namespace that shares its
    database with another) and its PostgreSQL schema."""
    import psycopg
    from psycopg import sql

    from ...backends import make_graph_store

    dsn, socket = settings.postgres.dsn, None
    if settings.uses_embedded:
        from ...runtime import EmbeddedStack

        endpoints = await asyncio.to_thread(EmbeddedStack(settings.embedded).ensure_running)
        dsn, socket = dsn or endpoints.postgres_dsn, str(endpoints.falkordb_socket)
    if graph:
        store = make_graph_store(settings, falkordb_socket=socket)
        try:
            await store.drop_all()
        finally:
            await store.close()
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
        schema = sql.Identifier(settings.postgres.db_schema)
        await conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(schema))
