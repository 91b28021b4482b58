"""Retrieval queries on PostgreSQL: full-text and vector search over the user's turns and timeline.

Every search filters by ``user_id`` (and, where it ranks turns or timeline rows, by channels and the time window) inside
the statement. The turns' lexical leg is BM25 on PostgreSQL full text: the question's stemmed content words
(``to_tsvector``, each quoted into a one-term query, so no user text is ever read as query syntax; the text first goes
through the schema's ``search_words()``, as the turns' text did, so "maxima/minima" and "socket.io" are two words each)
are ORed to find the matching turns through the GIN index on ``context_tsv`` (the turn's own words, weight A, and its
neighbours', weight B); each match is scored with BM25 from its counts of the question's terms in that vector (a
neighbour's word counts ``near``), its length (distinct words) against the scope's average, and each term's inverse
document frequency over the scope's turns — statistics of the searched turns themselves, for every user, channel set and
time window. The scope's turn count and mean length (:data:`TURN_STATS`, a read of every turn of the scope) are kept per
scope for a minute by :class:`TurnStatsCache`, and dropped when this process writes, archives or forgets that user's
turns; the term counts and document frequencies are always read live, and the count used is never below the live number
of matching turns, so an inverse document frequency never turns negative. The same statements score each turn's
``phrase``: the share of the question's consecutive word pairs (phrase queries at the question's spacing, weighted by
their words' inverse document frequencies) that the turn's own words say, since BM25 ignores word order. Facts and
entities in ``memory_timeline`` keep ``ts_rank`` (over the same ``search_words()``). The vector leg is pgvector cosine
distance: an exact scan of the user's rows while they are few (tenant-correct by construction), and the HNSW index with
iterative scans (``hnsw.iterative_scan = relaxed_order``) for users with more rows than
``retrieval.exact_scan_max_vectors``, so a user filter never starves the result. An iterative scan still ends after
pgvector's ``hnsw.max_scan_tuples`` index entries (20,000): when other users' vectors fill them and fewer of the scope's
turns than asked for come back, the exact scan answers the search instead.

Every ranking that is cut at a LIMIT has a tie-breaker (``turn_id``, ``node_id``), so equal scores never leave the
choice of the tail to physical row order: a query gives the same answer on every run and store. (The HNSW path is the
exception: an index-ordered scan takes no second key, and it is approximate anyway.)

:class:`TurnSearch` is the repository the retriever uses: one typed method per statement, rows returned as dicts
(vectors as ``list[float]``, see :class:`~agentx_memory.sql.postgres.PostgresStore`). The statements stay module
constants (``OR_QUERY`` is also the benchmarks' full-text baseline).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, LiteralString

from ..rows import same_text
from ..settings import RecallSettings
from .conversation_log import SEEN_BY_AGENT, TURN_COLUMNS, TURN_FIELDS, projected, seen_by_agent
from .postgres import PostgresStore

__all__ = [
    "COPY_READS",
    "COUNT_USER_TURNS",
    "EMBEDDINGS_BY_IDS",
    "LEXICAL_TIMELINE",
    "OR_QUERY",
    "SPEAKERS_AMONG",
    "TURNS_AROUND",
    "TURNS_BY_IDS",
    "TURN_CANDIDATES_EXACT",
    "TURN_CANDIDATES_EXACT_PAST_COPIES",
    "TURN_CANDIDATES_INDEX",
    "TURN_CANDIDATES_INDEX_PAST_COPIES",
    "TURN_STATS",
    "Bm25",
    "SearchScope",
    "TurnSearch",
    "TurnStatsCache",
    "repeated_texts",
]

#: Seconds a scope's turn count and mean length are reused (writes in this process drop them sooner).
STATS_TTL: Final = 60.0

_SEEN_T: Final = seen_by_agent("t")
_SEEN_C: Final = seen_by_agent("c")
#: The blanks PostgreSQL strips around a text to compare it (Python's ``str.strip`` strips these and more).
_BLANKS: Final = r"E' \t\n\r\f\v'"
#: Reads of the turn candidates beyond the first that look past repeated texts (see TurnSearch.candidates).
COPY_READS: Final = 2

#: The OR-tsquery of a question's content words (stemmed, stopwords out; ``search_words()``: paths and dotted names
#: split, as in the stored turns and summaries).
OR_QUERY: Final[LiteralString] = (
    "to_tsquery('english', replace(plainto_tsquery('english', search_words(%(text)s))::text, '&', '|'))"
)


def _columns(alias: str) -> str:
    # The turn columns, qualified (the statements join conversation_logs with CTEs that share column names). Metadata
    # comes as its JSON text (``metadata_json``, decoded by ``rows.turn_from_row`` for the few turns returned) and its
    # ``speaker``, the one key ranking reads: decoding it for every candidate cost ~0.4 ms of client CPU a recall.
    columns = [f"{alias}.{col.strip()}" for col in TURN_FIELDS.split(",") if col.strip() != "metadata"]
    return ", ".join([*columns, projected(alias), f"{alias}.metadata::text AS metadata_json",
                      f"{alias}.metadata->>'speaker' AS speaker"])


def _on_first(value: str) -> str:
    # A value of the whole statement (not of a row), sent on its first row only (by id, the statement's order) and
    # NULL on the others: repeated on ~150 rows, the term arrays cost ~0.5 ms of client CPU and ~1 ms of wall a recall.
    return f"CASE WHEN t.id = (SELECT min(id) FROM c) THEN {value} END"


def _quoted_lexeme(lexeme: str) -> str:
    # A normalized lexeme (a SQL text expression) quoted as a tsquery operand, so none of its characters is read as an
    # operator; the OR of them is cast to tsquery, which (unlike to_tsquery) does not normalize (stem) it again.
    return "('''' || replace(replace(" + lexeme + r", '\', '\\'), '''', '''''') || '''')"


#: The question's (``%(text)s``) distinct stemmed content words, stopwords out, as an array of lexemes.
_QUESTION_LEXEMES: Final = "tsvector_to_array(to_tsvector('english', search_words(%(text)s)))"


def _user_lexeme(user: str) -> str:
    # A lexeme as user_lexemes() (migration 0025) keys it for the user the statement parameter `user` names.
    return f"user_key(%({user})s) || lexeme"


def _user_terms(user: str) -> str:
    # The OR of the question's lexemes (a `lexeme` column) keyed for the user, leaving out those user_lexemes() leaves
    # out: a keyed lexeme past 2,046 bytes is no tsquery operand either.
    return (f"(string_agg({_quoted_lexeme(_user_lexeme(user))}, ' | ')"
            f" FILTER (WHERE octet_length({_user_lexeme(user)}) <= 2046))::tsquery")


def user_or_query(user: str) -> str:
    """The OR-tsquery of the question's (``%(text)s``) content words as the user's own lexemes, the user named by the
    statement parameter ``user``: what the user-keyed full-text index (``user_lexemes()``, migration 0025) answers."""
    return f"(SELECT {_user_terms(user)} FROM unnest({_QUESTION_LEXEMES}) AS lexeme)"


#: The question's terms (its distinct stemmed content words, stopwords out) and their OR as a tsquery of the user's
#: own lexemes (each term prefixed as ``user_lexemes()`` prefixes a turn's, migration 0025), which the user-keyed
#: full-text index answers with the posting lists of that user's turns alone.
_TERMS: Final[str] = f"""
terms AS (
  SELECT lexeme
  FROM unnest(CASE WHEN %(lexical)s THEN {_QUESTION_LEXEMES} END) AS lexeme),
