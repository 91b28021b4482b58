"""Context-rot archival (seed 002's "Context rot detection", daily): facts and entities nobody uses leave recall.

Seed 002 archives "context entries with staleness >= 0.9" but gives no formula for staleness. Ours comes from the
three things the engine knows about a memory's use — how long it has been idle, how often it was used, how salient it
is — as an exponential fading whose half-life grows with use and salience::

    half_life = context_rot.half_life_days * (1 + ln(1 + accesses)) * (0.5 + salience)
    staleness = 1 - 2 ** (-idle_days / half_life)

``idle_days`` runs from the last access (recall reinforces what it returns), else from the first write; ``accesses``
is the access count; ``salience`` is an entity's (decayed) salience and a fact's (decayed) confidence, each in
[0, 1]. Staleness is 0 right after a use and tends to 1. With the defaults (half-life 30 days, threshold 0.9) an
unused memory of salience 0.5 is archived after ~100 idle days, one of salience 1 after ~150, and one used ten times
after ~340. Nothing can reach the threshold sooner than ``-log2(1 - threshold) * half_life_days * 0.5`` idle days
(:func:`min_idle_days`), which is the bound the candidate read uses.

A run reads its candidates from PostgreSQL's ``memory_timeline`` through a partial index on the time each was recorded
(migration 0020; the time of last use is filtered, so that a recall's access count stays a cheap update): unarchived
facts and entities idle past that bound, oldest first, in pages. It then reads each candidate's current values from
the graph by id (the unique index) and computes its staleness: the graph is the authority for use counts and
salience. Those at or above ``context_rot.threshold`` are archived:

* a **fact** leaves recall like a superseded fact (``status = "archived"``, its previous status kept), so every
  recall statement skips it; it stays readable (``get_fact``, as-of reads);
* an **entity** gets ``archived = true``: vector and entity-centric recall skip it; ``get_entity`` and entity graphs
  still reach it;
* its timeline row gets ``archived = true``: ``timeline()`` lists it with ``include_archived=True``.

The archiving statement checks again that the memory was not used since it was read, so one used in between stays.
Each archived memory is audited (operation ``archive``) and recorded in the run's ``changes``; ``undo_run`` (or
``unarchive`` for chosen ids) brings it back. A dry run reports what would be archived, with each one's staleness.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from .audit import MemoryAuditLogger
from .graph import cypher
from .graph.port import GraphStore
from .runs import JobReport
from .settings import ContextRotSettings
from .sql.timeline import Timeline
from .timeutil import from_ms, to_ms

__all__ = ["ContextRotReport", "archive_stale", "min_idle_days", "restore_stale", "staleness", "unarchive"]

PAGE: Final = 500
_DAY_MS: Final = 86_400_000
#: The graph label and timeline memory type of each kind the job archives.
KINDS: Final = {"fact": "fact", "entity": "entity"}


@dataclass
class ContextRotReport(JobReport):
    """What a context-rot run examined and archived (``changes``: ``kind`` (fact or entity), ``id``, ``user_id``,
    ``channel``, ``staleness``)."""

    examined: int = 0
    facts_archived: int = 0
    entities_archived: int = 0

    def counts(self) -> dict[str, Any]:
        """Candidates examined; facts and entities archived (or, in a dry run, that would be)."""
        return {"examined": self.examined, "facts_archived": self.facts_archived,
                "entities_archived": self.entities_archived}


def staleness(idle_days: float, accesses: int, salience: float | None, settings: ContextRotSettings) -> float:
    """A memory's staleness in [0, 1) (see the module docstring)."""
    sal = min(1.0, max(0.0, 0.5 if salience is None else float(salience)))
    half_life = settings.half_life_days * (1 + math.log1p(max(0, accesses))) * (0.5 + sal)
    return 1 - 2 ** (-max(0.0, idle_days) / half_life)


def min_idle_days(settings: ContextRotSettings) -> float:
    """The fewest idle days after which any memory can reach the threshold (no use, salience 0)."""
    return -math.log2(1 - settings.threshold) * settings.half_life_days * 0.5


