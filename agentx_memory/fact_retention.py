"""Retention of facts (spec 004: facts 1 year; part of the cleanup job): facts no one uses expire, reversibly.

An active fact that was neither stated again (``stated_at``: the latest statement time a write gave it) nor accessed
by recall for ``retention.fact_days`` (365) expires: it leaves recall like a superseded fact (``status =
"expired"``), stays for ``facts_as_of`` reads of the time it held (``valid_until`` is the expiry), and is never
deleted. The condition is checked again in the writing statement, so a fact used in between stays. The run's
``changes`` hold each fact's values before, so :func:`restore_expired` (``worker undo``) brings it back; a dry run
lists what would expire.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final

from .audit import MemoryAuditLogger
from .graph import cypher
from .graph.port import GraphStore
from .runs import JobReport
from .settings import RetentionSettings
from .timeutil import to_ms

__all__ = ["FactExpiryReport", "expire_old_facts", "restore_expired"]

PAGE: Final = 500


@dataclass
class FactExpiryReport(JobReport):
    """What a fact-retention run examined and expired (``changes``: ``id``, ``user_id``, ``before``)."""

    facts_expired: int = 0

    def counts(self) -> dict[str, Any]:
        """Facts expired (or, in a dry run, that would be)."""
        return {"facts_expired": self.facts_expired}


async def expire_old_facts(graph: GraphStore, audit: MemoryAuditLogger, settings: RetentionSettings, *,
                           now: datetime, user_id: str | None = None,
                           report: FactExpiryReport | None = None) -> FactExpiryReport:
    """Expire the unused facts of every user (or of ``user_id``) as of ``now``, filling ``report``."""
    report = report if report is not None else FactExpiryReport()
    params = {"before": to_ms(now - timedelta(days=settings.fact_days)), "now": to_ms(now), "user_id": user_id}
    after = ""
    while True:
        rows = await graph.read(cypher.EXPIRING_FACTS, {**params, "after": after, "limit": PAGE})
        if not rows:
            return report
        after = rows[-1]["id"]
        # in the run's record before they are expired, so a worker that dies here leaves them; a fact used between
        # the read and the write is not expired, and an undo counts it skipped (used since), like any other
        report.changes.extend({"id": r["id"], "user_id": r["user_id"], "before": r["before"]} for r in rows)
        if report.dry_run:
            report.facts_expired += len(rows)
            continue
        await report.save()
        expired = {r["id"] for r in await graph.write(cypher.EXPIRE_FACTS, {**params, "ids": [r["id"] for r in rows]})}
        done = [r for r in rows if r["id"] in expired]
        report.facts_expired += len(done)
        by_user: dict[str, list[str]] = {}
        for r in done:
            by_user.setdefault(r["user_id"], []).append(r["id"])
        for user, ids in by_user.items():
            await audit.log_write("expire", "semantic", None, ids, {
                "kind": "fact", "reason": f"neither stated again nor accessed for {settings.fact_days} days"},
                user_id=user)


async def restore_expired(graph: GraphStore, changes: list[dict[str, Any]]) -> dict[str, int]:
    """Undo a fact-retention run: each fact it expired (and still expired) back as it was."""
    restored = 0
    for start in range(0, len(changes), PAGE):
        rows = [{"id": c["id"], "before": c["before"]} for c in changes[start:start + PAGE]]
        written = await graph.write(cypher.RESTORE_EXPIRED_FACTS, {"rows": rows})
        restored += written[0]["restored"] if written else 0
    return {"restored": restored, "skipped": len(changes) - restored}