q AS (SELECT {_user_terms("user_id")} AS query FROM terms)"""


#: The question's word pairs as phrase queries (each two consecutive content words at their distance in the question,
#: stopwords counting as positions as they do in a stored vector: ``tsquery_phrase``), each weighted by the inverse
#: document frequencies of its two words from the term weights ``w`` (a word no searched turn says weighs 0).
_PHRASES: Final[str] = f"""
qpos AS (
  SELECT v.lexeme, p.pos
  FROM unnest(CASE WHEN %(lexical)s THEN to_tsvector('english', search_words(%(text)s)) END) AS v
  CROSS JOIN LATERAL unnest(v.positions) AS p(pos)),
pairs AS (
  SELECT a, b, d FROM (
    SELECT lexeme AS a, lead(lexeme) OVER (ORDER BY pos, lexeme) AS b,
           lead(pos) OVER (ORDER BY pos, lexeme) - pos AS d
    FROM qpos) AS consecutive
  WHERE b IS NOT NULL AND d > 0),
phrases AS (
  SELECT DISTINCT tsquery_phrase({_quoted_lexeme("a")}::tsquery, {_quoted_lexeme("b")}::tsquery, d) AS query,
         coalesce(wa.idf, 0) + coalesce(wb.idf, 0) AS weight
  FROM pairs LEFT JOIN w wa ON wa.lexeme = a LEFT JOIN w wb ON wb.lexeme = b)"""


def _phrase(alias: str) -> str:
    # The share of the question's phrase weight whose pairs the turn's own words say, in the question's order and at
    # its distance (0 when the question has no pair or its pairs weigh nothing). Only a turn that says a question word
    # itself (an own count in `counts`) can say a pair, so no other turn's vector is read for it.
    return (f"(CASE WHEN {alias}.id IN (SELECT id FROM counts WHERE own > 0)"
            f" THEN coalesce((SELECT sum(weight) FROM phrases WHERE {alias}.content_tsv @@ query)"
            " / nullif((SELECT sum(weight) FROM phrases), 0), 0) ELSE 0 END)::float8")


def _term_counts(rows: str, terms: str, carry: str) -> str:
    # Per row of `rows` (id, context_tsv and the `carry` columns) and per term of `terms` it holds: how often the
    # term is among its own words (weight A of context_tsv) and among its neighbours' (weight B). ts_filter splits
    # the two parts, setweight marks the terms in a part and ts_filter keeps only them, so unnest yields a handful of
    # lexemes per turn, not its whole vocabulary; all are C functions over the stored vector, and no join is planned
    # on a row estimate (the planner cannot estimate a match of a query computed in the statement).
    own = f"ts_filter(setweight(ts_filter(r.context_tsv, '{{a}}'), 'b', {terms}), '{{b}}')"
    near = f"ts_filter(setweight(ts_filter(r.context_tsv, '{{b}}'), 'a', {terms}), '{{a}}')"
    return f"""
  SELECT id, {carry}, lexeme, sum(own) AS own, sum(near) AS near FROM (
    SELECT r.id, {carry}, u.lexeme, cardinality(u.positions) AS own, 0 AS near
    FROM {rows} r CROSS JOIN LATERAL unnest({own}) AS u
    UNION ALL
    SELECT r.id, {carry}, u.lexeme, 0, cardinality(u.positions)
    FROM {rows} r CROSS JOIN LATERAL unnest({near}) AS u) AS part
  GROUP BY id, {carry}, lexeme"""


#: BM25 of one (turn, term) count row ``c`` joined to its term weight ``w``: the term's frequency is its own count
#: plus ``near`` (a weight) times its neighbours' count; the turn's length ``c.dl`` (:func:`_length`) is its number
#: of distinct words, over ``avgdl`` of the scope.
_BM25: Final[str] = """
  w.idf * (c.own + %(near)s * c.near) * (%(k1)s + 1)
  / ((c.own + %(near)s * c.near) + %(k1)s * (1 - %(b)s + %(b)s * c.dl / greatest(%(avgdl)s, 1)))"""


def _length(alias: str) -> str:
    # A turn's length for BM25: its distinct words, plus (with near_length) ``near`` times the distinct words only its
    # neighbours say -- the words its ``near`` counts come from. Without them a two-line turn next to a long answer
    # matched on the answer's words as if they were dense in a short text.
    own = f"length({alias}.content_tsv)"
    return (f"({own} + %(near_length)s::int * %(near)s"
            f" * (length(coalesce({alias}.context_tsv, {alias}.content_tsv)) - {own}))")


#: The repeated texts (lower-cased, surrounding blanks out), read from the copies a first search found.
_REPEATED: Final[str] = f"""repeated AS (
  SELECT DISTINCT lower(btrim(r.content, {_BLANKS})) AS text FROM conversation_logs r
  WHERE r.user_id = %(user_id)s AND r.turn_id = ANY(%(copies)s)),"""


def _not_a_copy(alias: str) -> str:
    # The kept copy of a repeated text, or a turn whose text is none of the repeated ones.
    return (f"({alias}.turn_id = ANY(%(keep)s)"
            f" OR lower(btrim({alias}.content, {_BLANKS})) <> ALL(ARRAY(SELECT text FROM repeated)))")


def _turn_candidates(dense_order: str, *, past_copies: bool = False) -> str:
    # One round trip: the scope's turns matching any term of the question (GIN on context_tsv); each term's count
    # among each match's own words and its neighbours'; each term's inverse document frequency (over the scope's
    # turns that say it themselves, out of %(docs)s, the scope's turn count from TURN_STATS); the lexical top-n by
    # BM25 (the scope's mean turn length %(avgdl)s); the dense top-n; the lexical top-n inside the
    # question's time phrase; every list filtered by user, channels and time window inside the query; then every
    # candidate's signals, with the term weights and the scope's average turn length for the turns read around hits.
    # ``past_copies``: every top list skips the copies of the texts in %(copies)s but the one in %(keep)s, so a text
    # said over and over takes one place in each list, not all of them (see TurnSearch.candidates).
    bm25 = _BM25.replace("%(avgdl)s", "docs.avgdl")
    repeated = _REPEATED if past_copies else ""
    own_text = " JOIN conversation_logs t ON t.id = s.id" if past_copies else ""
    not_a_copy = f"\n    AND {_not_a_copy('t')}" if past_copies else ""
    lex_where = f" WHERE {_not_a_copy('t')}" if past_copies else ""
    return f"""
