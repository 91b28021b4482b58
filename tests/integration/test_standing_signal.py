"""A user's standing instruction or preference ("Always include the random seed when I ask about reproducibility",
"I prefer …") holds for every later question on its topic, though it says the topic's words once: recall lifts such a
turn in proportion to its own relevance (``recall.standing_weight``), so it ranks above turns that only discuss the
topic, and a rule on another topic stays where its words put it. On the real servers, both graph backends."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from agentx_memory import AgentMemory, Turn

REF = datetime(2024, 5, 10, 12, 0, tzinfo=UTC)
QUESTION = "How should I set up the evaluation so that runs are reproducible?"
RULE = "Always include the random seed value when I ask about evaluation reproducibility."
OTHER_RULE = "Always use 24-hour time when I ask about meeting schedules."
DISCUSSION = [
    "The evaluation numbers moved between two runs, which worries me for the report.",
    "Reproducible builds need pinned library versions and a lock file.",
    "I keep a spreadsheet of evaluation runs with their dates and the data split they used.",
]


def _store(memory: AgentMemory) -> dict[str, str]:
    lines = [OTHER_RULE, RULE, *DISCUSSION, *(f"Note {i}: groceries, laundry and the dentist." for i in range(12))]
    turns = memory.store_turns([
        Turn(conversation_id=f"c{i}", user_id="alice", role="user", content=text,
             timestamp=REF - timedelta(days=30 - i)) for i, text in enumerate(lines)])
    return {t.content: t.id for t in turns}


def _ranked(memory: AgentMemory, recall: dict | None = None) -> list:
    return memory.remember(QUESTION, top_k=10, reference_time=REF, include_semantic=False, recall=recall).turns


def test_a_standing_instruction_on_the_questions_topic_outranks_turns_that_discuss_it(settings):
    with AgentMemory(settings(), user_id="alice") as memory:
        ids = _store(memory)
        without = [t.item.id for t in _ranked(memory, {"standing_weight": 0.0})]
        ranked = _ranked(memory, {"standing_weight": 1.0})
        order = [t.item.id for t in ranked]
        assert without.index(ids[RULE]) > 0  # by its words alone, a turn of the discussion comes first
        assert order[0] == ids[RULE]
        rule = ranked[0]
        legs = rule.signals["bm25"].contribution + rule.signals["vector"].contribution
        assert rule.signals["standing"].contribution == pytest.approx(legs)  # weight 1: all of its own relevance again
        assert "instruction" in rule.signals["standing"].detail
        assert {t.item.id for t in ranked if "standing" in t.signals} <= {ids[RULE], ids[OTHER_RULE]}
        # the rule for meeting schedules is no answer here: its lift is in proportion to its own small relevance
        assert ids[OTHER_RULE] not in order[:4]


def test_by_default_a_request_puts_the_rule_first_and_a_question_about_the_past_lifts_nothing(settings):
    with AgentMemory(settings(), user_id="alice") as memory:
        ids = _store(memory)
        assert _ranked(memory)[0].item.id == ids[RULE]  # recall.standing_weight is on by default
        asked = memory.remember("What did I say about the evaluation runs and their reproducibility?", top_k=10,
                                reference_time=REF, include_semantic=False).turns
        assert all("standing" not in t.signals for t in asked)  # a question about what was said, not a request
