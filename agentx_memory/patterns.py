"""Pattern detection (spec 003 ``detect_patterns``, the worker's ``patterns`` job): strategies learned from how
conversations with tools turned out.

A conversation is due once it used tools and its last tool call is older than ``worker.consolidate_quiet_minutes``
(it has gone quiet), and its patterns were not learned before (``Conversation.patterns_extracted``). Its **outcome**
is the success of its last tool call that reported one; a conversation whose calls all left ``success`` unset has no
outcome and teaches nothing (it is marked done all the same).

From a conversation with an outcome the job learns a strategy through :meth:`ProceduralMemory.learn_strategy`:

* the **tool sequence** is the conversation's tools in call order, a tool called several times in a row counted once;
* the **description** is the task type (the most frequent one among the calls, when any is given) and the sequence,
  e.g. ``"flight_booking: search_flights -> book_flight"``, so the same way of doing the same task reinforces one
  strategy: one more success or failure, and ``SUCCEEDED_IN`` the conversation when it succeeded; that task type is
  also the strategy's ``task_type`` (spec 003: strategies linked to task types), which ``find_strategies`` filters by;
* the **context pattern** is the conversation's first user turn (its first 300 characters), which the strategy's
  vector is made from together with the description, so ``find_strategies`` finds it for similar requests.

Each conversation is taken under its Redis lock (the consolidation lock) and its flag read again under it, so two
workers never learn it twice. Later tool calls in a conversation already learned from are not learned again.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final

from .episodic import EpisodicMemory
from .graph import cypher
from .procedural import ProceduralMemory
from .runs import JobReport
from .settings import WorkerSettings
from .timeutil import to_ms
from .working import WorkingStore

__all__ = ["PatternReport", "detect_patterns", "pattern_of", "task_type_of"]

#: Characters of the first user turn kept as the strategy's context pattern.
CONTEXT_CHARS: Final = 300


@dataclass
class PatternReport(JobReport):
    """What a pattern run examined and learned (``changes``: per conversation the strategy and the outcome)."""

    conversations: int = 0
    without_outcome: int = 0
    learned: int = 0
    locked_elsewhere: int = 0

    def counts(self) -> dict[str, Any]:
        """Conversations examined, without an outcome, strategies learned or reinforced, and conversations another
        worker held."""
        return {"conversations": self.conversations, "without_outcome": self.without_outcome,
                "learned": self.learned, "locked_elsewhere": self.locked_elsewhere}


def pattern_of(calls: list[dict[str, Any]]) -> tuple[str, list[str], bool] | None:
    """(description, tool sequence, outcome) of a conversation's calls in order, or ``None`` without an outcome."""
    outcomes = [c["success"] for c in calls if c.get("success") is not None]
    if not outcomes:
        return None
    tools: list[str] = []
    for call in calls:
        if not tools or tools[-1] != call["tool"]:
            tools.append(call["tool"])
    task_type = task_type_of(calls)
    sequence = " -> ".join(tools)
    description = f"{task_type}: {sequence}" if task_type else sequence
    return description, tools, bool(outcomes[-1])


def task_type_of(calls: list[dict[str, Any]]) -> str | None:
    """The task type of a conversation's calls: the most frequent one given (the first seen among equals), or
    ``None`` when no call has one. The strategy learned from the conversation is linked to it (``task_type``)."""
    task_types = Counter(c["task_type"] for c in calls if c.get("task_type"))
    return task_types.most_common(1)[0][0] if task_types else None


async def detect_patterns(episodic: EpisodicMemory, procedural: ProceduralMemory, working: WorkingStore,
                          settings: WorkerSettings, *, now: datetime, user_id: str | None = None,
                          report: PatternReport | None = None) -> PatternReport:
    """Learn strategies from the due conversations of every user (or of ``user_id``), at most
    ``worker.consolidate_max_conversations`` per run, filling ``report`` (see the module docstring)."""
    report = report if report is not None else PatternReport()
    graph = procedural.ctx.graph
    due = await graph.read(cypher.PATTERN_CANDIDATES, {
        "before": to_ms(now - timedelta(minutes=settings.consolidate_quiet_minutes)), "user_id": user_id,
        "limit": settings.consolidate_max_conversations})
    for row in due:
        conversation, user = row["id"], row["user_id"]
        report.conversations += 1
        found = pattern_of(row["calls"])
        change: dict[str, Any] = {"conversation_id": conversation, "user_id": user}
        if found is not None:
            change.update(description=found[0], tool_sequence=found[1], success=found[2])
        if report.dry_run:
            report.without_outcome += found is None
            report.learned += found is not None
            report.changes.append(change)
            continue
        token = await working.acquire_lock(conversation, settings.consolidate_lock_seconds)
        if token is None:
            report.locked_elsewhere += 1
            continue
        try:
            state = await graph.read(cypher.PATTERNS_STATE, {"conversation_id": conversation, "user_id": user})
            if not state or state[0]["done"]:
                continue  # learned by another worker between the list and the lock
            if found is None:
                report.without_outcome += 1
            else:
                description, tools, success = found
                turns = await episodic.get_conversation(conversation, user)
                first = next((t.content for t in turns if t.role == "user"), "")
                strategy = await procedural.learn_strategy(
                    description, first[:CONTEXT_CHARS], tools, conversation, success, row["channel"], user_id=user,
                    task_type=task_type_of(row["calls"]))
                change["strategy_id"] = strategy.id
                report.learned += 1
            await graph.write(cypher.MARK_PATTERNS_EXTRACTED, {"conversation_id": conversation, "user_id": user,
                                                                "now": to_ms(now)})
            report.changes.append(change)
        finally:
            await working.release_lock(conversation, token)
    return report