WITH {_TERMS},{repeated}
matched AS (
  SELECT t.id, t.turn_id, t.timestamp, t.context_tsv, {_length("t")} AS dl FROM conversation_logs t, q
  WHERE t.user_id = %(user_id)s AND t.channel = ANY(%(channels)s) AND user_lexemes(t.user_id, t.context_tsv) @@ q.query
    AND (%(include_archived)s OR NOT t.archived)
    AND {_SEEN_T}
    AND (%(start)s::timestamptz IS NULL OR t.timestamp >= %(start)s)
    AND (%(end)s::timestamptz IS NULL OR t.timestamp < %(end)s)),
docs AS (SELECT greatest(%(docs)s::bigint, (SELECT count(*) FROM matched)) AS n, %(avgdl)s::float8 AS avgdl),
counts AS ({_term_counts("matched", "ARRAY(SELECT lexeme FROM terms)", "turn_id, timestamp, dl")}),
w AS (
  SELECT c.lexeme, ln(1 + (docs.n - count(*) FILTER (WHERE c.own > 0) + 0.5)
                        / (count(*) FILTER (WHERE c.own > 0) + 0.5)) AS idf
  FROM counts c CROSS JOIN docs GROUP BY c.lexeme, docs.n),
scored AS (
  SELECT c.id, c.turn_id, c.timestamp, sum({bm25}) AS lexical
  FROM counts c JOIN w ON w.lexeme = c.lexeme CROSS JOIN docs GROUP BY c.id, c.turn_id, c.timestamp),
{_PHRASES},
lex AS (SELECT s.id FROM scored s{own_text}{lex_where} ORDER BY s.lexical DESC, s.turn_id LIMIT %(limit)s),
den AS (
  SELECT t.id, t.embedding <=> %(embedding)s AS distance FROM conversation_logs t
  WHERE t.user_id = %(user_id)s AND t.channel = ANY(%(channels)s) AND t.embedding IS NOT NULL
    AND (%(include_archived)s OR NOT t.archived)
    AND {_SEEN_T}
    AND (%(start)s::timestamptz IS NULL OR t.timestamp >= %(start)s)
    AND (%(end)s::timestamptz IS NULL OR t.timestamp < %(end)s){not_a_copy}
  ORDER BY {dense_order} LIMIT %(limit)s),
