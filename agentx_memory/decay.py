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
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final, LiteralString

from .graph import cypher
from .graph.port import GraphStore
from .settings import DecaySettings
from .timeutil import to_ms

__all__ = ["DecayReport", "apply_decay", "decayed_confidence", "decayed_salience"]

#: Nodes read and written per round trip.
PAGE: Final = 1000
_DAY_MS: Final = 86_400_000


@dataclass
class DecayReport:
    """What a decay run examined and changed."""

    entities_examined: int = 0
    entities_changed: int = 0
    facts_examined: int = 0
    facts_changed: int = 0

    def summary(self) -> dict[str, int]:
        """Plain values for the worker's log."""
        return dict(vars(self))


def decayed_salience(base: float, days: float, accesses: int, settings: DecaySettings) -> float:
    """An entity's salience after ``days`` without access (see the module docstring)."""
    boost = 1 + settings.access_boost * math.log1p(max(0, accesses))
    return min(1.0, base * settings.rate ** max(0.0, days) * boost)


def decayed_confidence(base: float, days: float, settings: DecaySettings) -> float:
    """An inferred fact's confidence after ``days`` without access, decayed in whole intervals."""
    interval = settings.fact_decay_interval_days
    return base * settings.rate ** (interval * math.floor(max(0.0, days) / interval))


async def apply_decay(graph: GraphStore, settings: DecaySettings, *, now: datetime) -> DecayReport:
    """Decay every user's idle entities and inferred facts as of ``now``."""
    report = DecayReport()
    now_ms = to_ms(now)
    idle_before = to_ms(now - timedelta(hours=settings.entity_idle_hours))

    def salience(row: dict[str, Any]) -> float:
        return decayed_salience(float(row["base"]), (now_ms - row["since"]) / _DAY_MS, int(row["accesses"]), settings)

    def confidence(row: dict[str, Any]) -> float:
        return decayed_confidence(float(row["base"]), (now_ms - row["since"]) / _DAY_MS, settings)

    report.entities_examined, report.entities_changed = await _pages(
        graph, cypher.DECAY_ENTITY_CANDIDATES, cypher.SET_SALIENCE, {"idle_before": idle_before}, salience, now_ms)
    report.facts_examined, report.facts_changed = await _pages(
        graph, cypher.DECAY_FACT_CANDIDATES, cypher.SET_CONFIDENCE, {}, confidence, now_ms)
    return report


async def _pages(graph: GraphStore, read: LiteralString, write: LiteralString, params: dict[str, Any],
                 value: Any, now_ms: int) -> tuple[int, int]:
    examined = changed = 0
    after = ""
    while True:
        rows = await graph.read(read, {**params, "after": after, "limit": PAGE})
        if not rows:
            return examined, changed
        examined += len(rows)
        updates = [{"id": r["id"], "value": value(r)} for r in rows]
        written = await graph.write(write, {"rows": updates, "now": now_ms})
        changed += written[0]["updated"] if written else 0
        after = rows[-1]["id"]
