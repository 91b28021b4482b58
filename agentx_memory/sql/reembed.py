"""Re-embedding's PostgreSQL half (issue 16): the staging slots, the progress record and the atomic switch.

Every re-embedded table has a staging slot beside its live vector (migration 0012): ``embedding_next`` (an untyped
``vector``) and ``embedding_next_src`` (a hash of the target model and the text the staged vector was made from).
:mod:`agentx_memory.reembed` pages over the rows, makes the new vectors and stages them here; recall keeps reading
``embedding`` meanwhile.

The switch (:meth:`ReembedRows.switching` then :meth:`ReembedRows.swap`) is one transaction: it locks the vector
tables (ACCESS EXCLUSIVE, the lock ``ALTER TABLE`` takes anyway, taken first so no lock upgrade can deadlock), lets
the caller stage the rows written since its last pass, then per table drops the live column (and its HNSW index),
renames the staging slot to ``embedding``, re-types it ``vector(D)``, adds a fresh empty slot, rebuilds the HNSW
index, and records the new model in ``agentx_meta``. PostgreSQL's DDL is transactional: a failure anywhere leaves the
old column, index and record as they were; readers wait on the lock for the few moments the switch takes and then
see the new vectors only.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any, Final, LiteralString

import numpy as np
from psycopg import sql
from psycopg.types.json import Jsonb

from ..errors import ConflictError
from .conversation_log import PREVIOUS_CONTENTS
from .errors import pg_errors
from .postgres import Connection, PostgresStore

__all__ = ["REEMBED_TABLES", "RETYPED_TABLES", "ReembedRows"]

#: The tables whose vectors are re-embedded (each has a staging slot), in the order a re-embed visits them.
REEMBED_TABLES: Final[tuple[str, ...]] = ("conversation_logs", "episodic_summaries")

#: Vector columns made again later rather than staged: ``memory_timeline.embedding`` copies the graph's fact, entity
#: and goal vectors (each row gets the new model's vector when its memory is next written); ``store_items.embedding``
#: is made from the item's stored ``search_text`` by the user's next search by meaning. The switch empties them and
#: re-types them to the new dimension.
RETYPED_TABLES: Final[tuple[str, ...]] = ("memory_timeline", "store_items")

#: The HNSW index on each re-embedded table's live vector (the names migrations 0001 and 0008 gave them).
_INDEXES: Final[Mapping[str, str]] = {
    "conversation_logs": "idx_logs_embedding",
    "episodic_summaries": "idx_episodic_summaries_embedding",
}

ACTIVE: Final[LiteralString] = "SELECT value FROM agentx_meta WHERE key = 'embedding'"
SET_ACTIVE: Final[LiteralString] = "UPDATE agentx_meta SET value = %s WHERE key = 'embedding'"
RECORD: Final[LiteralString] = "SELECT value FROM agentx_meta WHERE key = 'reembed'"
SAVE_RECORD: Final[LiteralString] = (
    "INSERT INTO agentx_meta (key, value) VALUES ('reembed', %s)"
    " ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value")
DELETE_RECORD: Final[LiteralString] = "DELETE FROM agentx_meta WHERE key = 'reembed'"

#: One page of vector-bearing log rows after row ``after`` (``unstaged``: only those with nothing staged).
LOG_PAGE: Final[LiteralString] = (
    "SELECT id, turn_id, conversation_id, user_id, turn_index, content, embedding_next_src AS staged"
    " FROM conversation_logs WHERE id > %(after)s AND embedding IS NOT NULL"
    " AND (NOT %(unstaged)s OR embedding_next IS NULL) ORDER BY id LIMIT %(limit)s")

#: One page of vector-bearing summaries after the key (user_id, conversation_id) ``after``.
SUMMARY_PAGE: Final[LiteralString] = (
    "SELECT user_id, conversation_id, channel, summary, key_decisions, entities_mentioned, tools_called, turn_count,"
    " method, created_at, updated_at, embedding_next_src AS staged FROM episodic_summaries"
    " WHERE (user_id, conversation_id) > (%(user)s, %(conversation)s) AND embedding IS NOT NULL"
    " ORDER BY user_id, conversation_id LIMIT %(limit)s")

STAGE_LOG: Final[LiteralString] = (
    "UPDATE conversation_logs SET embedding_next = %s, embedding_next_src = %s WHERE id = %s")
STAGE_SUMMARY: Final[LiteralString] = (
    "UPDATE episodic_summaries SET embedding_next = %s, embedding_next_src = %s"
    " WHERE user_id = %s AND conversation_id = %s")

#: The log's staged vectors of some turns (the graph's Turn nodes hold the same vectors as the log).
STAGED_TURNS: Final[LiteralString] = (
    "SELECT turn_id, embedding_next AS vector, embedding_next_src AS src FROM conversation_logs"
    " WHERE turn_id = ANY(%s) AND embedding_next IS NOT NULL")


def _vector(values: Any) -> np.ndarray:
    return np.asarray(values, dtype=np.float32)  # a list would be sent as a float array, not a vector


class ReembedRows:
    """Pages, stages and switches the vectors of :data:`REEMBED_TABLES`; reads and writes the progress record."""

    def __init__(self, store: PostgresStore):
        self.store = store

    async def _fetch(self, conn: Connection | None, query: LiteralString, params: Any, what: str) -> list[dict]:
        if conn is None:
            return await self.store.fetch(query, params, what=what)
        async with pg_errors(what):
            cur = await conn.execute(query, params)
            return await cur.fetchall() if cur.description else []

    async def active(self) -> dict[str, Any]:
        """The active generation: ``{"model", "dimension"}`` every live vector was made with (empty when unset)."""
        rows = await self.store.fetch(ACTIVE, what="reading the embedding record")
        return dict(rows[0]["value"]) if rows else {}

    async def record(self) -> dict[str, Any] | None:
        """The re-embed in progress (target model, dimension, started, phase, cursor per table), or None."""
        rows = await self.store.fetch(RECORD, what="reading the re-embed record")
        return dict(rows[0]["value"]) if rows else None

    async def save_record(self, value: Mapping[str, Any]) -> None:
        """Write the re-embed record (created on first save)."""
        await self.store.execute(SAVE_RECORD, (Jsonb(dict(value)),), what="saving the re-embed record")

    async def log_page(self, after: int, limit: int, *, unstaged: bool = False,
                       conn: Connection | None = None) -> list[dict[str, Any]]:
        """Up to ``limit`` log rows with a vector after row ``after`` (``unstaged``: none staged yet), with their
        text columns and the hash of what is staged (``staged``)."""
        return await self._fetch(conn, LOG_PAGE, {"after": after, "limit": limit, "unstaged": unstaged},
                                 "reading turns to re-embed")

    async def previous_contents(self, rows: Sequence[Mapping[str, Any]], *,
                                conn: Connection | None = None) -> dict[str, str | None]:
        """For log rows (turn_id, conversation_id, user_id, turn_index): the content of the user's turn before each
        in its conversation -- the same rule the write path embeds a turn in context with."""
        found = await self._fetch(conn, PREVIOUS_CONTENTS, (
            [r["turn_id"] for r in rows], [r["conversation_id"] for r in rows], [r["user_id"] for r in rows],
            [r["turn_index"] for r in rows]), "reading preceding turns")
        return {r["turn_id"]: r["content"] for r in found}

    async def staged_turns(self, turn_ids: Sequence[str]) -> dict[str, tuple[list[float], str]]:
        """The log's staged (vector, source hash) of these turns, by turn id (turns with nothing staged left out)."""
        rows = await self.store.fetch(STAGED_TURNS, (list(turn_ids),), what="reading staged turn vectors")
        return {r["turn_id"]: (r["vector"], r["src"]) for r in rows}

    async def summary_page(self, after: Sequence[str], limit: int, *,
                           conn: Connection | None = None) -> list[dict[str, Any]]:
        """Up to ``limit`` summaries with a vector after the key ``after`` = (user_id, conversation_id)."""
        return await self._fetch(conn, SUMMARY_PAGE, {"user": after[0], "conversation": after[1], "limit": limit},
                                 "reading summaries to re-embed")

    async def stage(self, table: str, items: Sequence[tuple[Any, Any, str]], *,
                    conn: Connection | None = None) -> None:
        """Stage ``(key, vector, source hash)`` items in ``table`` (key: the log row id, or (user_id,
        conversation_id) of a summary)."""
        params: list[tuple[Any, ...]]
        if table == "conversation_logs":
            query, params = STAGE_LOG, [(_vector(vector), src, key) for key, vector, src in items]
        elif table == "episodic_summaries":
            query, params = STAGE_SUMMARY, [(_vector(vector), src, key[0], key[1]) for key, vector, src in items]
        else:
            raise ValueError(f"table {table!r} has no staging slot (allowed: {REEMBED_TABLES})")
        if not params:
            return
        if conn is None:
            await self.store.executemany(query, params, what=f"staging vectors in {table}")
            return
        async with pg_errors(f"staging vectors in {table}"), conn.cursor() as cur:
            await cur.executemany(query, params)

    @asynccontextmanager
    async def switching(self) -> AsyncIterator[Connection]:
        """A transaction holding every vector table exclusively: stage what is missing on it, then :meth:`swap`.
        Leaving the block commits; an error rolls everything back."""
        tables = sql.SQL(", ").join(sql.Identifier(t) for t in (*REEMBED_TABLES, *RETYPED_TABLES))
        async with pg_errors("switching to the new vectors"), self.store.connection() as conn, conn.transaction():
            await conn.execute(sql.SQL("LOCK TABLE {} IN ACCESS EXCLUSIVE MODE").format(tables))
            yield conn

    async def swap(self, conn: Connection, *, model: str, dimension: int) -> None:
        """Inside :meth:`switching`: make the staged vectors the live ones at ``dimension``, rebuild the HNSW
        indexes and record ``model`` as the active generation; the re-embed record goes. Refused (ConflictError,
        nothing changed) while a row has a live vector but none staged, or a re-typed table holds a vector."""
        dim = sql.Literal(int(dimension))
        for table in REEMBED_TABLES:
            name = sql.Identifier(table)
            cur = await conn.execute(sql.SQL(
                "SELECT count(*) AS n FROM {} WHERE embedding IS NOT NULL AND embedding_next IS NULL").format(name))
            missing = (await cur.fetchone() or {"n": 0})["n"]
            if missing:
                raise ConflictError(f"{table}: {missing} row(s) have a vector but none staged for {model!r}; "
                                    "run the re-embed again to stage them")
        for table in RETYPED_TABLES:  # copies of graph vectors of the old model: dropped, refilled on the next write
            await conn.execute(sql.SQL("UPDATE {} SET embedding = NULL WHERE embedding IS NOT NULL").format(
                sql.Identifier(table)))
        for table in REEMBED_TABLES:
            name, index = sql.Identifier(table), sql.Identifier(_INDEXES[table])
            for statement in (
                "ALTER TABLE {name} DROP COLUMN embedding",  # its HNSW index goes with it
                "ALTER TABLE {name} RENAME COLUMN embedding_next TO embedding",
                "ALTER TABLE {name} ALTER COLUMN embedding TYPE vector({dim})",
                "ALTER TABLE {name} DROP COLUMN embedding_next_src",
                "ALTER TABLE {name} ADD COLUMN embedding_next vector, ADD COLUMN embedding_next_src TEXT",
                "CREATE INDEX {index} ON {name} USING hnsw (embedding vector_cosine_ops)",
            ):
                await conn.execute(sql.SQL(statement).format(name=name, dim=dim, index=index))
        for table in RETYPED_TABLES:
            await conn.execute(sql.SQL("ALTER TABLE {} ALTER COLUMN embedding TYPE vector({})").format(
                sql.Identifier(table), dim))  # an index on it is rebuilt with the column
        await conn.execute(SET_ACTIVE, (Jsonb({"model": model, "dimension": int(dimension)}),))
        await conn.execute(DELETE_RECORD)
