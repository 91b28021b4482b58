"""Archiving (spec 003 "Data Retention", the cleanup job): conversations past retention leave default recall.

A conversation whose last turn is older than ``retention.conversation_days`` (90) is archived: its turns in the log
(``conversation_logs.archived``) and in the graph (``Conversation.archived``, ``Turn.archived``). Archived turns are
not searched by ``remember()`` unless ``recall.include_archived`` is on; they stay in the log
(``get_conversation``), in exports and in the audit trail, and nothing is deleted. A turn added to an archived
conversation later is not archived (it is new); one newer than its last turn also takes the conversation out of the
archive (``Conversation.archived``), so it is consolidated again, and the conversation is archived again once that
turn is past retention. Each archived conversation is audited (operation ``archive``) and recorded in the run's
``changes``, so :func:`restore_archived` (``worker undo``) brings it back.
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
from .sql.conversation_log import ConversationLog
from .timeutil import to_ms

__all__ = ["ArchiveReport", "archive_old_conversations", "restore_archived"]

PAGE: Final = 500


@dataclass
class ArchiveReport(JobReport):
    """What an archiving run archived (``changes``: ``user_id``, ``conversation_id``, ``channel``, ``upto`` (the
    last turn's time, ISO 8601), ``turns``)."""

    conversations_archived: int = 0
    turns_archived: int = 0

    def counts(self) -> dict[str, Any]:
        """Conversations and turns archived (or, in a dry run, that would be)."""
        return {"conversations_archived": self.conversations_archived, "turns_archived": self.turns_archived}


async def archive_old_conversations(log: ConversationLog, graph: GraphStore, audit: MemoryAuditLogger,
                                    settings: RetentionSettings, *, now: datetime, user_id: str | None = None,
                                    report: ArchiveReport | None = None) -> ArchiveReport:
    """Archive the conversations of every user (or of ``user_id``) whose last turn is older than the retention as of
    ``now`` (see the module docstring), filling ``report``."""
    report = report if report is not None else ArchiveReport()
    before = now - timedelta(days=settings.conversation_days)
    after: tuple[datetime, str] | None = None
    while True:
        rows = await log.archive_candidates(before=before, user_id=user_id, limit=PAGE, after=after)
        if not rows:
            return report
        after = (rows[-1]["last_turn_at"], rows[-1]["conversation_id"])
        found = [{"user_id": r["user_id"], "conversation_id": r["conversation_id"], "channel": r["channel"],
                  "upto": r["last_turn_at"].isoformat(), "turns": r["turns"]} for r in rows]
        report.changes.extend(found)
        if not report.dry_run:
            await report.save()  # in the run's record before they are archived: a worker that dies here leaves them
            await _set_archived(log, graph, found, archived=True)
        report.conversations_archived += len(found)
        report.turns_archived += sum(f["turns"] for f in found)
        if report.dry_run:
            continue
        for f in found:
            await audit.log_write("archive", "episodic", f["channel"], [f["conversation_id"]],
                                  {"reason": f"last turn older than {settings.conversation_days} days",
                                   "last_turn_at": f["upto"], "turns": f["turns"]},
                                  user_id=f["user_id"], conversation_id=f["conversation_id"])


async def restore_archived(log: ConversationLog, graph: GraphStore,
                           changes: list[dict[str, Any]]) -> dict[str, int]:
    """Undo an archiving run: its conversations' turns back in default recall (``{"restored": turns}``; turns
    restored already are not counted)."""
    restored = 0
    for start in range(0, len(changes), PAGE):
        restored += await _set_archived(log, graph, changes[start:start + PAGE], archived=False)
    return {"restored": restored, "skipped": sum(c["turns"] for c in changes) - restored}


async def _set_archived(log: ConversationLog, graph: GraphStore, conversations: list[dict[str, Any]], *,
                        archived: bool) -> int:
    changed = await log.set_archived(
        [(c["user_id"], c["conversation_id"], datetime.fromisoformat(c["upto"])) for c in conversations],
        archived=archived)
    await graph.write(cypher.SET_CONVERSATIONS_ARCHIVED, {"archived": archived, "rows": [
        {"user_id": c["user_id"], "conversation_id": c["conversation_id"],
         "upto": to_ms(datetime.fromisoformat(c["upto"]))} for c in conversations]})
    return changed
