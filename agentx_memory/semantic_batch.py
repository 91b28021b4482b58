"""Batch writes of semantic memory: many entities, facts or relationships per call (issue 17).

Each batch call stores what its single-item call (:meth:`SemanticMemory.upsert_entity`,
:meth:`~SemanticMemory.learn_fact`, :meth:`~SemanticMemory.create_relationship`) made for every item in order would
store, with the same merge and conflict rules, but in a few round trips:

* every item is validated first, and one invalid item refuses the whole batch before anything is written (the error
  names the item: ``facts[3].claim``); so does a batch of more than ``limits.max_batch_items`` items;
* the entities and source turns the items name, and the stored facts with their ids, are checked in one query each,
  also before anything is written: an unknown entity or turn, another user's fact id or conversation, or a fact id
  stored in another channel refuses the whole batch;
* vectors the items lack are embedded in one embedder call;
* the graph is written with ``UNWIND`` statements in chunks (one round trip per chunk), the timeline rows and the
  audit entries in one batched insert each.

Items with the same key inside one batch (entities with the same user, channel, type and normalized name; facts with
the same id; relationships with the same ends and type) are collapsed into one graph row that holds what writing them
one after the other leaves, so the stored result is the same as the single-item calls in order. Each item's entry in
the returned list is its memory as stored after the whole batch (items with one key get equal copies).

Entity merges stay correct under concurrency as in the single path: each row is written only if the stored entity's
``version`` is still the one read; the rows that lost to a concurrent writer are read again, merged again and
retried (up to :data:`~agentx_memory.semantic.ENTITY_MERGE_ATTEMPTS` rounds).

Write order and failures as in the single path: the graph is the write; a PostgreSQL failure after it (timeline,
audit) is logged, not raised. Chunks are separate graph transactions: a storage failure in one leaves the chunks
before it written (writing the batch again is safe: every write is idempotent).
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import time
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from pydantic import BaseModel

from .audit import WriteEntry
from .context import MemoryContext
from .errors import ConflictError, NotFoundError, StorageError, ValidationError
from .graph import cypher
from .models import Entity, Fact, Relationship
from .rows import entity_from_row, fact_from_row
from .semantic import ENTITY_MERGE_ATTEMPTS, SemanticMemory, entity_key, entity_text, merge_entity, normalize_name
from .sql.timeline import TimelineEntry
from .timeutil import now_ms, to_ms
from .validation import check_id

__all__ = ["SemanticBatch"]

log = logging.getLogger(__name__)

#: Rows per graph round trip for entities and facts (each row carries a vector).
NODE_CHUNK = 500
#: Rows per graph round trip for relationships.
EDGE_CHUNK = 2000


@contextmanager
def _item(where: str) -> Iterator[None]:
    """Re-raise a single item's ValidationError under the item's field: ``claim`` becomes ``facts[3].claim``."""
    try:
        yield
    except ValidationError as exc:
        raise ValidationError(f"{where}.{exc.field}", exc.detail) from exc


def _chunks(rows: list[dict[str, Any]], size: int) -> Iterator[list[dict[str, Any]]]:
    for start in range(0, len(rows), size):
        yield rows[start:start + size]


def _ms(started: float) -> int:
    return int((time.perf_counter() - started) * 1000)


class SemanticBatch:
    """The batch writes of semantic memory (see the module docstring)."""

    def __init__(self, ctx: MemoryContext, semantic: SemanticMemory):
        self.ctx = ctx
        self.semantic = semantic

    def _items(self, items: Any, field: str, kind: str) -> list[Any]:
        """The batch as a list (any iterable, read once), refused when it is not one or is over the cap."""
        if isinstance(items, (str, bytes, Mapping, BaseModel)) or not isinstance(items, Iterable):
            raise ValidationError(field, f"must be a list of {kind}, got {type(items).__name__}")
        items = list(items)
        limit = self.ctx.settings.limits.max_batch_items
        if len(items) > limit:
            raise ValidationError(field, f"has {len(items)} items; the limit is {limit} (limits.max_batch_items)")
        return items

    # --- entities -----------------------------------------------------------------------------------------------

    async def upsert_entities(self, entities: Sequence[Entity], channel: str | None = None) -> list[Entity]:
        """:meth:`SemanticMemory.upsert_entity` for every entity, in a few round trips (see the module docstring)."""
        started = time.perf_counter()
        items = self._items(entities, "entities", "Entity")
        checked: list[Entity] = []
        for i, entity in enumerate(items):
            if not isinstance(entity, Entity):
                raise ValidationError(f"entities[{i}]", f"must be an Entity, got {type(entity).__name__}")
            with _item(f"entities[{i}]"):
                checked.append(self.semantic.checked_entity(entity, channel))
        if not checked:
            return []
        keys = [entity_key(e.user_id, e.channel, e.type, e.name) for e in checked]
        stored_key: dict[int, str] = {}  # item -> the key it was stored under
        stored: dict[str, tuple[dict[str, Any], list[float]]] = {}  # key -> (entity row, vector written)
        vectors: dict[str, list[float]] = {}  # text -> its vector, so a retry embeds only texts that changed
        pending = list(range(len(checked)))
        for attempt in range(ENTITY_MERGE_ATTEMPTS):
            found = await self.ctx.graph.read(cypher.GET_ENTITIES_BY_KEYS, {"keys": sorted({keys[i] for i in pending})})
            resolved = {r["asked"]: (r["key"], r["entity"] or {}) for r in found}
            groups: dict[str, list[int]] = defaultdict(list)  # a name dedup redirected lands on its survivor
            for i in pending:
                groups[resolved[keys[i]][0]].append(i)
            current = {resolved[keys[i]][0]: resolved[keys[i]][1] for i in pending}
            rows = [self._entity_row(key, [checked[i] for i in members], current[key])
                    for key, members in sorted(groups.items())]
            texts = [r["text"] for r in rows if r["embedding"] is None and r["text"] not in vectors]
            if texts:
                embedded = await self.ctx.embedder.embed_documents(list(dict.fromkeys(texts)))
                vectors.update(zip(dict.fromkeys(texts), (v.tolist() for v in embedded), strict=True))
            for row in rows:
                if row["embedding"] is None:
                    row["embedding"] = vectors[row["text"]]
            written: dict[str, dict[str, Any]] = {}
            for chunk in _chunks(rows, NODE_CHUNK):
                params = [{k: v for k, v in row.items() if k != "text"} for row in chunk]
                for r in await self.ctx.graph.write(cypher.UPSERT_ENTITIES, {"rows": params, "now": now_ms()}):
                    written[r["key"]] = r["entity"]
            for row in rows:
                if row["key"] in written:
                    stored[row["key"]] = (written[row["key"]], row["embedding"])
                    for i in groups[row["key"]]:
                        stored_key[i] = row["key"]
            pending = [i for key, members in groups.items() if key not in written for i in members]
            if not pending:
                break
            await asyncio.sleep(random.uniform(0, 0.002 * (attempt + 1)))  # concurrent writers won: read again
        else:
            raise ConflictError(
                f"{len(pending)} entities of the batch (the first: entities[{pending[0]}], "
                f"{checked[pending[0]].name!r}): {ENTITY_MERGE_ATTEMPTS} concurrent updates in a row overtook them; "
                "they were not written (the batch's other entities were)")
        models = {key: entity_from_row(row) for key, (row, _) in stored.items()}
        await self._timeline([
            TimelineEntry(memory_type="entity", node_id=e.id, user_id=e.user_id, channel=e.channel,
                          event_time=e.first_seen, summary=entity_text(e.name, e.description), importance=e.salience,
                          embedding=stored[key][1])
            for key, e in models.items()], "entity")
        by_scope: dict[tuple[str, str], list[Entity]] = defaultdict(list)
        for e in models.values():
            by_scope[(e.user_id, e.channel)].append(e)
        latency = _ms(started)
        await self.ctx.audit.log_writes([
            WriteEntry("upsert", "semantic", channel_, [e.id for e in group], {"kind": "entity"}, user_id=user,
                       latency_ms=latency, payload=[e.model_dump(mode="json") for e in group])
            for (user, channel_), group in by_scope.items()])
        return _per_item([stored_key[i] for i in range(len(checked))], models)

    @staticmethod
    def _entity_row(key: str, items: list[Entity], stored: dict[str, Any]) -> dict[str, Any]:
        """The UPSERT_ENTITIES row that leaves what upserting ``items`` one after the other into ``stored`` would."""
        properties: dict[str, Any] = json.loads(stored.get("properties") or "{}")
        description = stored.get("description") or ""
        aliases = list(stored.get("aliases") or [])
        added: list[str] = []
        for entity in items:
            properties, description, new = merge_entity(properties, description, aliases, entity)
            aliases += new
            added += new
        first, last = items[0], items[-1]
        return {
            "key": key, "id": first.id, "user_id": first.user_id, "channel": first.channel, "type": first.type,
            "name": first.name, "normalized_name": normalize_name(first.name), "aliases": added,
            "salience": max(e.salience for e in items),
            "description": next((e.description for e in reversed(items) if e.description), ""),
            "properties": json.dumps(properties, sort_keys=True, ensure_ascii=False),
            "embedding": last.embedding, "text": entity_text(last.name, description),
            "version": stored.get("version") or 0,
        }

    # --- facts --------------------------------------------------------------------------------------------------

    async def learn_facts(self, facts: Sequence[Fact], channel: str | None = None) -> list[Fact]:
        """:meth:`SemanticMemory.learn_fact` for every fact, in a few round trips (see the module docstring)."""
        started = time.perf_counter()
        items = self._items(facts, "facts", "Fact")
        checked: list[Fact] = []
        metadata: list[str] = []
        for i, fact in enumerate(items):
            if not isinstance(fact, Fact):
                raise ValidationError(f"facts[{i}]", f"must be a Fact, got {type(fact).__name__}")
            with _item(f"facts[{i}]"):
                one, meta = self.semantic.checked_fact(fact, channel)
            checked.append(one)
            metadata.append(meta)
        if not checked:
            return []
        groups: dict[str, list[int]] = defaultdict(list)
        for i, fact in enumerate(checked):
            groups[fact.id].append(i)
        for members in groups.values():
            first = checked[members[0]]
            for i in members[1:]:
                if checked[i].user_id != first.user_id:
                    raise ConflictError(f"facts[{i}].id: fact id {first.id!r} is another user's fact in this batch "
                                        f"(facts[{members[0]}]); nothing was written")
                if checked[i].channel != first.channel:
                    raise ConflictError(
                        f"facts[{i}].channel: fact id {first.id!r} is learned in channel {first.channel!r} by "
                        f"facts[{members[0]}]; a fact keeps its channel; nothing was written")
        await self._check_fact_references(checked)
        await self._check_stored_facts(checked, groups)
        missing = [members[-1] for members in groups.values() if checked[members[-1]].embedding is None]
        if missing:  # only the last item of an id matters: its vector is the one the fact keeps
            vectors = await self.ctx.embedder.embed_documents([checked[i].claim for i in missing])
            for i, vector in zip(missing, vectors, strict=True):
                checked[i].embedding = vector.tolist()
        rows = [self._fact_row([checked[i] for i in members], metadata[members[-1]])
                for _, members in sorted(groups.items())]
        written: set[str] = set()
        try:
            for chunk in _chunks(rows, NODE_CHUNK):
                written.update(r["id"] for r in await self.ctx.graph.write(cypher.STORE_FACTS, {"rows": chunk}))
        except ConflictError as exc:  # a concurrent writer took an id after the check: the constraint refused it
            raise ConflictError(f"a fact id of the batch was taken by another user's fact while it was written "
                                f"({exc}); {len(written)} facts were written before it") from exc
        pairs = [{"id": fact_id, "user_id": checked[members[0]].user_id} for fact_id, members in groups.items()]
        found = await self.ctx.graph.read(cypher.GET_FACTS_OF_USERS, {"pairs": pairs})
        models = {r["fact"]["id"]: fact_from_row(r["fact"], r["entity_ids"]) for r in found}
        lost = [fact_id for fact_id in groups if fact_id not in written]
        if lost:  # moved to another channel between the check and the write
            raise ConflictError(f"fact id {lost[0]!r} is stored in channel {models[lost[0]].channel!r} now, not "
                                f"{checked[groups[lost[0]][0]].channel!r} (changed while the batch was written); "
                                f"{len(written)} facts of the batch were written")
        await self._timeline([
            TimelineEntry(memory_type="fact", node_id=f.id, user_id=f.user_id, channel=f.channel,
                          event_time=f.created_at, summary=f.claim, importance=f.confidence, agent_id=f.agent_id,
                          scope=f.scope or "global", embedding=checked[groups[f.id][-1]].embedding)
            for f in models.values()], "fact")
        by_scope: dict[tuple[str, str, str | None], list[Fact]] = defaultdict(list)
        for f in models.values():
            by_scope[(f.user_id, f.channel, f.conversation_id)].append(f)
        latency = _ms(started)
        await self.ctx.audit.log_writes([
            WriteEntry("store", "semantic", channel_, [f.id for f in group], {"kind": "fact"}, user_id=user,
                       conversation_id=conversation, latency_ms=latency,
                       payload=[f.model_dump(mode="json", exclude={"embedding"}) for f in group])
            for (user, channel_, conversation), group in by_scope.items()])
        return _per_item([f.id for f in checked], models)

    async def _check_fact_references(self, facts: list[Fact]) -> None:
        """The entities and source turns the facts name exist for their users, and a conversation named alone is not
        another user's (one query each); fills each fact's conversation from its source turn."""
        entity_pairs = {(e, f.user_id) for f in facts for e in f.entity_ids}
        if entity_pairs:
            rows = await self.ctx.graph.read(cypher.ENTITY_IDS_OF_USERS, {
                "pairs": [{"id": e, "user_id": u} for e, u in sorted(entity_pairs)]})
            known = {(r["id"], r["user_id"]) for r in rows}
            for i, fact in enumerate(facts):
                for entity_id in fact.entity_ids:
                    if (entity_id, fact.user_id) not in known:
                        raise NotFoundError("entity", entity_id, field=f"facts[{i}].entity_ids")
        turn_pairs = {(f.source_turn_id, f.user_id) for f in facts if f.source_turn_id}
        if turn_pairs:
            rows = await self.ctx.graph.read(cypher.TURNS_OF_USERS, {
                "pairs": [{"id": t, "user_id": u} for t, u in sorted(turn_pairs)]})
            conversations = {(r["id"], r["user_id"]): r["conversation_id"] for r in rows}
            for i, fact in enumerate(facts):
                if not fact.source_turn_id:
                    continue
                conversation = conversations.get((fact.source_turn_id, fact.user_id))
                if conversation is None:
                    raise NotFoundError("turn", fact.source_turn_id, field=f"facts[{i}].source_turn_id")
                if fact.conversation_id and fact.conversation_id != conversation:
                    raise ValidationError(f"facts[{i}].conversation_id",
                                          f"{fact.conversation_id!r} is not the conversation of source_turn_id "
                                          f"{fact.source_turn_id!r}")
                fact.conversation_id = conversation
        alone = [i for i, f in enumerate(facts) if f.conversation_id and not f.source_turn_id]
        if alone:
            owners = await self.ctx.sql.conversations.conversation_owners(
                [facts[i].conversation_id or "" for i in alone])
            for i in alone:
                owner = owners.get(facts[i].conversation_id or "")
                if owner is not None and owner != facts[i].user_id:
                    raise ConflictError(f"facts[{i}].conversation_id: {facts[i].conversation_id!r} belongs to "
                                        "another user; nothing was written")

    async def _check_stored_facts(self, facts: list[Fact], groups: Mapping[str, list[int]]) -> None:
        """Refuse an id that is another user's fact, or the user's fact in another channel (one query)."""
        rows = await self.ctx.graph.read(cypher.FACTS_BY_IDS, {"ids": sorted(groups)})
        for row in rows:
            i = groups[row["id"]][0]
            fact = facts[i]
            if row["user_id"] != fact.user_id:
                raise ConflictError(f"facts[{i}].id: fact id {fact.id!r} is already used by another user's fact; "
                                    "nothing was written")
            if row["channel"] != fact.channel:
                raise ConflictError(
                    f"facts[{i}].channel: fact id {fact.id!r} is already stored in channel {row['channel']!r}, not "
                    f"{fact.channel!r}; a fact keeps its channel (promote_to_global copies it to _global); nothing "
                    "was written")

    @staticmethod
    def _fact_row(items: list[Fact], metadata: str) -> dict[str, Any]:
        """The STORE_FACTS row that leaves what learning ``items`` (one id) one after the other would."""
        first, last = items[0], items[-1]
        return {
            "id": first.id, "user_id": first.user_id, "channel": first.channel, "claim": last.claim,
            "confidence": max(f.confidence for f in items), "source": last.source,
            "source_turn_id": next((f.source_turn_id for f in items if f.source_turn_id), None),
            "conversation_id": next((f.conversation_id for f in items if f.conversation_id), None),
            "temporal": last.temporal,
            "certainty": next((f.certainty for f in reversed(items) if f.certainty is not None), None),
            "metadata": metadata, "agent_id": first.agent_id, "scope": first.scope, "embedding": last.embedding,
            "created_at": to_ms(first.created_at), "stated_at": max(to_ms(f.created_at) for f in items),
            "turn_ids": list(dict.fromkeys(f.source_turn_id for f in items if f.source_turn_id)),
            "entity_ids": list(dict.fromkeys(e for f in items for e in f.entity_ids)),
        }

    # --- relationships ------------------------------------------------------------------------------------------

    async def create_relationships(self, relationships: Sequence[Relationship | tuple[Any, ...]], *,
                                   user_id: str | None) -> list[Relationship]:
        """:meth:`SemanticMemory.create_relationship` for every relationship, in a few round trips (see the module
        docstring). An item is a :class:`~agentx_memory.models.Relationship` or a ``(source_id, target_id,
        rel_type[, properties])`` tuple; its user is its own ``user_id``, else ``user_id``."""
        started = time.perf_counter()
        items = self._items(relationships, "relationships", "Relationship or tuple")
        checked: list[Relationship] = []
        rows: dict[tuple[str, str, str, str], dict[str, Any]] = {}  # a repeated edge keeps the last properties
        for i, item in enumerate(items):
            where = f"relationships[{i}]"
            properties: Any
            if isinstance(item, Relationship):
                source, target, rel_type, properties, owner = (item.source_id, item.target_id, item.rel_type,
                                                               item.properties, item.user_id)
            elif isinstance(item, tuple) and len(item) in (3, 4):
                source, target, rel_type = item[:3]
                properties, owner = (item[3] if len(item) == 4 else None), None
            else:
                raise ValidationError(where, "must be a Relationship or a (source_id, target_id, rel_type"
                                             f"[, properties]) tuple, got {type(item).__name__}")
            owner = owner if owner is not None else user_id
            if owner is None:
                raise ValidationError(f"{where}.user_id", "is required: set it on the relationship, pass user_id, "
                                                          "or open the memory with a default user_id")
            with _item(where):
                check_id(owner, "user_id")
                props, props_json = self.semantic.checked_relationship(source, target, rel_type, properties)
            checked.append(Relationship(source_id=source, target_id=target, rel_type=rel_type, properties=props,
                                        user_id=owner))
            rows[(owner, source, target, rel_type)] = {
                "user_id": owner, "source_id": source, "target_id": target, "rel_type": rel_type,
                "properties": props_json}
        if not checked:
            return []
        ends = sorted({(e, r.user_id or "") for r in checked for e in (r.source_id, r.target_id)})
        known = {(r["id"], r["user_id"]) for r in await self.ctx.graph.read(
            cypher.ENTITY_IDS_OF_USERS, {"pairs": [{"id": e, "user_id": u} for e, u in ends]})}
        for i, rel in enumerate(checked):
            for field, entity_id in (("source_id", rel.source_id), ("target_id", rel.target_id)):
                if (entity_id, rel.user_id) not in known:
                    raise NotFoundError("entity", entity_id, field=f"relationships[{i}].{field}")
        ordered = [dict(row, position=n) for n, (_, row) in enumerate(sorted(rows.items()))]
        linked: set[int] = set()
        for chunk in _chunks(ordered, EDGE_CHUNK):
            rows_out = await self.ctx.graph.write(cypher.CREATE_RELATIONSHIPS, {"rows": chunk, "now": now_ms()})
            linked.update(r["position"] for r in rows_out)
        if len(linked) < len(ordered):  # an entity was deleted between the check and the write
            row = next(r for r in ordered if r["position"] not in linked)
            raise NotFoundError("entity", f"{row['source_id']} or {row['target_id']}", field="relationships")
        by_user: dict[str, list[Relationship]] = defaultdict(list)
        for rel in checked:
            by_user[rel.user_id or ""].append(rel)
        latency = _ms(started)
        await self.ctx.audit.log_writes([
            WriteEntry("relate", "semantic", None, list(dict.fromkeys(e for r in group
                                                                       for e in (r.source_id, r.target_id))),
                       {"rel_types": sorted({r.rel_type for r in group}), "relationships": len(group)},
                       user_id=user, latency_ms=latency,
                       payload=[r.model_dump(mode="json") for r in group])
            for user, group in by_user.items()])
        # as stored: an edge given twice holds the last properties given
        final = {key: json.loads(row["properties"]) for key, row in rows.items()}
        return [r.model_copy(update={"properties": final[(r.user_id or "", r.source_id, r.target_id, r.rel_type)]},
                             deep=True) for r in checked]

    # --- after the graph write ----------------------------------------------------------------------------------

    async def _timeline(self, entries: list[TimelineEntry], kind: str) -> None:
        """The timeline rows of a batch whose graph write succeeded: a storage failure is logged, not raised."""
        try:
            await self.ctx.sql.timeline.write(entries)
        except StorageError:
            log.warning("timeline rows of %d %s(s) could not be written; they are stored in the graph", len(entries),
                        kind, exc_info=True)


def _per_item(keys: list[str], models: Mapping[str, Any]) -> list[Any]:
    """One model per item, in item order; items with one key get copies of one model."""
    seen: set[str] = set()
    out = []
    for key in keys:
        out.append(models[key].model_copy(deep=True) if key in seen else models[key])
        seen.add(key)
    return out