win AS (
  SELECT s.id FROM scored s{own_text}
  WHERE %(boost_start)s::timestamptz IS NOT NULL
    AND s.timestamp >= %(boost_start)s AND s.timestamp < %(boost_end)s{not_a_copy}
  ORDER BY s.lexical DESC, s.turn_id LIMIT %(limit)s),
c AS (SELECT id FROM lex UNION SELECT id FROM den UNION SELECT id FROM win),
cl AS (SELECT id, lexical FROM scored WHERE id IN (SELECT id FROM c))
SELECT {_columns("t")},
       coalesce(cl.lexical, 0) AS lexical,
       1 - (t.embedding <=> %(embedding)s) AS cosine,
       {_phrase("t")} AS phrase,
       {_on_first("(SELECT 1 - max(distance) FROM den)")} AS cosine_floor,
       {_on_first("(SELECT count(*) FROM matched)")} AS lexical_hits,
       {_on_first("(SELECT count(*) FROM den)")} AS dense_hits,
       {_on_first("(SELECT array_agg(lexeme ORDER BY lexeme) FROM w)")} AS term_lexemes,
       {_on_first("(SELECT array_agg(idf ORDER BY lexeme) FROM w)")} AS term_weights,
       {_on_first("(SELECT avgdl FROM docs)")} AS average_length
