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
from collections.abc import Coroutine, Hashable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

from pydantic import BaseModel

from .audit import WriteEntry
from .context import MemoryContext
from .errors import ConflictError, NotFoundError, StorageError, ValidationError
from .fact_slots import slot_key
from .graph import cypher
from .models import Entity, Fact, Relationship
from .rows import entity_from_row, fact_from_row
from .semantic import ENTITY_MERGE_ATTEMPTS, SemanticMemory, entity_key, entity_text, merge_entity, normalize_name
from .sql.timeline import TimelineEntry
from .timeutil import now_ms, to_ms
from .validation import check_id

__all__ = ["SemanticBatch"]

log = logging.getLogger(__name__)

R = TypeVar("R")

#: Rows per graph round trip for entities and facts (each row carries a vector). Small enough that the timeline rows
#: of one chunk (PostgreSQL's HNSW index makes them cost about as much as the graph write) are written while the next
#: chunk goes to the graph.
NODE_CHUNK = 250
#: Rows per graph round trip for relationships.
EDGE_CHUNK = 2000


@contextmanager
def _item(where: str) -> Iterator[None]:
    """Re-raise a single item's ValidationError under the item's field: ``claim`` becomes ``facts[3].claim``."""
    try:
        yield
    except ValidationError as exc:
        raise ValidationError(f"{where}.{exc.field}", exc.detail) from exc


