"""Promotion of prominent project facts to ``_global`` (spec 003 "Promotion Thresholds", the ``promote`` job).

A project-channel fact that meets every ``promotion.*`` bound (confidence, accesses, distinct conversations; each
inclusive) and was never promoted is copied to ``_global`` with ``PROMOTED_FROM`` its source, at most
``promotion.max_per_run`` per run (:meth:`SemanticMemory.promote_to_global` audits each with the thresholds). The
report's ``changes`` name each copy, so :func:`unpromote` (``worker undo``) deletes the copies and their timeline
rows; the source facts are never touched. A dry run lists the candidates and copies nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .graph import cypher
from .models import Fact
from .runs import JobReport
from .semantic import SemanticMemory, promoted_fact_id

__all__ = ["PromotionReport", "promote_prominent", "unpromote"]


@dataclass
class PromotionReport(JobReport):
    """What a promotion run found and promoted (``promoted``: the global copies; ``changes``: ``user_id``,
    ``source_id``, ``global_id`` (absent in a dry run) and the values that qualified the fact)."""

    candidates: int = 0
    promoted: list[Fact] = field(default_factory=list)

    def counts(self) -> dict[str, Any]:
        """Candidates found and facts promoted."""
        return {"candidates": self.candidates, "promoted": len(self.promoted)}


async def promote_prominent(semantic: SemanticMemory, *, user_id: str | None = None,
                            report: PromotionReport | None = None) -> PromotionReport:
    """Promote the prominent project facts of every user (or of ``user_id``), filling ``report``."""
    report = report if report is not None else PromotionReport()
    rules = semantic.ctx.settings.promotion
    rows = await semantic.ctx.graph.read(cypher.PROMOTION_CANDIDATES, {
        "min_confidence": rules.min_confidence, "min_access_count": rules.min_access_count,
        "min_conversations": rules.min_conversations, "limit": rules.max_per_run, "user_id": user_id})
    report.candidates = len(rows)
    for row in rows:
        found = {"user_id": row["user_id"], "source_id": row["id"], "confidence": row["confidence"],
                 "accesses": row["accesses"], "conversations": row["seen"]}
        if report.dry_run:
            report.changes.append(found)
            continue
        reason = (f"confidence {row['confidence']} >= {rules.min_confidence}, accessed {row['accesses']} >= "
                  f"{rules.min_access_count} times, from {row['seen']} >= {rules.min_conversations} conversations")
        # in the run's record before the copy is written (its id is known beforehand): a worker that dies right
        # after the write leaves the copy undoable
        report.changes.append({**found, "global_id": promoted_fact_id(row["user_id"], row["id"])})
        await report.save()
        report.promoted.append(await semantic.promote_to_global(row["id"], reason, user_id=row["user_id"]))
    return report


async def unpromote(semantic: SemanticMemory, changes: list[dict[str, Any]]) -> dict[str, int]:
    """Undo a promotion run: delete each global copy it made (still linked to its source) and its timeline row."""
    restored = 0
    deleted: list[str] = []
    for change in changes:
        rows = await semantic.ctx.graph.write(cypher.UNPROMOTE_FACT, {
            "global_id": change["global_id"], "source_id": change["source_id"], "user_id": change["user_id"]})
        if rows and rows[0]["deleted"]:
            restored += 1
            deleted.append(change["global_id"])
    await semantic.ctx.sql.timeline.delete("fact", deleted)
    return {"restored": restored, "skipped": len(changes) - restored}
