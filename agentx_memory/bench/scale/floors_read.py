"""Read floors on the same store and the same query vectors as the timed ``remember()`` calls.

One raw pgvector HNSW query and one query of the graph backend's vector index (top 10, all users: FalkorDB
``db.idx.vector.queryNodes`` or Neo4j's ``SEARCH`` clause, ``db.index.vector.queryNodes`` before 2026.06, through the
graph port's ``@vector_search`` as the engine uses it), PostgreSQL full text for the user, and an exact numpy cosine
scan over all vectors and over the user's vectors. The orchestration divides ``remember()``'s latency by them.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, Final, LiteralString

import numpy as np

from ..progress import track
from .config import GRAPH_VECTOR_FLOOR
from .corpus import Corpus
from .stats import percentiles

__all__ = ["GRAPH_VECTOR_TOP_K", "read_floors"]

#: The graph floor: the label's vector index, as the engine queries it (the dialect renders @vector_search).
GRAPH_VECTOR_TOP_K: Final[LiteralString] = "@vector_search(Turn, $k, $embedding) RETURN node.id AS id, similarity"


async def read_floors(memory, corpus: Corpus, n_turns: int, user: str, queries: Sequence[tuple[str, str]],
                      qvecs: np.ndarray, turn_vectors: np.ndarray) -> dict[str, Any]:
    """One raw index query per question on the same store, and exact numpy scans over the same vectors."""
    from ...sql.search import OR_QUERY, user_or_query

    pg, graph = memory.ctx.postgres, memory.ctx.graph
    hnsw = "SELECT turn_id FROM conversation_logs ORDER BY embedding <=> %(v)s LIMIT 10"
    exact_user = ("SELECT turn_id FROM conversation_logs WHERE user_id = %(u)s AND channel = ANY(%(c)s)"
                  " ORDER BY (embedding <=> %(v)s) + 0 LIMIT 100")
    fulltext_user = (f"WITH q AS (SELECT {OR_QUERY} AS query, {user_or_query('u')} AS mine)"
                     " SELECT t.turn_id FROM conversation_logs t, q"
                     " WHERE t.user_id = %(u)s AND t.channel = ANY(%(c)s) AND user_lexemes(t.user_id, t.context_tsv)"
                     " @@ q.mine ORDER BY ts_rank(t.context_tsv, q.query) DESC LIMIT 100")
    all_vectors = np.ascontiguousarray(turn_vectors[:n_turns])
    mine = np.array([i for i in range(n_turns) if corpus.turns[i].user_id == user], dtype=np.int64)
    user_vectors = np.ascontiguousarray(all_vectors[mine])

    def channels(channel: str) -> list[str]:
        return sorted({channel, "_global"})

    async def pg_hnsw(v, question, channel):
        return await pg.fetch(hnsw, {"v": v})

    async def pg_exact_user(v, question, channel):
        return await pg.fetch(exact_user, {"v": v, "u": user, "c": channels(channel)})

    async def pg_fulltext_user(v, question, channel):
        return await pg.fetch(fulltext_user, {"text": question, "u": user, "c": channels(channel)})

    async def graph_vector_index(v, question, channel):
        # The dialect renders @vector_search: FalkorDB db.idx.vector.queryNodes (similarity = 1 - score), Neo4j
        # SEARCH (the procedure before 2026.06) with the similarity of its 10 candidates recomputed exactly, as the
        # engine does.
        return await graph.read(GRAPH_VECTOR_TOP_K, {"k": 10, "embedding": v.tolist()})

    def top10(matrix: np.ndarray, v: np.ndarray) -> np.ndarray:
        scores = matrix @ v
        k = min(10, len(scores))
        best = np.argpartition(-scores, k - 1)[:k]
        return best[np.argsort(-scores[best])]

    async def numpy_all(v, question, channel):
        return top10(all_vectors, v)

    async def numpy_user(v, question, channel):
        return top10(user_vectors, v)

    methods = {
        "pgvector HNSW top-10 (all users)": pg_hnsw,
        GRAPH_VECTOR_FLOOR: graph_vector_index,
        "numpy exact cosine top-10 (all users)": numpy_all,
        "numpy exact cosine top-10 (the user)": numpy_user,
        "pgvector exact scan top-100 (the user, channels)": pg_exact_user,
        "PostgreSQL full text top-100 (the user, channels)": pg_fulltext_user,
    }
    pairs = list(zip(queries, qvecs, strict=True))
    out: dict[str, Any] = {}
    for name, method in methods.items():
        for (question, channel), v in pairs[:5]:  # warm up
            await method(v, question, channel)
        times = []
        for (question, channel), v in track(pairs, f"floor: {name}", unit="q", transient=True):
            started = time.perf_counter()
            await method(v, question, channel)
            times.append((time.perf_counter() - started) * 1000)
        out[name] = percentiles(times)
    plan = await pg.fetch("EXPLAIN " + hnsw, {"v": qvecs[0]})
    out["_pgvector_plan"] = [next(iter(r.values())) for r in plan]
    out["_vectors"] = {"all": int(all_vectors.shape[0]), "user": int(user_vectors.shape[0])}
    out["_graph_backend"] = graph.dialect.name
    return out
