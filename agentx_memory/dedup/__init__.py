"""Deduplication (spec 002 maintenance, the worker's ``dedup`` job): entities and facts that are the same thing are
merged, reversibly.

``entities``  entities with name evidence and close vectors merge into one (the duplicate is deleted, a redirect
              keeps its name)
``facts``     facts with the same content words and close vectors: the duplicate is hidden behind the survivor
``driver``    one pass over one kind: read, pair, plan, merge (what differs is each kind's :class:`DedupKind`)
``report``    :class:`DedupReport`

:func:`dedup` runs both for every user (or one), never across users or channels, at most
``dedup.max_merges_per_run`` merges; :func:`undo_dedup` reverses a run's merges, newest first.
"""

from __future__ import annotations

from typing import Any

from ..graph import cypher
from ..semantic import SemanticMemory
from ..settings import DedupSettings
from .driver import dedup_kind
from .entities import ENTITIES, name_evidence, undo_entity_merge
from .facts import FACTS, content_words, undo_fact_merge
from .report import DedupReport

__all__ = ["DedupReport", "content_words", "dedup", "name_evidence", "undo_dedup"]


async def dedup(semantic: SemanticMemory, settings: DedupSettings, *, user_id: str | None = None,
                report: DedupReport | None = None) -> DedupReport:
    """Merge the duplicate entities, then the duplicate facts, of every user (or of ``user_id``), filling
    ``report``."""
    report = report if report is not None else DedupReport()
    users = [user_id] if user_id is not None else sorted(
        {r["user_id"] for r in await semantic.ctx.graph.read(cypher.DEDUP_USERS)})
    for kind in (ENTITIES, FACTS):
        await dedup_kind(semantic, settings, users, report, kind)
    return report


async def undo_dedup(semantic: SemanticMemory, run_id: str, changes: list[dict[str, Any]]) -> dict[str, int]:
    """Undo the merges of a dedup run, newest first: ``{"restored": merges undone, "skipped": merges with nothing
    left to restore}`` (a fact merge whose two facts were both forgotten since)."""
    restored = 0
    for change in reversed(changes):
        if change["kind"] == "entity":
            await undo_entity_merge(semantic, run_id, change)
            restored += 1
        else:
            restored += await undo_fact_merge(semantic, run_id, change)
    return {"restored": restored, "skipped": len(changes) - restored}
