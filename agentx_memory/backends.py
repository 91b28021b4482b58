"""Open the three stores a memory needs — graph, PostgreSQL, Redis — from settings.

Each store whose URI is empty runs on the embedded servers (started on first use, shared with other processes).
``open_backends`` also brings the schemas up to date: pending PostgreSQL migrations and the graph's constraints and
indexes, both idempotent and safe when several processes open the same stores at once.
"""

from __future__ import annotations

from dataclasses import dataclass

import redis.asyncio as aioredis

from .graph.port import GraphStore
from .settings import Settings
from .sql.postgres import PostgresStore, migrate
from .working import WorkingStore

__all__ = ["Backends", "make_graph_store", "open_backends"]


@dataclass
class Backends:
    """The open stores of one memory instance."""

    graph: GraphStore
    postgres: PostgresStore
    redis: aioredis.Redis
    working: WorkingStore

    async def close(self) -> None:
        """Close every connection (the embedded servers keep running for other processes)."""
        await self.postgres.close()
        await self.redis.aclose()
        await self.graph.close()


def make_graph_store(settings: Settings, *, falkordb_socket: str | None = None) -> GraphStore:
    """The graph adapter the settings select: Neo4j for bolt/neo4j URIs, FalkorDB otherwise."""
    graph = settings.graph
    if graph.uri and graph.backend == "neo4j":
        from .graph.neo4j import Neo4jGraphStore

        return Neo4jGraphStore(uri=graph.uri, user=graph.user, password=graph.password, database=graph.database,
                               max_transaction_retry_time=graph.max_retry_seconds)
    from .graph.falkordb import FalkorGraphStore

    if graph.uri:
        return FalkorGraphStore(graph_name=graph.name, url=graph.uri, password=graph.password or None)
    return FalkorGraphStore(graph_name=graph.name, unix_socket_path=falkordb_socket)


def _embedded_endpoints(settings: Settings):
    from .runtime import EmbeddedStack

    return EmbeddedStack(settings.embedded).ensure_running()


async def open_backends(settings: Settings, *, migrate_schema: bool = True) -> Backends:
    """Connect to (and, when embedded, start) the graph, PostgreSQL and Redis, and apply pending schema."""
    endpoints = None
    if settings.uses_embedded:
        import asyncio

        endpoints = await asyncio.to_thread(_embedded_endpoints, settings)

    pg_dsn = settings.postgres.dsn or endpoints.postgres_dsn
    redis_url = settings.redis.url or endpoints.falkordb_url
    graph = make_graph_store(settings, falkordb_socket=str(endpoints.falkordb_socket) if endpoints else None)
    dimension, model = settings.embedding.dimension, settings.embedding.model

    if migrate_schema:
        await migrate(pg_dsn, settings.postgres.db_schema, dimension=dimension, model=model)
        await graph.apply_schema(dimension=dimension, model=model)

    postgres = PostgresStore(
        pg_dsn,
        db_schema=settings.postgres.db_schema,
        min_size=settings.postgres.pool_min_size,
        max_size=settings.postgres.pool_max_size,
    )
    await postgres.open()
    client = aioredis.Redis.from_url(redis_url, decode_responses=True)
    working = WorkingStore(client, settings.working, key_prefix=settings.redis.key_prefix)
    return Backends(graph=graph, postgres=postgres, redis=client, working=working)
