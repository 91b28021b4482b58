"""The ``memory_timeline`` repository: one row per memory (turn, entity, fact, goal), the time-ordered index of all.

There is one writer, :meth:`Timeline.write`, for every memory type. A row is keyed by (memory_type, node id); what a
second write of the same key does is decided per memory type here, not by the caller:

===========  ==============  =====================================================================================
memory type  on conflict     why
===========  ==============  =====================================================================================
episodic     keep the first  a turn is immutable once logged; reconcile re-writes it and must change nothing
goal         keep the first  ``add_goal`` is idempotent by id; the graph holds the goal's later changes
entity       refresh         an upsert merges into the entity: its summary (name: description) and salience move
fact         refresh         re-learning a fact updates its claim (and raises its confidence); promotion re-writes
                             the copy
===========  ==============  =====================================================================================

"refresh" sets ``summary``, ``importance_score``, ``channel`` and ``embedding`` from the new write (``metadata`` and
``event_time`` keep their first value); "keep the first" leaves the stored row untouched. Callers write what is
stored, never the caller's copy: a re-stored turn is the logged one, a re-learned fact keeps its channel and its
higher confidence.

``embedding`` is the memory's vector as its graph write stored it (facts, entities and goals carry it; the timeline
never embeds anything itself), so a refreshed summary never keeps the old text's vector. ``access_count`` and
``last_accessed`` follow recall: :meth:`Timeline.reinforce` counts the facts and entities a recall returned, in one
statement, when the graph reinforces them. :meth:`Timeline.entries` reads the timeline back with those statistics,
leaving ``archived`` rows out unless asked.

Reconcile writes the episodic rows again (keep-first: nothing changes) for turns whose first write was interrupted; a
turn counts as projected only once its timeline row exists.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from types import MappingProxyType
from typing import Any, Final, LiteralString

import numpy as np
from psycopg.types.json import Jsonb

from .conversation_log import SEEN_BY_AGENT
from .errors import pg_errors
from .postgres import PostgresStore

__all__ = ["CONFLICT_POLICY", "SUMMARY_MAX_CHARS", "OnConflict", "Timeline", "TimelineEntry"]

#: Summaries longer than this are cut (the lexical timeline search reads the summary).
SUMMARY_MAX_CHARS: Final = 1000


class OnConflict(enum.Enum):
    """What a write does when the (memory_type, node id) row exists already."""

    KEEP_FIRST = "keep the first"
    REFRESH = "refresh"


#: The conflict policy of each memory type (see the module docstring for the reasons).
CONFLICT_POLICY: Final[Mapping[str, OnConflict]] = MappingProxyType({
    "episodic": OnConflict.KEEP_FIRST,
    "goal": OnConflict.KEEP_FIRST,
    "entity": OnConflict.REFRESH,
    "fact": OnConflict.REFRESH,
})

_INSERT: Final[LiteralString] = (
    "INSERT INTO memory_timeline (user_id, memory_type, neo4j_node_id, event_time, summary, importance_score,"
    " channel, metadata, agent_id, scope, embedding)"
    " VALUES (%(user_id)s, %(memory_type)s, %(node_id)s, %(event_time)s, %(summary)s, %(importance)s, %(channel)s,"
    " %(metadata)s, %(agent_id)s, %(scope)s, %(embedding)s)"
)

INSERT_KEEP_FIRST: Final[LiteralString] = _INSERT + " ON CONFLICT (memory_type, neo4j_node_id) DO NOTHING"

INSERT_REFRESH: Final[LiteralString] = (
    _INSERT + " ON CONFLICT (memory_type, neo4j_node_id) DO UPDATE SET summary = EXCLUDED.summary,"
    " importance_score = EXCLUDED.importance_score, channel = EXCLUDED.channel, agent_id = EXCLUDED.agent_id,"
    " scope = EXCLUDED.scope, embedding = EXCLUDED.embedding"
    # defence in depth: node ids are unique per store, but a row is only ever refreshed by its own user
    " WHERE memory_timeline.user_id = EXCLUDED.user_id"
)

DELETE: Final[LiteralString] = "DELETE FROM memory_timeline WHERE memory_type = %s AND neo4j_node_id = ANY(%s)"

#: One recall's reinforcement: access_count + 1 and last_accessed = now for the user's rows of these nodes.
REINFORCE: Final[LiteralString] = (
    "UPDATE memory_timeline SET access_count = coalesce(access_count, 0) + 1, last_accessed = %(now)s"
    " WHERE user_id = %(user_id)s AND memory_type = ANY(%(types)s) AND neo4j_node_id = ANY(%(ids)s)")

#: The user's timeline, newest first, with the access statistics (archived rows only when asked).
ENTRIES: Final[LiteralString] = (
    "SELECT memory_type, neo4j_node_id AS node_id, channel, event_time, summary, importance_score AS importance,"
    " access_count, last_accessed, archived, embedding IS NOT NULL AS has_embedding, metadata, agent_id, scope"
    " FROM memory_timeline WHERE user_id = %(user_id)s"
    " AND (%(types)s::text[] IS NULL OR memory_type = ANY(%(types)s))"
    " AND (%(channels)s::text[] IS NULL OR channel = ANY(%(channels)s))"
    " AND (%(since)s::timestamptz IS NULL OR event_time >= %(since)s)"
    " AND (%(until)s::timestamptz IS NULL OR event_time < %(until)s)"
    " AND (%(include_archived)s OR NOT coalesce(archived, false))"
    " AND " + SEEN_BY_AGENT +
    " ORDER BY event_time DESC, id DESC LIMIT %(limit)s")

#: Unarchived facts and entities (every user's, or one's) last used at or before ``idle_before``, oldest first, after
#: a keyset position on (``event_time``, ``id``) (``idx_timeline_rot_candidates``, migration 0020): context-rot
#: candidates. A memory is used only after it was recorded (a fact's ``event_time`` is its creation, an entity's its
#: first sighting), so the index range up to ``idle_before`` holds every candidate; ``last_accessed`` is filtered, not
#: indexed, so that a recall's reinforcement stays a heap-only update.
ROT_CANDIDATES: Final[LiteralString] = (
    "SELECT id, user_id, memory_type, neo4j_node_id AS node_id, event_time"
    " FROM memory_timeline WHERE memory_type IN ('fact', 'entity') AND archived IS NOT TRUE"
    " AND event_time <= %(idle_before)s AND coalesce(last_accessed, event_time) <= %(idle_before)s"
    " AND (event_time, id) > (%(after_time)s, %(after_id)s)"
    " AND (%(user_id)s::text IS NULL OR user_id = %(user_id)s)"
    " ORDER BY event_time, id LIMIT %(limit)s")

#: ``archived`` set on the rows of these (memory type, node id) pairs of one user.
SET_ARCHIVED: Final[LiteralString] = (
    "UPDATE memory_timeline SET archived = %(archived)s FROM unnest(%(types)s::text[], %(ids)s::text[]) AS k(t, n)"
    " WHERE memory_type = k.t AND neo4j_node_id = k.n AND user_id = %(user_id)s"
    " AND archived IS DISTINCT FROM %(archived)s")

_STATEMENT: Final[Mapping[OnConflict, LiteralString]] = MappingProxyType({
    OnConflict.KEEP_FIRST: INSERT_KEEP_FIRST,
    OnConflict.REFRESH: INSERT_REFRESH,
})


@dataclass(frozen=True)
class TimelineEntry:
    """One memory on the timeline: which node, whose, when, and a searchable summary."""

    memory_type: str
    node_id: str
    user_id: str
    channel: str
    event_time: datetime
    summary: str
    importance: float = 0.5
    metadata: Mapping[str, Any] = field(default_factory=dict)
    agent_id: str | None = None
    scope: str = "global"
    #: The vector the memory's graph write stored (None: the row holds no vector).
    embedding: Sequence[float] | None = None


class Timeline:
    """Writes ``memory_timeline`` rows with the conflict policy of their memory type."""

    def __init__(self, store: PostgresStore):
        self.store = store

    async def write(self, entries: Sequence[TimelineEntry]) -> None:
        """Insert the entries (one statement per entry, one connection); an existing row is kept or refreshed as
        :data:`CONFLICT_POLICY` says. A memory type without a policy is a programming error (``KeyError``)."""
        batches: dict[OnConflict, list[dict[str, Any]]] = {}
        for entry in entries:
            batches.setdefault(CONFLICT_POLICY[entry.memory_type], []).append(_params(entry))
        if not batches:
            return
        async with pg_errors("writing memory_timeline"), self.store.connection() as conn, conn.cursor() as cur:
            for policy, params in batches.items():
                await cur.executemany(_STATEMENT[policy], params)


    async def delete(self, memory_type: str, node_ids: Sequence[str]) -> int:
        """Delete the rows of these nodes of one memory type (their node was deleted); return how many went."""
        if not node_ids:
            return 0
        return await self.store.execute(DELETE, (memory_type, list(node_ids)), what="deleting memory_timeline rows")

    async def reinforce(self, user_id: str, *, fact_ids: Sequence[str] = (), entity_ids: Sequence[str] = (),
                        now: datetime) -> int:
        """Count one access of these facts and entities of the user (``access_count`` + 1, ``last_accessed`` =
        ``now``), in one statement; return how many rows changed."""
        ids = sorted(set(fact_ids) | set(entity_ids))
        if not ids:
            return 0
        types = [t for t, chosen in (("fact", fact_ids), ("entity", entity_ids)) if chosen]
        return await self.store.execute(REINFORCE, {"user_id": user_id, "types": types, "ids": ids, "now": now},
                                        what="counting timeline accesses")

    async def rot_candidates(self, *, idle_before: datetime, user_id: str | None, after: tuple[datetime, int],
                             limit: int) -> list[dict[str, Any]]:
        """Up to ``limit`` unarchived facts and entities last used at or before ``idle_before`` (of ``user_id``, or
        every user's), oldest first, after ``after`` (the last row's ``event_time`` and ``id``)."""
        return await self.store.fetch(ROT_CANDIDATES, {
            "idle_before": idle_before, "user_id": user_id, "after_time": after[0], "after_id": after[1],
            "limit": limit}, what="reading context-rot candidates")

    async def set_archived(self, user_id: str, keys: Sequence[tuple[str, str]], *, archived: bool) -> int:
        """Set ``archived`` on the user's rows of these (memory type, node id) pairs; return how many changed."""
        if not keys:
            return 0
        return await self.store.execute(SET_ARCHIVED, {
            "archived": archived, "user_id": user_id, "types": [t for t, _ in keys], "ids": [n for _, n in keys]},
            what="archiving memory_timeline rows")

    async def entries(self, user_id: str, *, since: datetime | None = None, until: datetime | None = None,
                      memory_types: Sequence[str] | None = None, channels: Sequence[str] | None = None,
                      include_archived: bool = False, limit: int = 100,
                      agent_id: str | None = None) -> list[dict[str, Any]]:
        """The user's timeline rows with ``since <= event_time < until`` (None: unbounded), newest first, at most
        ``limit``: memory type, node id, channel, event time, summary, importance, ``access_count``,
        ``last_accessed``, ``archived``, ``has_embedding``, metadata, agent and scope of each (only those
        ``agent_id`` may read, when given)."""
        return await self.store.fetch(ENTRIES, {"agent_id": agent_id,
            "user_id": user_id, "since": since, "until": until, "limit": limit, "include_archived": include_archived,
            "types": list(memory_types) if memory_types is not None else None,
            "channels": list(channels) if channels is not None else None}, what="reading memory_timeline")


def _params(entry: TimelineEntry) -> dict[str, Any]:
    return {
        "user_id": entry.user_id, "memory_type": entry.memory_type, "node_id": entry.node_id,
        "event_time": entry.event_time, "summary": entry.summary[:SUMMARY_MAX_CHARS], "importance": entry.importance,
        "channel": entry.channel, "metadata": Jsonb(dict(entry.metadata)), "agent_id": entry.agent_id,
        "scope": entry.scope,
        "embedding": np.asarray(entry.embedding, dtype=np.float32) if entry.embedding is not None else None,
    }
