"""The audit layer: memory operations logged to PostgreSQL's day-partitioned ``memory_audit_log`` (spec 003).

Levels (setting ``audit.level``):

``off``      nothing is logged
``writes``   mutations and promotions (default)
``reads``    writes and reads (retrievals)
``verbose``  reads and writes with full payloads (query traces, affected items, signal breakdowns)

Every entry snapshots the active thresholds (``config_snapshot``) so a decision can be reproduced later. An audit
failure never loses the memory write it describes: it is logged with ``logging`` and swallowed.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from psycopg.types.json import Jsonb

from .settings import Settings
from .sql.postgres import PostgresStore

__all__ = ["MemoryAuditLogger"]

log = logging.getLogger(__name__)

_INSERT = (
    "INSERT INTO memory_audit_log (timestamp, operation, memory_type, user_id, session_id, conversation_id,"
    " source_channel, target_channels, query_text, result_count, latency_ms, success, error_message,"
    " promoted_from_channel, promotion_confidence, promotion_access_count, promotion_conversation_count,"
    " config_snapshot, metadata)"
    " VALUES (%(timestamp)s, %(operation)s, %(memory_type)s, %(user_id)s, %(session_id)s, %(conversation_id)s,"
    " %(source_channel)s, %(target_channels)s, %(query_text)s, %(result_count)s, %(latency_ms)s, %(success)s,"
    " %(error_message)s, %(promoted_from_channel)s, %(promotion_confidence)s, %(promotion_access_count)s,"
    " %(promotion_conversation_count)s, %(config_snapshot)s, %(metadata)s)"
)

_LEVELS = {"off": 0, "writes": 1, "reads": 2, "verbose": 3}


def _dumps(value: Any) -> str:
    return json.dumps(value, default=str, ensure_ascii=False)


class MemoryAuditLogger:
    """Writes audit entries for memory operations, according to the configured level."""

    def __init__(self, postgres: PostgresStore, settings: Settings):
        self.postgres = postgres
        self.settings = settings

    @property
    def level(self) -> str:
        """The configured level: off, writes, reads or verbose."""
        return self.settings.audit.level

    def enabled(self, kind: str) -> bool:
        """Whether entries of ``kind`` ("writes", "reads" or "verbose") are logged at the current level."""
        return _LEVELS[self.level] >= _LEVELS[kind]

    async def _insert(self, entry: dict[str, Any]) -> None:
        row = {
            "timestamp": datetime.now(UTC),
            "user_id": None, "session_id": None, "conversation_id": None, "source_channel": None,
            "target_channels": None, "query_text": None, "result_count": None, "latency_ms": None,
            "success": True, "error_message": None, "promoted_from_channel": None, "promotion_confidence": None,
            "promotion_access_count": None, "promotion_conversation_count": None,
        }
        row.update(entry)
        # default=str: a trace or payload holding a value JSON has no type for must not cost the whole entry
        row["config_snapshot"] = Jsonb(self.settings.snapshot(), dumps=_dumps)
        row["metadata"] = Jsonb(entry.get("metadata") or {}, dumps=_dumps)
        try:
            try:
                await self.postgres.execute(_INSERT, row)
            except Exception as exc:
                if "no partition" not in str(exc):
                    raise
                # The worker creates partitions ahead; if it has not run, create today's and retry once.
                try:
                    await self.postgres.execute("SELECT create_audit_partitions(1, %s::date)", (row["timestamp"].date(),))
                except Exception:  # another process created it at the same moment: the insert below succeeds
                    log.debug("creating today's audit partition failed; retrying the insert", exc_info=True)
                await self.postgres.execute(_INSERT, row)
        except Exception:  # an audit failure must never fail the memory operation
            log.exception("audit entry could not be written: %s %s", entry.get("operation"), entry.get("memory_type"))

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
        latency_ms: int | None = None,
        success: bool = True,
        error_message: str | None = None,
        payload: Any = None,
    ) -> None:
        """Log a mutation (store, update, delete, reinforce …) at level ``writes`` and above."""
        if not self.enabled("writes"):
            return
        meta = {"affected_ids": list(affected_ids), **(metadata or {})}
        if payload is not None and self.enabled("verbose"):
            meta["payload"] = payload
        await self._insert({
            "operation": operation, "memory_type": memory_type, "user_id": user_id,
            "conversation_id": conversation_id, "source_channel": channel,
            "target_channels": [channel] if channel else None, "result_count": len(affected_ids),
            "latency_ms": latency_ms, "success": success, "error_message": error_message, "metadata": meta,
        })

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
    ) -> None:
        """Log a retrieval at level ``reads`` and above (with the full trace at ``verbose``)."""
        if not self.enabled("reads"):
            return
        meta = dict(metadata or {})
        if trace is not None and self.enabled("verbose"):
            meta["trace"] = trace
        await self._insert({
            "operation": operation, "memory_type": memory_type, "user_id": user_id,
            "source_channel": source_channel, "target_channels": list(channels_searched), "query_text": query,
            "result_count": result_count, "latency_ms": latency_ms, "metadata": meta,
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
            "metadata": {"fact_id": fact_id, "global_fact_id": global_fact_id, "reason": reason, "thresholds": thresholds},
        })
