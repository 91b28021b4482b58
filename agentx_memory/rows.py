"""Row mapping: stored rows (PostgreSQL log rows, graph projection rows) into the public models.

One place knows the column and property names of each store, so retrieval and the memory subsystems build models the
same way. Rows arrive here as plain Python values: the repositories in ``sql/`` and the graph adapters convert driver
types before a row leaves them (pgvector vectors become lists of floats). Graph timestamps arrive as the graph stores
them, epoch milliseconds, and become datetimes here.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from .models import ControlMemory, Entity, Fact, Goal, Strategy, Turn
from .timeutil import from_ms

__all__ = [
    "control_from_row", "entity_from_row", "fact_from_row", "facts_newest_first", "goal_from_row", "same_text",
    "strategy_from_row", "turn_from_row",
]


def same_text(content: str) -> str:
    """The key under which turns are one text (recall returns one turn per text): the content without its surrounding
    blanks, casefolded."""
    return content.strip().casefold()


def turn_from_row(row: dict[str, Any], *, with_embedding: bool = False) -> Turn:
    """A :class:`Turn` from a ``conversation_logs`` row (the embedding, a list of floats, only when asked for); its
    metadata is ``metadata`` (decoded) or ``metadata_json`` (JSON text, as the searches return it)."""
    embedding = row.get("embedding")
    metadata = row["metadata"] if "metadata" in row else json.loads(row.get("metadata_json") or "{}")
    return Turn(
        id=row["turn_id"], conversation_id=row["conversation_id"], user_id=row["user_id"], channel=row["channel"],
        index=row["turn_index"], timestamp=row["timestamp"], role=row["role"], content=row["content"],
        token_count=row["token_count"], model=row["model"], metadata=metadata or {},
        embedding=[float(x) for x in embedding] if (with_embedding and embedding is not None) else None,
        pending_projection=not row.get("projected", True), agent_id=row.get("agent_id"),
        scope=row.get("scope") or "global",
    )


def entity_from_row(row: dict[str, Any]) -> Entity:
    """An :class:`Entity` from a graph projection row."""
    return Entity(
        id=row["id"], user_id=row["user_id"], channel=row["channel"], name=row["name"], type=row["type"],
        aliases=list(row.get("aliases") or []), description=row.get("description") or "",
        salience=row.get("salience") if row.get("salience") is not None else 0.5,
        first_seen=from_ms(row.get("first_seen")), last_accessed=from_ms(row.get("last_accessed")),
        access_count=row.get("access_count") or 0, properties=json.loads(row.get("properties") or "{}"),
    )


def fact_from_row(row: dict[str, Any], entity_ids: Sequence[str] = ()) -> Fact:
    """A :class:`Fact` from a graph projection row and the ids of the entities it is about."""
    return Fact(
        id=row["id"], user_id=row["user_id"], channel=row["channel"], claim=row["claim"],
        confidence=row.get("confidence") if row.get("confidence") is not None else 0.7,
        source=row.get("source") or "conversation", source_turn_id=row.get("source_turn_id"),
        conversation_id=row.get("conversation_id"), entity_ids=[e for e in entity_ids if e],
        temporal=row.get("temporal"), certainty=row.get("certainty"), created_at=from_ms(row.get("created_at")),
        last_accessed=from_ms(row.get("last_accessed")), access_count=row.get("access_count") or 0,
        metadata=json.loads(row.get("metadata") or "{}"), status=row.get("status") or "active",
        superseded_by=row.get("superseded_by"), agent_id=row.get("agent_id"), scope=row.get("scope") or "global",
    )


def facts_newest_first(rows: Iterable[dict[str, Any]]) -> list[Fact]:
    """The :class:`Fact` of each row (``fact`` and ``entity_ids``), the newest first, ties by id: a graph read's own
    order is its traversal's, which Neo4j changes after unrelated writes."""
    return sorted((fact_from_row(r["fact"], r["entity_ids"]) for r in rows), key=lambda f: (f.created_at, f.id),
                  reverse=True)


def control_from_row(row: dict[str, Any]) -> ControlMemory:
    """A :class:`ControlMemory` from a graph projection row."""
    return ControlMemory(
        id=row["id"], user_id=row["user_id"], channel=row["channel"], content=row["content"],
        error_pattern=row.get("error_pattern"), severity=row.get("severity") or "medium",
        source_trajectory_id=row.get("source_trajectory_id"), created_at=from_ms(row.get("created_at")),
        last_accessed=from_ms(row.get("last_accessed")), access_count=row.get("access_count") or 0,
        metadata=json.loads(row.get("metadata") or "{}"), agent_id=row.get("agent_id"),
        scope=row.get("scope") or "global",
    )


def goal_from_row(row: dict[str, Any], parent_id: str | None, blocked_by: Sequence[str]) -> Goal:
    """A :class:`Goal` from a graph projection row, its parent's id and the ids of the goals blocking it."""
    return Goal(
        id=row["id"], user_id=row["user_id"], channel=row["channel"], description=row["description"],
        status=row["status"], priority=row.get("priority") or 0, created_at=from_ms(row.get("created_at")),
        completed_at=from_ms(row.get("completed_at")), result=row.get("result"), deadline=from_ms(row.get("deadline")),
        parent_id=parent_id, blocked_by=sorted(b for b in blocked_by if b),
        metadata=json.loads(row.get("metadata") or "{}"),
    )


def strategy_from_row(row: dict[str, Any]) -> Strategy:
    """A :class:`Strategy` from a graph projection row."""
    return Strategy(
        id=row["id"], user_id=row["user_id"], channel=row["channel"], description=row["description"],
        context_pattern=row.get("context_pattern") or "", tool_sequence=list(row.get("tool_sequence") or []),
        success_count=row.get("success_count") or 0, failure_count=row.get("failure_count") or 0,
        created_at=from_ms(row.get("created_at")), last_used=from_ms(row.get("last_used")),
        steps=list(row.get("steps") or []), trigger_conditions=list(row.get("trigger_conditions") or []),
        task_type=row.get("task_type"),
    )
