"""Consolidation of the short-term tier (seed 002's consolidation pipeline, the ``short_term`` job).

1. **Promote**: an entry read at least ``short_term.promote_access_count`` (3) times — expired or not — becomes a
   long-term :class:`~agentx_memory.models.Fact` through :meth:`SemanticMemory.learn_fact` (embedded, recallable by
   ``remember``; see :func:`agentx_memory.short_term.promoted_fact` for its claim and provenance) and leaves the
   short-term tier. Each entry is taken out by a statement that checks the count again, and the fact is made from the
   entry as taken, so a write in between is never lost; if the fact cannot be written, the entry goes back.
2. **Drop**: an expired entry read fewer times is deleted (the condition checked again as it goes).

The run's ``changes`` hold each entry as it was (and, for a promotion, the fact's id, the metadata it was given and
what the fact was before when the key had been promoted already), so :func:`undo_short_term` (``worker undo``)
removes or reverts each promoted fact — only while it still holds what the run wrote — and puts each entry back
unless its key holds a newer entry. A dry run lists what would be promoted and dropped and writes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from .errors import NotFoundError
from .graph import cypher
from .models import Fact, ShortTermEntry
from .runs import JobReport
from .semantic import SemanticMemory
from .short_term import promoted_fact
from .validation import check_json

__all__ = ["ShortTermReport", "consolidate_short_term", "undo_short_term"]

PAGE: Final = 500


@dataclass
class ShortTermReport(JobReport):
    """What a short-term consolidation run promoted and dropped (``facts``: the promoted facts; ``changes``: one per
    entry, ``kind`` ``promoted`` or ``dropped``, with ``user_id`` and the ``entry`` as it was)."""

    promoted: int = 0
    dropped: int = 0
    facts: list[Fact] = field(default_factory=list)

    def counts(self) -> dict[str, Any]:
        """Entries promoted to long-term facts and expired entries dropped (or, in a dry run, that would be)."""
        return {"promoted": self.promoted, "dropped": self.dropped}


def _start() -> tuple[str, str, str]:
    return ("", "", "")


async def consolidate_short_term(semantic: SemanticMemory, *, now: datetime, user_id: str | None = None,
                                 report: ShortTermReport | None = None) -> ShortTermReport:
    """Promote the entries read often and drop the expired ones read less, of every user (or of ``user_id``), as of
    ``now``, filling ``report`` (see the module docstring)."""
    report = report if report is not None else ShortTermReport()
    rows = semantic.ctx.sql.short_term
    threshold = semantic.ctx.settings.short_term.promote_access_count
    after = _start()
    while page := await rows.promotable(min_access=threshold, user_id=user_id, after=after, limit=PAGE):
        after = (page[-1].user_id, page[-1].session_id, page[-1].key)
        for entry in page:
            if report.dry_run:
                report.changes.append(_change("promoted", entry))
                report.promoted += 1
            else:
                await _promote(semantic, entry, threshold, report)
    if report.dry_run:
        after = _start()
        while page := await rows.droppable(now=now, min_access=threshold, user_id=user_id, after=after, limit=PAGE):
            after = (page[-1].user_id, page[-1].session_id, page[-1].key)
            report.changes.extend(_change("dropped", entry) for entry in page)
            report.dropped += len(page)
        return report
    while dropped := await rows.drop_expired(now=now, min_access=threshold, user_id=user_id, limit=PAGE):
        report.changes.extend(_change("dropped", entry) for entry in dropped)
        await report.save()  # the entries are gone from the tier: their records are what undo puts back
        report.dropped += len(dropped)
        by_session: dict[tuple[str, str], list[str]] = {}
        for entry in dropped:
            by_session.setdefault((entry.user_id, entry.session_id), []).append(entry.key)
        for (user, session), keys in by_session.items():
            await semantic.ctx.audit.log_write("expire", "short_term", None, keys, {
                "reason": f"expired, read fewer than {threshold} times"}, user_id=user, session_id=session)
    return report


def _change(kind: str, entry: ShortTermEntry, **more: Any) -> dict[str, Any]:
    return {"kind": kind, "user_id": entry.user_id, "entry": entry.model_dump(mode="json"), **more}


async def _fact_state(semantic: SemanticMemory, fact_id: str, user_id: str) -> Fact | None:
    try:
        return await semantic.get_fact(fact_id, user_id)
    except NotFoundError:
        return None


async def _promote(semantic: SemanticMemory, entry: ShortTermEntry, threshold: int, report: ShortTermReport) -> None:
    taken = await semantic.ctx.sql.short_term.take_promotable(entry.user_id, entry.session_id, entry.key,
                                                              min_access=threshold)
    if taken is None:  # deleted, or written afresh after it expired, since the page was read
        return
    fact = promoted_fact(taken, ctx=semantic.ctx, run_id=report.run_id)
    before = await _fact_state(semantic, fact.id, fact.user_id)
    try:
        stored = await semantic.learn_fact(fact)
    except BaseException:
        await semantic.ctx.sql.short_term.restore(taken)
        raise
    report.facts.append(stored)
    report.promoted += 1
    report.changes.append(_change(
        "promoted", taken, fact_id=stored.id, claim=stored.claim, metadata=stored.metadata,
        fact_before=None if before is None else {
            "claim": before.claim, "metadata": before.metadata, "source": before.source,
            "confidence": before.confidence}))
    await report.save()


async def undo_short_term(semantic: SemanticMemory, changes: list[dict[str, Any]]) -> dict[str, int]:
    """Undo a short-term consolidation run: each promoted fact that still holds what the run wrote is deleted (or,
    when the key had been promoted before, put back as it was), and each entry is put back unless its key holds an
    entry again. ``restored`` counts the changes reversed whole, ``skipped`` the others."""
    restored = 0
    deleted: list[str] = []
    for change in changes:
        entry = ShortTermEntry.model_validate(change["entry"])
        if change["kind"] == "promoted" and not await _unpromote(semantic, entry, change, deleted):
            continue
        if await semantic.ctx.sql.short_term.restore(entry):
            restored += 1
    await semantic.ctx.sql.timeline.delete("fact", deleted)
    return {"restored": restored, "skipped": len(changes) - restored}


async def _unpromote(semantic: SemanticMemory, entry: ShortTermEntry, change: dict[str, Any],
                     deleted: list[str]) -> bool:
    """Take back one promotion; False when the fact changed since (newer work stays)."""
    current = await _fact_state(semantic, change["fact_id"], entry.user_id)
    if current is None or current.claim != change["claim"] or current.metadata != change["metadata"]:
        return False
    before = change.get("fact_before")
    if before is not None:
        await semantic.learn_fact(Fact(id=current.id, user_id=entry.user_id, claim=before["claim"],
                                       metadata=before["metadata"], source=before["source"],
                                       confidence=before["confidence"]))
        return True
    metadata = check_json(change["metadata"], "metadata", max_bytes=2**31)
    rows = await semantic.ctx.graph.write(cypher.UNPROMOTE_SHORT_TERM_FACT, {
        "id": current.id, "user_id": entry.user_id, "metadata": metadata})
    if not (rows and rows[0]["deleted"]):
        return False
    deleted.append(current.id)
    return True
