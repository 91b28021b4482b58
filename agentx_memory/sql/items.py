"""The ``store_items`` repository: JSON documents under a key of a namespace path of one user (migration 0018).

Every statement names the user, so a row of another user is never read, written or counted; only the expiry sweep of
the worker's cleanup job may cover every user. Every statement takes the caller's ``now``: an item with
``expires_at <= now`` reads as absent; the user's next write deletes it, and so does the sweep. What
the agent ``reader`` may see (None: the user, everything) is its own items and the user's (``agent_id`` NULL).

A search filter arrives as :class:`Condition` values (built and checked by :mod:`agentx_memory.items`) and becomes
SQL here from fixed fragments, the paths and values always as parameters.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, LiteralString

import numpy as np
from psycopg import sql
from psycopg.types.json import Jsonb

from ..errors import ConflictError
from ..models import StoredItem
from .errors import pg_errors
from .postgres import PostgresStore

__all__ = ["Condition", "ItemRows"]

_COLUMNS: Final[LiteralString] = (
    "user_id, namespace, item_key, agent_id, channel, value, search_text IS NOT NULL AS searchable, ttl_minutes,"
    " created_at, updated_at")

_LIVE: Final[LiteralString] = "(expires_at IS NULL OR expires_at > %(now)s)"
_SEEN: Final[LiteralString] = "(%(reader)s::text IS NULL OR agent_id IS NULL OR agent_id = %(reader)s)"
_ITEM: Final[LiteralString] = (
    "user_id = %(user_id)s AND namespace = %(namespace)s::text[] AND item_key = %(key)s")
#: A row's own TTL started again from now (rows without a TTL keep none).
_REFRESHED: Final[LiteralString] = "%(now)s + make_interval(secs => s.ttl_minutes * 60)"

#: The user's expired rows, deleted by each write of theirs (best effort, as LangGraph's stores sweep).
PURGE: Final[LiteralString] = (
    "DELETE FROM store_items WHERE user_id = %(user_id)s AND expires_at IS NOT NULL AND expires_at <= %(now)s")

_EXPIRED: Final[LiteralString] = (
    "expires_at IS NOT NULL AND expires_at <= %(now)s AND (%(user_id)s::text IS NULL OR user_id = %(user_id)s)")
_EXPIRED_COLUMNS: Final[LiteralString] = "user_id, namespace, item_key, agent_id, channel, expires_at"

#: The expired rows of every user (or one), for a dry run of the sweep.
EXPIRED: Final[LiteralString] = (
    "SELECT " + _EXPIRED_COLUMNS + " FROM store_items WHERE " + _EXPIRED + " ORDER BY user_id, namespace, item_key")

#: One page of expired rows deleted (rows another writer holds are skipped, not waited for).
SWEEP_PAGE: Final[LiteralString] = (
    "DELETE FROM store_items WHERE (user_id, namespace, item_key) IN (SELECT user_id, namespace, item_key"
    " FROM store_items WHERE " + _EXPIRED + " LIMIT %(limit)s FOR UPDATE SKIP LOCKED) RETURNING " + _EXPIRED_COLUMNS)

_SWEEP_PAGE_SIZE: Final = 500

#: Insert, or overwrite: the creation time stays unless the row had expired; another agent's item is left alone
#: (no row comes back: the caller refuses).
UPSERT: Final[LiteralString] = (
    "INSERT INTO store_items AS s (user_id, namespace, item_key, agent_id, channel, value, search_text, embedding,"
    " ttl_minutes, expires_at, created_at, updated_at) VALUES (%(user_id)s, %(namespace)s::text[], %(key)s,"
    " %(agent_id)s, %(channel)s, %(value)s, %(text)s, %(embedding)s, %(ttl)s::float8,"
    " %(now)s + make_interval(secs => %(ttl)s::float8 * 60), %(now)s, %(now)s)"
    " ON CONFLICT (user_id, namespace, item_key) DO UPDATE SET agent_id = EXCLUDED.agent_id,"
    "  channel = EXCLUDED.channel, value = EXCLUDED.value, search_text = EXCLUDED.search_text,"
    "  embedding = EXCLUDED.embedding, ttl_minutes = EXCLUDED.ttl_minutes, expires_at = EXCLUDED.expires_at,"
    "  updated_at = EXCLUDED.updated_at,"
    "  created_at = CASE WHEN s.expires_at IS NOT NULL AND s.expires_at <= %(now)s THEN EXCLUDED.created_at"
    "   ELSE s.created_at END"
    " WHERE %(reader)s::text IS NULL OR s.agent_id IS NULL OR s.agent_id = %(reader)s"
    "  OR (s.expires_at IS NOT NULL AND s.expires_at <= %(now)s)"
    " RETURNING " + _COLUMNS + ", expires_at")

#: One live item (refreshing its TTL when asked), with its expiry after that.
GET: Final[LiteralString] = (
    "WITH hit AS (SELECT " + _COLUMNS + ", expires_at FROM store_items WHERE " + _ITEM + " AND " + _LIVE +
    " AND " + _SEEN + "),"
    " touched AS (UPDATE store_items AS s SET expires_at = " + _REFRESHED + " FROM hit"
    "  WHERE %(refresh)s AND s.ttl_minutes IS NOT NULL AND s.user_id = hit.user_id"
    "  AND s.namespace = hit.namespace AND s.item_key = hit.item_key RETURNING s.expires_at)"
    " SELECT user_id, namespace, item_key, agent_id, channel, value, searchable, ttl_minutes, created_at, updated_at,"
    " coalesce((SELECT expires_at FROM touched), hit.expires_at) AS expires_at FROM hit")

DELETE: Final[LiteralString] = (
    "DELETE FROM store_items WHERE " + _ITEM + " AND " + _SEEN + " RETURNING " + _LIVE + " AS live")

#: The rows in a namespace prefix, ranked (``{score}``: the cosine similarity, or NULL), filtered (``{filters}``),
#: one page of them; the TTL of each returned row refreshed when asked.
_SEARCH: Final[LiteralString] = (
    "WITH ranked AS (SELECT " + _COLUMNS + ", expires_at, {score} AS score FROM store_items"
    "  WHERE user_id = %(user_id)s AND namespace[1:%(depth)s] = %(prefix)s::text[] AND " + _LIVE +
    "  AND " + _SEEN + "{filters}),"
    " hits AS (SELECT * FROM ranked ORDER BY score IS NULL, score DESC, updated_at DESC, namespace, item_key"
    "  LIMIT %(limit)s OFFSET %(offset)s),"
    " touched AS (UPDATE store_items AS s SET expires_at = " + _REFRESHED + " FROM hits"
    "  WHERE %(refresh)s AND s.ttl_minutes IS NOT NULL AND s.user_id = hits.user_id"
    "  AND s.namespace = hits.namespace AND s.item_key = hits.item_key"
    "  RETURNING s.namespace, s.item_key, s.expires_at AS refreshed)"
    " SELECT hits.*, coalesce(touched.refreshed, hits.expires_at) AS expires_now FROM hits"
    " LEFT JOIN touched USING (namespace, item_key)"
    " ORDER BY hits.score IS NULL, hits.score DESC, hits.updated_at DESC, hits.namespace, hits.item_key")
_SCORED: Final[LiteralString] = "CASE WHEN embedding IS NULL THEN NULL ELSE 1 - (embedding <=> %(vector)s) END"
_UNSCORED: Final[LiteralString] = "NULL::float8"

#: The user's distinct namespaces (``{depth}``: cut to a depth) matching a prefix pattern (``{prefix}``), sorted
#: by code point, one page of them.
_NAMESPACES: Final[LiteralString] = (
    "SELECT DISTINCT {depth} COLLATE \"C\" AS ns FROM store_items WHERE user_id = %(user_id)s"
    " AND cardinality(namespace) >= %(length)s AND " + _LIVE + " AND " + _SEEN + "{prefix}"
    " ORDER BY ns LIMIT %(limit)s OFFSET %(offset)s")

#: Searchable rows of the user without a vector (a re-embed emptied them), a batch at a time.
UNEMBEDDED: Final[LiteralString] = (
    "SELECT namespace, item_key, search_text FROM store_items WHERE user_id = %(user_id)s"
    " AND search_text IS NOT NULL AND embedding IS NULL ORDER BY namespace, item_key LIMIT %(limit)s")
SET_EMBEDDING: Final[LiteralString] = (
    "UPDATE store_items SET embedding = %s WHERE user_id = %s AND namespace = %s::text[] AND item_key = %s"
    " AND search_text = %s AND embedding IS NULL")

#: Each operator of a filter → its SQL, over the value at the path ``{path}`` compared with ``{value}``.
_OPERATORS: Final[dict[str, LiteralString]] = {
    "eq": "coalesce(value #> {path}::text[], 'null'::jsonb) = {value}::jsonb",
    "ne": "coalesce(value #> {path}::text[], 'null'::jsonb) <> {value}::jsonb",
    "object": "jsonb_typeof(value #> {path}::text[]) = 'object'",
}
#: Order comparisons: numbers with numbers, text with text (by code point); any other value does not match.
_COMPARISONS: Final[dict[str, LiteralString]] = {"gt": ">", "gte": ">=", "lt": "<", "lte": "<="}
_NUMBER: Final[LiteralString] = (
    "CASE WHEN jsonb_typeof(value #> {path}::text[]) = 'number'"
    " THEN (value #>> {path}::text[])::float8 {op} {value}::float8 ELSE false END")
_TEXT: Final[LiteralString] = (
    "CASE WHEN jsonb_typeof(value #> {path}::text[]) = 'string'"
    " THEN (value #>> {path}::text[]) COLLATE \"C\" {op} {value}::text ELSE false END")


@dataclass(frozen=True)
class Condition:
    """One test of a search filter on the item's value at ``path``: ``op`` is ``eq`` / ``ne`` (JSON equality, a
    missing field counting as null), ``gt`` / ``gte`` / ``lt`` / ``lte`` (``operand`` a number or a string) or
    ``object`` (the value there is a JSON object; no operand)."""

    path: tuple[str, ...]
    op: str
    operand: Any = None


def _filters(conditions: Sequence[Condition], params: dict[str, Any]) -> sql.Composable:
    parts: list[sql.Composable] = []
    for i, condition in enumerate(conditions):
        path, value = f"fp{i}", f"fv{i}"
        params[path] = list(condition.path)
        if condition.op in _COMPARISONS:
            template = _TEXT if isinstance(condition.operand, str) else _NUMBER
            params[value] = condition.operand if isinstance(condition.operand, str) else float(condition.operand)
            part = sql.SQL(template).format(path=sql.Placeholder(path), value=sql.Placeholder(value),
                                            op=sql.SQL(_COMPARISONS[condition.op]))
        else:
            params[value] = Jsonb(condition.operand)
            part = sql.SQL(_OPERATORS[condition.op]).format(path=sql.Placeholder(path), value=sql.Placeholder(value))
        parts.append(sql.SQL(" AND ") + part)
    return sql.Composed(parts)


def _vector(values: Any) -> np.ndarray:
    return np.asarray(values, dtype=np.float32)  # a list would be sent as a float array, not a vector


def _item(row: dict[str, Any], *, expires: str = "expires_at") -> StoredItem:
    return StoredItem(user_id=row["user_id"], namespace=tuple(row["namespace"]), key=row["item_key"],
                      value=row["value"], agent_id=row["agent_id"], channel=row["channel"],
                      searchable=row["searchable"], ttl_minutes=row["ttl_minutes"], expires_at=row[expires],
                      created_at=row["created_at"], updated_at=row["updated_at"], score=row.get("score"))


class ItemRows:
    """Writes, reads, searches and lists ``store_items`` rows as :class:`~agentx_memory.models.StoredItem`."""

    def __init__(self, store: PostgresStore):
        self.store = store

    async def put(self, user_id: str, namespace: Sequence[str], key: str, value: dict[str, Any], *,
                  agent_id: str | None, channel: str, text: str | None, embedding: Any, ttl_minutes: float | None,
                  now: datetime, reader: str | None) -> StoredItem:
        """Store the item (replacing the one under the key) after deleting the user's expired items; return it as
        stored. Raises :class:`ConflictError` when the key holds a live item of an agent other than ``reader``."""
        params = {"user_id": user_id, "namespace": list(namespace), "key": key, "agent_id": agent_id,
                  "channel": channel, "value": Jsonb(value), "text": text,
                  "embedding": None if embedding is None else _vector(embedding), "ttl": ttl_minutes, "now": now,
                  "reader": reader}
        async with pg_errors("writing store_items"), self.store.connection() as conn, conn.transaction():
            await conn.execute(PURGE, params)
            row = await (await conn.execute(UPSERT, params)).fetchone()
        if row is None:
            raise ConflictError(f"item {key!r} of namespace {tuple(namespace)!r} belongs to another agent; "
                                f"agent {reader!r} may not overwrite it")
        return _item(row)

    async def get(self, user_id: str, namespace: Sequence[str], key: str, *, refresh: bool, now: datetime,
                  reader: str | None) -> StoredItem | None:
        """The live item (refreshing its TTL when ``refresh``), or ``None``."""
        rows = await self.store.fetch(GET, {"user_id": user_id, "namespace": list(namespace), "key": key,
                                            "refresh": refresh, "now": now, "reader": reader},
                                      what="reading store_items")
        return _item(rows[0]) if rows else None

    async def delete(self, user_id: str, namespace: Sequence[str], key: str, *, now: datetime,
                     reader: str | None) -> bool:
        """Remove the item; True when a live one was there (an expired one goes too)."""
        rows = await self.store.fetch(DELETE, {"user_id": user_id, "namespace": list(namespace), "key": key,
                                               "now": now, "reader": reader}, what="deleting store_items")
        return bool(rows and rows[0]["live"])

    async def expired(self, *, now: datetime, user_id: str | None) -> list[dict[str, Any]]:
        """The rows expired as of ``now``, of every user or one (user, namespace, key, agent, channel, expiry)."""
        return await self.store.fetch(EXPIRED, {"now": now, "user_id": user_id}, what="reading store_items")

    async def sweep(self, *, now: datetime, user_id: str | None) -> list[dict[str, Any]]:
        """Delete the rows expired as of ``now``, of every user or one, in pages; return what was deleted (as
        :meth:`expired` lists it; never a value)."""
        return await self.store.fetch_pages(SWEEP_PAGE, {"now": now, "user_id": user_id},
                                            page_size=_SWEEP_PAGE_SIZE, what="deleting expired store_items")

    async def search(self, user_id: str, prefix: Sequence[str], *, vector: Any, conditions: Sequence[Condition],
                     limit: int, offset: int, refresh: bool, now: datetime, reader: str | None) -> list[StoredItem]:
        """One page of the live items under ``prefix`` that meet every condition: by cosine similarity to
        ``vector`` (items without a vector last), else newest first; TTLs of the page refreshed when ``refresh``."""
        params: dict[str, Any] = {"user_id": user_id, "depth": len(prefix), "prefix": list(prefix), "limit": limit,
                                  "offset": offset, "refresh": refresh, "now": now, "reader": reader,
                                  "vector": None if vector is None else _vector(vector)}
        query = sql.SQL(_SEARCH).format(score=sql.SQL(_UNSCORED if vector is None else _SCORED),
                                        filters=_filters(conditions, params))
        rows = await self.store.fetch(query, params, what="searching store_items")
        return [_item(r, expires="expires_now") for r in rows]

    async def namespaces(self, user_id: str, prefix: Sequence[str | None], *, max_depth: int | None, limit: int,
                         offset: int, now: datetime, reader: str | None) -> list[tuple[str, ...]]:
        """One page of the user's distinct namespaces that start with ``prefix`` (None: any label there), cut to
        ``max_depth`` labels, sorted by code point."""
        params: dict[str, Any] = {"user_id": user_id, "length": len(prefix), "limit": limit, "offset": offset,
                                  "now": now, "reader": reader, "depth": max_depth}
        tests: list[sql.Composable] = []
        for i, label in enumerate(prefix):
            if label is not None:
                params[f"p{i}"] = label
                tests.append(sql.SQL(" AND namespace[{}] = {}").format(sql.Literal(i + 1), sql.Placeholder(f"p{i}")))
        depth = sql.SQL("namespace" if max_depth is None else "namespace[1:%(depth)s]")
        query = sql.SQL(_NAMESPACES).format(depth=depth, prefix=sql.Composed(tests))
        rows = await self.store.fetch(query, params, what="listing store_items namespaces")
        return [tuple(r["ns"]) for r in rows]

    async def unembedded(self, user_id: str, limit: int) -> list[dict[str, Any]]:
        """Up to ``limit`` searchable items of the user that have no vector: namespace, key and the text."""
        return await self.store.fetch(UNEMBEDDED, {"user_id": user_id, "limit": limit},
                                      what="reading store_items to embed")

    async def set_embeddings(self, user_id: str, items: Sequence[tuple[Sequence[str], str, str, Any]]) -> None:
        """Store the vectors of ``(namespace, key, text, vector)`` items still holding that text and no vector."""
        await self.store.executemany(SET_EMBEDDING, [(_vector(v), user_id, list(ns), key, text)
                                                     for ns, key, text, v in items], what="embedding store_items")
