"""The ``conversation_logs`` repository: the durable log of conversation turns.

Appending turns is one transaction per batch. Each conversation of the batch is handled under its own advisory lock
(taken in a fixed order, so two batches never deadlock): the conversation must belong to the batch's user, turns
already stored by id with the same content are re-stores, the others get the next free indexes, and a turn whose
(conversation, index) is taken by the same content is a re-store of the turn there. A re-stored turn becomes the
stored one (id, channel, metadata, vector …: what the log holds, never the caller's copy). Anything else (a stored id
with other content, an index taken by other content, another user's conversation) is a
:class:`~agentx_memory.errors.ConflictError` and nothing of the batch is written.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable, Iterable, Sequence
from datetime import datetime
from typing import Any, Final, LiteralString

import numpy as np
from psycopg.types.json import Jsonb

from ..errors import ConflictError, ValidationError
from ..models import Turn
from ..rows import turn_from_row
from .errors import pg_errors
from .postgres import Connection, PostgresStore

__all__ = ["MAX_TURN_INDEX", "TURN_COLUMNS", "TURN_FIELDS", "BeforeInsert", "ConversationLog", "claim_conversation",
           "is_projected", "projected"]

#: The largest turn index: ``turn_index`` is an INTEGER, and a turn's neighbour context reads index + 1.
MAX_TURN_INDEX: Final = 2**31 - 2

#: Called inside the log transaction, under the conversation's lock, with the turns about to be inserted (indexes
#: final) and, by turn id, the content just before each (stored, or earlier in the same batch; ``None`` for a first
#: turn). It may replace their vectors: the rows become visible only with what it leaves.
BeforeInsert = Callable[[list["Turn"], dict[str, str | None]], Awaitable[None]]

#: The stored columns a :class:`~agentx_memory.models.Turn` is read from (``rows.turn_from_row``), with
#: :func:`projected` beside them.
TURN_FIELDS: Final[LiteralString] = (
    "turn_id, user_id, conversation_id, turn_index, timestamp, role, content, token_count, model, channel, metadata,"
    " agent_id, scope"
)


def is_projected(table: LiteralString = "conversation_logs") -> LiteralString:
    """Whether the turn of a log row of ``table`` (a table name or alias) is in the graph and on the timeline, that
    is, not in ``turn_projection_queue`` (migration 0023; one probe of its key, and the queue holds only turns not
    projected yet)."""
    return "NOT EXISTS (SELECT 1 FROM turn_projection_queue pq WHERE pq.log_id = " + table + ".id)"


def projected(table: LiteralString = "conversation_logs") -> LiteralString:
    """:func:`is_projected` as the column ``projected`` (what a :class:`~agentx_memory.models.Turn` is read from)."""
    return is_projected(table) + " AS projected"


#: Everything a :class:`~agentx_memory.models.Turn` is read from, for a statement that reads ``conversation_logs``
#: under its own name; searches select these too.
TURN_COLUMNS: Final[LiteralString] = TURN_FIELDS + ", " + projected()

_COLUMNS: Final[LiteralString] = TURN_COLUMNS + ", content_hash"

#: For each turn (id, conversation, user, index or NULL): the content of the stored turn just before it.
PREVIOUS_CONTENTS: Final[LiteralString] = (
    "SELECT hit.turn_id, (SELECT c.content FROM conversation_logs c"
    "  WHERE c.conversation_id = hit.conversation_id AND c.user_id = hit.user_id"
    "    AND (hit.turn_index IS NULL OR c.turn_index < hit.turn_index)"
    "  ORDER BY c.turn_index DESC LIMIT 1) AS content"
    " FROM unnest(%s::text[], %s::text[], %s::text[], %s::int[])"
    " AS hit(turn_id, conversation_id, user_id, turn_index)"
)

LOCK_CONVERSATION: Final[LiteralString] = "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))"

#: A conversation belongs to the user who first used it, in either log (turns or tool invocations); every writer of
#: either table checks it under :data:`LOCK_CONVERSATION`, so the two never disagree.
CONVERSATION_OWNER: Final[LiteralString] = (
    "(SELECT user_id FROM conversation_logs WHERE conversation_id = %(id)s LIMIT 1)"
    " UNION ALL (SELECT user_id FROM tool_invocations WHERE conversation_id = %(id)s LIMIT 1) LIMIT 1"
)

#: CONVERSATION_OWNER for many conversations: each id with its owner (NULL: unused).
CONVERSATION_OWNERS: Final[LiteralString] = (
    "SELECT c.id AS conversation_id, coalesce("
    "(SELECT user_id FROM conversation_logs WHERE conversation_id = c.id LIMIT 1),"
    " (SELECT user_id FROM tool_invocations WHERE conversation_id = c.id LIMIT 1)) AS user_id"
    " FROM unnest(%(ids)s::text[]) AS c(id)"
)

STORED_BY_ID: Final[LiteralString] = (
    "SELECT " + _COLUMNS + ", embedding FROM conversation_logs WHERE turn_id = ANY(%s)"
)

NEXT_INDEX: Final[LiteralString] = (
    "SELECT coalesce(max(turn_index) + 1, 0) AS next FROM conversation_logs WHERE conversation_id = %s"
)

#: A turn with its full-text context (``turn_context_tsv``, migration 0021: its own words, weight A; its neighbours'
#: words, weight B) computed from the neighbours' contents it is given, so that no statement rewrites the row it just
#: wrote: a second version of a turn goes into every index of the table again, the HNSW graph of its vector among them.
INSERT_TURN: Final[LiteralString] = (
    "INSERT INTO conversation_logs (turn_id, user_id, conversation_id, turn_index, timestamp, role, content,"
    " content_hash, token_count, model, channel, metadata, embedding, agent_id, scope, context_tsv)"
    " VALUES (%(turn_id)s, %(user_id)s, %(conversation_id)s, %(turn_index)s, %(timestamp)s, %(role)s, %(content)s,"
    " %(content_hash)s, %(token_count)s, %(model)s, %(channel)s, %(metadata)s, %(embedding)s, %(agent_id)s,"
    " %(scope)s, turn_context_tsv(%(content)s, %(before)s, %(after)s))"
    " ON CONFLICT DO NOTHING RETURNING turn_id, metadata"
)

#: The contents at some indexes of one conversation (the stored neighbours of the turns a batch inserts).
CONTENTS_AT: Final[LiteralString] = (
    "SELECT turn_index, content FROM conversation_logs WHERE conversation_id = %s AND turn_index = ANY(%s)"
)

OCCUPANT: Final[LiteralString] = (
    "SELECT " + _COLUMNS + ", embedding FROM conversation_logs WHERE conversation_id = %s AND turn_index = %s"
)

#: Out of the reconcile queue: the turns are in the graph and on the timeline. The log rows are not touched (an
#: update of one would be written into every index of the table again).
MARK_PROJECTED: Final[LiteralString] = (
    "DELETE FROM turn_projection_queue WHERE log_id IN (SELECT id FROM conversation_logs WHERE turn_id = ANY(%s))"
)

#: A page of the whole log (every user), row position and turn id, after a row position: the full reconcile compares
#: it with the graph.
LOG_TURN_IDS: Final[LiteralString] = (
    "SELECT id, turn_id FROM conversation_logs WHERE id > %s ORDER BY id LIMIT %s"
)

#: Back into the reconcile queue (a row queued already stays as it is, quarantine included).
REQUEUE: Final[LiteralString] = (
    "INSERT INTO turn_projection_queue (log_id) SELECT unnest(%s::bigint[]) ON CONFLICT DO NOTHING"
)

#: The reconcile queue: row positions only, so a row whose data cannot be read back never blocks the others.
UNPROJECTED_IDS: Final[LiteralString] = (
    "SELECT q.log_id AS id FROM turn_projection_queue q JOIN conversation_logs c ON c.id = q.log_id"
    " WHERE c.projection_error IS NULL AND q.log_id > %s ORDER BY q.log_id LIMIT %s"
)

ROWS_BY_ID: Final[LiteralString] = (
    "SELECT id, " + _COLUMNS + ", embedding FROM conversation_logs WHERE id = ANY(%s) ORDER BY id"
)

QUARANTINE: Final[LiteralString] = (
    "UPDATE conversation_logs SET projection_error = %s, projection_failed_at = now()"
    " WHERE id = %s AND NOT " + is_projected() + " RETURNING turn_id"
)

COUNT_QUARANTINED: Final[LiteralString] = (
    "SELECT count(*) AS n FROM conversation_logs c WHERE c.projection_error IS NOT NULL AND NOT " + is_projected("c")
)

def seen_by_agent(alias: LiteralString = "") -> LiteralString:
    """The condition on a row (of table ``alias``, if given) of a table that records agents: what the agent
    ``%(agent_id)s`` may read (NULL: the user's view, everything): global rows and its own private ones."""
    col = alias + "." if alias else ""
    return "(%(agent_id)s::text IS NULL OR " + col + "scope = 'global' OR " + col + "agent_id = %(agent_id)s)"


SEEN_BY_AGENT: Final[LiteralString] = seen_by_agent()

CONVERSATION_TURNS: Final[LiteralString] = (
    "SELECT " + _COLUMNS + ", embedding FROM conversation_logs"
    " WHERE conversation_id = %(conversation_id)s AND user_id = %(user_id)s AND " + SEEN_BY_AGENT
    + " ORDER BY turn_index"
)

RECENT_TURNS: Final[LiteralString] = (
    "SELECT " + _COLUMNS + " FROM conversation_logs"
    " WHERE user_id = %(user_id)s AND channel = ANY(%(channels)s) AND timestamp >= %(since)s"
    " AND timestamp <= %(until)s AND " + SEEN_BY_AGENT + " ORDER BY timestamp DESC, turn_index DESC LIMIT %(limit)s"
)

TURN_PLACE: Final[LiteralString] = (
    "SELECT conversation_id, turn_index FROM conversation_logs WHERE turn_id = %s AND user_id = %s"
)

#: Recompute the neighbour context (previous + this + next turn) of turns around freshly stored indexes.
#: Conversations whose last (unarchived) turn is older than ``before``, oldest first, after a keyset position
#: (last turn time, conversation id); one user's or everyone's.
ARCHIVE_CANDIDATES: Final[LiteralString] = (
    "SELECT user_id, conversation_id, max(timestamp) AS last_turn_at, count(*) AS turns, min(channel) AS channel"
    " FROM conversation_logs WHERE NOT archived AND (%(user_id)s::text IS NULL OR user_id = %(user_id)s)"
    " GROUP BY user_id, conversation_id HAVING max(timestamp) < %(before)s"
    " AND (max(timestamp), conversation_id) > (%(after_time)s::timestamptz, %(after_id)s::text)"
    " ORDER BY max(timestamp), conversation_id LIMIT %(limit)s"
)

#: Sets ``archived`` on each (user, conversation)'s turns stamped up to its time, and on those turns'
#: ``memory_timeline`` rows; returns the turns changed.
SET_ARCHIVED: Final[LiteralString] = (
    "WITH changed AS (UPDATE conversation_logs c SET archived = %(archived)s"
    " FROM unnest(%(user_ids)s::text[], %(conversation_ids)s::text[], %(upto)s::timestamptz[])"
    " AS a(user_id, conversation_id, upto)"
    " WHERE c.user_id = a.user_id AND c.conversation_id = a.conversation_id AND c.timestamp <= a.upto"
    " AND c.archived <> %(archived)s RETURNING c.user_id, c.turn_id),"
    " on_timeline AS (UPDATE memory_timeline t SET archived = %(archived)s FROM changed"
    " WHERE t.memory_type = 'episodic' AND t.neo4j_node_id = changed.turn_id AND t.user_id = changed.user_id)"
    " SELECT count(*) AS n FROM changed"
)

#: The context of stored turns at some indexes of one conversation, recomputed from their neighbours in the log (the
#: stored turns next to a batch's new ones).
UPDATE_CONTEXT_TSV: Final[LiteralString] = """
UPDATE conversation_logs AS c
SET context_tsv = turn_context_tsv(c.content, p.content, n.content)
FROM conversation_logs AS self
LEFT JOIN conversation_logs AS p ON p.conversation_id = self.conversation_id AND p.turn_index = self.turn_index - 1
LEFT JOIN conversation_logs AS n ON n.conversation_id = self.conversation_id AND n.turn_index = self.turn_index + 1
WHERE self.id = c.id AND c.conversation_id = %(conversation_id)s AND c.turn_index = ANY(%(indexes)s)
"""


def _content_hash(content: str) -> str:
    # stored with each turn (a cheap equality key for tools reading the log)
    return hashlib.sha256(content.encode("utf-8")).hexdigest()


def _vector(values: Sequence[float] | None) -> np.ndarray | None:
    return np.asarray(values, dtype=np.float32) if values is not None else None


async def claim_conversation(conn: Connection, conversation_id: str, user_id: str) -> None:
    """Inside the caller's transaction: take the conversation's lock and check that it is unused or ``user_id``'s
    (:data:`CONVERSATION_OWNER`); :class:`ConflictError` otherwise. Every writer of either log calls it first."""
    await conn.execute(LOCK_CONVERSATION, (conversation_id,))
    owner = await (await conn.execute(CONVERSATION_OWNER, {"id": conversation_id})).fetchone()
    if owner and owner["user_id"] != user_id:
        raise ConflictError(f"conversation_id {conversation_id!r} belongs to another user")


class ConversationLog:
    """Reads and appends ``conversation_logs`` rows; turns go in and come out as :class:`~agentx_memory.models.Turn`."""

    def __init__(self, store: PostgresStore, changed: Callable[[Iterable[str]], None] | None = None):
        self.store = store
        self.changed = changed or (lambda users: None)  # told the users whose turns were written or archived

    # --- writing ------------------------------------------------------------------------------------------------

    async def append(self, turns: Sequence[Turn], *, before_insert: BeforeInsert | None = None) -> set[str]:
        """Log the turns in one transaction (see the module docstring for the rules); return the ids of the turns
        this call wrote. The turns are updated in place: each has its index, and a re-stored turn is the stored one.
        ``before_insert`` sees each conversation's new turns with their real predecessors before they are written.

        Every turn of one conversation must have the same ``user_id`` (:class:`ValidationError` otherwise, before
        anything is written): the owner check covers the whole group only then."""
        groups: dict[str, list[Turn]] = {}
        for turn in turns:
            groups.setdefault(turn.conversation_id, []).append(turn)
        for conversation_id, group in groups.items():
            if len({t.user_id for t in group}) > 1:
                raise ValidationError(
                    "turns", f"conversation {conversation_id!r} has turns of several users in one batch")
        inserted: set[str] = set()
        async with pg_errors("writing conversation_logs"), self.store.connection() as conn, conn.transaction():
            for conversation_id in sorted(groups):  # a fixed lock order: no deadlocks between batches
                inserted |= await self._append_conversation(conn, conversation_id, groups[conversation_id],
                                                            before_insert)
        self.changed({t.user_id for t in turns})
        return inserted

    async def _append_conversation(self, conn: Connection, conversation_id: str, group: list[Turn],
                                   before_insert: BeforeInsert | None) -> set[str]:
        await claim_conversation(conn, conversation_id, group[0].user_id)
        cur = await conn.execute(STORED_BY_ID, ([t.id for t in group],))
        existing = {row["turn_id"]: row for row in await cur.fetchall()}
        next_row = await (await conn.execute(NEXT_INDEX, (conversation_id,))).fetchone()
        next_index = max([next_row["next"] if next_row else 0, *[t.index + 1 for t in group if t.index is not None]])
        to_insert: list[Turn] = []
        for turn in group:
            if turn.id in existing:
                row = existing[turn.id]
                if row["conversation_id"] != conversation_id:
                    raise ConflictError(f"turn id {turn.id!r} is already stored in another conversation")
                if row["content"] != turn.content:
                    raise ConflictError(f"turn id {turn.id!r} is already stored with different content")
                _become(turn, row)  # already stored: idempotent
                continue
            if turn.index is None:
                if next_index > MAX_TURN_INDEX:
                    raise ValidationError("index", f"conversation {conversation_id!r} has no turn index left "
                                                   f"(the largest is {MAX_TURN_INDEX})")
                turn.index = next_index
                next_index += 1
            to_insert.append(turn)
        if not to_insert:
            return set()
        contents = await _contents_around(conn, conversation_id, to_insert)
        if before_insert is not None:
            await before_insert(to_insert, {t.id: contents.get(_index(t) - 1) for t in to_insert})
        stored_metadata: dict[str, Any] = {}
        rows = [{**_row(t), "before": contents.get(_index(t) - 1), "after": contents.get(_index(t) + 1)}
                for t in to_insert]
        async with conn.cursor() as cur:
            await cur.executemany(INSERT_TURN, rows, returning=True)
            while True:
                returned = await cur.fetchone()
                if returned:
                    stored_metadata[returned["turn_id"]] = returned["metadata"]
                if not cur.nextset():
                    break
        inserted = set(stored_metadata)
        for turn in to_insert:  # what JSONB holds: a float like 1.5e20 reads back as the integer it equals
            if turn.id in inserted:
                turn.metadata = stored_metadata[turn.id] or {}
        for turn in to_insert:
            if turn.id not in inserted:
                await _adopt_occupant(conn, turn)
        # the rows stored before this batch whose neighbours it changed: the turns next to the new ones, and a turn
        # another writer stored at an index of this batch (the same content: adopted above)
        new = {_index(t) for t in to_insert if t.id in inserted}
        changed = ({i + d for i in new for d in (-1, 1)} | {_index(t) for t in to_insert if t.id not in inserted}) - new
        if changed:
            await conn.execute(UPDATE_CONTEXT_TSV, {"conversation_id": conversation_id, "indexes": sorted(changed)})
        return inserted

    async def mark_projected(self, turn_ids: Sequence[str]) -> None:
        """Record that these turns are in the graph (``reconcile`` skips them from now on)."""
        await self.store.execute(MARK_PROJECTED, (list(turn_ids),), what="marking turns projected")

    # --- reading ------------------------------------------------------------------------------------------------

    async def previous_contents(self, turns: Sequence[Turn]) -> dict[str, str | None]:
        """For each turn (by id): the content of the user's stored turn just before it in its conversation (before
        its index, or the last one when it has none yet); ``None`` when there is none. One round trip."""
        rows = await self.store.fetch(PREVIOUS_CONTENTS, (
            [t.id for t in turns], [t.conversation_id for t in turns], [t.user_id for t in turns],
            [t.index for t in turns],
        ), what="reading preceding turns")
        return {r["turn_id"]: r["content"] for r in rows}

    async def unprojected(self, *, after: int, limit: int) -> list[int]:
        """Row positions of up to ``limit`` turns not yet in the graph and not quarantined, in log order after row
        ``after`` (read them with :meth:`rows`)."""
        rows = await self.store.fetch(UNPROJECTED_IDS, (after, limit), what="reading unprojected turns")
        return [r["id"] for r in rows]

    async def turn_ids(self, *, after: int, limit: int) -> list[tuple[int, str]]:
        """``(row position, turn id)`` of up to ``limit`` log rows of every user, in log order after row ``after``."""
        rows = await self.store.fetch(LOG_TURN_IDS, (after, limit), what="reading the log's turn ids")
        return [(r["id"], r["turn_id"]) for r in rows]

    async def requeue(self, positions: Sequence[int]) -> int:
        """Put the rows at these positions back into the reconcile queue; return how many were not queued."""
        return await self.store.execute(REQUEUE, (list(positions),), what="queueing turns for reconcile")

    async def rows(self, positions: Sequence[int]) -> list[Turn]:
        """The turns at these row positions, with their vectors, in log order. A row whose stored data cannot be
        read back as a turn raises (:class:`~agentx_memory.errors.StorageError` or pydantic's error)."""
        rows = await self.store.fetch(ROWS_BY_ID, (list(positions),), what="reading unprojected turns")
        return [turn_from_row(r, with_embedding=True) for r in rows]

    async def quarantine(self, position: int, error: str) -> str | None:
        """Take the unprojected row at ``position`` out of the reconcile queue, recording why (``projection_error``)
        and when; return its turn id (``None`` when it was projected meanwhile)."""
        rows = await self.store.fetch(QUARANTINE, (error, position), what="quarantining a turn")
        return rows[0]["turn_id"] if rows else None

    async def quarantined_count(self) -> int:
        """How many log rows are in quarantine (unprojected, with a ``projection_error``)."""
        rows = await self.store.fetch(COUNT_QUARANTINED, (), what="counting quarantined turns")
        return int(rows[0]["n"])

    async def conversation(self, conversation_id: str, user_id: str, *, with_embeddings: bool = False,
                           agent_id: str | None = None) -> list[Turn]:
        """Every turn of the user's conversation in index order (empty when there is none); with ``agent_id``,
        those that agent may read."""
        rows = await self.store.fetch(CONVERSATION_TURNS, {
            "conversation_id": conversation_id, "user_id": user_id, "agent_id": agent_id},
            what="reading a conversation")
        return [turn_from_row(r, with_embedding=with_embeddings) for r in rows]

    async def recent(self, user_id: str, channels: Sequence[str], *, since: datetime, until: datetime,
                     limit: int, agent_id: str | None = None) -> list[Turn]:
        """The user's turns in ``channels`` stamped between ``since`` and ``until`` (inclusive), newest first; with
        ``agent_id``, those that agent may read."""
        rows = await self.store.fetch(RECENT_TURNS, {
            "user_id": user_id, "channels": list(channels), "since": since, "until": until, "limit": limit,
            "agent_id": agent_id}, what="reading recent turns")
        return [turn_from_row(r) for r in rows]

    async def archive_candidates(self, *, before: datetime, user_id: str | None, limit: int,
                                 after: tuple[datetime, str] | None = None) -> list[dict[str, Any]]:
        """Up to ``limit`` conversations (``user_id``, ``conversation_id``, ``last_turn_at``, ``turns``, ``channel``)
        whose last unarchived turn is older than ``before``, oldest first, after ``after`` (the last row's
        ``(last_turn_at, conversation_id)``, for the next page); ``user_id`` limits them to one user."""
        after_time, after_id = after if after else (datetime.min.replace(tzinfo=before.tzinfo), "")
        return await self.store.fetch(ARCHIVE_CANDIDATES, {
            "before": before, "user_id": user_id, "limit": limit, "after_time": after_time, "after_id": after_id,
        }, what="reading conversations past retention")

    async def set_archived(self, conversations: Sequence[tuple[str, str, datetime]], *, archived: bool) -> int:
        """Archive (or restore) the turns of each ``(user_id, conversation_id, upto)`` stamped up to ``upto``, in
        the log and on their ``memory_timeline`` rows (one statement); return how many turns changed."""
        if not conversations:
            return 0
        rows = await self.store.fetch(SET_ARCHIVED, {
            "archived": archived, "user_ids": [u for u, _, _ in conversations],
            "conversation_ids": [c for _, c, _ in conversations], "upto": [t for _, _, t in conversations],
        }, what="archiving conversations")
        self.changed({u for u, _, _ in conversations})
        return int(rows[0]["n"])

    async def conversation_owner(self, conversation_id: str) -> str | None:
        """The user a conversation belongs to (its turns or tool invocations), or ``None`` when it is unused."""
        rows = await self.store.fetch(CONVERSATION_OWNER, {"id": conversation_id},
                                      what="reading a conversation's owner")
        return rows[0]["user_id"] if rows else None

    async def conversation_owners(self, conversation_ids: Sequence[str]) -> dict[str, str]:
        """The user each of these conversations belongs to, in one round trip (unused ones are left out)."""
        if not conversation_ids:
            return {}
        rows = await self.store.fetch(CONVERSATION_OWNERS, {"ids": list(dict.fromkeys(conversation_ids))},
                                      what="reading conversations' owners")
        return {r["conversation_id"]: r["user_id"] for r in rows if r["user_id"] is not None}

    async def turn_place(self, turn_id: str, user_id: str) -> tuple[str, int] | None:
        """(conversation_id, index) of one of the user's logged turns, or ``None`` when the user has no turn with
        this id."""
        rows = await self.store.fetch(TURN_PLACE, (turn_id, user_id), what="reading a turn's place")
        return (rows[0]["conversation_id"], rows[0]["turn_index"]) if rows else None


async def _contents_around(conn: Connection, conversation_id: str, turns: list[Turn]) -> dict[int, str]:
    """The contents at the turns' indexes and next to them (one conversation, indexes assigned): the batch's own, and
    the log's for the neighbours the batch does not hold (read in the caller's transaction)."""
    contents = {_index(t): t.content for t in turns}
    missing = sorted({_index(t) + d for t in turns for d in (-1, 1)} - set(contents))
    cur = await conn.execute(CONTENTS_AT, (conversation_id, missing))
    return {**{r["turn_index"]: r["content"] for r in await cur.fetchall()}, **contents}


def _index(turn: Turn) -> int:
    # every turn reaching the insert has its index (assigned under the lock); -1 only keeps the type total
    return turn.index if turn.index is not None else -1


async def _adopt_occupant(conn: Connection, turn: Turn) -> None:
    """(conversation_id, index) is taken: the same content is an idempotent re-store; anything else conflicts."""
    row = await (await conn.execute(OCCUPANT, (turn.conversation_id, turn.index))).fetchone()
    if row and row["content"] == turn.content:
        _become(turn, row)
        return
    raise ConflictError(
        f"turn index {turn.index} of conversation {turn.conversation_id!r} is already taken by a different turn"
    )


def _become(turn: Turn, row: dict[str, Any]) -> None:
    """Make a re-stored turn what the log holds (the caller's other channel, metadata or vector are not stored)."""
    stored = turn_from_row(row, with_embedding=True)
    for name in type(stored).model_fields:
        setattr(turn, name, getattr(stored, name))


def _row(turn: Turn) -> dict[str, Any]:
    return {
        "turn_id": turn.id, "user_id": turn.user_id, "conversation_id": turn.conversation_id,
        "turn_index": turn.index, "timestamp": turn.timestamp, "role": turn.role, "content": turn.content,
        "content_hash": _content_hash(turn.content), "token_count": turn.token_count, "model": turn.model,
        "channel": turn.channel, "metadata": Jsonb(turn.metadata), "embedding": _vector(turn.embedding),
        "agent_id": turn.agent_id, "scope": turn.scope or "global",
    }
