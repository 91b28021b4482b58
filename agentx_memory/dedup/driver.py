"""One dedup pass over one kind of memory (entities, facts) for some users: read, pair, plan, merge.

A :class:`DedupKind` says what differs between kinds — the statement reading a user's items, how pairs are found,
which member of a cluster survives, what a planned merge records, and the merge itself; :func:`dedup_kind` does the
rest the same way for both: per user, the pairs, the plan (:func:`~agentx_memory.dedup.clusters.plan_merges`), the
budget ``dedup.max_merges_per_run`` shared by both kinds, and the dry run that records the plan only.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, LiteralString

from ..semantic import SemanticMemory
from ..settings import DedupSettings
from .clusters import plan_merges
from .report import DedupReport

__all__ = ["DedupKind", "dedup_kind"]

Pairs = list[tuple[float, int, int]]


@dataclass(frozen=True)
class DedupKind:
    """What one kind of memory brings to a dedup pass."""

    name: str  # "entity" or "fact": the changes' kind and the report's counters
    read: LiteralString  # a user's items ($user_id), each with id and embedding
    pairs: Callable[[list[dict[str, Any]], float], tuple[Pairs, int]]  # (cosine, i, j) duplicates, pairs compared
    standing: Callable[[dict[str, Any]], Any]  # sort key: the lowest survives
    describe: Callable[[dict[str, Any], dict[str, Any]], dict[str, Any]]  # the readable part of a planned merge
    merge: Callable[[SemanticMemory, DedupReport, dict[str, Any]], Awaitable[bool]]  # False: left alone


async def dedup_kind(semantic: SemanticMemory, settings: DedupSettings, users: list[str], report: DedupReport,
                     kind: DedupKind) -> None:
    """Merge the duplicates of ``kind`` of these users into ``report``, while the run has merges left."""
    for user in users:
        items = await semantic.ctx.graph.read(kind.read, {"user_id": user})
        report.count(kind.name, examined=len(items))
        if len(items) < 2:
            continue
        pairs, compared = kind.pairs(items, settings.similarity)
        report.pairs_compared += compared
        merges, left_out = plan_merges(pairs, [kind.standing(x) for x in items])
        report.skipped += left_out
        for s, x, cosine in merges:
            if report.merged_total >= settings.max_merges_per_run:
                return
            survivor, loser = items[s], items[x]
            change = {"kind": kind.name, "user_id": user, "survivor_id": survivor["id"], "loser_id": loser["id"],
                      **kind.describe(survivor, loser), "similarity": cosine}
            if report.dry_run:
                report.changes.append(change)
            elif not await kind.merge(semantic, report, change):
                report.skipped += 1
                continue
            report.count(kind.name, merged=1)
