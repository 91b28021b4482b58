"""The explorer's JSON shapes: the public models as plain JSON (without vectors), and a recall bundle as a list of
items with their score breakdown."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from ..browse import FactRecord
from ..retrieval.bundle import MemoryBundle, Scored

__all__ = ["bundle_json", "fact_record_json", "model_json", "page"]


def model_json(model: BaseModel) -> dict[str, Any]:
    """A model as JSON values, without its vector (never useful to a reader, and large)."""
    return model.model_dump(mode="json", exclude={"embedding"})


def fact_record_json(record: FactRecord) -> dict[str, Any]:
    """A fact with its provenance, flat: the fact's fields plus ``source_turn_ids`` and ``supersedes``."""
    return {**model_json(record.fact), "source_turn_ids": record.source_turn_ids, "supersedes": record.supersedes}


def page(items: list[Any], *, limit: int, offset: int) -> dict[str, Any]:
    """A page of an offset-paged list: ``items`` and ``next_offset`` (None on the last page)."""
    return {"items": items, "next_offset": offset + limit if len(items) == limit else None}


def _text(kind: str, scored: Scored) -> str:
    item = scored.item
    if kind == "turn":
        return str(item.content)
    if kind == "fact":
        return str(item.claim)
    if kind == "entity":
        return f"{item.name} ({item.type})" + (f": {item.description}" if item.description else "")
    if kind == "control":
        return str(item.content)
    return str(item.description)


def _source(kind: str, scored: Scored) -> dict[str, Any] | None:
    item = scored.item
    if kind == "turn":
        return {"conversation_id": item.conversation_id, "turn_id": item.id}
    if kind == "fact" and item.source_turn_id and item.conversation_id:
        return {"conversation_id": item.conversation_id, "turn_id": item.source_turn_id}
    return None


def bundle_json(bundle: MemoryBundle) -> dict[str, Any]:
    """What the search view shows: every scored item best first, each with its kind, text, score, cosine, where it
    came from (a turn's place) and its signals (``value * weight = contribution``; the contributions add up to the
    score); the active goals; and the recall's timings."""
    kinds = {id(s): kind for kind, items in (("control", bundle.controls), ("turn", bundle.turns),
                                             ("fact", bundle.facts), ("entity", bundle.entities),
                                             ("strategy", bundle.strategies)) for s in items}
    items = [{
        "kind": kinds[id(s)], "id": s.id, "channel": s.channel, "text": _text(kinds[id(s)], s),
        "score": s.score, "cosine": s.cosine, "source": _source(kinds[id(s)], s),
        "signals": {name: signal.model_dump() for name, signal in s.signals.items()},
    } for s in bundle.all_scored()]
    return {
        "query": bundle.query, "user_id": bundle.user_id, "channels": bundle.channels, "items": items,
        "goals": [model_json(g) for g in bundle.goals], "complete": bundle.complete,
        "metrics": bundle.metrics.model_dump(mode="json"), "filters": bundle.filters,
    }
