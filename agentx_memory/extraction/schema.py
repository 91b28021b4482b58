"""The extraction prompt and its output schema, in one place (the LLM and the offline extractor answer in it).

One call per batch of turns returns entities, facts and relationships. Turns are shown to the model as short
references (``t1``, ``t2``, …) rather than their ids: fewer tokens, and a reference the batch does not hold is an
invented id, rejected by :mod:`~agentx_memory.extraction.validate`. Entities are referred to by name within the batch.

:class:`ExtractionOutput` is the schema the model is asked for (strict items); :class:`RawBatch` is what is accepted
from the wire (any items), so one bad item is dropped and counted by the validation step instead of failing the batch.
"""

from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import BaseModel, Field

from ..models import RELATIONSHIP_TYPES

__all__ = [
    "CERTAINTIES",
    "SYSTEM_PROMPT",
    "TEMPORAL_TAGS",
    "ExtractedEntity",
    "ExtractedFact",
    "ExtractedRelationship",
    "ExtractionOutput",
    "RawBatch",
    "render_turns",
]

#: How sure a fact is, as the model labels it; each maps to a confidence (``extraction.confidence_*``).
CERTAINTIES: Final = ("explicit", "implied", "inferred", "uncertain")
#: When a fact holds; ranking boosts ``current`` and damps ``past`` (``retrieval.temporal_boost_*``).
TEMPORAL_TAGS: Final = ("current", "past", "future")

Certainty = Literal["explicit", "implied", "inferred", "uncertain"]
Temporal = Literal["current", "past", "future"]
RelType = Literal["RELATED_TO", "PART_OF", "LOCATED_IN", "WORKS_FOR", "KNOWS", "CREATED_BY", "REFERENCES"]
assert tuple(RelType.__args__) == RELATIONSHIP_TYPES  # type: ignore[attr-defined]  # one list of types


class ExtractedEntity(BaseModel):
    """A person, organization, place, thing or concept the turns mention."""

    name: str = Field(min_length=1, max_length=200)
    type: str = Field("concept", min_length=1, max_length=50,
                      description="person, organization, place, event, object, concept, …")
    aliases: list[str] = Field(default_factory=list, max_length=20)
    description: str = Field("", max_length=1000)


class ExtractedFact(BaseModel):
    """One self-contained statement, with its certainty, when it holds, its entities and its source turns."""

    claim: str = Field(min_length=3, max_length=1000,
                       description="a full sentence that makes sense alone: names, not pronouns; dates made absolute")
    certainty: Certainty = "explicit"
    temporal: Temporal | None = None
    entities: list[str] = Field(default_factory=list, max_length=20, description="names of entities it is about")
    source_turns: list[str] = Field(min_length=1, max_length=20, description="references of the turns it comes from")
    corrects: str | None = Field(None, max_length=1000,
                                 description="the earlier claim this one corrects, when the speaker corrects it")


class ExtractedRelationship(BaseModel):
    """A typed link between two entities of the batch."""

    source: str = Field(min_length=1, max_length=200)
    type: RelType
    target: str = Field(min_length=1, max_length=200)


class ExtractionOutput(BaseModel):
    """What the model is asked to return for a batch of turns."""

    entities: list[ExtractedEntity] = Field(default_factory=list)
    facts: list[ExtractedFact] = Field(default_factory=list)
    relationships: list[ExtractedRelationship] = Field(default_factory=list)


class RawBatch(BaseModel):
    """The answer as accepted from the wire: three lists of anything (each item is validated on its own)."""

    entities: list[Any] = Field(default_factory=list)
    facts: list[Any] = Field(default_factory=list)
    relationships: list[Any] = Field(default_factory=list)


SYSTEM_PROMPT: Final = (
    "You extract long-term memory from a conversation. Return entities (people, organizations, places, events, "
    "things), facts and relationships worth remembering about the speakers and what they mention. A fact is one "
    "short sentence that stands alone: use names instead of pronouns and turn relative dates into absolute ones "
    "using the turn dates. Say a thing that can change (where someone lives or works, a version, a count, a "
    "setting) as subject, attribute and value in the same words each time ('Sam lives in Lisbon.'), so that a later "
    "value replaces the earlier one. certainty: explicit (stated), implied, inferred or uncertain. temporal: current "
    "(holds now), past (no longer holds, or a finished event) or future (planned). source_turns: the references "
    "(t1, t2, ...) of the turns the fact comes from, only those shown. If a speaker corrects an earlier statement, "
    "put the old claim in corrects. Relationship types: " + ", ".join(RELATIONSHIP_TYPES) + ". Skip greetings and "
    "small talk; never invent what the turns do not say."
)


def render_turns(lines: list[tuple[str, str, str, str]]) -> str:
    """The batch as the model reads it: one line per turn, ``ref [date] speaker: text``."""
    return "\n".join(f"{ref} [{date}] {speaker}: {text}" for ref, date, speaker, text in lines)
