"""Semantic memory: entities, facts and the typed relationships between them (spec 003 "Semantic Memory").

* Entities merge by (user, channel, type, normalized name): upserting "Alice " and "alice" of the same type gives
  one node whose aliases are the union of both.
* Facts link ``DERIVED_FROM`` their source turn and ``ABOUT`` their entities; ids given must exist for the user.
* Relationship types come from a whitelist (:data:`~agentx_memory.models.RELATIONSHIP_TYPES`); each has its own
  prewritten statement, so a type is never interpolated into Cypher.
* ``promote_to_global`` copies a project fact into ``_global`` with a ``PROMOTED_FROM`` link and an audit entry.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import random
import re
import time
import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from .agents import resolve_scope
from .context import MemoryContext
from .errors import ConflictError, NotFoundError, StorageError, ValidationError
from .fact_slots import slot_key
from .gathering import gather
from .graph import cypher
from .models import GLOBAL_CHANNEL, RELATIONSHIP_TYPES, Entity, Fact, Relationship
from .reinforcement import AccessCounts, ReinforcementBuffer
from .rows import entity_from_row, fact_from_row, facts_newest_first
from .sql.timeline import TimelineEntry
from .timeutil import now_ms, to_ms
from .validation import (
    check_channel,
    check_channels,
    check_datetime,
    check_id,
    check_ids,
    check_int,
    check_json,
    check_range,
    check_text,
    checked_copy,
)

__all__ = ["EntityGraph", "SemanticMemory", "entity_key", "entity_text", "merge_entity", "normalize_name",
           "promoted_fact_id"]

log = logging.getLogger(__name__)

_SPACES = re.compile(r"\s+")
#: How many times an entity upsert re-reads and retries when concurrent upserts of the same entity overtake it.
ENTITY_MERGE_ATTEMPTS = 50
#: The most facts one ``vector_search_facts`` call reads while it widens its search past a confidence filter.
_MAX_FETCH = 10_000
_PROMOTION_NS = uuid.UUID("6f1c1f0e-5b0a-4d0c-9a53-7c1d2c7a9e11")


def promoted_fact_id(user_id: str, fact_id: str) -> str:
    """The id of the ``_global`` copy that promoting the user's fact makes (the same every time, so a run can record
    it before the copy is written). It depends on the user too, and the copy's MERGE is the user's: another user
    knowing the fact id can neither pre-create the copy nor get their fact linked to it."""
    return str(uuid.uuid5(_PROMOTION_NS, f"{user_id}\x1f{fact_id}"))


def normalize_name(name: str) -> str:
    """Case-folded name with whitespace collapsed: the identity of an entity within its type."""
    return _SPACES.sub(" ", name.strip()).casefold()


def entity_key(user_id: str, channel: str, type_: str, name: str) -> str:
    """The merge key of an entity: a hash of user, channel, type and normalized name."""
    raw = "\x1f".join([user_id, channel, type_.strip().casefold(), normalize_name(name)])
    return hashlib.sha256(raw.encode()).hexdigest()


class EntityGraph(BaseModel):
    """The neighbourhood of some entities: the entities, the edges among them, and facts about them."""

    entities: list[Entity] = Field(default_factory=list)
    relationships: list[Relationship] = Field(default_factory=list)
    facts: list[Fact] = Field(default_factory=list)


class SemanticMemory:
    """Entities, facts and relationships in the graph."""

    def __init__(self, ctx: MemoryContext):
        self.ctx = ctx

    # --- entities -----------------------------------------------------------------------------------------------

    async def upsert_entity(self, entity: Entity, channel: str | None = None) -> Entity:
        """Create or merge an entity; return it as stored (the existing id when it merged).

        The name is stored with surrounding whitespace stripped and inner runs collapsed; aliases are merged as a set
        (by normalized form), properties key by key; an empty description keeps the stored one.

        Write order: the graph (one statement) is the write; the timeline row and the audit entry follow it. A raised
        error means the graph was not written (nothing is left behind). Once the graph write succeeded the call
        returns it even when PostgreSQL then fails: the missing timeline row or audit entry is logged (WARNING,
        ``agentx_memory.semantic``; audit: ``agentx_memory.audit``) and not repaired by ``reconcile``.
        """
        started = time.perf_counter()
        if not isinstance(entity, Entity):
            raise ValidationError("entity", f"must be an Entity, got {type(entity).__name__}")
        entity = self.checked_entity(entity, channel)
        key = entity_key(entity.user_id, entity.channel, entity.type, entity.name)
        row, embedding = await self._merge_entity(entity, key)
        stored = entity_from_row(row)
        await self._timeline_after_write("entity", stored.id, stored.user_id, stored.channel, stored.first_seen,
                                         stored.name + (f": {stored.description}" if stored.description else ""),
                                         stored.salience, embedding=embedding)
        await self.ctx.audit.log_write("upsert", "semantic", stored.channel, [stored.id], {"kind": "entity"},
                                       user_id=stored.user_id, latency_ms=_ms(started),
                                       payload=stored.model_dump(mode="json"))
        return stored

    def checked_entity(self, entity: Entity, channel: str | None = None) -> Entity:
        """A checked copy of ``entity`` as :meth:`upsert_entity` stores it (``channel`` applied, the name's spaces
        normalized, a given vector checked); :class:`~agentx_memory.errors.ValidationError` naming the field."""
        entity = checked_copy(entity, keep=("embedding",))
        if channel is not None:
            entity.channel = channel
        check_channel(entity.channel)
        check_id(entity.user_id, "user_id")
        check_id(entity.id, "id")
        check_text(entity.name, "name", max_bytes=1000)
        entity.name = _SPACES.sub(" ", entity.name.strip())
        for alias in entity.aliases:
            check_text(alias, "aliases", max_bytes=1000)
        check_text(entity.type, "type", max_bytes=100)
        if entity.description:
            check_text(entity.description, "description", max_bytes=self.ctx.settings.limits.max_text_bytes)
        check_range(entity.salience, "salience", 0.0, 1.0)
        check_datetime(entity.first_seen, "first_seen")
        check_json(entity.properties, "properties", max_bytes=self.ctx.settings.limits.max_metadata_bytes)
        if entity.embedding is not None:
            entity.embedding = self.ctx.embedder.check(entity.embedding)
        return entity

    async def get_entities(self, user_id: str, entity_ids: Sequence[str]) -> list[Entity]:
        """The user's entities with these ids (unknown ids are left out)."""
        rows = await self.ctx.graph.read(cypher.GET_ENTITIES, {"ids": list(entity_ids), "user_id": user_id})
        return [entity_from_row(r["entity"]) for r in rows]

    async def get_entity(self, entity_id: str, user_id: str) -> Entity:
        """One entity of the user, or NotFoundError."""
        check_id(entity_id, "entity_id")
        found = await self.get_entities(user_id, [entity_id])
        if not found:
            raise NotFoundError("entity", entity_id)
        return found[0]

    async def create_relationship(self, source_id: str, target_id: str, rel_type: str,
                                  properties: dict[str, Any] | None = None, *, user_id: str) -> Relationship:
        """Link two of the user's entities with a typed relationship (idempotent: MERGE)."""
        check_id(user_id, "user_id")
        props, props_json = self.checked_relationship(source_id, target_id, rel_type, properties)
        rows = await self.ctx.graph.write(cypher.CREATE_RELATIONSHIP[rel_type], {
            "source_id": source_id, "target_id": target_id, "user_id": user_id, "properties": props_json,
            "now": now_ms(),
        })
        if not rows:
            known = {e.id for e in await self.get_entities(user_id, [source_id, target_id])}
            missing = source_id if source_id not in known else target_id
            raise NotFoundError("entity", missing)
        await self.ctx.audit.log_write("relate", "semantic", None, [source_id, target_id],
                                       {"rel_type": rel_type}, user_id=user_id)
        return Relationship(source_id=source_id, target_id=target_id, rel_type=rel_type, properties=props,
                            user_id=user_id)

    def checked_relationship(self, source_id: str, target_id: str, rel_type: str,
                             properties: dict[str, Any] | None) -> tuple[dict[str, Any], str]:
        """The properties of a relationship :meth:`create_relationship` would store, and their JSON;
        :class:`~agentx_memory.errors.ValidationError` naming the field."""
        check_id(source_id, "source_id")
        check_id(target_id, "target_id")
        if not isinstance(rel_type, str) or rel_type not in RELATIONSHIP_TYPES:
            raise ValidationError("rel_type", f"{rel_type!r} is not one of {', '.join(RELATIONSHIP_TYPES)}")
        props = properties or {}
        if not isinstance(props, dict):
            raise ValidationError("properties", f"must be a dict, got {type(props).__name__}")
        if not props:  # most edges carry none: no JSON to check
            return props, "{}"
        for key in props:  # JSON would write {1: 2} as {"1": 2}: a different dict than the caller's
            if not isinstance(key, str):
                raise ValidationError("properties", f"keys must be strings, got {key!r}")
        return props, check_json(props, "properties", max_bytes=self.ctx.settings.limits.max_metadata_bytes)

    async def get_entity_graph(self, entity_ids: Sequence[str], depth: int = 2, *, user_id: str,
                               limit: int | None = None, agent_id: str | None = None) -> EntityGraph:
        """The entities within ``depth`` hops (1-3) of ``entity_ids``, their edges and facts (those ``agent_id`` may
        read, when given); at most ``limit`` neighbours and ``limit`` facts (default: retrieval.graph_expansion_limit),
        the facts about ``entity_ids`` kept before their neighbours', the newest of each. The edges come ordered by
        source id, type and target id and the facts newest first, so the same graph reads back the same on either
        backend."""
        if isinstance(depth, bool) or not isinstance(depth, int) or depth not in cypher.ENTITY_NEIGHBOURS:
            raise ValidationError("depth", f"must be 1, 2 or 3, got {depth!r}")
        limit = self.ctx.settings.retrieval.graph_expansion_limit if limit is None else limit
        if isinstance(limit, bool) or not isinstance(limit, int) or not (1 <= limit <= 10_000):
            raise ValidationError("limit", f"must be between 1 and 10000, got {limit!r}")
        if isinstance(entity_ids, str):
            entity_ids = [entity_ids]
        ids = list(dict.fromkeys(check_ids(entity_ids, "entity_ids")))
        neighbours = await self.ctx.graph.read(cypher.ENTITY_NEIGHBOURS[depth],
                                               {"ids": ids, "user_id": user_id, "limit": limit})
        all_ids = ids + [r["id"] for r in neighbours]
        # the three reads depend on the ids only: one round trip's wait instead of three (recall waits for them)
        entities, edges, facts = await gather(
            self.get_entities(user_id, all_ids),
            self.ctx.graph.read(cypher.ENTITY_EDGES, {"ids": all_ids, "user_id": user_id, "limit": limit * 4}),
            self.ctx.graph.read(cypher.FACTS_ABOUT, {"ids": all_ids, "seeds": ids, "user_id": user_id, "limit": limit,
                                                     "agent_id": agent_id}))
        order = {eid: i for i, eid in enumerate(all_ids)}
        return EntityGraph(
            entities=sorted(entities, key=lambda e: order.get(e.id, len(order))),
            relationships=[Relationship(source_id=e["source_id"], target_id=e["target_id"], rel_type=e["rel_type"],
                                        properties=json.loads(e["properties"] or "{}"), user_id=user_id)
                           for e in edges],
            facts=facts_newest_first(facts),
        )

    async def _merge_entity(self, entity: Entity, key: str) -> tuple[dict[str, Any], list[float] | None]:
        """Merge ``entity`` into the stored one with that key, atomically: read, merge in Python, write only if no
        one else wrote in between (the stored ``version`` is unchanged), else read again. Returns the stored row and
        the vector the write stored (the timeline row carries it)."""
        embedding, embedded_text = entity.embedding, None
        for attempt in range(ENTITY_MERGE_ATTEMPTS):
            existing = await self.ctx.graph.read(cypher.GET_ENTITY_BY_KEY, {"key": key})
            if existing:  # a name merged into another entity by dedup lands on that one
                key, stored = existing[0]["key"], existing[0]["entity"] or {}
            else:
                stored = {}
            properties, description, aliases = merge_entity(
                json.loads(stored.get("properties") or "{}"), stored.get("description") or "",
                stored.get("aliases") or [], entity)
            text = entity_text(entity.name, description)
            if entity.embedding is None and text != embedded_text:
                embedding, embedded_text = (await self.ctx.embedder.embed_documents([text]))[0].tolist(), text
            rows = await self.ctx.graph.write(cypher.UPSERT_ENTITY, {
                "key": key, "id": entity.id, "user_id": entity.user_id, "channel": entity.channel, "type": entity.type,
                "name": entity.name, "normalized_name": normalize_name(entity.name), "now": now_ms(),
                "aliases": aliases, "salience": entity.salience, "description": entity.description,
                "properties": json.dumps(properties, sort_keys=True, ensure_ascii=False), "embedding": embedding,
                "version": stored.get("version") or 0,
            })
            if rows:
                return rows[0]["entity"], embedding
            await asyncio.sleep(random.uniform(0, 0.002 * (attempt + 1)))  # a concurrent writer won: read again
        raise ConflictError(f"entity {entity.name!r}: {ENTITY_MERGE_ATTEMPTS} concurrent updates in a row overtook "
                            "this one; nothing was written")

    # --- facts --------------------------------------------------------------------------------------------------

    async def learn_fact(self, fact: Fact, channel: str | None = None) -> Fact:
        """Store a fact with its provenance (DERIVED_FROM its source turn, ABOUT its entities); return it as stored.

        Idempotent by id. Re-learning an id updates the claim, source, temporal and metadata, keeps the higher
        confidence and the first source turn and conversation, and never moves the fact: another channel than the
        stored one is a :class:`~agentx_memory.errors.ConflictError` (nothing is written).

        Write order as in :meth:`upsert_entity`: the graph is the write, the timeline row and audit entry follow; a
        raised error means no graph write, and a PostgreSQL failure after it is logged, not raised."""
        started = time.perf_counter()
        if not isinstance(fact, Fact):
            raise ValidationError("fact", f"must be a Fact, got {type(fact).__name__}")
        fact, metadata = self.checked_fact(fact, channel)
        if fact.entity_ids:
            known = {e.id for e in await self.get_entities(fact.user_id, fact.entity_ids)}
            for entity_id in fact.entity_ids:
                if entity_id not in known:
                    raise NotFoundError("entity", entity_id)
        if fact.source_turn_id:
            rows = await self.ctx.graph.read(cypher.TURN_IDS_OF_USER,
                                             {"ids": [fact.source_turn_id], "user_id": fact.user_id})
            if not rows:
                raise NotFoundError("turn", fact.source_turn_id)
            if fact.conversation_id and fact.conversation_id != rows[0]["conversation_id"]:
                raise ValidationError("conversation_id", f"{fact.conversation_id!r} is not the conversation of "
                                                         f"source_turn_id {fact.source_turn_id!r}")
            fact.conversation_id = rows[0]["conversation_id"]
        elif fact.conversation_id:  # a conversation named alone must not be another user's
            owner = await self.ctx.sql.conversations.conversation_owner(fact.conversation_id)
            if owner is not None and owner != fact.user_id:
                raise ConflictError(f"conversation_id {fact.conversation_id!r} belongs to another user")
        if fact.embedding is None:
            fact.embedding = (await self.ctx.embedder.embed_documents([fact.claim]))[0].tolist()
        try:
            written = await self.ctx.graph.write(cypher.STORE_FACT, {
                "id": fact.id, "user_id": fact.user_id, "channel": fact.channel, "claim": fact.claim,
                "slot_key": slot_key(fact.user_id, fact.claim), "confidence": fact.confidence, "source": fact.source,
                "source_turn_id": fact.source_turn_id, "conversation_id": fact.conversation_id,
                "temporal": fact.temporal, "certainty": fact.certainty,
                "metadata": metadata, "agent_id": fact.agent_id, "scope": fact.scope,
                "embedding": fact.embedding, "entity_ids": list(fact.entity_ids), "created_at": to_ms(fact.created_at),
            })
        except ConflictError as exc:  # MERGE is keyed by (id, user_id): the id is another user's fact
            raise ConflictError(f"fact id {fact.id!r} is already used by another user's fact") from exc
        stored = await self.get_fact(fact.id, fact.user_id)
        if not written:  # the fact exists in another channel: it does not move (promote_to_global copies it)
            raise ConflictError(f"fact id {fact.id!r} is already stored in channel {stored.channel!r}, not "
                                f"{fact.channel!r}; a fact keeps its channel (promote_to_global copies it to _global)")
        # the timeline and the audit get what is stored (the higher confidence, the first source), not the caller's;
        # the graph write is acknowledged: a PostgreSQL failure from here on is logged, not raised (see docstring)
        await self._timeline_after_write("fact", stored.id, stored.user_id, stored.channel, stored.created_at,
                                         stored.claim, stored.confidence, agent_id=stored.agent_id,
                                         scope=stored.scope or "global", embedding=fact.embedding)
        await self.ctx.audit.log_write("store", "semantic", stored.channel, [stored.id], {"kind": "fact"},
                                       user_id=stored.user_id, conversation_id=stored.conversation_id,
                                       latency_ms=_ms(started),
                                       payload=stored.model_dump(mode="json", exclude={"embedding"}))
        return stored

    store_fact = learn_fact

    def checked_fact(self, fact: Fact, channel: str | None = None) -> tuple[Fact, str]:
        """A checked copy of ``fact`` as :meth:`learn_fact` stores it (``channel`` applied, agent and scope resolved,
        a given vector checked) and its metadata as JSON; :class:`~agentx_memory.errors.ValidationError` naming the
        field."""
        fact = checked_copy(fact, keep=("embedding",))
        if channel is not None:
            fact.channel = channel
        check_channel(fact.channel)
        check_id(fact.user_id, "user_id")
        check_id(fact.id, "id")
        if fact.source_turn_id is not None:
            check_id(fact.source_turn_id, "source_turn_id")
        if fact.conversation_id is not None:
            check_id(fact.conversation_id, "conversation_id", max_len=200)
        check_ids(fact.entity_ids, "entity_ids")
        if fact.source:
            check_text(fact.source, "source", max_bytes=1000)
        check_text(fact.claim, "claim", max_bytes=self.ctx.settings.limits.max_text_bytes,
                   limit_name="limits.max_text_bytes")
        check_range(fact.confidence, "confidence", 0.0, 1.0)
        check_datetime(fact.created_at, "created_at")
        fact.agent_id, fact.scope = resolve_scope("semantic", fact.agent_id, fact.scope)
        metadata = check_json(fact.metadata, "metadata", max_bytes=self.ctx.settings.limits.max_metadata_bytes)
        if fact.embedding is not None:
            fact.embedding = self.ctx.embedder.check(fact.embedding)
        return fact, metadata

    async def get_fact(self, fact_id: str, user_id: str, *, agent_id: str | None = None) -> Fact:
        """One fact of the user (that ``agent_id`` may read, when given), or NotFoundError."""
        check_id(fact_id, "fact_id")
        rows = await self.ctx.graph.read(cypher.GET_FACT, {"id": fact_id, "user_id": user_id, "agent_id": agent_id})
        if not rows or rows[0]["fact"] is None:
            raise NotFoundError("fact", fact_id)
        return fact_from_row(rows[0]["fact"], rows[0]["entity_ids"])

    async def facts_as_of(self, user_id: str, at: datetime, channels: Sequence[str], *,
                          entity_ids: Sequence[str] = (), limit: int = 100, agent_id: str | None = None) -> list[Fact]:
        """The user's facts as they stood at ``at`` (newest first): said by then and not yet replaced — a fact
        superseded later is returned, one rejected never is. ``entity_ids`` keeps those ABOUT one of them; with
        ``agent_id``, those that agent may read."""
        check_datetime(at, "at")
        rows = await self.ctx.graph.read(cypher.FACTS_AS_OF, {
            "user_id": user_id, "channels": list(channels), "at": to_ms(at), "agent_id": agent_id,
            "entity_ids": check_ids(entity_ids, "entity_ids"), "limit": check_int(limit, "limit", low=1, high=10_000)})
        return [fact_from_row(r["fact"], r["entity_ids"]) for r in rows]

    async def replaced_sources(self, user_id: str, fact_ids: Sequence[str]) -> dict[str, list[str]]:
        """For each of ``fact_ids`` that replaced other facts (contradiction resolution), the turns those replaced
        facts were derived from: fact id → source turn ids (facts that replaced nothing are left out)."""
        if not fact_ids:
            return {}
        out: dict[str, list[str]] = {}
        for row in await self.ctx.graph.read(cypher.REPLACED_FACT_SOURCES, {"user_id": user_id,
                                                                            "ids": list(fact_ids)}):
            out.setdefault(str(row["fact_id"]), []).append(str(row["turn_id"]))
        return out

    async def facts_for_review(self, user_id: str, limit: int = 100) -> list[tuple[Fact, list[str]]]:
        """The user's facts that contradict another and wait for review (``extraction.contradiction_policy =
        flag_review``), oldest first, each with the ids of the facts it conflicts with."""
        check_id(user_id, "user_id")
        rows = await self.ctx.graph.read(cypher.FACTS_FOR_REVIEW, {
            "user_id": user_id, "limit": check_int(limit, "limit", low=1, high=10_000)})
        return [(fact_from_row(r["fact"], r["entity_ids"]), list(r["conflicts_with"])) for r in rows]

    async def promote_to_global(self, fact_id: str, reason: str, *, user_id: str) -> Fact:
        """Copy a project-channel fact into ``_global`` (PROMOTED_FROM the original); idempotent."""
        check_id(fact_id, "fact_id")
        check_text(reason, "reason", max_bytes=2000)
        source = await self.get_fact(fact_id, user_id)
        if source.channel == GLOBAL_CHANNEL:
            raise ValidationError("fact_id", f"fact {fact_id!r} is already in _global; only project facts are promoted")
        found = await self.ctx.graph.read(cypher.FIND_PROMOTION, {"source_id": fact_id, "user_id": user_id})
        if found:  # promoted before: idempotent, nothing new to audit
            return await self.get_fact(found[0]["id"], user_id)
        global_id = promoted_fact_id(user_id, fact_id)
        try:
            await self.ctx.graph.write(cypher.PROMOTE_FACT, {
                "source_id": fact_id, "global_id": global_id, "user_id": user_id, "reason": reason, "now": now_ms(),
            })
        except ConflictError as exc:
            raise ConflictError(f"the id {global_id!r} of fact {fact_id!r}'s promoted copy is taken") from exc
        counted = await self.ctx.graph.read(cypher.FACT_CONVERSATION_COUNT, {"id": fact_id, "user_id": user_id})
        conversations = counted[0]["conversations"]
        promoted = await self.get_fact(global_id, user_id)
        await self._timeline_after_write("fact", promoted.id, user_id, GLOBAL_CHANNEL, promoted.created_at,
                                         promoted.claim, promoted.confidence)
        await self.ctx.audit.log_promotion(
            fact_id, source.channel, reason, self.ctx.settings.promotion.model_dump(), user_id=user_id,
            global_fact_id=global_id, confidence=source.confidence, access_count=source.access_count,
            conversation_count=conversations,
        )
        return promoted

    async def reinforce(self, user_id: str, *, fact_ids: Sequence[str] = (), entity_ids: Sequence[str] = ()) -> None:
        """access_count += 1 and last_accessed = now for these facts and entities of the user, written now. Recall
        gathers its accesses for a while first (:mod:`~agentx_memory.reinforcement`) and counts the same access on
        their ``memory_timeline`` rows (``Timeline.reinforce``)."""
        buffer = ReinforcementBuffer(0)
        buffer.add(user_id, fact_ids=fact_ids, entity_ids=entity_ids, now_ms=now_ms())
        await self.add_access_counts(buffer.take())

    async def add_access_counts(self, counts: AccessCounts) -> None:
        """Add access counts to facts and entities (one batched write per kind; rows sorted by id, so concurrent
        writers lock nodes in one order: no deadlock-and-retry on Neo4j)."""
        if counts.facts:
            await self.ctx.graph.write(cypher.REINFORCE_FACTS, {"rows": counts.facts})
        if counts.entities:
            await self.ctx.graph.write(cypher.REINFORCE_ENTITIES, {"rows": counts.entities})

    # --- spec 003's named interfaces: thin wrappers over the recall legs (docs/spec-interfaces.md) ---------------

    async def vector_search_facts(self, query_embedding: Sequence[float], top_k: int, user_id: str,
                                  channels: Sequence[str] | str | None = None,
                                  min_confidence: float = 0.0, *, agent_id: str | None = None) -> list[dict[str, Any]]:
        """Spec 003's ``SemanticMemory.vector_search_facts``: the user's ``top_k`` facts nearest ``query_embedding``
        (exact cosine over their own facts, superseded ones left out) in ``channels`` plus ``_global`` with a
        confidence of at least ``min_confidence``; each ``{"fact": Fact, "similarity": float}``, best first.

        The facts' vector leg of recall (``SEARCH_FACTS``). It over-fetches twice ``top_k`` (spec 003) and, when
        ``min_confidence`` filtered too many out, asks again for more until ``top_k`` are found or none are left.
        With ``agent_id``, only the facts that agent may read. Each fact names the entities it is about."""
        vector = self.ctx.embedder.check(query_embedding, "query_embedding")
        check_int(top_k, "top_k", low=1, high=1000)
        check_id(user_id, "user_id")
        searched = check_channels(channels)
        check_range(min_confidence, "min_confidence", 0.0, 1.0)
        k = top_k * 2
        while True:
            rows = await self.ctx.graph.read_vectors(cypher.SEARCH_FACTS, {
                "user_id": user_id, "channels": searched, "embedding": vector, "k": k, "start": None, "end": None,
                "agent_id": agent_id})
            kept = [r for r in rows if (r["fact"].get("confidence") or 0.0) >= min_confidence]
            if len(kept) >= top_k or len(rows) < k or k >= _MAX_FETCH:
                break
            k = min(k * 4, _MAX_FETCH)
        return [{"fact": fact_from_row(r["fact"], r["entity_ids"]), "similarity": float(r["similarity"])}
                for r in kept[:top_k]]

    async def vector_search_entities(self, query_embedding: Sequence[float], top_k: int, user_id: str,
                                     channels: Sequence[str] | str | None = None) -> list[dict[str, Any]]:
        """Spec 003's ``SemanticMemory.vector_search_entities``: the user's ``top_k`` entities nearest
        ``query_embedding`` (exact cosine over their own entities) in ``channels`` plus ``_global``; each
        ``{"entity": Entity, "similarity": float}``, best first. The entities' vector leg of recall
        (``SEARCH_ENTITIES``); :meth:`get_entity_graph` expands from them."""
        vector = self.ctx.embedder.check(query_embedding, "query_embedding")
        check_int(top_k, "top_k", low=1, high=1000)
        check_id(user_id, "user_id")
        rows = await self.ctx.graph.read_vectors(cypher.SEARCH_ENTITIES, {
            "user_id": user_id, "channels": check_channels(channels), "embedding": vector, "k": top_k})
        return [{"entity": entity_from_row(r["entity"]), "similarity": float(r["similarity"])} for r in rows]

    async def _timeline_after_write(self, memory_type: str, node_id: str, user_id: str, channel: str,
                                    event_time: datetime, summary: str, importance: float, *,
                                    agent_id: str | None = None, scope: str = "global",
                                    embedding: Sequence[float] | None = None) -> None:
        """The timeline row of a graph write that already succeeded: a storage failure is logged, not raised, so an
        acknowledged write never turns into an exception (issue 11 item 4)."""
        try:
            await self._timeline(memory_type, node_id, user_id, channel, event_time, summary, importance,
                                 agent_id=agent_id, scope=scope, embedding=embedding)
        except StorageError:
            log.warning("timeline row of %s %r (user %r) could not be written; the %s is stored in the graph",
                        memory_type, node_id, user_id, memory_type, exc_info=True)

    async def _timeline(self, memory_type: str, node_id: str, user_id: str, channel: str, event_time: datetime,
                        summary: str, importance: float, *, agent_id: str | None = None,
                        scope: str = "global", embedding: Sequence[float] | None = None) -> None:
        await self.ctx.sql.timeline.write([TimelineEntry(
            memory_type=memory_type, node_id=node_id, user_id=user_id, channel=channel, event_time=event_time,
            summary=summary, importance=importance, agent_id=agent_id, scope=scope, embedding=embedding,
        )])


def _ms(started: float) -> int:
    return int((time.perf_counter() - started) * 1000)


def merge_entity(properties: dict[str, Any], description: str, aliases: Sequence[str],
                 entity: Entity) -> tuple[dict[str, Any], str, list[str]]:
    """What an upsert of ``entity`` makes of the stored ``properties``, ``description`` and ``aliases``: the
    properties merged key by key, the description unless the entity's is empty, and the entity's aliases the stored
    ones lack (the aliases to add)."""
    merged = dict(properties)
    merged.update(entity.properties)
    # Aliases are a set by normalized form: no case/space variants of each other, of stored ones or the name.
    taken = {normalize_name(entity.name)} | {normalize_name(a) for a in aliases}
    added = []
    for alias in entity.aliases:
        alias = _SPACES.sub(" ", alias.strip())
        if normalize_name(alias) not in taken:
            taken.add(normalize_name(alias))
            added.append(alias)
    return merged, entity.description or description, added


def entity_text(name: str, description: str | None) -> str:
    """The text an entity's vector is made of: its name, then its description when it has one."""
    return name + (f": {description}" if description else "")