async def archive_stale(graph: GraphStore, timeline: Timeline, audit: MemoryAuditLogger,
                        settings: ContextRotSettings, *, now: datetime, user_id: str | None = None,
                        report: ContextRotReport | None = None) -> ContextRotReport:
    """Archive the stale facts and entities of every user (or of ``user_id``) as of ``now``, filling ``report``."""
    report = report if report is not None else ContextRotReport()
    now_ms = to_ms(now)
    idle_before = now - timedelta(days=min_idle_days(settings))
    after: tuple[datetime, int] = (datetime(1, 1, 2, tzinfo=UTC), 0)
    while True:
        rows = await timeline.rot_candidates(idle_before=idle_before, user_id=user_id, after=after, limit=PAGE)
        if not rows:
            return report
        after = (rows[-1]["event_time"], rows[-1]["id"])
        report.examined += len(rows)
        for kind in KINDS:
            ids = [r["node_id"] for r in rows if r["memory_type"] == kind]
            if ids:
                await _archive(graph, timeline, audit, settings, kind, ids, now_ms, report)


async def _archive(graph: GraphStore, timeline: Timeline, audit: MemoryAuditLogger, settings: ContextRotSettings,
                   kind: str, ids: list[str], now_ms: int, report: ContextRotReport) -> None:
    read, write = (cypher.ROT_FACTS, cypher.ARCHIVE_FACTS) if kind == "fact" else (cypher.ROT_ENTITIES,
                                                                                   cypher.ARCHIVE_ENTITIES)
    stale = []
    for row in await graph.read(read, {"ids": ids}):
        value = staleness((now_ms - (row["since"] or now_ms)) / _DAY_MS, int(row["accesses"]), row["salience"],
                          settings)
        if value >= settings.threshold:
            stale.append({**row, "staleness": round(value, 6)})

    def change(r: dict[str, Any]) -> dict[str, Any]:
        return {"kind": kind, "id": r["id"], "user_id": r["user_id"], "channel": r["channel"],
                "staleness": r["staleness"]}

    report.changes.extend(change(r) for r in stale)
    if not report.dry_run and stale:
        # in the run's record before they are archived, so a worker that dies here leaves them; one used between the
        # read and the write is not archived, and an undo counts it skipped (used since), like any other
        await report.save()
        archived = {r["id"] for r in await graph.write(write, {"rows": [
            {"id": r["id"], "user_id": r["user_id"], "since": r["since"]} for r in stale], "now": now_ms})}
        stale = [r for r in stale if r["id"] in archived]
    by_user: dict[str, list[dict[str, Any]]] = {}
    for r in stale:
        by_user.setdefault(r["user_id"], []).append(r)
    for user, found in by_user.items():
        if report.dry_run:
            continue
        await timeline.set_archived(user, [(KINDS[kind], r["id"]) for r in found], archived=True)
        await audit.log_write("archive", "semantic", None, [r["id"] for r in found], {
            "kind": kind, "reason": f"staleness >= {settings.threshold}",
            "staleness": {r["id"]: r["staleness"] for r in found},
            "last_used": {r["id"]: from_ms(r["since"]).isoformat() if r["since"] else None for r in found}},
            user_id=user)
    if kind == "fact":
        report.facts_archived += len(stale)
    else:
        report.entities_archived += len(stale)


async def unarchive(graph: GraphStore, timeline: Timeline, user_id: str, ids: list[str]) -> dict[str, int]:
    """Bring the user's archived facts and entities among ``ids`` back into recall: ``{"restored": n, "skipped":
    m}`` (an id that is not an archived fact or entity of the user is skipped)."""
    restored = 0
    for kind, statement in (("fact", cypher.UNARCHIVE_FACTS), ("entity", cypher.UNARCHIVE_ENTITIES)):
        for start in range(0, len(ids), PAGE):
            back = [r["id"] for r in await graph.write(statement, {"ids": ids[start:start + PAGE],
                                                                   "user_id": user_id})]
            await timeline.set_archived(user_id, [(KINDS[kind], i) for i in back], archived=False)
            restored += len(back)
    return {"restored": restored, "skipped": len(set(ids)) - restored}


async def restore_stale(graph: GraphStore, timeline: Timeline, changes: list[dict[str, Any]]) -> dict[str, int]:
    """Undo a context-rot run: each memory it archived (and still archived) back in recall."""
    by_user: dict[str, list[str]] = {}
    for change in changes:
        by_user.setdefault(change["user_id"], []).append(change["id"])
    restored = 0
    for user, ids in by_user.items():
        restored += (await unarchive(graph, timeline, user, ids))["restored"]
    return {"restored": restored, "skipped": len(changes) - restored}
