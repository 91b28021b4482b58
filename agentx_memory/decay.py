"""Memory decay (spec 003 "Memory Decay"): what is not used fades, what is used often fades slower.

* **Entity salience**, for entities not accessed for ``decay.entity_idle_hours``:
  ``min(1, base * rate ** days * (1 + access_boost * ln(1 + accesses)))`` — ``base`` the salience written (the
  highest), ``days`` since the last access (or since first seen), ``accesses`` the access count.
* **Inferred facts' confidence** (``Fact.certainty == "inferred"``), in steps of ``decay.fact_decay_interval_days``:
  ``base * rate ** (interval * floor(days / interval))``.

Values are computed from the stored base and the time since access, never from the previous decayed value, so a run
is idempotent: running twice, or late, gives the values the formula gives for that moment (``now`` is a parameter,
so this is testable without waiting). An access (recall reinforces what it returns) resets the clock. Recall reads
the decayed values: facts rank by confidence through fusion and entities get a ``salience`` signal
(``retrieval.salience_weight``).

Only values that change are written; each is recorded in the report's ``changes`` with its value before and after,
so :func:`undo_decay` can put it back (unless it changed again since). A dry run computes and reports without
writing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final, LiteralString

from .graph import cypher
from .graph.port import GraphStore
from .runs import JobReport
from .settings import DecaySettings
from .timeutil import to_ms

__all__ = ["DecayReport", "apply_decay", "decayed_confidence", "decayed_salience", "undo_decay"]

#: Nodes read and written per round trip.
PAGE: Final = 1000
_DAY_MS: Final = 86_400_000


@dataclass
class DecayReport(JobReport):
    """What a decay run examined and changed (``changes``: ``kind``, ``id``, ``user_id``, ``before``, ``after``)."""

    entities_examined: int = 0
    entities_changed: int = 0
    facts_examined: int = 0
    facts_changed: int = 0

    def counts(self) -> dict[str, Any]:
        """Entities and facts examined and changed."""
        return {"entities_examined": self.entities_examined, "entities_changed": self.entities_changed,
                "facts_examined": self.facts_examined, "facts_changed": self.facts_changed}


def decayed_salience(base: float, days: float, accesses: int, settings: DecaySettings) -> float:
    """An entity's salience after ``days`` without access (see the module docstring)."""
    boost = 1 + settings.access_boost * math.log1p(max(0, accesses))
    return min(1.0, base * settings.rate ** max(0.0, days) * boost)


def decayed_confidence(base: float, days: float, settings: DecaySettings) -> float:
    """An inferred fact's confidence after ``days`` without access, decayed in whole intervals."""
    interval = settings.fact_decay_interval_days
    return base * settings.rate ** (interval * math.floor(max(0.0, days) / interval))


async def apply_decay(graph: GraphStore, settings: DecaySettings, *, now: datetime, user_id: str | None = None,
                      report: DecayReport | None = None) -> DecayReport:
    """Decay the idle entities and inferred facts of every user (or of ``user_id``) as of ``now``, filling
    ``report`` (a new one by default; its ``dry_run`` decides whether anything is written)."""
    report = report if report is not None else DecayReport()
    now_ms = to_ms(now)
    idle_before = to_ms(now - timedelta(hours=settings.entity_idle_hours))

    def salience(row: dict[str, Any]) -> float:
        return decayed_salience(float(row["base"]), (now_ms - row["since"]) / _DAY_MS, int(row["accesses"]), settings)

    def confidence(row: dict[str, Any]) -> float:
        return decayed_confidence(float(row["base"]), (now_ms - row["since"]) / _DAY_MS, settings)

    params = {"user_id": user_id}
    report.entities_examined, report.entities_changed = await _pages(
        graph, cypher.DECAY_ENTITY_CANDIDATES, cypher.SET_SALIENCE, {**params, "idle_before": idle_before},
        salience, now_ms, report, "entity")
    report.facts_examined, report.facts_changed = await _pages(
        graph, cypher.DECAY_FACT_CANDIDATES, cypher.SET_CONFIDENCE, params, confidence, now_ms, report, "fact")
    return report


async def _pages(graph: GraphStore, read: LiteralString, write: LiteralString, params: dict[str, Any],
                 value: Any, now_ms: int, report: DecayReport, kind: str) -> tuple[int, int]:
    examined = changed = 0
    after = ""
    while True:
        rows = await graph.read(read, {**params, "after": after, "limit": PAGE})
        if not rows:
            return examined, changed
        examined += len(rows)
        moved = [{"kind": kind, "id": r["id"], "user_id": r["user_id"], "before": r["current"], "after": value(r)}
                 for r in rows]
        moved = [m for m in moved if m["before"] != m["after"]]
        report.changes.extend(moved)
        if moved and not report.dry_run:
            await report.save()  # recorded before they are written: a worker that dies mid-page leaves them undoable
            await graph.write(write, {"rows": [{"id": m["id"], "value": m["after"]} for m in moved], "now": now_ms})
        changed += len(moved)
        after = rows[-1]["id"]


async def undo_decay(graph: GraphStore, changes: list[dict[str, Any]]) -> dict[str, int]:
    """Put back the values a decay run changed (its ``changes``), except those that changed again since:
    ``{"restored": n, "skipped": m}``."""
    restored = 0
    for kind, statement in (("entity", cypher.RESTORE_SALIENCE), ("fact", cypher.RESTORE_CONFIDENCE)):
        rows = [{"id": c["id"], "before": c["before"], "after": c["after"]} for c in changes if c["kind"] == kind]
        for start in range(0, len(rows), PAGE):
            written = await graph.write(statement, {"rows": rows[start:start + PAGE]})
            restored += written[0]["restored"] if written else 0
    return {"restored": restored, "skipped": len(changes) - restored}
