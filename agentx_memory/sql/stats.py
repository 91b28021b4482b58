"""Table sizes of the memory's schema for :meth:`AsyncAgentMemory.memory_stats` (and observability's gauges).

The figures are PostgreSQL's own live-row counters (``pg_stat_user_tables.n_live_tup``), not ``count(*)``: reading
them scans no table, so they can be taken often on a large store. They follow each commit within about a second,
up to about eleven (a backend publishes its counters when it goes idle, at most once a second, and one that published
less than a second ago waits ten before it publishes again), and may drift a little from an exact count until the
table is next vacuumed or analyzed. A partitioned table (``memory_audit_log``) is reported once, its partitions
summed.
"""

from __future__ import annotations

from typing import Final, LiteralString

from .postgres import PostgresStore

__all__ = ["TableStats"]

#: Live rows per table of the current schema (the memory's ``postgres.db_schema``), partitions under their parent.
TABLE_ROWS: Final[LiteralString] = (
    "SELECT coalesce(parent.relname, s.relname) AS table_name, sum(s.n_live_tup)::bigint AS rows"
    " FROM pg_stat_user_tables s"
    " LEFT JOIN pg_inherits i ON i.inhrelid = s.relid"
    " LEFT JOIN pg_class parent ON parent.oid = i.inhparent"
    " WHERE s.schemaname = current_schema()"
    " GROUP BY 1 ORDER BY 1")


class TableStats:
    """Reads the live-row counters of the memory's tables."""

    def __init__(self, store: PostgresStore):
        self.store = store

    async def rows_per_table(self) -> dict[str, int]:
        """``{table: live rows}`` for every table of the schema (see the module docstring for how exact it is)."""
        rows = await self.store.fetch(TABLE_ROWS, what="reading table statistics")
        return {row["table_name"]: int(row["rows"]) for row in rows}
