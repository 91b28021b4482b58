"""The audit layer: memory operations logged to PostgreSQL's day-partitioned ``memory_audit_log`` (spec 003).

Levels (setting ``audit.level``):

``off``      nothing is logged
``writes``   mutations and promotions (default)
``reads``    writes and reads (retrievals)
``verbose``  reads and writes with full payloads (query traces, affected items, signal breakdowns)

Every entry snapshots the active thresholds (``config_snapshot``) so a decision can be reproduced later. An audit
failure never loses the memory write it describes: it is logged with ``logging`` and swallowed.

The session of an entry (column ``session_id``, issue 19): the session the operation ran in, whenever it has one.
A conversation is a session (spec 003: working memory is "per session" and keyed by conversation), so an entry with a
``conversation_id`` — turns, tool invocations, facts learned from a conversation, extraction, consolidation,
summaries, archiving, working memory — has that id as its ``session_id`` unless the caller names another session;
the short-term tier's entries carry the tier's own ``session_id``; a recall carries the ``session_id`` its caller
passed to ``remember()`` (none: NULL). Operations outside any session (profile updates, merges, worker runs) leave it
NULL.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from .settings import Settings
from .sql.audit_log import AuditLog
from .sql.postgres import PostgresStore

__all__ = ["MemoryAuditLogger", "WriteEntry"]

log = logging.getLogger(__name__)

_LEVELS = {"off": 0, "writes": 1, "reads": 2, "verbose": 3}


@dataclass(frozen=True)
class WriteEntry:
    """One mutation to log: the arguments of :meth:`MemoryAuditLogger.log_write`, for
    :meth:`MemoryAuditLogger.log_writes`."""

    operation: str
    memory_type: str
    channel: str | None
    affected_ids: Sequence[str]
    metadata: dict[str, Any] | None = None
    user_id: str | None = None
    conversation_id: str | None = None
    session_id: str | None = None
    latency_ms: int | None = None
    success: bool = True
    error_message: str | None = None
    payload: Any = None


class MemoryAuditLogger:
    """Writes audit entries for memory operations, according to the configured level."""

    def __init__(self, postgres: PostgresStore, settings: Settings):
        self._entries = AuditLog(postgres)
        self.settings = settings

    @property
    def level(self) -> str:
        """The configured level: off, writes, reads or verbose."""
        return self.settings.audit.level

    def enabled(self, kind: str) -> bool:
        """Whether entries of ``kind`` ("writes", "reads" or "verbose") are logged at the current level."""
        return _LEVELS[self.level] >= _LEVELS[kind]

    async def _insert(self, entry: dict[str, Any]) -> None:
        try:
            await self._entries.insert({**entry, "config_snapshot": self.settings.snapshot()})
        except Exception:  # an audit failure must never fail the memory operation
            log.exception("audit entry could not be written: %s %s", entry.get("operation"), entry.get("memory_type"))

    async def maintain_partitions(self, *, ahead_days: int, retention_days: int) -> tuple[int, int]:
        """Create the audit log's daily partitions for the next ``ahead_days`` days and drop those older than
        ``retention_days`` days; return (created, dropped). Unlike entries, a failure here raises."""
        return await self._entries.maintain_partitions(ahead_days=ahead_days, retention_days=retention_days)

    async def log_write(
        self,
        operation: str,
        memory_type: str,
        channel: str | None,
        affected_ids: Sequence[str],
        metadata: dict[str, Any] | None = None,
        *,
        user_id: str | None = None,
        conversation_id: str | None = None,
        session_id: str | None = None,
        latency_ms: int | None = None,
        success: bool = True,
        error_message: str | None = None,
        payload: Any = None,
    ) -> None:
        """Log a mutation (store, update, delete, reinforce …) at level ``writes`` and above; ``payload`` (the values
        written) is kept only at ``verbose``. ``session_id`` defaults to ``conversation_id`` (see the module
        docstring)."""
        if not self.enabled("writes"):
            return
        await self._insert(self._write_row(WriteEntry(
            operation, memory_type, channel, affected_ids, metadata, user_id=user_id, conversation_id=conversation_id,
            session_id=session_id, latency_ms=latency_ms, success=success, error_message=error_message,
            payload=payload)))

    async def log_writes(self, entries: Sequence[WriteEntry]) -> None:
        """Log many mutations (each as :meth:`log_write` would) in one batched insert: a batch write's entries."""
        if not entries or not self.enabled("writes"):
            return
        snapshot = self.settings.snapshot()
        rows = [{**self._write_row(entry), "config_snapshot": snapshot} for entry in entries]
        try:
            await self._entries.insert_many(rows)
        except Exception:  # an audit failure must never fail the memory operation
            log.exception("%d audit entries could not be written: %s %s", len(rows), rows[0]["operation"],
                          rows[0]["memory_type"])

    def _write_row(self, entry: WriteEntry) -> dict[str, Any]:
        meta = {"affected_ids": list(entry.affected_ids), **(entry.metadata or {})}
        if entry.payload is not None and self.enabled("verbose"):
            meta["payload"] = entry.payload
        return {
            "operation": entry.operation, "memory_type": entry.memory_type, "user_id": entry.user_id,
            "session_id": entry.session_id or entry.conversation_id, "conversation_id": entry.conversation_id,
            "source_channel": entry.channel, "target_channels": [entry.channel] if entry.channel else None,
            "result_count": len(entry.affected_ids), "latency_ms": entry.latency_ms, "success": entry.success,
            "error_message": entry.error_message, "metadata": meta,
        }

    async def log_read(
        self,
        query: str,
        channels_searched: Sequence[str],
        result_count: int,
        latency_ms: int | None,
        *,
        user_id: str | None = None,
        source_channel: str | None = None,
        memory_type: str = "retrieval",
        operation: str = "retrieve",
        metadata: dict[str, Any] | None = None,
        trace: Any = None,
        conversation_id: str | None = None,
        session_id: str | None = None,
        payload: Any = None,
        timestamp: datetime | None = None,
    ) -> None:
        """Log a retrieval at level ``reads`` and above (with the full trace, and ``payload`` — the values read — at
        ``verbose`` only). ``session_id`` defaults to ``conversation_id`` (see the module docstring); ``timestamp``
        is when the retrieval answered, for an entry written later (default: now)."""
        if not self.enabled("reads"):
            return
        meta = dict(metadata or {})
        if self.enabled("verbose"):
            if trace is not None:
                meta["trace"] = trace
            if payload is not None:
                meta["payload"] = payload
        await self._insert({
            "operation": operation, "memory_type": memory_type, "user_id": user_id,
            "session_id": session_id or conversation_id, "conversation_id": conversation_id,
            "source_channel": source_channel, "target_channels": list(channels_searched), "query_text": query,
            "result_count": result_count, "latency_ms": latency_ms, "metadata": meta,
            **({"timestamp": timestamp} if timestamp is not None else {}),
        })

    async def log_promotion(
        self,
        fact_id: str,
        source_channel: str,
        reason: str,
        thresholds: dict[str, Any],
        *,
        user_id: str | None = None,
        global_fact_id: str | None = None,
        confidence: float | None = None,
        access_count: int | None = None,
        conversation_count: int | None = None,
    ) -> None:
        """Log a promotion of a project fact to ``_global`` with the values and thresholds that justified it."""
        if not self.enabled("writes"):
            return
        await self._insert({
            "operation": "promote", "memory_type": "semantic", "user_id": user_id,
            "source_channel": source_channel, "target_channels": ["_global"],
            "promoted_from_channel": source_channel, "promotion_confidence": confidence,
            "promotion_access_count": access_count, "promotion_conversation_count": conversation_count,
            "result_count": 1,
            "metadata": {"fact_id": fact_id, "global_fact_id": global_fact_id, "reason": reason,
                         "thresholds": thresholds},
        })
