"""Retrieval queries on PostgreSQL: full-text and vector search over the user's turns and timeline.

Every search filters by ``user_id`` (and, where it ranks turns or timeline rows, by channels and the time window)
inside the statement. The lexical leg is PostgreSQL full text: the
question becomes an OR of its stemmed content words (``plainto_tsquery`` with ``&`` turned into ``|`` — PostgreSQL's
own output, never user text, is rewritten), ranked with ``ts_rank`` over ``context_tsv``: the turn's own words
(weight A) and its neighbours' (weight B). The vector leg is pgvector cosine distance: an exact scan of the user's rows
while they are few (tenant-correct by construction), and the HNSW index with iterative scans
(``hnsw.iterative_scan = relaxed_order``) for users with more rows than ``retrieval.exact_scan_max_vectors``, so a
user filter never starves the result.

Every ranking that is cut at a LIMIT has a tie-breaker (``turn_id``, ``node_id``), so equal scores never leave the
choice of the tail to physical row order: a query gives the same answer on every run and store. (The HNSW path is the
exception: an index-ordered scan takes no second key, and it is approximate anyway.)

:class:`TurnSearch` is the repository the retriever uses: one typed method per statement, rows returned as dicts
(vectors as ``list[float]``, see :class:`~agentx_memory.sql.postgres.PostgresStore`). The statements stay module
constants (``OR_QUERY`` is also the benchmarks' full-text baseline).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, LiteralString

from .conversation_log import TURN_COLUMNS
from .postgres import PostgresStore

__all__ = [
    "COUNT_USER_TURNS",
    "EMBEDDINGS_BY_IDS",
    "LEXICAL_TIMELINE",
    "OR_QUERY",
    "SPEAKERS_AMONG",
    "TURNS_AROUND",
    "TURNS_BY_IDS",
    "TURN_CANDIDATES_EXACT",
    "TURN_CANDIDATES_INDEX",
    "SearchScope",
    "TurnSearch",
]

#: The OR-tsquery of a question's content words (stemmed, stopwords out).
OR_QUERY: Final[LiteralString] = "to_tsquery('english', replace(plainto_tsquery('english', %(text)s)::text, '&', '|'))"



def _turn_candidates(dense_order: str) -> str:
    # One round trip: the lexical top-n, the dense top-n and the lexical top-n inside the question's time phrase,
    # each filtered by user, channels and time window inside the query; then every candidate's two raw signals.
    return f"""
WITH q AS (SELECT {OR_QUERY} AS query),
lex AS (
  SELECT t.id FROM conversation_logs t, q
  WHERE %(lexical)s AND t.user_id = %(user_id)s AND t.channel = ANY(%(channels)s) AND t.context_tsv @@ q.query
    AND (%(start)s::timestamptz IS NULL OR t.timestamp >= %(start)s)
    AND (%(end)s::timestamptz IS NULL OR t.timestamp < %(end)s)
  ORDER BY ts_rank(t.context_tsv, q.query, %(norm)s) DESC, t.turn_id LIMIT %(limit)s),
den AS (
  SELECT t.id, t.embedding <=> %(embedding)s AS distance FROM conversation_logs t
  WHERE t.user_id = %(user_id)s AND t.channel = ANY(%(channels)s) AND t.embedding IS NOT NULL
    AND (%(start)s::timestamptz IS NULL OR t.timestamp >= %(start)s)
    AND (%(end)s::timestamptz IS NULL OR t.timestamp < %(end)s)
  ORDER BY {dense_order} LIMIT %(limit)s),
win AS (
  SELECT t.id FROM conversation_logs t, q
  WHERE %(lexical)s AND %(boost_start)s::timestamptz IS NOT NULL
    AND t.user_id = %(user_id)s AND t.channel = ANY(%(channels)s) AND t.context_tsv @@ q.query
    AND t.timestamp >= %(boost_start)s AND t.timestamp < %(boost_end)s
    AND (%(start)s::timestamptz IS NULL OR t.timestamp >= %(start)s)
    AND (%(end)s::timestamptz IS NULL OR t.timestamp < %(end)s)
  ORDER BY ts_rank(t.context_tsv, q.query, %(norm)s) DESC, t.turn_id LIMIT %(limit)s),
c AS (SELECT id FROM lex UNION SELECT id FROM den UNION SELECT id FROM win)
SELECT {TURN_COLUMNS},
       CASE WHEN %(lexical)s THEN ts_rank(coalesce(t.context_tsv, t.content_tsv), q.query, %(norm)s)
            ELSE 0 END AS lexical,
       1 - (t.embedding <=> %(embedding)s) AS cosine,
       (SELECT 1 - max(distance) FROM den) AS cosine_floor,
       (SELECT count(*) FROM lex) AS lexical_hits
