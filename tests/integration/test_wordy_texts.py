"""Texts of many distinct words are stored whole and searched by the words a full-text index holds (migration 0026).

PostgreSQL refuses a ``tsvector`` past 1 MB of lexemes and positions, which 90,000 different 8-letter words reach in
810 KB: under the 1 MiB turn limit, such a turn's insert failed with a storage error, and so did the insert of the
turns beside it (their context takes in its words) and a question or a fact of as many words."""

from __future__ import annotations

import hashlib
import random
import string
from datetime import UTC, datetime, timedelta

from agentx_memory import AgentMemory, Fact, Turn

REF = datetime(2024, 5, 10, 12, 0, tzinfo=UTC)


def _distinct_words(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(string.ascii_lowercase) for _ in range(8)) for _ in range(count)]


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _turn(index: int, text: str) -> Turn:
    return Turn(conversation_id="dump", user_id="alice", index=index, content=text,
                timestamp=REF - timedelta(minutes=10 - index))


def _lexical_hits(memory: AgentMemory, question: str) -> list[str]:
    bundle = memory.remember(question, user_id="alice", top_k=5, reference_time=REF, include_semantic=False,
                             recall={"vector_weight": 0.0})
    return [t.item.content for t in bundle.turns if t.signals.get("bm25") and t.signals["bm25"].value > 0]


def test_a_turn_of_distinct_words_past_a_tsvector_is_stored_whole_and_found_by_its_first_words(settings):
    words = _distinct_words(90_000, seed=1)
    dump = "Inventory dump: " + " ".join(words)
    assert len(dump.encode()) < 1024 * 1024  # under the default limits.max_turn_bytes
    with AgentMemory(settings(), user_id="alice") as memory:
        memory.store_turns([_turn(0, "Here is the warehouse export you asked for."), _turn(1, dump),
                            _turn(2, "Thanks, the ridge trail order is in there too.")])
        stored = memory._portal.run(memory.core.ctx.postgres.fetch(
            "SELECT turn_index, content FROM conversation_logs WHERE conversation_id = 'dump' ORDER BY turn_index"))
        # compared by length and digest: a failing comparison of the 810 KB texts is slow to report
        assert [(len(r["content"]), _digest(r["content"])) for r in stored][1] == (len(dump), _digest(dump))
        assert _lexical_hits(memory, f"Where is {words[10]}?")[0].startswith("Inventory dump: ")
        # the neighbours, whose context took in the dump's words, are found by their own
        assert _lexical_hits(memory, "Which trail order?")[0].startswith("Thanks, the ridge trail")
        assert _lexical_hits(memory, "the warehouse export")[0].startswith("Here is the warehouse export")


def test_a_question_and_a_fact_of_many_distinct_words_are_answered(settings):
    """With ``limits.max_text_bytes`` raised, a question or a fact claim may hold as many words as a turn."""
    words = _distinct_words(90_000, seed=2)
    text = " ".join(words)
    with AgentMemory(settings(limits={"max_text_bytes": 1024 * 1024}), user_id="alice") as memory:
        memory.store_turns([_turn(0, f"The ridge trail is closed; {words[5]} was the gate code.")])
        memory.learn_fact(Fact(user_id="alice", claim=f"The gate codes are {text}"))
        bundle = memory.remember(f"Which gate code? {text}", user_id="alice", top_k=5, reference_time=REF)
    assert bundle.turns[0].item.content.startswith("The ridge trail is closed")