def _chunks(rows: list[R], size: int) -> Iterator[list[R]]:
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
        models: dict[str, Entity] = {}  # key -> the entity as stored
        vectors: dict[str, list[float]] = {}  # text -> its vector, so a retry embeds only texts that changed
        pending = list(range(len(checked)))
        async with _Followers() as followers:
            for attempt in range(ENTITY_MERGE_ATTEMPTS):
                found = await self.ctx.graph.read(cypher.GET_ENTITIES_BY_KEYS,
                                                  {"keys": sorted({keys[i] for i in pending})})
                resolved = {r["asked"]: (r["key"], r["entity"] or {}) for r in found}
                groups: dict[str, list[int]] = defaultdict(list)  # a name dedup redirected lands on its survivor
                for i in pending:
                    groups[resolved[keys[i]][0]].append(i)
                current = {resolved[keys[i]][0]: resolved[keys[i]][1] for i in pending}
                rows = [self._entity_row(key, [checked[i] for i in members], current[key])
                        for key, members in sorted(groups.items())]
                texts = list(dict.fromkeys(r["text"] for r in rows if r["embedding"] is None
                                           and r["text"] not in vectors))
                if texts:
                    embedded = await self.ctx.embedder.embed_documents(texts)
                    vectors.update(zip(texts, (v.tolist() for v in embedded), strict=True))
                for row in rows:
                    if row["embedding"] is None:
                        row["embedding"] = vectors[row["text"]]
                for chunk in _chunks(rows, NODE_CHUNK):
                    params = [{k: v for k, v in row.items() if k != "text"} for row in chunk]
                    written = {r["key"]: entity_from_row(r["entity"]) for r in await self.ctx.graph.write(
                        cypher.UPSERT_ENTITIES, {"rows": params, "now": now_ms()})}
                    models.update(written)
                    for key in written:
                        for i in groups[key]:
                            stored_key[i] = key
                    followers.start(self._timeline([
                        TimelineEntry(memory_type="entity", node_id=e.id, user_id=e.user_id, channel=e.channel,
                                      event_time=e.first_seen, summary=entity_text(e.name, e.description),
                                      importance=e.salience, embedding=row["embedding"])
                        for row in chunk if (e := written.get(row["key"])) is not None], "entity"))
                pending = [i for key, members in groups.items() if key not in models for i in members]
                if not pending:
                    break
                await asyncio.sleep(random.uniform(0, 0.002 * (attempt + 1)))  # concurrent writers won: read again
            else:
                raise ConflictError(
                    f"{len(pending)} entities of the batch (the first: entities[{pending[0]}], "
                    f"{checked[pending[0]].name!r}): {ENTITY_MERGE_ATTEMPTS} concurrent updates in a row overtook "
                    "them; they were not written (the batch's other entities were)")
            by_scope: dict[tuple[str, str], list[Entity]] = defaultdict(list)
            for e in models.values():
                by_scope[(e.user_id, e.channel)].append(e)
            latency, verbose = _ms(started), self.ctx.audit.enabled("verbose")
            followers.start(self.ctx.audit.log_writes([
                WriteEntry("upsert", "semantic", channel_, [e.id for e in group], {"kind": "entity"}, user_id=user,
                           latency_ms=latency,
                           payload=[e.model_dump(mode="json") for e in group] if verbose else None)
                for (user, channel_), group in by_scope.items()]))
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
        models: dict[str, Fact] = {}
        async with _Followers() as followers:
            for chunk in _chunks(rows, NODE_CHUNK):
                try:
                    written = {r["fact"]["id"]: fact_from_row(r["fact"], r["entity_ids"])
                               for r in await self.ctx.graph.write(cypher.STORE_FACTS, {"rows": chunk})}
                except ConflictError as exc:  # another user's fact took an id after the check: the constraint
                    raise ConflictError(f"a fact id of the batch was taken by another user's fact while it was "
                                        f"written ({exc}); {len(models)} facts were written before it") from exc
                models.update(written)
                # the timeline gets what is stored (the higher confidence, the first source), as learn_fact's does
                followers.start(self._timeline([
                    TimelineEntry(memory_type="fact", node_id=f.id, user_id=f.user_id, channel=f.channel,
                                  event_time=f.created_at, summary=f.claim, importance=f.confidence,
                                  agent_id=f.agent_id, scope=f.scope or "global", embedding=row["embedding"])
                    for row in chunk if (f := written.get(row["id"])) is not None], "fact"))
            lost = [fact_id for fact_id in groups if fact_id not in models]
            if lost:  # moved to another channel between the check and the write
                raise ConflictError(f"fact id {lost[0]!r} is stored in another channel than "
                                    f"{checked[groups[lost[0]][0]].channel!r} now (changed while the batch was "
                                    f"written); {len(models)} facts of the batch were written")
            by_scope: dict[tuple[str, str, str | None], list[Fact]] = defaultdict(list)
            for f in models.values():
                by_scope[(f.user_id, f.channel, f.conversation_id)].append(f)
            latency, verbose = _ms(started), self.ctx.audit.enabled("verbose")
            followers.start(self.ctx.audit.log_writes([
                WriteEntry("store", "semantic", channel_, [f.id for f in group], {"kind": "fact"}, user_id=user,
                           conversation_id=conversation, latency_ms=latency,
                           payload=[f.model_dump(mode="json", exclude={"embedding"}) for f in group] if verbose
                           else None)
                for (user, channel_, conversation), group in by_scope.items()]))
        return _per_item([f.id for f in checked], models)

    async def _check_fact_references(self, facts: list[Fact]) -> None:
        """The entities and source turns the facts name exist for their users, and a conversation named alone is not
        another user's (one query each); fills each fact's conversation from its source turn."""
        await self._check_entities([(f"facts[{i}].entity_ids", e, f.user_id)
                                    for i, f in enumerate(facts) for e in f.entity_ids])
        turn_pairs = {(f.source_turn_id, f.user_id) for f in facts if f.source_turn_id}
        if turn_pairs:
            rows = await self.ctx.graph.read(cypher.TURNS_OF_USERS, {"pairs": [list(p) for p in sorted(turn_pairs)]})
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
            "slot_key": slot_key(first.user_id, last.claim),
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
        # (user, source, target, rel_type) -> properties (JSON): an edge given twice keeps the last properties
        edges: dict[tuple[str, str, str, str], str] = {}
        keys: list[tuple[str, str, str, str]] = []
        owners: set[str] = set()  # the users checked already (a batch is mostly one user's)
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
                if not isinstance(owner, str) or owner not in owners:
                    owners.add(check_id(owner, "user_id"))
                _, props_json = self.semantic.checked_relationship(source, target, rel_type, properties)
            key = (owner, source, target, rel_type)
            keys.append(key)
            edges[key] = props_json
        if not keys:
            return []

        def ends() -> list[tuple[str, str, str]]:  # each end as _check_entities names it; built only when checked
            return [(f"relationships[{i}].{field}", entity_id, key[0]) for i, key in enumerate(keys)
                    for field, entity_id in (("source_id", key[1]), ("target_id", key[2]))]

        rows = [[source, target, owner, rel_type, props] for (owner, source, target, rel_type), props
                in sorted(edges.items())]
        if len(rows) > EDGE_CHUNK:  # each chunk is all or nothing on its own: check them all before the first
            await self._check_entities(ends())
        for chunk in _chunks(rows, EDGE_CHUNK):
            linked = (await self.ctx.graph.write(cypher.CREATE_RELATIONSHIPS,
                                                 {"rows": chunk, "now": now_ms()}))[0]["linked"]
            if linked < len(chunk):  # an end is missing: the statement linked nothing; say which
                await self._check_entities(ends())
                raise ConflictError("an entity of the batch was created while it was written; its "
                                    f"{len(chunk)} relationships were not linked (writing them again links them)")
        # as stored: an edge given twice holds the last properties given. Every field was checked above, so the
        # models are built without validating them again.
        stored = {key: Relationship.model_construct(source_id=key[1], target_id=key[2], rel_type=key[3],
                                                    properties=json.loads(props) if props != "{}" else {},
                                                    user_id=key[0])
                  for key, props in edges.items()}
        by_user: dict[str, list[Relationship]] = defaultdict(list)
        for rel in stored.values():
            by_user[rel.user_id or ""].append(rel)
        latency, verbose = _ms(started), self.ctx.audit.enabled("verbose")
        await self.ctx.audit.log_writes([
            WriteEntry("relate", "semantic", None, list(dict.fromkeys(e for r in group
                                                                       for e in (r.source_id, r.target_id))),
                       {"rel_types": sorted({r.rel_type for r in group}), "relationships": len(group)},
                       user_id=user, latency_ms=latency,
                       payload=[r.model_dump(mode="json") for r in group] if verbose else None)
            for user, group in by_user.items()])
        return _per_item(keys, stored)

    async def _check_entities(self, references: list[tuple[str, str, str]]) -> None:
        """Each ``(field, entity_id, user_id)`` names one of that user's entities, else NotFoundError naming the
        field. One query counts them; a second one, only when some are missing, says which."""
        pairs = sorted({(entity_id, user) for _, entity_id, user in references})
        if not pairs:
            return
        params = {"pairs": [list(p) for p in pairs]}
        if (await self.ctx.graph.read(cypher.COUNT_ENTITIES_OF_USERS, params))[0]["n"] == len(pairs):
            return
        known = {(r["id"], r["user_id"]) for r in await self.ctx.graph.read(cypher.ENTITY_IDS_OF_USERS, params)}
        for field, entity_id, user in references:
            if (entity_id, user) not in known:
                raise NotFoundError("entity", entity_id, field=field)
        raise ConflictError("entities of the batch changed while it was checked; nothing was written")

    # --- after the graph write ----------------------------------------------------------------------------------

    async def _timeline(self, entries: list[TimelineEntry], kind: str) -> None:
        """The timeline rows of a batch whose graph write succeeded: a storage failure is logged, not raised."""
        try:
            await self.ctx.sql.timeline.write(entries)
        except StorageError:
            log.warning("timeline rows of %d %s(s) could not be written; they are stored in the graph", len(entries),
                        kind, exc_info=True)


class _Followers:
    """The PostgreSQL writes that follow graph chunks already written (timeline rows, audit entries), run while the
    next chunk goes to the graph: two servers working at once. Leaving the block waits for all of them; their own
    failures are logged, not raised (see ``_timeline`` and ``log_writes``)."""

    def __init__(self) -> None:
        self._tasks: list[asyncio.Task[None]] = []

    def start(self, write: Coroutine[Any, Any, None]) -> None:
        """Run ``write`` beside whatever comes next."""
        self._tasks.append(asyncio.ensure_future(write))

    async def __aenter__(self) -> _Followers:
        return self

    async def __aexit__(self, *exc: object) -> None:
        # also when the block failed: what was written to the graph still gets its rows, and no task is left behind
        done = await asyncio.gather(*self._tasks, return_exceptions=True)
        if exc[0] is None:
            for result in done:
                if isinstance(result, BaseException):
                    raise result


def _per_item(keys: Sequence[Hashable], models: Mapping[Any, Any]) -> list[Any]:
    """One model per item, in item order; items with one key get copies of one model."""
    seen: set[Hashable] = set()
    out = []
    for key in keys:
        out.append(models[key].model_copy(deep=True) if key in seen else models[key])
        seen.add(key)
    return out
