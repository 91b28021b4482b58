"""The offline rules store what the speaker says holds, not what they want to make sure of, wonder about or suppose:
in user–assistant chats most "my X is Y" forms sit in such clauses (in BEAM's dev chats 125 of the 176 matches of
that rule)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from agentx_memory.extraction.offline import BatchTurn, OfflineExtractor
from agentx_memory.models import Turn


def _claims(text: str) -> list[str]:
    turn = Turn(conversation_id="c", user_id="u", role="user", content=text,
                timestamp=datetime(2026, 11, 15, 8, tzinfo=UTC))
    return [f["claim"] for f in OfflineExtractor().extract([BatchTurn("t1", turn, "the user", text)]).facts]


@pytest.mark.parametrize("text", [
    "I want to make sure my code is secure and efficient.",
    "However, I'm not sure if my implementation is correct.",
    "How can I ensure that my database is properly configured for data storage?",
    "I need to verify if my approach is correct.",
    "The error occurs when my app is deployed to staging.",
    "I'm not sure if I like hiking.",
    "If I live in Lisbon next year, the commute gets shorter.",
    "I wonder whether I'm a good fit for the team.",
])
def test_a_wished_checked_or_supposed_statement_is_no_fact(text):
    assert _claims(text) == []


@pytest.mark.parametrize(("text", "claim"), [
    ("My app is currently running on port 3000.", "the user's app is currently running on port 3000."),
    ("I told you that my name is Sam.", "the user's name is Sam."),
    ("I live in Lisbon now.", "the user lives in Lisbon."),
    ("I really love hiking.", "the user loves hiking."),
    ("When I moved to Porto, I knew nobody.", "the user lives in Porto."),  # a move said in passing still holds
    # a hedge further back belongs to another clause
    ("Explain why the chain rule works when x is negative, I prefer step-by-step explanations.",
     "the user prefers step-by-step explanations."),
])
def test_a_plain_statement_is_still_a_fact(text, claim):
    assert claim in _claims(text)


def test_a_family_member_named_in_a_supposition_still_is_one():
    assert "Lena is the user's sister." in _claims("If my sister Lena visits, we will hike.")