FROM conversation_logs t LEFT JOIN cl ON cl.id = t.id
WHERE t.id IN (SELECT id FROM c)
ORDER BY t.id
"""


#: How many turns the scope has and their mean length in distinct words, their own and with their neighbours' (BM25's
#: N and avgdl, see :func:`_length`): every turn of the scope is read, so :class:`TurnStatsCache` keeps the answer.
TURN_STATS: Final[str] = f"""
SELECT count(*) AS n, coalesce(avg(length(t.content_tsv)), 0) AS avgdl,
       coalesce(avg(length(coalesce(t.context_tsv, t.content_tsv))), 0) AS avgctx
FROM conversation_logs t
WHERE t.user_id = %(user_id)s AND t.channel = ANY(%(channels)s)
  AND (%(include_archived)s OR NOT t.archived)
  AND {_SEEN_T}
  AND (%(start)s::timestamptz IS NULL OR t.timestamp >= %(start)s)
  AND (%(end)s::timestamptz IS NULL OR t.timestamp < %(end)s)
"""

#: Turn candidates with an exact, tenant-correct scan of the user's vectors ("+ 0" keeps the planner off HNSW).
TURN_CANDIDATES_EXACT: Final[str] = _turn_candidates("(t.embedding <=> %(embedding)s) + 0, t.turn_id")

#: Turn candidates through the HNSW index (iterative scans keep the user filter from starving the result).
TURN_CANDIDATES_INDEX: Final[str] = _turn_candidates("t.embedding <=> %(embedding)s")

#: :data:`TURN_CANDIDATES_EXACT` looking past the copies of repeated texts (%(copies)s but %(keep)s).
TURN_CANDIDATES_EXACT_PAST_COPIES: Final[str] = _turn_candidates("(t.embedding <=> %(embedding)s) + 0, t.turn_id",
                                                                 past_copies=True)

#: :data:`TURN_CANDIDATES_INDEX` looking past the copies of repeated texts (%(copies)s but %(keep)s).
TURN_CANDIDATES_INDEX_PAST_COPIES: Final[str] = _turn_candidates("t.embedding <=> %(embedding)s", past_copies=True)

#: Turns around hits (± span) in the hits' conversations, except those already scored, with the same signals (BM25
#: with the candidates' term weights and average length).
TURNS_AROUND: Final[str] = f"""
WITH w AS (SELECT * FROM unnest(%(lexemes)s::text[], %(weights)s::float8[]) AS term(lexeme, idf)),
near AS (
  SELECT c.id, coalesce(c.context_tsv, setweight(c.content_tsv, 'A')) AS context_tsv, {_length("c")} AS dl
  FROM conversation_logs c WHERE c.id IN (
    SELECT c.id FROM conversation_logs c
    JOIN unnest(%(conversation_ids)s::text[], %(indexes)s::int[]) AS hit(conversation_id, turn_index)
      ON c.conversation_id = hit.conversation_id
     AND c.turn_index BETWEEN hit.turn_index - %(span)s AND hit.turn_index + %(span)s
    WHERE c.user_id = %(user_id)s AND c.channel = ANY(%(channels)s) AND NOT (c.turn_id = ANY(%(have)s))
      AND (%(include_archived)s OR NOT c.archived)
      AND {_SEEN_C}
      AND (%(start)s::timestamptz IS NULL OR c.timestamp >= %(start)s)
      AND (%(end)s::timestamptz IS NULL OR c.timestamp < %(end)s))),
counts AS ({_term_counts("near", "%(lexemes)s::text[]", "dl")}),
scored AS (
  SELECT c.id, sum({_BM25}) AS lexical FROM counts c JOIN w ON w.lexeme = c.lexeme GROUP BY c.id),
{_PHRASES}
SELECT {_columns("c")},
       coalesce(s.lexical, 0) AS lexical,
       1 - (c.embedding <=> %(embedding)s) AS cosine,
       {_phrase("c")} AS phrase
