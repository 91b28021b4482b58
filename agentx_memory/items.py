"""Namespaced items: a document store per user (PostgreSQL ``store_items``), the engine side of the LangGraph store.

An item is a JSON object under a ``key`` of a ``namespace`` path (a tuple of labels, possibly empty) of one user.
It may belong to an agent of the user (``agent_id``; None: the user's) and is filed under a channel. Optionally it
carries a ``text`` that the engine's embedder turns into a vector, which makes it searchable by meaning.

* **Scoped to the user.** Every read and write names the user; no call reaches another user's items. An agent
  (a memory from ``for_agent``) reads and deletes its own items and the user's, never another agent's, and may not
  overwrite another agent's item (:class:`~agentx_memory.errors.ConflictError`).
* **Durable.** Items are rows in PostgreSQL, not facts: no decay, dedup, contradiction check or retention applies to
  them. ``forget_user`` removes them; snapshots carry them.
* **Expiry.** An item written with ``ttl_minutes`` expires that long after its last write, or its last read that
  asked to refresh it; an expired item reads as absent and is deleted by the user's next write, or by the worker's
  ``cleanup`` job (:meth:`ItemStore.expire`, ``AsyncAgentMemory.expire_items``), whichever comes first.
* **Search.** ``search_items`` takes a namespace prefix, a ``filter`` on the value's fields (``{"field": value}``
  equality, ``{"field": {"$gt": 3}}`` with ``$eq $ne $gt $gte $lt $lte``, a nested ``{"a": {"b": 1}}`` compares
  inside objects) and optionally a ``query``: the items are then ranked by the cosine similarity of their vector to
  the query's (items without a vector come last, unscored); without one, newest first. ``limit`` and ``offset``
  page through the result. After a re-embed the items' vectors are empty; the next search by meaning embeds them
  again from their stored text.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from .audit import WriteEntry
from .context import MemoryContext
from .errors import ValidationError
from .models import GLOBAL_CHANNEL, StoredItem
from .runs import JobReport
from .sql.items import Condition
from .validation import check_channel, check_datetime, check_id, check_int, check_json, check_range, check_text

__all__ = ["MAX_NAMESPACE_DEPTH", "ItemStore", "ItemSweepReport", "check_namespace", "filter_conditions"]

#: The most labels a namespace may have.
MAX_NAMESPACE_DEPTH: Final = 20
#: The longest namespace label and item key, in characters (both follow the id rule otherwise).
_LABEL_MAX: Final = 200
_KEY_MAX: Final = 500
#: The longest TTL: ten years, in minutes.
_TTL_MAX: Final = 10 * 366 * 24 * 60.0
#: The most conditions one filter may hold.
_MAX_CONDITIONS: Final = 100
#: Items embedded again per batch after a re-embed emptied their vectors.
_HEAL_BATCH: Final = 64
_OPERATORS: Final = {"$eq": "eq", "$ne": "ne", "$gt": "gt", "$gte": "gte", "$lt": "lt", "$lte": "lte"}


def _now(now: datetime | None) -> datetime:
    return datetime.now(UTC) if now is None else check_datetime(now, "now")


def check_namespace(namespace: Any, field: str = "namespace", *, wildcards: bool = False) -> tuple[str, ...]:
    """A namespace path: a list or tuple of at most :data:`MAX_NAMESPACE_DEPTH` labels, each following the id rule
    (1-200 characters); with ``wildcards``, a label may also be None (any label)."""
    if isinstance(namespace, (str, bytes, Mapping)) or not isinstance(namespace, Sequence):
        raise ValidationError(field, f"must be a list or tuple of labels, got {type(namespace).__name__}")
    if len(namespace) > MAX_NAMESPACE_DEPTH:
        raise ValidationError(field, f"has {len(namespace)} labels; the limit is {MAX_NAMESPACE_DEPTH}")
    for i, label in enumerate(namespace):
        if not (wildcards and label is None):
            check_id(label, f"{field}[{i}]", max_len=_LABEL_MAX)
    return tuple(namespace)


def _operand(value: Any, field: str, op: str) -> Any:
    if op in ("eq", "ne"):
        check_json(value, field, max_bytes=64 * 1024)
        return value
    if isinstance(value, str):
        check_text(value, field, max_bytes=64 * 1024)
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValidationError(field, f"an order comparison takes a finite number or a string, got {value!r}")
    return value


def filter_conditions(filter: Any, field: str = "filter") -> list[Condition]:
    """The conditions of a search filter (see the module docstring); :class:`ValidationError` naming the field for
    an unknown operator, a bad operand or more than 100 conditions."""
    conditions: list[Condition] = []

    def walk(spec: Any, path: tuple[str, ...]) -> None:
        where = ".".join((field, *path))
        if not isinstance(spec, Mapping):
            raise ValidationError(where, f"must be a mapping of field to value, got {type(spec).__name__}")
        for name, wanted in spec.items():
            if not isinstance(name, str) or not name:
                raise ValidationError(where, f"field names must be non-empty strings, got {name!r}")
            check_json(name, where, max_bytes=1000)  # no NUL or lone surrogate: the path is sent as text
            here = (*path, name)
            at = ".".join((field, *here))
            if isinstance(wanted, Mapping) and any(isinstance(k, str) and k.startswith("$") for k in wanted):
                for op, operand in wanted.items():
                    if op not in _OPERATORS:
                        raise ValidationError(at, f"{op!r} is not an operator; use one of {', '.join(_OPERATORS)}")
                    kind = _OPERATORS[op]
                    conditions.append(Condition(here, kind, _operand(operand, f"{at}.{op}", kind)))
            elif isinstance(wanted, Mapping):
                conditions.append(Condition(here, "object"))
                walk(wanted, here)
            else:
                conditions.append(Condition(here, "eq", _operand(wanted, at, "eq")))
            if len(conditions) > _MAX_CONDITIONS:
                raise ValidationError(field, f"has more than {_MAX_CONDITIONS} conditions")

    walk(filter, ())
    return conditions


@dataclass
class ItemSweepReport(JobReport):
    """What an expiry sweep deleted (``changes``: each item's user, namespace, key, agent, channel and expiry; never
    its value)."""

    items_deleted: int = 0

    def counts(self) -> dict[str, Any]:
        """Items deleted (or, in a dry run, that would be)."""
        return {"items_deleted": self.items_deleted}


class ItemStore:
    """Put, get, delete, search and list the namespaced items of users (see the module docstring)."""

    def __init__(self, ctx: MemoryContext):
        self.ctx = ctx

    def _key(self, user_id: str, namespace: Any, key: Any) -> tuple[str, tuple[str, ...], str]:
        return (check_id(user_id, "user_id"), check_namespace(namespace), check_id(key, "key", max_len=_KEY_MAX))

    async def put(self, user_id: str, namespace: Sequence[str], key: str, value: Mapping[str, Any], *,
                  text: str | None = None, ttl_minutes: float | None = None, channel: str | None = None,
                  agent_id: str | None = None, writer: str | None = None, now: datetime | None = None) -> StoredItem:
        """Store ``value`` under ``key`` of ``namespace`` (replacing what is there), searchable by meaning through
        ``text`` when given; return the item as stored. ``agent_id``: the agent it belongs to; ``writer``: the agent
        writing (None: the user), who may not overwrite another agent's item. Nothing is written on bad input."""
        user, path, key = self._key(user_id, namespace, key)
        limits = self.ctx.settings.limits
        if not isinstance(value, Mapping):
            raise ValidationError("value", f"must be a mapping (a JSON object), got {type(value).__name__}")
        check_json(value, "value", max_bytes=limits.max_text_bytes)
        if any(not isinstance(k, str) for k in value):
            raise ValidationError("value", "keys must be strings")
        if text is not None:
            check_text(text, "text", max_bytes=limits.max_text_bytes)
        ttl = None if ttl_minutes is None else check_range(ttl_minutes, "ttl_minutes", 1e-3, _TTL_MAX)
        where = GLOBAL_CHANNEL if channel is None else check_channel(channel)
        if agent_id is not None:
            check_id(agent_id, "agent_id")
        when = _now(now)
        embedding = None if text is None else (await self.ctx.embedder.embed([text]))[0]
        stored = await self.ctx.sql.items.put(user, path, key, dict(value), agent_id=agent_id, channel=where,
                                              text=text, embedding=embedding, ttl_minutes=ttl, now=when,
                                              reader=writer)
        await self.ctx.audit.log_write("store", "item", where, ["/".join((*path, key))], {
            "namespace": list(path), "key": key, "searchable": text is not None, "ttl_minutes": ttl},
            user_id=user)
        return stored

    async def get(self, user_id: str, namespace: Sequence[str], key: str, *, refresh_ttl: bool = True,
                  reader: str | None = None, now: datetime | None = None) -> StoredItem | None:
        """The live item under ``key`` of ``namespace`` (its TTL started again when ``refresh_ttl``), or None."""
        user, path, key = self._key(user_id, namespace, key)
        return await self.ctx.sql.items.get(user, path, key, refresh=bool(refresh_ttl), now=_now(now), reader=reader)

    async def delete(self, user_id: str, namespace: Sequence[str], key: str, *, reader: str | None = None,
                     now: datetime | None = None) -> bool:
        """Remove the item; True when a live one was there."""
        user, path, key = self._key(user_id, namespace, key)
        removed = await self.ctx.sql.items.delete(user, path, key, now=_now(now), reader=reader)
        if removed:
            await self.ctx.audit.log_write("delete", "item", None, ["/".join((*path, key))], {
                "namespace": list(path), "key": key}, user_id=user)
        return removed

    async def expire(self, report: ItemSweepReport, *, now: datetime | None = None,
                     user_id: str | None = None) -> ItemSweepReport:
        """Delete the items expired as of ``now`` (default: the current time), of every user or only ``user_id``,
        each audited (operation ``expire``, one batched insert); a dry run lists them and deletes nothing."""
        when = _now(now)
        rows = (await self.ctx.sql.items.expired(now=when, user_id=user_id) if report.dry_run
                else await self.ctx.sql.items.sweep(now=when, user_id=user_id))
        entries = []
        for row in rows:
            path = list(row["namespace"])
            change = {"user_id": row["user_id"], "namespace": path, "key": row["item_key"],
                      "agent_id": row["agent_id"], "channel": row["channel"],
                      "expires_at": row["expires_at"].isoformat()}
            report.changes.append(change)
            entries.append(WriteEntry("expire", "item", row["channel"], ["/".join((*path, row["item_key"]))],
                                      {"namespace": path, "key": row["item_key"],
                                       "expires_at": change["expires_at"]}, user_id=row["user_id"]))
        report.items_deleted += len(rows)
        if not report.dry_run:
            await self.ctx.audit.log_writes(entries)
        return report

    async def search(self, user_id: str, namespace_prefix: Sequence[str] = (), *, query: str | None = None,
                     filter: Mapping[str, Any] | None = None, limit: int = 10, offset: int = 0,
                     refresh_ttl: bool = True, reader: str | None = None,
                     now: datetime | None = None) -> list[StoredItem]:
        """One page of the user's live items under ``namespace_prefix`` that pass ``filter``, ranked by meaning
        against ``query`` when given (each with its ``score``), else newest first."""
        user = check_id(user_id, "user_id")
        prefix = check_namespace(namespace_prefix, "namespace_prefix")
        conditions = [] if filter is None else filter_conditions(filter)
        check_int(limit, "limit", low=0, high=10_000)
        check_int(offset, "offset", low=0, high=2**31 - 1)
        vector = None
        if query is not None:
            check_text(query, "query", max_bytes=self.ctx.settings.limits.max_text_bytes)
            vector = (await self.ctx.embedder.embed([query], is_query=True))[0]
            await self._embed_missing(user)
        return await self.ctx.sql.items.search(user, prefix, vector=vector, conditions=conditions, limit=limit,
                                               offset=offset, refresh=bool(refresh_ttl), now=_now(now),
                                               reader=reader)

    async def namespaces(self, user_id: str, prefix: Sequence[str | None] = (), *, max_depth: int | None = None,
                         limit: int = 100, offset: int = 0, reader: str | None = None,
                         now: datetime | None = None) -> list[tuple[str, ...]]:
        """The user's distinct namespaces holding live items that start with ``prefix`` (a None label matches any),
        cut to ``max_depth`` labels, sorted, one page of them."""
        user = check_id(user_id, "user_id")
        pattern = check_namespace(prefix, "prefix", wildcards=True)
        if max_depth is not None:
            check_int(max_depth, "max_depth", low=0, high=MAX_NAMESPACE_DEPTH)
        check_int(limit, "limit", low=0, high=10_000)
        check_int(offset, "offset", low=0, high=2**31 - 1)
        return await self.ctx.sql.items.namespaces(user, pattern, max_depth=max_depth, limit=limit, offset=offset,
                                                   now=_now(now), reader=reader)

    async def _embed_missing(self, user_id: str) -> None:
        """Give the user's searchable items without a vector (after a re-embed) one from their stored text."""
        while rows := await self.ctx.sql.items.unembedded(user_id, _HEAL_BATCH):
            vectors = await self.ctx.embedder.embed([r["search_text"] for r in rows])
            await self.ctx.sql.items.set_embeddings(user_id, [
                (r["namespace"], r["item_key"], r["search_text"], v) for r, v in zip(rows, vectors, strict=True)])
            if len(rows) < _HEAL_BATCH:
                return
