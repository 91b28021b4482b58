"""A turn that says the question's words in the question's order ("expired token error") is a better match than one
that has the same words scattered: BM25 counts words, not their order, so the ``phrase`` signal adds the share of the
question's consecutive word pairs (weighted by their words' rarity) that a turn's own words say at the question's
spacing. On the real servers, both graph backends."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from agentx_memory import AgentMemory, Turn
from agentx_memory.sql.search import SearchScope

REF = datetime(2024, 5, 10, 12, 0, tzinfo=UTC)
QUESTION = "When did I get the expired token error?"
IN_ORDER = "I got the expired token error right after the deploy."
SCATTERED = "Error: the token expired? A token, then an error."


def _turns(conversation: str, lines: list[str], days: int = 5) -> list[Turn]:
    return [Turn(conversation_id=conversation, user_id="alice", role="user", content=text,
                 timestamp=REF - timedelta(days=days, minutes=-i)) for i, text in enumerate(lines)]


def _ranked(memory: AgentMemory, question: str = QUESTION, recall: dict | None = None) -> list:
    return memory.remember(question, top_k=20, reference_time=REF, include_semantic=False, recall=recall).turns


def test_a_turn_that_says_the_questions_words_in_order_ranks_above_one_with_them_scattered(settings):
    with AgentMemory(settings(), user_id="alice") as memory:
        in_order = memory.store_turns(_turns("deploy", [IN_ORDER]))[0]
        scattered = memory.store_turns(_turns("ops", [SCATTERED], days=4))[0]
        memory.store_turns(_turns("noise", [f"Note {i}: groceries, laundry and the dentist." for i in range(20)], 9))

        without = _ranked(memory, recall={"phrase_weight": 0.0})
        assert [t.item.id for t in without[:2]] == [scattered.id, in_order.id]  # words alone favour the other turn
        assert all("phrase" not in t.signals for t in without)

        ranked = _ranked(memory)
        assert ranked[0].item.id == in_order.id
        phrase = {t.item.id: t.signals["phrase"].value for t in ranked if "phrase" in t.signals}
        # "get"/"got" share no stem, so the pair (get, expired) is missing; (expired, token) and (token, error) count
        assert 0.5 < phrase[in_order.id] < 1.0
        assert scattered.id not in phrase  # none of its pairs stand at the question's spacing


def test_the_turns_read_around_a_hit_get_the_same_phrase_score_as_candidates(settings):
    # Session expansion reads the turns around the best candidates with a statement of its own; a turn must score the
    # same whichever statement read it, or its rank would depend on how it was found.
    with AgentMemory(settings(), user_id="alice") as memory:
        hit, said, _ = memory.store_turns(_turns("deploy", ["The deploy failed on Monday.", IN_ORDER,
                                                           "We rolled back."]))
        search, scope = memory.core.ctx.sql.search, SearchScope(user_id="alice", channels=["_global"])
        vector = memory._portal.run(memory.core.ctx.embedder.embed([QUESTION], is_query=True))[0]
        candidates = memory._portal.run(search.candidates(scope, text=QUESTION, embedding=vector, lexical=True,
                                                          limit=10, exact=True))
        phrase = {r["turn_id"]: r["phrase"] for r in candidates}
        terms = dict(zip(candidates[0]["term_lexemes"], candidates[0]["term_weights"], strict=True))
        around = memory._portal.run(search.turns_around(
            scope, hits=[("deploy", hit.index)], span=2, exclude=[hit.id], terms=terms,
            average_length=candidates[0]["average_length"], embedding=vector, text=QUESTION))
        read = {r["turn_id"]: r["phrase"] for r in around}
        assert 0.5 < phrase[said.id] < 1.0 and read[said.id] == pytest.approx(phrase[said.id])
        without_text = memory._portal.run(search.turns_around(
            scope, hits=[("deploy", hit.index)], span=2, exclude=[], terms={}, average_length=1.0,
            embedding=vector))
        assert {r["phrase"] for r in without_text} == {0.0}  # no terms (the lexical leg off): no phrase either


@pytest.mark.parametrize("question", [
    "expired",  # one word: no pair
    "the and of",  # stopwords only
    "what's 'expired' <-> token & !error | (deploy):* ?",  # tsquery syntax is read as words, never as operators
    "expired\\ token'' error",
])
def test_any_question_is_searched_and_only_pairs_it_has_count(settings, question):
    with AgentMemory(settings(), user_id="alice") as memory:
        in_order = memory.store_turns(_turns("deploy", [IN_ORDER]))[0]
        ranked = _ranked(memory, question)
        phrase = {t.item.id: t.signals["phrase"].value for t in ranked if "phrase" in t.signals}
        if "token" in question and "error" in question:
            assert phrase.get(in_order.id, 0) > 0
        else:
            assert phrase == {}
