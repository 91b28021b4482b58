"""Cleanup (spec 003 "Data Retention"): entities that faded and are no longer used are deleted.

An entity is deleted when its salience is below ``retention.entity_min_salience`` (0.1; the decay job lowers the
salience of what is not used) **and** it was not accessed for ``retention.entity_days`` (30; since it was first seen
if never). Its edges go with it (``DETACH DELETE``): its relationships, ``ABOUT`` links from facts (the facts stay)
and ``MENTIONS`` from conversations; so does its ``memory_timeline`` row. The condition is checked again in the
deleting statement, so an entity used between the read and the delete stays. Every deletion is audited (operation
``delete``) with the entity as it was and its edges (the report's ``changes`` list them too; a dry run lists what
would be deleted and deletes nothing). Deletions are not undoable by ``worker undo``: the audit entries hold what
was deleted. Archiving old conversations, the other half of the cleanup job, is :mod:`agentx_memory.archive`.
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
from .sql.timeline import Timeline
from .timeutil import to_ms

__all__ = ["CleanupReport", "delete_idle_entities"]

PAGE: Final = 500


@dataclass
class CleanupReport(JobReport):
    """What a cleanup run examined and deleted (``changes``: each deleted entity with its edges)."""

    entities_examined: int = 0
    entities_deleted: int = 0

    def counts(self) -> dict[str, Any]:
        """Entities examined and deleted (or, in a dry run, that would be)."""
        return {"entities_examined": self.entities_examined, "entities_deleted": self.entities_deleted}


async def delete_idle_entities(graph: GraphStore, audit: MemoryAuditLogger, timeline: Timeline,
                               settings: RetentionSettings, *,
                               now: datetime, user_id: str | None = None,
                               report: CleanupReport | None = None) -> CleanupReport:
    """Delete the faded, unused entities of every user (or of ``user_id``) as of ``now`` (see the module
    docstring), filling ``report``."""
    report = report if report is not None else CleanupReport()
    params = {"min_salience": settings.entity_min_salience,
              "before": to_ms(now - timedelta(days=settings.entity_days)), "user_id": user_id}
    after = ""
    while True:
        rows = await graph.read(cypher.IDLE_ENTITIES, {**params, "after": after, "limit": PAGE})
        if not rows:
            return report
        report.entities_examined += len(rows)
        for row in rows:
            entity: dict[str, Any] = row["entity"]
            edges = {"outgoing": [e for e in row["outgoing"] if e], "incoming": [e for e in row["incoming"] if e]}
            if report.dry_run:
                report.entities_deleted += 1
                report.changes.append({"entity": entity, "edges": edges})
                continue
            deleted = await graph.write(cypher.DELETE_IDLE_ENTITY,
                                        {**params, "id": entity["id"], "user_id": entity["user_id"]})
            if deleted and deleted[0]["deleted"]:
                await timeline.delete("entity", [entity["id"]])
                report.entities_deleted += 1
                report.changes.append({"entity": entity, "edges": edges})
                await audit.log_write(
                    "delete", "semantic", entity["channel"], [entity["id"]],
                    {"kind": "entity", "reason": f"salience {entity['salience']} < {settings.entity_min_salience} "
                     f"and not accessed for {settings.entity_days} days", "entity": entity, "edges": edges},
                    user_id=entity["user_id"])
        after = rows[-1]["entity"]["id"]
