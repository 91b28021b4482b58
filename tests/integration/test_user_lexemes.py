"""The lexical leg finds a user's turns through the full-text index keyed by user (migration 0025): each turn's
lexemes prefixed with a key of its user, so a search reads the posting lists of that user's turns alone, whatever
characters the user id holds, and never another user's turns."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from agentx_memory import AgentMemory, Turn
from agentx_memory.sql.search import user_or_query

REF = datetime(2024, 5, 10, 12, 0, tzinfo=UTC)

#: Ids with the characters a key or a quoted query term could be confused by: a quote, a backslash, a colon, a space.
USERS = ("alice", "o'brien\\x", "1:alice", "a:b c")


def _bm25_hits(memory: AgentMemory, user: str, question: str) -> list[tuple[str, str]]:
    """(user, content) of the turns the question's words matched, best first."""
    bundle = memory.remember(question, user_id=user, top_k=20, reference_time=REF, include_semantic=False,
                             recall={"vector_weight": 0.0})
    return [(t.item.user_id, t.item.content) for t in bundle.turns
            if t.signals.get("bm25") and t.signals["bm25"].value > 0]


def test_each_user_finds_its_own_turns_by_their_words_and_no_one_elses(settings):
    with AgentMemory(settings(), user_id="alice") as memory:
        for n, user in enumerate(USERS):
            memory.store_turns([
                Turn(conversation_id=f"c{n}", user_id=user, timestamp=REF - timedelta(days=1, minutes=i), content=text)
                for i, text in enumerate([f"{user} hiked the ridge trail with a heavy backpack.",
                                          "Groceries, laundry and the dentist on Friday."])])
        for user in USERS:
            hits = _bm25_hits(memory, user, "Which trail did I hike with the backpack?")
            assert hits[0] == (user, f"{user} hiked the ridge trail with a heavy backpack.")
            assert {owner for owner, _ in hits} == {user}


@pytest.mark.parametrize("user", ["alice", "o'brien\\x"])
def test_the_user_keyed_index_answers_the_searches_predicate(settings, user):
    """The lexical leg's predicate (``user_lexemes(t.user_id, t.context_tsv) @@`` the question's words prefixed with
    the user) is the index's expression, so PostgreSQL can answer it from idx_logs_user_lexemes (on the bench's 100k
    turns it does, docs/benchmarks.md); the old index of context_tsv is gone."""
    with AgentMemory(settings(), user_id=user) as memory:
        memory.store_turns([Turn(conversation_id="c", user_id=user, timestamp=REF, content="The ridge trail.")])
        query = (f"SELECT t.id FROM conversation_logs t WHERE user_lexemes(t.user_id, t.context_tsv) @@ "
                 f"{user_or_query('user_id')}")
        params = {"user_id": user, "text": "Which trail?"}

        async def plan_and_rows() -> tuple[list[str], int]:
            async with memory.core.ctx.postgres.connection() as conn, conn.transaction():
                await conn.execute("SET LOCAL enable_seqscan = off")
                plan = await (await conn.execute("EXPLAIN " + query, params)).fetchall()
                rows = await (await conn.execute(query, params)).fetchall()
                return [row["QUERY PLAN"] for row in plan], len(rows)

        plan, found = memory._portal.run(plan_and_rows())
        indexes = memory._portal.run(memory.core.ctx.postgres.fetch(
            "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() AND tablename = 'conversation_logs'"))
    assert found == 1
    assert "idx_logs_user_lexemes" in "\n".join(plan)
    assert "idx_logs_context_tsv" not in {row["indexname"] for row in indexes}


def test_a_word_too_long_to_key_is_stored_and_asked_without_error(settings):
    """PostgreSQL refuses a lexeme over 2,046 bytes; the user's key would take a 2,040-character word past it. The
    turn is stored, the question that says the word is answered, and the turn is still found by its other words."""
    word = "z" * 2040
    with AgentMemory(settings(), user_id="alice") as memory:
        memory.store_turns([Turn(conversation_id="c", user_id="alice", timestamp=REF,
                                 content=f"The deploy key is {word} and the ridge trail is closed.")])
        hits = _bm25_hits(memory, "alice", f"Which trail, and what about {word}?")
    assert [content.startswith("The deploy key") for _, content in hits] == [True]
