"""A turn search whose HNSW scan pgvector cut short is answered by the exact scan (issue 17: no silent loss from
approximate search)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import psycopg

from agentx_memory import AgentMemory, Turn
from agentx_memory.bench.scale.config import VECTOR_ONLY
from tests.conftest import run, sql

REF = datetime(2024, 3, 20, 12, 0, tzinfo=UTC)
WORDS = ["apple", "river", "engine", "violin", "garden", "rocket", "pillow", "market", "canyon", "lantern"]
#: zoe is one of many users, and past the exact-scan threshold (set to 0 here), as a large user is
USERS = {**{f"user{n:02d}": 50 for n in range(10)}, "zoe": 30}
QUESTION = "violin lessons by the river"
#: The role the probe memory connects as: its sessions take the HNSW plan and stop that scan early.
ROLE = "agentx_hnsw_probe"


def _recall(settings, question: str) -> list[tuple[str, float]]:
    with AgentMemory(settings) as memory:
        bundle = memory.remember(question, user_id="zoe", top_k=10, reference_time=REF, include_semantic=False,
                                 include_procedural=False, recall=VECTOR_ONLY)
        return [(t.id, round(t.score, 9)) for t in bundle.turns]


def test_a_turn_search_the_vector_index_cut_short_is_answered_by_the_exact_scan(namespaces):
    """pgvector ends a filtered HNSW scan after ``hnsw.max_scan_tuples`` index entries (20,000 by default): when other
    users' vectors fill them, fewer of the user's turns come back than the search asked for. Here the limit is 10 (and
    the first pass 1 entry, ``hnsw.ef_search``) for the role a probe memory connects as, whose sessions also take the
    HNSW plan (sequential scans off, the user's btree indexes dropped from this namespace: the plan a large user gets).
    zoe's ten nearest turns still come back, the same as through the exact scan (before, none came back)."""
    s = namespaces.new(retrieval={"exact_scan_max_vectors": 0})
    memory = AgentMemory(s)
    try:
        # the others' turns are all about the question's words, so they crowd the index's nearest entries
        memory.store_turns([
            Turn(conversation_id=f"{user}-c{i // 10}", user_id=user, timestamp=REF - timedelta(hours=i),
                 content=f"note {i}: the {WORDS[i % 10]} and the {WORDS[(i * 7) % 10]} for {user}" if user == "zoe"
                 else f"note {i}: violin lessons by the river for {user}")
            for user, count in USERS.items() for i in range(count)])
        exact = _recall(s.model_copy(update={"retrieval": s.retrieval.model_copy(
            update={"exact_scan_max_vectors": 20_000})}), QUESTION)
        assert len(exact) == 10
        for statement in ("DROP INDEX idx_logs_user_channel_time", "DROP INDEX idx_logs_channel",
                          f"DROP ROLE IF EXISTS {ROLE}", f"CREATE ROLE {ROLE} LOGIN SUPERUSER",
                          f"ALTER ROLE {ROLE} SET enable_seqscan = off", f"ALTER ROLE {ROLE} SET hnsw.ef_search = 1",
                          f"ALTER ROLE {ROLE} SET hnsw.max_scan_tuples = 10"):
            sql(memory, statement)
        probe = s.model_copy(update={"postgres": s.postgres.model_copy(
            update={"dsn": psycopg.conninfo.make_conninfo(memory.core.ctx.postgres.dsn, user=ROLE)})})
        try:
            with AgentMemory(probe) as seen:  # the probe's sessions do take the HNSW plan, and it is cut short
                vector = seen._portal.run(seen.core.ctx.embedder.embed([QUESTION], is_query=True))[0]
                rows = sql(seen, "SELECT count(*) AS n FROM (SELECT id FROM conversation_logs WHERE user_id = 'zoe' "
                                 "ORDER BY embedding <=> %(v)s LIMIT 10) AS nearest", {"v": vector})
                assert rows[0]["n"] < 10
            assert _recall(probe, QUESTION) == exact
        finally:
            sql(memory, f"DROP ROLE IF EXISTS {ROLE}")
    finally:
        memory.close()
        run(namespaces.drop(s))
