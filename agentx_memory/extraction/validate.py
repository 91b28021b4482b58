"""Validation of an extraction answer, item by item: what breaks the schema or cites a turn the batch does not hold is
dropped and counted under a reason; the batch itself never fails on a bad item."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TypeVar

import pydantic

from ..semantic import normalize_name
from .schema import ExtractedEntity, ExtractedFact, ExtractedRelationship, RawBatch

__all__ = ["ValidBatch", "validate_batch"]

M = TypeVar("M", bound=pydantic.BaseModel)


@dataclass
class ValidBatch:
    """The items of one answer that passed, and how many were dropped for which reason."""

    entities: list[ExtractedEntity] = field(default_factory=list)
    facts: list[ExtractedFact] = field(default_factory=list)
    relationships: list[ExtractedRelationship] = field(default_factory=list)
    dropped: Counter[str] = field(default_factory=Counter)


def validate_batch(raw: RawBatch, refs: Iterable[str]) -> ValidBatch:
    """Each item of ``raw`` checked against its model; facts must cite only ``refs`` (the batch's turn references:
    any other is an id the model invented). Entities of the same normalized name are merged (aliases united)."""
    known = set(refs)
    out = ValidBatch()
    by_name: dict[str, ExtractedEntity] = {}
    for item in raw.entities:
        entity = _parse(ExtractedEntity, item, "entity: off the schema", out.dropped)
        if entity is None:
            continue
        key = normalize_name(entity.name)
        if key in by_name:
            merged = by_name[key]
            merged.aliases = list(dict.fromkeys([*merged.aliases, *entity.aliases]))
            merged.description = merged.description or entity.description
        else:
            by_name[key] = entity
    out.entities = list(by_name.values())
    seen_claims: set[str] = set()
    for item in raw.facts:
        fact = _parse(ExtractedFact, item, "fact: off the schema", out.dropped)
        if fact is None:
            continue
        if not set(fact.source_turns) <= known:
            out.dropped["fact: cites a turn not in the batch"] += 1
            continue
        claim = " ".join(fact.claim.casefold().split())
        if claim in seen_claims:
            out.dropped["fact: repeated in the batch"] += 1
            continue
        seen_claims.add(claim)
        out.facts.append(fact)
    for item in raw.relationships:
        relationship = _parse(ExtractedRelationship, item, "relationship: off the schema", out.dropped)
        if relationship is not None:
            out.relationships.append(relationship)
    return out


def _parse(model: type[M], item: object, reason: str, dropped: Counter[str]) -> M | None:
    try:
        return model.model_validate(item)
    except pydantic.ValidationError:
        dropped[reason] += 1
        return None
