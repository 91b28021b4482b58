"""BM25's turn count and mean length are kept per search scope for a minute (reading them reads every turn of the
scope); a write or a forget in the same process drops them, so the scores right after it are those a fresh process
computes from scratch, on the real servers."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from agentx_memory import AgentMemory, Turn

REF = datetime(2024, 5, 10, 12, 0, tzinfo=UTC)
QUESTION = "Which hiking trail did Alice pick?"


def _turns(conversation: str, lines: list[str]) -> list[Turn]:
    return [Turn(conversation_id=conversation, user_id="alice", timestamp=REF - timedelta(days=5, minutes=-i),
                 content=text) for i, text in enumerate(lines)]


def _bm25(memory: AgentMemory) -> dict[str, float]:
    bundle = memory.remember(QUESTION, top_k=20, reference_time=REF, include_semantic=False)
    return {t.item.id: t.signals["bm25"].value for t in bundle.turns if "bm25" in t.signals}


def test_scores_after_a_write_or_a_forget_are_those_of_a_fresh_process(settings):
    s = settings()
    with AgentMemory(s, user_id="alice") as memory:
        memory.store_turns(_turns("walks", ["Alice picked the coastal hiking trail for Sunday.",
                                            "The trail is long, so bring water."]))
        before = _bm25(memory)  # reads and keeps the scope's statistics
        cache = memory.core.ctx.sql.search.stats
        assert len(cache._entries) == 1
        added = memory.store_turns(_turns("plans", [f"Note {i}: groceries, laundry and the dentist." for i in range(30)]
                                          + ["Alice said the ridge trail is too steep for hiking in winter."]))
        assert not cache._entries  # the write dropped them
        after_write = _bm25(memory)
        assert after_write != before  # thirty more turns: every term is rarer, the mean length moved
        with AgentMemory(s, user_id="alice") as fresh:
            assert _bm25(fresh) == after_write
        memory.forget([t.id for t in added[:30]])
        assert not cache._entries
        after_forget = _bm25(memory)
        with AgentMemory(s, user_id="alice") as fresh:
            assert _bm25(fresh) == after_forget


def test_other_users_statistics_survive_a_write(settings):
    with AgentMemory(settings(), user_id="alice") as memory:
        memory.store_turns(_turns("walks", ["Alice picked the coastal hiking trail for Sunday."]))
        _bm25(memory)
        memory.store_turns([Turn(conversation_id="bob-1", user_id="bob", timestamp=REF, content="Bob hikes too.")])
        assert [key[0] for key in memory.core.ctx.sql.search.stats._entries] == ["alice"]
