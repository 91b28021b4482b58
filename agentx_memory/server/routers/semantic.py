"""Entities, facts and relationships (semantic memory)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from fastapi import Query

from ...models import Entity, Fact, Relationship
from ...semantic import EntityGraph
from ..auth import Reader, Writer
from ..schemas import EntitiesIn, EntityIn, FactIn, FactsIn, PromoteIn, RelationshipIn, RelationshipsIn
from . import api_router

__all__ = ["router"]

router = api_router("entities and facts")


@router.post("/entities", status_code=201, response_model=Entity, summary="Create or merge an entity")
async def upsert_entity(body: EntityIn, caller: Writer) -> Entity:
    """Create an entity, or merge it into the one with the same normalized name and type in the channel."""
    return await caller.memory.upsert_entity(caller.owned(Entity, body, body.channel))


@router.post("/entities/batch", status_code=201, response_model=list[Entity], summary="Create or merge many entities")
async def upsert_entities(body: EntitiesIn, caller: Writer) -> list[Entity]:
    """:func:`upsert_entity` for many entities at once, each returned as stored, in order; an invalid item
    (``entities[3].name``) refuses the whole batch."""
    return await caller.memory.upsert_entities([caller.owned(Entity, item, item.channel) for item in body.entities])


@router.get("/entities/{entity_id}", response_model=Entity, summary="One entity")
async def get_entity(entity_id: str, caller: Reader) -> Entity:
    """One of the user's entities."""
    return caller.shown(await caller.memory.get_entity(entity_id, caller.user_id), "entity", entity_id)


@router.get("/entities/{entity_id}/graph", response_model=EntityGraph, summary="An entity's neighbourhood")
async def entity_graph(entity_id: str, caller: Reader, depth: int = 2, limit: int | None = None) -> EntityGraph:
    """Entities within ``depth`` (1-3) hops, the edges among them and the facts about them."""
    await get_entity(entity_id, caller)
    found = await caller.memory.get_entity_graph([entity_id], depth, caller.user_id, limit)
    entities = caller.only_visible(found.entities)
    kept = {e.id for e in entities}
    return EntityGraph(entities=entities, facts=caller.only_visible(found.facts),
                       relationships=[r for r in found.relationships if {r.source_id, r.target_id} <= kept])


@router.post("/facts", status_code=201, response_model=Fact, summary="Learn a fact")
async def learn_fact(body: FactIn, caller: Writer) -> Fact:
    """Store a fact, linked DERIVED_FROM its source turn and ABOUT its entities."""
    return await caller.memory.learn_fact(caller.owned(Fact, body, body.channel))


@router.post("/facts/batch", status_code=201, response_model=list[Fact], summary="Learn many facts")
async def learn_facts(body: FactsIn, caller: Writer) -> list[Fact]:
    """:func:`learn_fact` for many facts at once, each returned as stored, in order; an invalid item
    (``facts[3].claim``) refuses the whole batch."""
    return await caller.memory.learn_facts([caller.owned(Fact, item, item.channel) for item in body.facts])


@router.get("/facts/as-of", response_model=list[Fact], summary="Facts as they stood at a time")
async def facts_as_of(at: datetime, caller: Reader, channel: str | None = None,
                      entity_ids: Annotated[list[str] | None, Query()] = None, limit: int = 100) -> list[Fact]:
    """The user's facts as they stood at ``at``, newest first, in ``channel`` and ``_global``."""
    return await caller.memory.facts_as_of(at, caller.user_id, caller.read_channel(channel),
                                           entity_ids=entity_ids or (), limit=limit)


@router.get("/facts/{fact_id}", response_model=Fact, summary="One fact")
async def get_fact(fact_id: str, caller: Reader) -> Fact:
    """One of the user's facts."""
    return caller.shown(await caller.memory.get_fact(fact_id, caller.user_id), "fact", fact_id)


@router.post("/facts/{fact_id}/promote", response_model=Fact, summary="Promote a fact to _global")
async def promote_fact(fact_id: str, body: PromoteIn, caller: Writer) -> Fact:
    """Copy a project fact to ``_global`` (PROMOTED_FROM link, audited); returns the global fact."""
    if caller.key.channels:
        caller.write_channel("_global")  # a key limited to channels may promote only when it may write _global
    await get_fact(fact_id, caller)
    return await caller.memory.promote_to_global(fact_id, body.reason, caller.user_id)


@router.post("/relationships", status_code=201, response_model=Relationship, summary="Link two entities")
async def create_relationship(body: RelationshipIn, caller: Writer) -> Relationship:
    """Link two of the user's entities with a typed edge."""
    if caller.key.channels:
        await get_entity(body.source_id, caller)
        await get_entity(body.target_id, caller)
    return await caller.memory.create_relationship(body.source_id, body.target_id, body.rel_type, body.properties,
                                                   user_id=caller.user_id)


@router.post("/relationships/batch", status_code=201, response_model=list[Relationship],
             summary="Link many pairs of entities")
async def create_relationships(body: RelationshipsIn, caller: Writer) -> list[Relationship]:
    """:func:`create_relationship` for many edges at once, in order; an invalid item or unknown entity
    (``relationships[3].target_id``) refuses the whole batch."""
    if caller.key.channels:
        for item in body.relationships:
            await get_entity(item.source_id, caller)
            await get_entity(item.target_id, caller)
    return await caller.memory.create_relationships(
        [Relationship(source_id=r.source_id, target_id=r.target_id, rel_type=r.rel_type, properties=r.properties,
                      user_id=caller.user_id) for r in body.relationships], user_id=caller.user_id)
