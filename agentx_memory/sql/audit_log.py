"""The ``memory_audit_log`` repository: day-partitioned audit entries, and the partitions' upkeep.

The table is partitioned by day (``schema/postgres``: ``create_audit_partitions`` / ``drop_old_audit_partitions``).
The worker creates partitions ahead of time; an insert that finds no partition for its day creates that day's and
retries once, so a store whose worker never ran still audits.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Final, LiteralString

import psycopg
from psycopg import errors as pg
from psycopg.types.json import Jsonb

from .errors import pg_errors
from .postgres import Connection, PostgresStore

__all__ = ["COLUMNS", "AuditLog"]

log = logging.getLogger(__name__)

#: The columns of an entry; those an entry leaves out are NULL (``success``: true, ``timestamp``: now).
COLUMNS: Final = (
    "timestamp", "operation", "memory_type", "user_id", "session_id", "conversation_id", "source_channel",
    "target_channels", "query_text", "result_count", "latency_ms", "success", "error_message",
    "promoted_from_channel", "promotion_confidence", "promotion_access_count", "promotion_conversation_count",
    "config_snapshot", "metadata",
)

INSERT_ENTRY: Final[LiteralString] = (
    "INSERT INTO memory_audit_log (timestamp, operation, memory_type, user_id, session_id, conversation_id,"
    " source_channel, target_channels, query_text, result_count, latency_ms, success, error_message,"
    " promoted_from_channel, promotion_confidence, promotion_access_count, promotion_conversation_count,"
    " config_snapshot, metadata)"
    " VALUES (%(timestamp)s, %(operation)s, %(memory_type)s, %(user_id)s, %(session_id)s, %(conversation_id)s,"
    " %(source_channel)s, %(target_channels)s, %(query_text)s, %(result_count)s, %(latency_ms)s, %(success)s,"
    " %(error_message)s, %(promoted_from_channel)s, %(promotion_confidence)s, %(promotion_access_count)s,"
    " %(promotion_conversation_count)s, %(config_snapshot)s, %(metadata)s)"
)

#: One user's entries, newest first, optionally of one operation, memory type, session or conversation, in
#: ``[since, until)``; the configuration snapshot is left out (it is the same thresholds on every entry).
USER_ENTRIES: Final[LiteralString] = (
    "SELECT id, timestamp, operation, memory_type, user_id, session_id, conversation_id, source_channel,"
    " target_channels, query_text, result_count, latency_ms, success, error_message, metadata"
    " FROM memory_audit_log WHERE user_id = %(user_id)s"
    " AND timestamp >= coalesce(%(since)s::timestamptz, '-infinity')"
    " AND timestamp < coalesce(%(until)s::timestamptz, 'infinity')"
    " AND (%(operation)s::text IS NULL OR operation = %(operation)s::text)"
    " AND (%(memory_type)s::text IS NULL OR memory_type = %(memory_type)s::text)"
    " AND (%(session_id)s::text IS NULL OR session_id = %(session_id)s::text)"
    " AND (%(conversation_id)s::text IS NULL OR conversation_id = %(conversation_id)s::text)"
    " AND (%(reads)s::boolean IS NULL OR (query_text IS NOT NULL) = %(reads)s::boolean)"
    " ORDER BY timestamp DESC, id DESC LIMIT %(limit)s"
)

#: The partition of one day (a no-op when it exists).
CREATE_DAY_PARTITION: Final[LiteralString] = "SELECT create_audit_partitions(1, %s::date) AS n"

#: Partitions from today on for the next ``n`` days; returns how many were created.
CREATE_PARTITIONS_AHEAD: Final[LiteralString] = "SELECT create_audit_partitions(%s) AS n"

#: Drop partitions older than ``n`` days; returns how many were dropped.
DROP_OLD_PARTITIONS: Final[LiteralString] = "SELECT drop_old_audit_partitions(%s) AS n"


def _plain(value: Any) -> Any:
    # a model (a pydantic payload) as its JSON fields; anything else JSON has no type for as its text
    return value.model_dump(mode="json") if hasattr(value, "model_dump") else str(value)


def _dumps(value: Any) -> str:
    # never raises on a value JSON has no type for: a trace or payload holding one must not cost the whole entry
    return json.dumps(value, default=_plain, ensure_ascii=False)


class AuditLog:
    """Writes audit entries and keeps the day partitions they go into."""

    def __init__(self, store: PostgresStore):
        self.store = store

    async def insert(self, entry: Mapping[str, Any]) -> None:
        """Write one entry (keys from :data:`COLUMNS`; ``config_snapshot`` and ``metadata`` are plain JSON values)."""
        row: dict[str, Any] = dict.fromkeys(COLUMNS)
        row.update(timestamp=datetime.now(UTC), success=True)
        row.update(entry)
        row["config_snapshot"] = Jsonb(row["config_snapshot"] or {}, dumps=_dumps)
        row["metadata"] = Jsonb(row["metadata"] or {}, dumps=_dumps)
        async with pg_errors("writing memory_audit_log"), self.store.connection() as conn:
            try:
                await conn.execute(INSERT_ENTRY, row)
            except pg.CheckViolation as exc:
                if "no partition" not in str(exc):
                    raise
                await _create_day_partition(conn, row["timestamp"])
                await conn.execute(INSERT_ENTRY, row)

    async def user_entries(self, user_id: str, *, since: datetime | None, until: datetime | None,
                           operation: str | None, memory_type: str | None, session_id: str | None,
                           conversation_id: str | None, reads: bool | None, limit: int) -> list[dict[str, Any]]:
        """The user's entries of :data:`USER_ENTRIES`, newest first (``reads``: True only reads, False only
        writes, None both)."""
        return await self.store.fetch(USER_ENTRIES, {
            "user_id": user_id, "since": since, "until": until, "operation": operation, "memory_type": memory_type,
            "session_id": session_id, "conversation_id": conversation_id, "reads": reads, "limit": limit,
        }, what="reading memory_audit_log")

    async def insert_many(self, entries: Sequence[Mapping[str, Any]]) -> None:
        """Write many entries (as :meth:`insert`) in one batched statement on one connection."""
        rows = []
        now = datetime.now(UTC)
        for entry in entries:
            row: dict[str, Any] = dict.fromkeys(COLUMNS)
            row.update(timestamp=now, success=True)
            row.update(entry)
            row["config_snapshot"] = Jsonb(row["config_snapshot"] or {}, dumps=_dumps)
            row["metadata"] = Jsonb(row["metadata"] or {}, dumps=_dumps)
            rows.append(row)
        if not rows:
            return
        async with pg_errors("writing memory_audit_log"), self.store.connection() as conn:
            try:
                async with conn.transaction(), conn.cursor() as cur:
                    await cur.executemany(INSERT_ENTRY, rows)
            except pg.CheckViolation as exc:
                if "no partition" not in str(exc):
                    raise
                await _create_day_partition(conn, now)
                async with conn.transaction(), conn.cursor() as cur:
                    await cur.executemany(INSERT_ENTRY, rows)

    async def maintain_partitions(self, *, ahead_days: int, retention_days: int) -> tuple[int, int]:
        """Create the partitions of the next ``ahead_days`` days and drop those older than ``retention_days``;
        return (created, dropped)."""
        async with pg_errors("maintaining memory_audit_log partitions"), self.store.connection() as conn:
            created = await (await conn.execute(CREATE_PARTITIONS_AHEAD, (ahead_days,))).fetchone()
            dropped = await (await conn.execute(DROP_OLD_PARTITIONS, (retention_days,))).fetchone()
        return (created["n"] if created else 0), (dropped["n"] if dropped else 0)


async def _create_day_partition(conn: Connection, when: datetime) -> None:
    try:
        await conn.execute(CREATE_DAY_PARTITION, (when.date(),))
    except psycopg.Error:  # another process created it at the same moment: the retried insert succeeds
        log.debug("creating the audit partition of %s failed; retrying the insert", when.date(), exc_info=True)