FROM conversation_logs c LEFT JOIN scored s ON s.id = c.id WHERE c.id IN (SELECT id FROM near)
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
  AND (%(include_archived)s OR NOT archived)
  AND {SEEN_BY_AGENT}
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
  AND {SEEN_BY_AGENT}
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


def repeated_texts(rows: Sequence[Mapping[str, Any]], limit: int, texts: int
                   ) -> tuple[set[str], set[str]] | None:
    """When copies of repeated texts crowd a search's candidates (a list was cut at ``limit``, and the ``rows`` hold
    fewer than ``texts`` different texts, :func:`~agentx_memory.rows.same_text`): the ids of those copies, and of
    the one copy of each text to keep (the best lexical match, then the newest); else None."""
    if not rows or texts <= 0:
        return None
    first = rows[0]  # rows come by id; the first holds the statement's own values
    if first["dense_hits"] < limit and first["lexical_hits"] <= limit:
        return None  # no list was cut: every turn that matches is among the rows
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for row in rows:
        groups.setdefault(same_text(row["content"]), []).append(row)
    if len(groups) >= texts or len(groups) == len(rows):
        return None
    repeated = [group for group in groups.values() if len(group) > 1]
    copies = {row["turn_id"] for group in repeated for row in group}
    keep = {max(group, key=lambda r: (r["lexical"], r["timestamp"], r["turn_id"]))["turn_id"] for group in repeated}
    return copies, keep


@dataclass(frozen=True)
class Bm25:
    """The BM25 parameters of the turns' lexical leg: ``k1`` (term-frequency saturation), ``b`` (length
    normalization, 0 to 1), ``near`` (how much a word of a neighbouring turn counts; the turn's own count 1) and
    ``near_length`` (whether those words count in the turn's length at the same weight). The defaults are the recall
    settings' own (``lexical_k1``, ``lexical_b``, ``lexical_near_weight``, ``lexical_near_length``)."""

    k1: float = RecallSettings.model_fields["lexical_k1"].default
    b: float = RecallSettings.model_fields["lexical_b"].default
    near: float = RecallSettings.model_fields["lexical_near_weight"].default
    near_length: bool = RecallSettings.model_fields["lexical_near_length"].default

    def params(self) -> dict[str, float | bool]:
        """The parameters as statement parameters."""
        return {"k1": self.k1, "b": self.b, "near": self.near, "near_length": self.near_length}

    def average_length(self, own: float, with_neighbours: float) -> float:
        """The scope's mean turn length as :func:`_length` counts it, from the means of its two parts."""
        return own + self.near * (with_neighbours - own) if self.near_length else own


@dataclass(frozen=True)
class SearchScope:
    """Whose turns a search reads: one user, some channels, an optional ``[start, end)`` time window, whether the
    turns of archived conversations count (not by default), and the agent reading (None: the user; an agent reads
    global turns and its own private ones)."""

    user_id: str
    channels: Sequence[str]
    start: datetime | None = None
    end: datetime | None = None
    include_archived: bool = False
    agent_id: str | None = None

    def params(self) -> dict[str, Any]:
        """The scope as statement parameters (``user_id``, ``channels``, ``start``, ``end``, ``include_archived``,
        ``agent_id``)."""
        return {"user_id": self.user_id, "channels": list(self.channels), "start": self.start, "end": self.end,
                "include_archived": self.include_archived, "agent_id": self.agent_id}


