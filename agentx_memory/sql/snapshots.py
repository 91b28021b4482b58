"""A user's rows of every memory table, out as JSON and back in (the PostgreSQL half of a snapshot).

Rows travel as ``to_jsonb`` of the row, so every column keeps its PostgreSQL text form (a vector as ``[0.1,...]``,
a time in ISO 8601) and goes back through ``jsonb_populate_recordset`` into the same types: nothing is converted on
the way. Generated columns (the full-text vectors) and serial ids are left out and made again by the database.
The audit log and the run records are not memory: a snapshot leaves them where they are.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any, Final, LiteralString

from psycopg import sql

from ..errors import ValidationError
from .conversation_log import is_projected
from .errors import pg_errors
from .postgres import PostgresStore

__all__ = ["AGENT_TABLES", "SNAPSHOT_TABLES", "SnapshotRows"]

#: The memory tables a snapshot holds, each with the order its rows are read in.
SNAPSHOT_TABLES: Final[dict[str, LiteralString]] = {
    "conversation_logs": "conversation_id, turn_index",
    "memory_timeline": "event_time, id",
    "tool_invocations": "timestamp, id",
    "user_profiles": "user_id",
    "episodic_summaries": "conversation_id",
    "memory_pools": "pool_id",
    "short_term_memory": "session_id, memory_key",
    "working_memory_saves": "channel, conversation_id",
    "store_items": "namespace, item_key",
}

#: The memory tables whose rows record the agent that wrote them (a snapshot of one agent holds its rows of these).
AGENT_TABLES: Final[tuple[LiteralString, ...]] = ("conversation_logs", "memory_timeline", "short_term_memory",
                                                  "store_items")

PAGE: Final = 500

#: Values a snapshot row carries that no column stores: ``projected`` of a log row (the turn is out of
#: ``turn_projection_queue``; snapshots made before migration 0023 hold it as a column).
_DERIVED: Final[dict[str, dict[str, LiteralString]]] = {"conversation_logs": {"projected": is_projected()}}

#: After a restore's graph is loaded: out of the reconcile queue (a trigger queued each restored log row), the user's
#: turns whose nodes the snapshot brought.
_UNQUEUE: Final[LiteralString] = (
    "DELETE FROM turn_projection_queue WHERE log_id IN (SELECT id FROM conversation_logs"
    " WHERE user_id = %(user_id)s AND turn_id = ANY(%(ids)s))"
)

#: The columns a row is restored through: not generated, not a serial id.
_PORTABLE_COLUMNS: Final[LiteralString] = (
    "SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = %s"
    " AND is_generated = 'NEVER' AND coalesce(column_default, '') NOT LIKE 'nextval(%%' ORDER BY ordinal_position")


class SnapshotRows:
    """Reads a user's rows of :data:`SNAPSHOT_TABLES` and writes such rows back under a user."""

    def __init__(self, store: PostgresStore):
        self.store = store
        self._columns: dict[str, list[str]] = {}

    async def columns(self, table: str) -> list[str]:
        """The portable columns of ``table`` (see the module docstring)."""
        if table not in SNAPSHOT_TABLES:
            raise ValidationError("table", f"must be one of {sorted(SNAPSHOT_TABLES)}, got {table!r}")
        if table not in self._columns:
            rows = await self.store.fetch(_PORTABLE_COLUMNS, (table,), what="reading the snapshot columns")
            self._columns[table] = [r["column_name"] for r in rows]
        return self._columns[table]

    async def read(self, table: str, user_id: str, *, agent_id: str | None = None) -> AsyncIterator[dict[str, Any]]:
        """The user's rows of ``table`` (portable columns only; with ``agent_id``, the rows that agent wrote, of an
        :data:`AGENT_TABLES` table), in pages."""
        columns = await self.columns(table)
        if agent_id is not None and table not in AGENT_TABLES:
            raise ValidationError("table", f"{table!r} does not record agents; one of {list(AGENT_TABLES)}")
        by_agent = sql.SQL(" AND agent_id = %(agent_id)s" if agent_id is not None else "")
        query = sql.SQL("SELECT jsonb_build_object({pairs}) AS row FROM {table} WHERE user_id = %(user_id)s{by_agent}"
                        " ORDER BY {order} LIMIT %(limit)s OFFSET %(offset)s").format(by_agent=by_agent,
            pairs=sql.SQL(", ").join([*(sql.SQL("{}, to_jsonb({})").format(sql.Literal(c), sql.Identifier(c))
                                        for c in columns),
                                      *(sql.SQL("{}, to_jsonb({})").format(sql.Literal(name), sql.SQL(value))
                                        for name, value in _DERIVED.get(table, {}).items())]),
            table=sql.Identifier(table), order=sql.SQL(SNAPSHOT_TABLES[table]))
        offset = 0
        while True:
            rows = await self.store.fetch(query, {"user_id": user_id, "agent_id": agent_id, "limit": PAGE,
                                                  "offset": offset}, what="reading a snapshot")
            for row in rows:
                yield row["row"]
            if len(rows) < PAGE:
                return
            offset += PAGE

    async def write(self, user_id: str, rows: Mapping[str, Sequence[Mapping[str, Any]]]) -> dict[str, int]:
        """Insert rows (table → rows) for ``user_id`` in one transaction, each row's ``user_id`` replaced by it;
        return the rows written per table. A row that collides with a stored one (a turn id another user holds)
        fails the whole write."""
        counts: dict[str, int] = {}
        async with pg_errors("restoring a snapshot"), self.store.connection() as conn, conn.transaction():
            for table, table_rows in rows.items():
                columns = await self.columns(table)
                unknown = sorted({k for r in table_rows for k in r} - set(columns) - set(_DERIVED.get(table, {})))
                if unknown:
                    raise ValidationError(f"{table}", f"unknown columns {unknown}: the snapshot is from another "
                                                      "schema version")
                names = sql.SQL(", ").join(map(sql.Identifier, columns))
                statement = sql.SQL("INSERT INTO {table} ({names}) SELECT {names} FROM jsonb_populate_recordset("
                                    "NULL::{table}, %(rows)s::jsonb)").format(table=sql.Identifier(table), names=names)
                written = 0
                for start in range(0, len(table_rows), PAGE):
                    page = json.dumps([{**r, "user_id": user_id} for r in table_rows[start:start + PAGE]])
                    written += (await conn.execute(statement, {"rows": page})).rowcount
                counts[table] = written
        return counts

    async def unqueue(self, user_id: str, turn_ids: Sequence[str]) -> None:
        """Take these turns of the user out of the reconcile queue: a restore calls it once their graph nodes and
        edges are loaded, so until then (a load that fails, a crash) reconcile still finds them."""
        for start in range(0, len(turn_ids), PAGE):
            await self.store.execute(_UNQUEUE, {"user_id": user_id, "ids": list(turn_ids[start:start + PAGE])},
                                     what="restoring a snapshot")

    async def delete_agent(self, user_id: str, agent_id: str) -> dict[str, int]:
        """Delete the rows ``agent_id`` wrote of every :data:`AGENT_TABLES` table, in one transaction; return the
        rows deleted per table."""
        counts: dict[str, int] = {}
        async with pg_errors("deleting an agent's rows"), self.store.connection() as conn, conn.transaction():
            for table in AGENT_TABLES:
                statement = sql.SQL("DELETE FROM {table} WHERE user_id = %(user_id)s AND agent_id = %(agent_id)s"
                                    ).format(table=sql.Identifier(table))
                counts[table] = (await conn.execute(statement, {"user_id": user_id, "agent_id": agent_id})).rowcount
        return counts