FROM conversation_logs t, q
WHERE t.id IN (SELECT id FROM c)
"""


#: Turn candidates with an exact, tenant-correct scan of the user's vectors ("+ 0" keeps the planner off HNSW).
TURN_CANDIDATES_EXACT: Final[str] = _turn_candidates("(t.embedding <=> %(embedding)s) + 0, t.turn_id")

#: Turn candidates through the HNSW index (iterative scans keep the user filter from starving the result).
TURN_CANDIDATES_INDEX: Final[str] = _turn_candidates("t.embedding <=> %(embedding)s")

#: Turns around hits (± span) in the hits' conversations, with the same two raw signals.
TURNS_AROUND: Final[str] = f"""
WITH q AS (SELECT {OR_QUERY} AS query)
SELECT DISTINCT {", ".join("c." + col.strip() for col in TURN_COLUMNS.split(","))},
       CASE WHEN %(lexical)s THEN ts_rank(coalesce(c.context_tsv, c.content_tsv), q.query, %(norm)s)
            ELSE 0 END AS lexical,
       1 - (c.embedding <=> %(embedding)s) AS cosine
FROM conversation_logs c
CROSS JOIN q
JOIN unnest(%(conversation_ids)s::text[], %(indexes)s::int[]) AS hit(conversation_id, turn_index)
  ON c.conversation_id = hit.conversation_id
 AND c.turn_index BETWEEN hit.turn_index - %(span)s AND hit.turn_index + %(span)s
WHERE c.user_id = %(user_id)s AND c.channel = ANY(%(channels)s) AND NOT (c.turn_id = ANY(%(have)s))
  AND (%(start)s::timestamptz IS NULL OR c.timestamp >= %(start)s)
  AND (%(end)s::timestamptz IS NULL OR c.timestamp < %(end)s)
"""

#: Which of the names are participants (``metadata.speaker``) of the user's conversations (index lookups).
SPEAKERS_AMONG: Final[LiteralString] = """
SELECT name FROM unnest(%(names)s::text[]) AS name
WHERE EXISTS (SELECT 1 FROM conversation_logs
              WHERE user_id = %(user_id)s AND metadata ? 'speaker' AND lower(metadata->>'speaker') = lower(name))
"""

#: How many turns the user has (the retriever picks the exact or the index vector scan by it).
COUNT_USER_TURNS: Final[LiteralString] = "SELECT count(*) AS n FROM conversation_logs WHERE user_id = %(user_id)s"

#: Turns by id, inside the user's channels and time window.
TURNS_BY_IDS: Final[str] = f"""
SELECT {TURN_COLUMNS} FROM conversation_logs
WHERE user_id = %(user_id)s AND channel = ANY(%(channels)s) AND turn_id = ANY(%(ids)s)
  AND (%(start)s::timestamptz IS NULL OR timestamp >= %(start)s)
  AND (%(end)s::timestamptz IS NULL OR timestamp < %(end)s)
"""

#: Facts and entities whose timeline summary matches the question's words (ids, ranked by ``ts_rank``).
LEXICAL_TIMELINE: Final[str] = f"""
WITH q AS (SELECT {OR_QUERY} AS query)
SELECT memory_type, neo4j_node_id AS node_id, ts_rank(summary_tsv, q.query) AS rank
FROM memory_timeline, q
WHERE user_id = %(user_id)s AND channel = ANY(%(channels)s) AND memory_type = ANY(%(types)s)
  AND summary_tsv @@ q.query AND NOT archived
  AND (%(start)s::timestamptz IS NULL OR memory_type <> 'fact' OR event_time >= %(start)s)
  AND (%(end)s::timestamptz IS NULL OR memory_type <> 'fact' OR event_time < %(end)s)
