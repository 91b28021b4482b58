"""Retrieval queries on PostgreSQL: full-text and vector search over the user's turns and timeline.

Every query filters by ``user_id`` and channels inside the statement. The lexical leg is PostgreSQL full text: the
question becomes an OR of its stemmed content words (``plainto_tsquery`` with ``&`` turned into ``|`` — PostgreSQL's
own output, never user text, is rewritten), ranked with ``ts_rank`` over ``context_tsv``: the turn's own words
(weight A) and its neighbours' (weight B). The vector leg is pgvector cosine distance: an exact scan of the user's rows
while they are few (tenant-correct by construction), and the HNSW index with iterative scans
(``hnsw.iterative_scan = relaxed_order``) for users with more rows than ``retrieval.exact_scan_max_vectors``, so a
user filter never starves the result.

Every ranking that is cut at a LIMIT has a tie-breaker (``turn_id``, ``node_id``), so equal scores never leave the
choice of the tail to physical row order: a query gives the same answer on every run and store. (The HNSW path is the
exception: an index-ordered scan takes no second key, and it is approximate anyway.)
"""

from __future__ import annotations

from typing import Final, LiteralString

__all__ = [
    "COUNT_USER_TURNS",
    "LEXICAL_TIMELINE",
    "OR_QUERY",
    "SPEAKERS_AMONG",
    "TURNS_AROUND",
    "TURNS_BY_IDS",
    "TURN_CANDIDATES_EXACT",
    "TURN_CANDIDATES_INDEX",
    "UPDATE_CONTEXT_TSV",
]

#: The OR-tsquery of a question's content words (stemmed, stopwords out).
OR_QUERY: Final[LiteralString] = "to_tsquery('english', replace(plainto_tsquery('english', %(text)s)::text, '&', '|'))"

_TURN_COLUMNS = (
    "turn_id, user_id, conversation_id, turn_index, timestamp, role, content, token_count, model, channel, metadata"
)

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
  ORDER BY ts_rank(t.context_tsv, q.query) DESC, t.turn_id LIMIT %(limit)s),
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
  ORDER BY ts_rank(t.context_tsv, q.query) DESC, t.turn_id LIMIT %(limit)s),
c AS (SELECT id FROM lex UNION SELECT id FROM den UNION SELECT id FROM win)
SELECT {_TURN_COLUMNS},
       CASE WHEN %(lexical)s THEN ts_rank(coalesce(t.context_tsv, t.content_tsv), q.query) ELSE 0 END AS lexical,
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
SELECT DISTINCT {", ".join("c." + col.strip() for col in _TURN_COLUMNS.split(","))},
       CASE WHEN %(lexical)s THEN ts_rank(coalesce(c.context_tsv, c.content_tsv), q.query) ELSE 0 END AS lexical,
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

COUNT_USER_TURNS: Final[LiteralString] = "SELECT count(*) AS n FROM conversation_logs WHERE user_id = %(user_id)s"

TURNS_BY_IDS: Final[str] = f"""
SELECT {_TURN_COLUMNS} FROM conversation_logs
WHERE user_id = %(user_id)s AND channel = ANY(%(channels)s) AND turn_id = ANY(%(ids)s)
  AND (%(start)s::timestamptz IS NULL OR timestamp >= %(start)s)
  AND (%(end)s::timestamptz IS NULL OR timestamp < %(end)s)
"""

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

#: Recompute the neighbour context (previous + this + next turn) of turns around freshly stored indexes.
UPDATE_CONTEXT_TSV: Final[LiteralString] = """
UPDATE conversation_logs AS c
SET context_tsv = setweight(to_tsvector('english', c.content), 'A')
               || setweight(to_tsvector('english', coalesce(p.content, '') || ' ' || coalesce(n.content, '')), 'B')
FROM conversation_logs AS self
LEFT JOIN conversation_logs AS p ON p.conversation_id = self.conversation_id AND p.turn_index = self.turn_index - 1
LEFT JOIN conversation_logs AS n ON n.conversation_id = self.conversation_id AND n.turn_index = self.turn_index + 1
WHERE self.id = c.id AND c.conversation_id = %(conversation_id)s
  AND c.turn_index BETWEEN %(low)s AND %(high)s
"""
