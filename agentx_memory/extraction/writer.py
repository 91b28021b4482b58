"""Writes one validated extraction batch through the semantic memory, idempotently.

* Entities are upserted (merged by user, channel, type and name); a name the user already has in the channel keeps
  its stored type, so "Porto" found as a place and later as a mention stays one entity. The conversation gets
  ``MENTIONS`` edges to every entity of the batch.
* Facts get a deterministic id (user, channel, normalized claim): extracting the same turns again, or the same claim
  from another batch, writes the same fact again instead of a second one. A fact is ``DERIVED_FROM`` its first source
  turn (the others are kept in ``metadata.source_turn_ids``) and ``ABOUT`` the entities it names; its confidence is
  its certainty's (``extraction.confidence_*``) and the label is kept in ``Fact.certainty``.
* Relationships link two resolved entities (MERGE). A name that resolves to no entity is counted, not guessed.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from ..graph import cypher
from ..models import Entity, Fact, Turn
from ..rows import entity_from_row
from ..semantic import SemanticMemory, normalize_name
from ..settings import ExtractionSettings
from .schema import ExtractedFact
from .validate import ValidBatch

__all__ = ["Written", "calibrated", "fact_id", "write_batch"]


@dataclass
class Written:
    """The ids one batch wrote, and what could not be linked."""

    entity_ids: list[str] = field(default_factory=list)
    fact_ids: list[str] = field(default_factory=list)
    facts: list[Fact] = field(default_factory=list)
    relationships: int = 0
    unresolved: Counter[str] = field(default_factory=Counter)


def fact_id(user_id: str, channel: str, claim: str) -> str:
    """The id of an extracted fact: the same for the same claim (case and spacing aside) of a user and channel."""
    raw = "\x1f".join([user_id, channel, " ".join(claim.casefold().split())])
    return "fact-" + hashlib.sha256(raw.encode()).hexdigest()[:32]


async def write_batch(semantic: SemanticMemory, batch: ValidBatch, refs: Mapping[str, Turn], *, user_id: str,
                      channel: str, conversation_id: str, model: str, settings: ExtractionSettings) -> Written:
    """Write ``batch`` (its facts cite ``refs``) for ``user_id`` in ``channel``; return what was written."""
    out = Written()
    names = await _known_entities(semantic, user_id, channel, [e.name for e in batch.entities])
    # Entities are the user's (every agent shares the names); a description drawn from an agent's private turns
    # would tell what they say, so such a batch stores names and types only.
    private = any(t.scope == "agent" for t in refs.values())
    for extracted in batch.entities:
        stored_type = names.get(normalize_name(extracted.name))
        entity = await semantic.upsert_entity(Entity(
            user_id=user_id, channel=channel, name=extracted.name,
            type=stored_type.type if stored_type else extracted.type.strip().casefold(),
            aliases=extracted.aliases, description="" if private else extracted.description,
            properties={"extracted_by": model}))
        out.entity_ids.append(entity.id)
        for name in [entity.name, *entity.aliases, extracted.name, *extracted.aliases]:
            names[normalize_name(name)] = entity
    if out.entity_ids:
        await semantic.ctx.graph.write(cypher.LINK_MENTIONS, {
            "conversation_id": conversation_id, "user_id": user_id, "entity_ids": out.entity_ids})
    missing = {normalize_name(n) for f in batch.facts for n in f.entities} | {
        normalize_name(n) for r in batch.relationships for n in (r.source, r.target)}
    names.update(await _known_entities(semantic, user_id, channel, [n for n in missing if n not in names]))
    for claim in batch.facts:
        try:
            drawn = _fact(claim, refs, names, out, user_id=user_id, channel=channel, model=model, settings=settings)
        except _MixedPrivateSources:
            out.unresolved["fact: drawn from private turns of several agents"] += 1
            continue
        fact = await semantic.learn_fact(drawn)
        out.fact_ids.append(fact.id)
        out.facts.append(fact)
    for rel in batch.relationships:
        source, target = names.get(normalize_name(rel.source)), names.get(normalize_name(rel.target))
        if source is None or target is None or source.id == target.id:
            out.unresolved["relationship: an entity name not found"] += 1
            continue
        await semantic.create_relationship(source.id, target.id, rel.type, {"extracted_by": model}, user_id=user_id)
        out.relationships += 1
    return out


def _fact(extracted: ExtractedFact, refs: Mapping[str, Turn], names: Mapping[str, Entity], out: Written, *,
          user_id: str, channel: str, model: str, settings: ExtractionSettings) -> Fact:
    entity_ids = []
    for name in extracted.entities:
        entity = names.get(normalize_name(name))
        if entity is None:
            out.unresolved["fact: an entity name not found"] += 1
        elif entity.id not in entity_ids:
            entity_ids.append(entity.id)
    turns = [refs[ref] for ref in dict.fromkeys(extracted.source_turns)]
    metadata: dict[str, object] = {"extracted_by": model, "source_turn_ids": [t.id for t in turns]}
    if extracted.corrects:
        metadata["corrects"] = extracted.corrects
    agent_id, scope = _scope_of(turns)
    return Fact(id=fact_id(user_id, channel, extracted.claim), user_id=user_id, channel=channel,
                claim=extracted.claim, confidence=calibrated(extracted.certainty, settings),
                certainty=extracted.certainty, source="extraction", source_turn_id=turns[0].id, entity_ids=entity_ids,
                temporal=extracted.temporal, created_at=turns[-1].timestamp, metadata=metadata, agent_id=agent_id,
                scope=scope)


def _scope_of(turns: list[Turn]) -> tuple[str | None, Literal["agent", "global"] | None]:
    """The agent and scope of a fact drawn from these turns: a fact said in an agent's private turn tells what the
    turn says, so it is private to that agent too; from global turns it takes the default (global). From private
    turns of several agents no agent may read all of it: it is kept by none (the caller skips it)."""
    private = {t.agent_id for t in turns if t.scope == "agent"}
    if len(private) == 1:
        return private.pop(), "agent"
    if private:
        raise _MixedPrivateSources(sorted(a for a in private if a))
    return None, None


class _MixedPrivateSources(Exception):
    """A fact drawn from private turns of several agents (no agent may read all of its sources)."""


def calibrated(certainty: str, settings: ExtractionSettings) -> float:
    """The confidence a fact of this certainty label is stored with (``extraction.confidence_*``)."""
    return {"explicit": settings.confidence_explicit, "implied": settings.confidence_implied,
            "inferred": settings.confidence_inferred, "uncertain": settings.confidence_uncertain}[certainty]


async def _known_entities(semantic: SemanticMemory, user_id: str, channel: str, names: list[str]
                          ) -> dict[str, Entity]:
    """The user's stored entities in ``channel`` with one of these names or aliases, by normalized name."""
    wanted = sorted({normalize_name(n) for n in names if n.strip()})
    if not wanted:
        return {}
    rows = await semantic.ctx.graph.read(cypher.RESOLVE_ENTITIES, {
        "user_id": user_id, "channels": [channel], "names": wanted, "k": 10 * len(wanted)})
    found: dict[str, Entity] = {}
    for row in rows:
        entity = entity_from_row(row["entity"])
        for name in [entity.name, *entity.aliases]:
            if normalize_name(name) in wanted:
                found.setdefault(normalize_name(name), entity)
    return found
