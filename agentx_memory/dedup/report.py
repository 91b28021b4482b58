"""What a dedup run reports (shared by the entity and the fact part)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..runs import JobReport

__all__ = ["DedupReport"]


@dataclass
class DedupReport(JobReport):
    """What a dedup run examined and merged. ``changes`` hold per merge its ``kind`` (``entity`` or ``fact``), the
    survivor and what undo needs (in a dry run: the pairs that would merge)."""

    entities_examined: int = 0
    facts_examined: int = 0
    pairs_compared: int = 0
    entities_merged: int = 0
    facts_merged: int = 0
    skipped: int = 0

    @property
    def merged_total(self) -> int:
        """Merges of both kinds so far (the run's budget counts them together)."""
        return self.entities_merged + self.facts_merged

    def count(self, kind: str, *, examined: int = 0, merged: int = 0) -> None:
        """Add to the counters of ``kind`` (``entity`` or ``fact``)."""
        if kind == "entity":
            self.entities_examined += examined
            self.entities_merged += merged
        else:
            self.facts_examined += examined
            self.facts_merged += merged

    def counts(self) -> dict[str, Any]:
        """Entities and facts examined, pairs with evidence compared by vector, merges made (or, dry, that would be)
        and pairs skipped (one side merged already in this run, or an edge the job cannot move)."""
        return {"entities_examined": self.entities_examined, "facts_examined": self.facts_examined,
                "pairs_compared": self.pairs_compared, "entities_merged": self.entities_merged,
                "facts_merged": self.facts_merged, "skipped": self.skipped}
