"""Cleanup (spec 003 "Data Retention"): entities that faded and are no longer used are deleted.

An entity is deleted when its salience is below ``retention.entity_min_salience`` (0.1; the decay job lowers the
salience of what is not used) **and** it was not accessed for ``retention.entity_days`` (30; since it was first seen
if never). Its edges go with it (``DETACH DELETE``): its relationships, ``ABOUT`` links from facts (the facts stay)
and ``MENTIONS`` from conversations. The condition is checked again in the deleting statement, so an entity used
between the read and the delete stays. Every deletion is audited (operation ``delete``) with the entity as it was and
its edges. Archiving old conversations (``retention.conversation_days``) is not built yet.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final

from .audit import MemoryAuditLogger
from .graph import cypher
from .graph.port import GraphStore
from .settings import RetentionSettings
from .timeutil import to_ms

__all__ = ["CleanupReport", "delete_idle_entities"]

PAGE: Final = 500


@dataclass
class CleanupReport:
    """What a cleanup run examined and deleted."""

    entities_examined: int = 0
    entities_deleted: int = 0

    def summary(self) -> dict[str, int]:
        """Plain values for the worker's log."""
        return dict(vars(self))


async def delete_idle_entities(graph: GraphStore, audit: MemoryAuditLogger, settings: RetentionSettings, *,
                               now: datetime) -> CleanupReport:
    """Delete every user's faded, unused entities as of ``now`` (see the module docstring)."""
    report = CleanupReport()
    params = {"min_salience": settings.entity_min_salience,
              "before": to_ms(now - timedelta(days=settings.entity_days))}
    after = ""
    while True:
        rows = await graph.read(cypher.IDLE_ENTITIES, {**params, "after": after, "limit": PAGE})
        if not rows:
            return report
        report.entities_examined += len(rows)
        for row in rows:
            entity: dict[str, Any] = row["entity"]
            deleted = await graph.write(cypher.DELETE_IDLE_ENTITY,
                                        {**params, "id": entity["id"], "user_id": entity["user_id"]})
            if deleted and deleted[0]["deleted"]:
                report.entities_deleted += 1
                await audit.log_write(
                    "delete", "semantic", entity["channel"], [entity["id"]],
                    {"kind": "entity", "reason": f"salience {entity['salience']} < {settings.entity_min_salience} "
                     f"and not accessed for {settings.entity_days} days", "entity": entity,
                     "edges": {"outgoing": [e for e in row["outgoing"] if e], "incoming": [e for e in row["incoming"]
                                                                                            if e]}},
                    user_id=entity["user_id"])
        after = rows[-1]["entity"]["id"]