ORDER BY rank DESC, node_id
LIMIT %(limit)s
"""

#: The stored (in-context) embeddings of some of the user's turns: the diversity stage compares candidates by them.
EMBEDDINGS_BY_IDS: Final[LiteralString] = """
SELECT turn_id, embedding FROM conversation_logs
WHERE user_id = %(user_id)s AND turn_id = ANY(%(ids)s) AND embedding IS NOT NULL
"""

@dataclass(frozen=True)
class SearchScope:
    """Whose turns a search reads: one user, some channels, an optional ``[start, end)`` time window."""

    user_id: str
    channels: Sequence[str]
    start: datetime | None = None
    end: datetime | None = None

    def params(self) -> dict[str, Any]:
        """The scope as statement parameters (``user_id``, ``channels``, ``start``, ``end``)."""
        return {"user_id": self.user_id, "channels": list(self.channels), "start": self.start, "end": self.end}


class TurnSearch:
    """The retrieval queries over ``conversation_logs`` and ``memory_timeline``, one typed method per statement.

    ``embedding`` arguments are unit query vectors (a numpy array or a list of floats). Every method returns rows as
    dicts with the columns of ``conversation_logs`` (plus the signal columns the statement names) unless it says
    otherwise.
    """

    def __init__(self, store: PostgresStore):
        self.store = store

    async def candidates(self, scope: SearchScope, *, text: str, embedding: Any, lexical: bool, limit: int,
                         exact: bool, boost: tuple[datetime, datetime] | None = None,
                         normalization: int = 0) -> list[dict[str, Any]]:
        """The lexical top-``limit``, the dense top-``limit`` and the lexical top-``limit`` inside ``boost`` (a time
        range), each row with ``lexical`` (``ts_rank`` with the ``normalization`` bits), ``cosine``,
        ``cosine_floor`` (cosine of the last dense candidate) and ``lexical_hits``. ``exact`` scans the user's
        vectors exactly instead of using HNSW."""
        boost_start, boost_end = boost if boost else (None, None)
        return await self.store.fetch(
            TURN_CANDIDATES_EXACT if exact else TURN_CANDIDATES_INDEX,
            what="searching turns",
            params={
                **scope.params(),
                "limit": limit,
                "text": text,
                "embedding": embedding,
                "lexical": lexical,
                "boost_start": boost_start,
                "boost_end": boost_end,
                "norm": normalization,
            },
        )

    async def turns_around(self, scope: SearchScope, *, hits: Sequence[tuple[str, int]], span: int,
                           exclude: Sequence[str], text: str, embedding: Any, lexical: bool,
                           normalization: int = 0) -> list[dict[str, Any]]:
        """The turns within ``span`` of each hit ``(conversation_id, turn_index)``, except the ``exclude`` ids, with
        the same ``lexical`` and ``cosine`` columns as :meth:`candidates`."""
        return await self.store.fetch(TURNS_AROUND, what="reading the turns around hits", params={
            **scope.params(), "text": text, "embedding": embedding, "lexical": lexical, "span": span,
            "norm": normalization,
            "have": list(exclude), "conversation_ids": [c for c, _ in hits], "indexes": [i for _, i in hits],
        })

    async def speakers_among(self, user_id: str, names: Sequence[str]) -> list[str]:
        """The names (deduplicated, order kept) that are participants (``metadata.speaker``) of the user's turns."""
        if not names:
            return []
        rows = await self.store.fetch(
            SPEAKERS_AMONG, what="looking up speakers", params={"user_id": user_id, "names": list(dict.fromkeys(names))}
        )
        return [r["name"] for r in rows]

    async def count_user_turns(self, user_id: str) -> int:
        """How many turns the user has stored."""
        rows = await self.store.fetch(COUNT_USER_TURNS, what="counting turns", params={"user_id": user_id})
        return int(rows[0]["n"])

    async def turns_by_ids(self, scope: SearchScope, ids: Sequence[str]) -> list[dict[str, Any]]:
        """The turns with these ids that lie inside the scope."""
        return await self.store.fetch(
            TURNS_BY_IDS, what="reading turns by id", params={**scope.params(), "ids": list(ids)}
        )

    async def lexical_timeline(self, scope: SearchScope, *, text: str, types: Sequence[str], limit: int
                               ) -> list[dict[str, Any]]:
        """Timeline rows of the given memory types matching ``text``: ``memory_type``, ``node_id``, ``rank``; best
        first. The time window applies to facts only."""
        return await self.store.fetch(
            LEXICAL_TIMELINE,
            what="searching the timeline",
            params={**scope.params(), "limit": limit, "types": list(types), "text": text},
        )

    async def embeddings(self, user_id: str, ids: Sequence[str]) -> dict[str, list[float]]:
        """The stored embeddings of the user's turns with these ids, by turn id (turns without one are left out)."""
        if not ids:
            return {}
        rows = await self.store.fetch(
            EMBEDDINGS_BY_IDS, what="reading turn embeddings", params={"user_id": user_id, "ids": list(ids)}
        )
        return {r["turn_id"]: r["embedding"] for r in rows}
