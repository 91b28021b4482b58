"""Consolidation: episodic turns → semantic memory, for every conversation that has gone quiet (spec 003 data flow 3,
the worker's ``consolidate`` job).

A conversation is due when its last turn is older than ``worker.consolidate_quiet_minutes`` and newer than what was
consolidated before (``Conversation.consolidated_upto``): a conversation that goes on is consolidated again, and
the batches it had already extracted are skipped by their keys (only the new turns cost a call). Each conversation
is taken under its Redis lock (``consolidation:lock:{conversation_id}``, expiring after
``worker.consolidate_lock_seconds``), so two workers never extract it at once; one held by another worker is
skipped this run. After a successful extraction the conversation is marked ``consolidated`` with the time of the
last turn it covered; a run that stopped early (budget, LLM failure) leaves it due and counts the failure on the
conversation (``consolidation_failures``, cleared by a success): due conversations are taken fewest failures first,
then oldest, so one that fails every time is retried only behind the others and never holds them back. The lag —
last turn to consolidated — is in the report and in each conversation's audit entry (operation ``consolidate``). Each
consolidated conversation is then summarized (:mod:`agentx_memory.summaries`); a summary that fails is logged and
does not undo the consolidation.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from ..episodic import EpisodicMemory
from ..errors import AgentXMemoryError
from ..graph import cypher
from ..providers.usage import Usage
from ..runs import JobReport
from ..semantic import SemanticMemory
from ..settings import WorkerSettings
from ..timeutil import from_ms, to_ms
from ..working import WorkingStore
from .pipeline import ConversationExtractor, Extractor

__all__ = ["ConsolidationReport", "Summarizer", "consolidate_due"]

log = logging.getLogger(__name__)

#: Summarizes one conversation (conversation id, user id) after it is consolidated.
Summarizer = Callable[[str, str], Awaitable[Any]]


@dataclass
class ConsolidationReport(JobReport):
    """One consolidation run: the conversations due, per conversation what was extracted and its lag; what was
    skipped and why (a dry run lists the due conversations and extracts nothing)."""

    conversations: list[dict[str, Any]] = field(default_factory=list)
    locked: list[str] = field(default_factory=list)
    stopped: list[dict[str, Any]] = field(default_factory=list)
    due: list[dict[str, Any]] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)

    def counts(self) -> dict[str, Any]:
        """Conversations due, consolidated, locked elsewhere and stopped, facts and entities, the largest lag and the
        LLM usage."""
        lags = [c["lag_seconds"] for c in self.conversations]
        return {
            "due": len(self.due), "consolidated": len(self.conversations), "locked_elsewhere": len(self.locked),
            "stopped": len(self.stopped), "facts": sum(c["facts"] for c in self.conversations),
            "entities": sum(c["entities"] for c in self.conversations),
            "lag_seconds_max": max(lags, default=None), "calls": self.usage.calls,
            "input_tokens": self.usage.input_tokens, "output_tokens": self.usage.output_tokens,
        }


async def consolidate_due(episodic: EpisodicMemory, semantic: SemanticMemory, working: WorkingStore,
                          extractor: Extractor, settings: WorkerSettings, *, now: datetime,
                          user_id: str | None = None, report: ConsolidationReport | None = None,
                          summarize: Summarizer | None = None) -> ConsolidationReport:
    """Consolidate every due conversation (at most ``worker.consolidate_max_conversations``, fewest failed runs first,
    then oldest; of every user or only ``user_id``) as of ``now`` (a parameter, so the time rules are testable
    without waiting)."""
    report = report if report is not None else ConsolidationReport()
    graph = semantic.ctx.graph
    due = await graph.read(cypher.PENDING_CONSOLIDATION, {
        "before": to_ms(now - timedelta(minutes=settings.consolidate_quiet_minutes)),
        "limit": settings.consolidate_max_conversations, "user_id": user_id})
    report.due = [{"conversation_id": r["id"], "user_id": r["user_id"],
                   "last_turn_at": from_ms(r["last_turn_at"]).isoformat()} for r in due]
    if report.dry_run:
        return report
    runner = ConversationExtractor(semantic, extractor)
    for row in due:
        conversation, user = row["id"], row["user_id"]
        token = await working.acquire_lock(conversation, settings.consolidate_lock_seconds)
        if token is None:
            report.locked.append(conversation)
            continue
        try:
            state = await graph.read(cypher.CONSOLIDATION_STATE, {"conversation_id": conversation, "user_id": user})
            if not state or state[0]["upto"] >= state[0]["last_turn_at"]:
                continue  # consolidated by another worker between the list and the lock
            turns = await episodic.get_conversation(conversation, user)
            extracted = await runner.run(turns)
            report.usage = report.usage + extracted.usage
            if extracted.stopped:
                failed = await graph.write(cypher.MARK_CONSOLIDATION_FAILED, {
                    "conversation_id": conversation, "user_id": user, "now": to_ms(now)})
                report.stopped.append({"conversation_id": conversation, "user_id": user, "why": extracted.stopped,
                                       "failures": failed[0]["failures"] if failed else None})
                continue
            upto = max(to_ms(t.timestamp) for t in turns)
            await graph.write(cypher.MARK_CONSOLIDATED, {"conversation_id": conversation, "user_id": user,
                                                          "now": to_ms(now), "upto": upto})
            lag = round((now - from_ms(row["last_turn_at"])).total_seconds(), 3)
            done = {"conversation_id": conversation, "user_id": user, "lag_seconds": lag,
                    "facts": len(set(extracted.fact_ids)), "entities": len(set(extracted.entity_ids)),
                    "batches_skipped": extracted.batches_skipped, "usage": extracted.usage.as_dict()}
            if summarize is not None:
                done["summarized"] = await _summarize(summarize, conversation, user)
            report.conversations.append(done)
            await semantic.ctx.audit.log_write("consolidate", "semantic", turns[0].channel,
                                               list(dict.fromkeys(extracted.fact_ids)), done, user_id=user,
                                               conversation_id=conversation)
        finally:
            await working.release_lock(conversation, token)
    return report


async def _summarize(summarize: Summarizer, conversation: str, user: str) -> bool:
    """Summarize a consolidated conversation; a failure (LLM, store) is logged, not raised: the facts are written
    and the next consolidation of the conversation summarizes it again."""
    try:
        await summarize(conversation, user)
        return True
    except AgentXMemoryError:
        log.warning("conversation %r of user %r: consolidated, not summarized", conversation, user, exc_info=True)
        return False
