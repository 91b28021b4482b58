"""Retrieval queries on PostgreSQL: full-text and vector search over the user's turns and timeline.

Every query filters by ``user_id`` and channels inside the statement. The lexical leg is PostgreSQL full text: the
question becomes an OR of its stemmed content words (``plainto_tsquery`` with ``&`` turned into ``|`` — PostgreSQL's
own output, never user text, is rewritten), ranked with ``ts_rank`` over the turn (``content_tsv``) and over the turn
with its neighbours (``context_tsv``). The vector leg is pgvector cosine distance: an exact scan of the user's rows
while they are few (tenant-correct by construction), and the HNSW index with iterative scans
(``hnsw.iterative_scan = relaxed_order``) for users with more rows than ``retrieval.exact_scan_max_vectors``, so a
user filter never starves the result.
"""

from __future__ import annotations

from typing import Final, LiteralString

__all__ = [
    "OR_QUERY",
    "LEXICAL_TURNS",
    "VECTOR_TURNS_EXACT",
    "VECTOR_TURNS_INDEX",
    "COUNT_USER_TURNS",
    "NEIGHBOUR_TURNS",
    "TURNS_BY_IDS",
    "LEXICAL_TIMELINE",
    "UPDATE_CONTEXT_TSV",
]

#: The OR-tsquery of a question's content words (stemmed, stopwords out).
OR_QUERY: Final[LiteralString] = "to_tsquery('english', replace(plainto_tsquery('english', %(text)s)::text, '&', '|'))"

_TURN_COLUMNS = (
    "turn_id, user_id, conversation_id, turn_index, timestamp, role, content, token_count, model, channel, metadata"
)

LEXICAL_TURNS: Final[str] = f"""
WITH q AS (SELECT {OR_QUERY} AS query)
SELECT {_TURN_COLUMNS},
       ts_rank(content_tsv, q.query) AS rank_turn,
       ts_rank(coalesce(context_tsv, content_tsv), q.query) AS rank_context
FROM conversation_logs, q
WHERE user_id = %(user_id)s AND channel = ANY(%(channels)s)
  AND (content_tsv @@ q.query OR context_tsv @@ q.query)
  AND (%(start)s::timestamptz IS NULL OR timestamp >= %(start)s)
  AND (%(end)s::timestamptz IS NULL OR timestamp < %(end)s)
ORDER BY ts_rank(coalesce(context_tsv, content_tsv), q.query) + ts_rank(content_tsv, q.query) DESC
LIMIT %(limit)s
"""

# "+ 0" keeps the planner off the HNSW index: an exact, tenant-correct scan of the user's own rows.
VECTOR_TURNS_EXACT: Final[str] = f"""
SELECT {_TURN_COLUMNS}, 1 - (embedding <=> %(embedding)s) AS cosine
FROM conversation_logs
WHERE user_id = %(user_id)s AND channel = ANY(%(channels)s) AND embedding IS NOT NULL
  AND (%(start)s::timestamptz IS NULL OR timestamp >= %(start)s)
  AND (%(end)s::timestamptz IS NULL OR timestamp < %(end)s)
ORDER BY (embedding <=> %(embedding)s) + 0
LIMIT %(limit)s
"""

VECTOR_TURNS_INDEX: Final[str] = f"""
SELECT {_TURN_COLUMNS}, 1 - (embedding <=> %(embedding)s) AS cosine
FROM conversation_logs
WHERE user_id = %(user_id)s AND channel = ANY(%(channels)s)
  AND (%(start)s::timestamptz IS NULL OR timestamp >= %(start)s)
  AND (%(end)s::timestamptz IS NULL OR timestamp < %(end)s)
ORDER BY embedding <=> %(embedding)s
LIMIT %(limit)s
"""

COUNT_USER_TURNS: Final[LiteralString] = "SELECT count(*) AS n FROM conversation_logs WHERE user_id = %(user_id)s"

NEIGHBOUR_TURNS: Final[str] = f"""
SELECT {", ".join("c." + col.strip() for col in _TURN_COLUMNS.split(","))}
FROM conversation_logs c
JOIN unnest(%(conversation_ids)s::text[], %(indexes)s::int[]) AS hit(conversation_id, turn_index)
  ON c.conversation_id = hit.conversation_id
 AND c.turn_index BETWEEN hit.turn_index - %(span)s AND hit.turn_index + %(span)s
WHERE c.user_id = %(user_id)s AND c.channel = ANY(%(channels)s)
"""

TURNS_BY_IDS: Final[str] = f"""
SELECT {_TURN_COLUMNS} FROM conversation_logs
WHERE user_id = %(user_id)s AND channel = ANY(%(channels)s) AND turn_id = ANY(%(ids)s)
"""

LEXICAL_TIMELINE: Final[str] = f"""
WITH q AS (SELECT {OR_QUERY} AS query)
SELECT memory_type, neo4j_node_id AS node_id, ts_rank(summary_tsv, q.query) AS rank
FROM memory_timeline, q
WHERE user_id = %(user_id)s AND channel = ANY(%(channels)s) AND memory_type = ANY(%(types)s)
  AND summary_tsv @@ q.query AND NOT archived
ORDER BY rank DESC
LIMIT %(limit)s
"""

#: Recompute the neighbour context (previous + this + next turn) of turns around freshly stored indexes.
UPDATE_CONTEXT_TSV: Final[LiteralString] = """
UPDATE conversation_logs AS c
SET context_tsv = to_tsvector('english', coalesce(p.content, '') || ' ' || c.content || ' ' || coalesce(n.content, ''))
FROM conversation_logs AS self
LEFT JOIN conversation_logs AS p ON p.conversation_id = self.conversation_id AND p.turn_index = self.turn_index - 1
LEFT JOIN conversation_logs AS n ON n.conversation_id = self.conversation_id AND n.turn_index = self.turn_index + 1
WHERE self.id = c.id AND c.conversation_id = %(conversation_id)s
  AND c.turn_index BETWEEN %(low)s AND %(high)s
"""
