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


def _bm25(memory: AgentMemory, recall: dict | None = None) -> dict[str, float]:
    bundle = memory.remember(QUESTION, top_k=20, reference_time=REF, include_semantic=False, recall=recall)
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


def test_a_short_turn_does_not_match_on_its_long_neighbours_words_as_if_they_were_its_own(settings):
    """A two-word reply next to a long answer full of the question's words used to outscore a turn that says them
    itself: its neighbours' words counted in its match (at lexical_near_weight) but not in its length."""
    with AgentMemory(settings(), user_id="alice") as memory:
        short, _ = memory.store_turns(_turns("answer", [
            "Sounds good.",
            "The hiking trail Alice can pick: the coastal trail is the easiest hiking trail, the ridge trail the "
            "hardest hiking trail, and the forest trail is the hiking trail most people pick in spring; whichever "
            "trail you pick, pack water, a map, a charged phone, sun cream, a light jacket and a snack for the way.",
        ]))
        said = memory.store_turns(_turns("own", ["Alice said she would pick a trail for the hiking club.",
                                                 "The club meets on Saturdays."]))[0]
        memory.store_turns(_turns("noise", [f"Note {i}: groceries, laundry and the dentist." for i in range(20)]))
        own_length = _bm25(memory, {"lexical_near_length": False})
        assert own_length[short.id] > own_length[said.id]  # the defect
        scores = _bm25(memory)
        assert scores[said.id] > scores[short.id]
