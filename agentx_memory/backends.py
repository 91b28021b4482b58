"""Open the three stores a memory needs — graph, PostgreSQL, Redis — from settings, and drop a namespace of them.

Each store whose URI is empty runs on the embedded servers (started on first use, shared with other processes):
:func:`locate_stores` says where the stores are. ``open_backends`` also brings the schemas up to date: pending
PostgreSQL migrations and the graph's constraints and indexes, both idempotent and safe when several processes open
the same stores at once. :func:`drop_namespace` removes everything one namespace (graph name, PostgreSQL schema,
Redis key prefix) holds.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import redis.asyncio as aioredis
import redis.exceptions

from .errors import ConfigurationError, StorageError, StorageUnavailableError
from .graph.port import GraphStore
from .graph_backfills import backfill_keys
from .settings import GraphSettings, Settings
from .sql.postgres import PostgresStore, migrate
from .working import WorkingStore

__all__ = [
    "Backends", "StoreLocations", "drop_namespace", "locate_stores", "make_graph_store", "migrate_namespace",
    "open_backends",
]


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


@dataclass(frozen=True)
class StoreLocations:
    """Where the stores of one settings object are: the configured services, else the embedded servers."""

    postgres_dsn: str
    """libpq connection string of the PostgreSQL server."""
    redis_url: str
    """URL of the Redis server (the embedded FalkorDB's ``unix://`` socket by default)."""
    falkordb_socket: str | None
    """Unix socket of the embedded FalkorDB, None when every store is a configured service."""


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


async def locate_stores(settings: Settings) -> StoreLocations:
    """Where the stores of ``settings`` are: the configured URIs, and the embedded servers for the rest (started
    when they are not running; they keep running afterwards)."""
    if not settings.uses_embedded:
        return StoreLocations(settings.postgres.dsn, settings.redis.url, None)
    from .runtime import EmbeddedStack

    endpoints = await asyncio.to_thread(EmbeddedStack(settings.embedded).ensure_running)
    return StoreLocations(
        postgres_dsn=settings.postgres.dsn or endpoints.postgres_dsn,
        redis_url=settings.redis.url or endpoints.falkordb_url,
        falkordb_socket=str(endpoints.falkordb_socket),
    )


async def migrate_namespace(settings: Settings, stores: StoreLocations, graph: GraphStore) -> list[int]:
    """Bring the namespace's schema up to date: pending PostgreSQL migrations, then the graph's constraints and
    indexes (both idempotent), then the lookup keys of nodes written before they existed (``graph_backfills``, once
    per graph). Returns the migration versions applied now."""
    dimension, model = settings.embedding.dimension, settings.embedding.model
    applied = await migrate(stores.postgres_dsn, settings.postgres.db_schema, dimension=dimension, model=model)
    await graph.apply_schema(dimension=dimension, model=model)
    await backfill_keys(graph)
    return applied


async def open_backends(settings: Settings, *, migrate_schema: bool = True) -> Backends:
    """Connect to (and, when embedded, start) the graph, PostgreSQL and Redis, and apply pending schema."""
    stores = await locate_stores(settings)
    graph = make_graph_store(settings, falkordb_socket=stores.falkordb_socket)
    if migrate_schema:
        await migrate_namespace(settings, stores, graph)

    postgres = PostgresStore(
        stores.postgres_dsn,
        db_schema=settings.postgres.db_schema,
        min_size=settings.postgres.pool_min_size,
        max_size=settings.postgres.pool_max_size,
        connect_timeout=settings.postgres.connect_timeout_seconds,
        pool_timeout=settings.postgres.pool_timeout_seconds,
    )
    await postgres.open()
    timeout = settings.redis.socket_timeout_seconds
    client = aioredis.Redis.from_url(stores.redis_url, decode_responses=True, socket_timeout=timeout,
                                     socket_connect_timeout=timeout)
    working = WorkingStore(client, settings.working, key_prefix=settings.redis.key_prefix)
    return Backends(graph=graph, postgres=postgres, redis=client, working=working)


async def drop_namespace(
    settings: Settings, *, graph: bool = True, keys: bool = True, stores: StoreLocations | None = None
) -> None:
    """Drop everything the namespace of ``settings`` holds: its graph, its PostgreSQL schema and its Redis keys.

    ``graph``: drop the graph with every node and index (``GraphStore.drop_all``). On Neo4j the graph is the whole
    database, so pass ``graph=False`` when others share it. ``keys``: delete the Redis keys under
    ``redis.key_prefix``. ``stores``: where the stores are, if known (else :func:`locate_stores`, which starts the
    embedded servers when needed). The servers keep running; other namespaces are not touched. Raises
    :class:`ConfigurationError` when the namespace is the shared default (schema ``public``, ``graph`` with the
    default graph name, or ``keys`` with an empty key prefix), which is never dropped.
    """
    schema, prefix = settings.postgres.db_schema, settings.redis.key_prefix
    default_graph = GraphSettings.model_fields["name"].default
    if schema == "public" or (keys and not prefix) or (graph and settings.graph.name == default_graph):
        raise ConfigurationError(
            f"refusing to drop the default namespace (PostgreSQL schema {schema!r}, graph {settings.graph.name!r}, "
            f"Redis key prefix {prefix!r}): a namespace to drop needs its own postgres.db_schema, graph.name and "
            "redis.key_prefix"
        )
    from .sql.postgres import drop_schema

    stores = stores or await locate_stores(settings)
    if graph:
        store = make_graph_store(settings, falkordb_socket=stores.falkordb_socket)
        try:
            await store.drop_all()
        finally:
            await store.close()
    if keys:
        await _delete_keys(stores.redis_url, prefix)
    await drop_schema(stores.postgres_dsn, schema)


async def _delete_keys(redis_url: str, prefix: str) -> None:
    """Delete the keys the working store writes under ``prefix`` (``{prefix}{family}:*`` for each key family, glob
    characters in the prefix matched literally): a bare ``{prefix}*`` would also match a longer prefix's keys."""
    escaped = "".join("\\" + c if c in "*?[]\\" else c for c in prefix)
    client = aioredis.Redis.from_url(redis_url)
    try:
        for family in WorkingStore.KEY_FAMILIES:
            batch: list[bytes] = []
            async for key in client.scan_iter(match=f"{escaped}{family}:*", count=1000):
                batch.append(key)
                if len(batch) >= 1000:
                    await client.unlink(*batch)
                    batch.clear()
            if batch:
                await client.unlink(*batch)
    except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, OSError) as exc:
        raise StorageUnavailableError(f"Redis unavailable while deleting the keys {prefix}*: {exc}") from exc
    except redis.exceptions.RedisError as exc:
        raise StorageError(f"Redis failed while deleting the keys {prefix}*: {exc}") from exc
    finally:
        await client.aclose()