class TurnStatsCache:
    """Per search scope, its turn count and mean lengths, own and with neighbours (:data:`TURN_STATS`), kept for
    ``ttl`` seconds; the repositories that write, archive or delete a user's turns call :meth:`changed`, which drops
    that user's scopes."""

    def __init__(self, ttl: float = STATS_TTL):
        self.ttl = ttl
        self._entries: dict[tuple[Any, ...], tuple[float, int, float, float]] = {}

    @staticmethod
    def key(scope: SearchScope) -> tuple[Any, ...]:
        """The cache key of a scope (its channels in any order)."""
        return (scope.user_id, tuple(sorted(scope.channels)), scope.start, scope.end, scope.include_archived,
                scope.agent_id)

    def get(self, scope: SearchScope) -> tuple[int, float, float] | None:
        """The scope's ``(turns, mean length, mean length with neighbours)`` when read less than ``ttl`` seconds ago
        and not changed since."""
        entry = self._entries.get(self.key(scope))
        if entry is None or time.monotonic() - entry[0] >= self.ttl:
            return None
        return entry[1], entry[2], entry[3]

    def put(self, scope: SearchScope, turns: int, average_length: float, average_context_length: float) -> None:
        """Keep the scope's statistics as just read."""
        self._entries[self.key(scope)] = (time.monotonic(), turns, average_length, average_context_length)

    def changed(self, user_ids: Iterable[str]) -> None:
        """Drop the statistics of every scope of these users (their turns were written, archived or deleted)."""
        users = set(user_ids)
        for key in [k for k in self._entries if k[0] in users]:
            del self._entries[key]


class TurnSearch:
    """The retrieval queries over ``conversation_logs`` and ``memory_timeline``, one typed method per statement.

    ``embedding`` arguments are unit query vectors (a numpy array or a list of floats). Every method returns rows as
    dicts with the columns of ``conversation_logs`` (plus the signal columns the statement names) unless it says
    otherwise. ``stats`` keeps each scope's BM25 statistics (shared with the repositories that change turns).
    """

    def __init__(self, store: PostgresStore, stats: TurnStatsCache | None = None):
        self.store = store
        self.stats = stats if stats is not None else TurnStatsCache()

    async def turn_stats(self, scope: SearchScope, bm25: Bm25 = Bm25()) -> tuple[int, float]:
        """The scope's turn count and mean length in distinct words as ``bm25`` counts a turn's length (read once a
        minute at most, see :class:`TurnStatsCache`)."""
        cached = self.stats.get(scope)
        if cached is None:
            row = (await self.store.read(TURN_STATS, scope.params(), what="counting the searched turns"))[0]
            cached = int(row["n"]), float(row["avgdl"] or 0.0), float(row["avgctx"] or 0.0)
            self.stats.put(scope, *cached)
        turns, own, with_neighbours = cached
        return turns, bm25.average_length(own, with_neighbours)

    async def candidates(self, scope: SearchScope, *, text: str, embedding: Any, lexical: bool, limit: int,
                         exact: bool, boost: tuple[datetime, datetime] | None = None,
                         bm25: Bm25 = Bm25(), texts: int = 0) -> list[dict[str, Any]]:
        """The lexical top-``limit``, the dense top-``limit`` and the lexical top-``limit`` inside ``boost`` (a time
        range). Each row has ``lexical`` (BM25 with the ``bm25`` parameters over the scope's turns), ``phrase`` (the
        share of the question's word pairs, weighted by their words' inverse document frequencies, that the turn's
        own words say in the question's order and spacing), ``cosine``, ``speaker`` and ``metadata_json`` (the
        metadata as JSON text). The first row (rows come by id) also carries the statement's own values, NULL on
        the others: ``cosine_floor`` (cosine of the last dense candidate), ``lexical_hits``, ``dense_hits`` and, for
        :meth:`turns_around`, the terms' inverse document frequencies (``term_lexemes``, ``term_weights``) and the
        scope's ``average_length``. ``exact`` scans the user's vectors exactly instead of using HNSW; so does a
        search whose HNSW scan returned fewer than ``limit`` turns.

        ``texts``: how many different texts the caller needs (recall returns one turn per text; 0: copies of a text
        are turns like any other). When a list was cut at ``limit`` and the candidates hold fewer different texts
        (:func:`repeated_texts`), the search is read again looking past the repeated texts' copies but one, at most
        :data:`COPY_READS` times."""
        boost_start, boost_end = boost if boost else (None, None)
        docs, avgdl = await self.turn_stats(scope, bm25) if lexical else (0, 0.0)
        params = {
            **scope.params(),
            "limit": limit,
            "text": text,
            "embedding": embedding,
            "lexical": lexical,
            "boost_start": boost_start,
            "boost_end": boost_end,
            "docs": docs,
            "avgdl": avgdl,
            **bm25.params(),
        }
        rows = await self._candidate_rows(params, exact=exact, past_copies=False)
        copies: set[str] = set()
        keep: set[str] = set()
        for _ in range(COPY_READS):
            repeated = repeated_texts(rows, limit, texts)
            if repeated is None or repeated[0] <= copies:
                break
            copies |= repeated[0]
            keep |= repeated[1]
            rows = await self._candidate_rows({**params, "copies": sorted(copies), "keep": sorted(keep)},
                                              exact=exact, past_copies=True)
        return rows

    async def _candidate_rows(self, params: dict[str, Any], *, exact: bool, past_copies: bool
                              ) -> list[dict[str, Any]]:
        exact_statement, index_statement = ((TURN_CANDIDATES_EXACT_PAST_COPIES, TURN_CANDIDATES_INDEX_PAST_COPIES)
                                            if past_copies else (TURN_CANDIDATES_EXACT, TURN_CANDIDATES_INDEX))
        if exact:
            return await self.store.read(exact_statement, params, what="searching turns")
        rows = await self.store.read(index_statement, params, what="searching turns")
        if not rows or rows[0]["dense_hits"] < params["limit"]:  # the first row (by id) holds the statement's values
            # The index scan ended (hnsw.max_scan_tuples) before it found `limit` of the scope's turns, or the scope
            # holds fewer: the exact scan finds every one of them.
            rows = await self.store.read(exact_statement, params, what="searching turns")
        return rows

    async def turns_around(self, scope: SearchScope, *, hits: Sequence[tuple[str, int]], span: int,
                           exclude: Sequence[str], terms: Mapping[str, float], average_length: float,
                           embedding: Any, text: str = "", bm25: Bm25 = Bm25()) -> list[dict[str, Any]]:
        """The turns within ``span`` of each hit ``(conversation_id, turn_index)``, except the ``exclude`` ids, with
        the same ``lexical``, ``cosine`` and ``phrase`` columns as :meth:`candidates` (``terms``, the inverse document
        frequency of each lexeme, and ``average_length`` as :meth:`candidates` returned them, ``text`` the question
        it searched with; no terms leave ``lexical`` and ``phrase`` 0)."""
        return await self.store.read(TURNS_AROUND, what="reading the turns around hits", params={
            **scope.params(), "embedding": embedding, "span": span, **bm25.params(), "avgdl": average_length,
            "text": text, "lexical": bool(terms),
            "lexemes": list(terms), "weights": list(terms.values()),
            "have": list(exclude), "conversation_ids": [c for c, _ in hits], "indexes": [i for _, i in hits],
        })

    async def speakers_among(self, user_id: str, names: Sequence[str]) -> list[str]:
        """The names (deduplicated, order kept) that are participants (``metadata.speaker``) of the user's turns."""
        if not names:
            return []
        rows = await self.store.read(
            SPEAKERS_AMONG, what="looking up speakers", params={"user_id": user_id, "names": list(dict.fromkeys(names))}
        )
        return [r["name"] for r in rows]

    async def count_user_turns(self, user_id: str) -> int:
        """How many turns the user has stored."""
        rows = await self.store.read(COUNT_USER_TURNS, what="counting turns", params={"user_id": user_id})
        return int(rows[0]["n"])

    async def turns_by_ids(self, scope: SearchScope, ids: Sequence[str]) -> list[dict[str, Any]]:
        """The turns with these ids that lie inside the scope."""
        return await self.store.read(
            TURNS_BY_IDS, what="reading turns by id", params={**scope.params(), "ids": list(ids)}
        )

    async def lexical_timeline(self, scope: SearchScope, *, text: str, types: Sequence[str], limit: int
                               ) -> list[dict[str, Any]]:
        """Timeline rows of the given memory types matching ``text``: ``memory_type``, ``node_id``, ``rank``; best
        first. The time window applies to facts only."""
        return await self.store.read(
            LEXICAL_TIMELINE,
            what="searching the timeline",
            params={**scope.params(), "limit": limit, "types": list(types), "text": text},
        )

    async def embeddings(self, user_id: str, ids: Sequence[str]) -> dict[str, list[float]]:
        """The stored embeddings of the user's turns with these ids, by turn id (turns without one are left out)."""
        if not ids:
            return {}
        rows = await self.store.read(
            EMBEDDINGS_BY_IDS, what="reading turn embeddings", params={"user_id": user_id, "ids": list(ids)}
        )
        return {r["turn_id"]: r["embedding"] for r in rows}
