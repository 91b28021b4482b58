"""Which turns state a standing instruction or preference of the user, and the signal that lifts them."""

from __future__ import annotations

import pytest

from agentx_memory.retrieval import rerank
from agentx_memory.retrieval.query import asks_for_help
from agentx_memory.retrieval.standing import HEAD_CHARS, standing_kind
from tests.unit.test_rerank import RECALL, row


@pytest.mark.parametrize("text", [
    "Always include the API endpoint path when I ask about available endpoints.",
    "User: Always use 24-hour time format when I ask about meeting schedules.",
    "Thanks! Please always answer in French.",
    "Never use emojis in your replies.",
    "From now on, keep summaries under five lines.",
    "Can you include the release dates whenever I ask about software updates?",
])
def test_rules_for_later_questions_are_instructions(text):
    assert standing_kind(text) == "instruction"


@pytest.mark.parametrize("text", [
    "I prefer containerization early in my development process to ensure environment parity.",
    "User: I'm designing an API, and I'd rather use OAuth 2.0 PKCE for public clients.",
    "I prioritize battery life and portability over the highest-end graphics card.",
    "Caroline: My preference is a quiet place by the sea.",
])
def test_stated_tastes_are_preferences(text):
    assert standing_kind(text) == "preference"


@pytest.mark.parametrize("text", [
    "I'm trying to parse a PDF file and get a UnicodeDecodeError.",
    "She always walks her dog in the morning.",  # "always" inside a sentence about someone's habit
    "What do you prefer for dinner?",  # a question to the other side, not the user's taste
    "",
])
def test_ordinary_turns_state_nothing_standing(text):
    assert standing_kind(text) is None


def test_only_the_opening_of_a_long_turn_is_read():
    assert standing_kind("x" * HEAD_CHARS + " Always answer in French.") is None
    assert standing_kind("Always answer in French. " + "x" * 100_000) == "instruction"


def test_a_users_standing_turn_gets_its_relevance_again_and_outranks_an_equal_match():
    recall = RECALL.model_copy(update={"standing_weight": 0.5})
    rows = {"rule": row("rule", index=0, content="Always include logging details when I ask about matcher failures."),
            "plain": row("plain", conversation="c2", index=0, content="The matcher failed again on two resumes."),
            "said": row("said", conversation="c3", index=0, role="assistant",
                        content="Always check the matcher patterns first.")}
    legs = {i: {"lexical": 0.4} for i in rows}
    drafts = rerank.TurnSignals(rows, legs, recall, 0.3, standing=True).drafts()
    assert drafts["rule"].signals["standing"][:2] == (pytest.approx(0.4), pytest.approx(0.3 * 0.5))
    assert drafts["rule"].score > drafts["plain"].score
    assert "standing" not in drafts["plain"].signals
    assert "standing" not in drafts["said"].signals  # the assistant's advice is not the user's rule
    off = rerank.TurnSignals(rows, legs, RECALL.model_copy(update={"standing_weight": 0.0}), 0.3,
                             standing=True).drafts()
    assert "standing" not in off["rule"].signals
    not_asked = rerank.TurnSignals(rows, legs, recall, 0.3).drafts()  # the question asks for no help
    assert "standing" not in not_asked["rule"].signals
    unmatched = rerank.TurnSignals(rows, {i: {"lexical": 0.0} for i in rows}, recall, 0.3, standing=True).drafts()
    assert "standing" not in unmatched["rule"].signals  # a rule off the question's topic is not lifted


@pytest.mark.parametrize("question", [
    "How should I configure the Docker Compose file for the app and the database?",
    "How can I manage errors that happen during asynchronous operations?",
    "What approaches would you suggest for managing events across servers?",
    "Can you show me the available options for the API?",
    "Which version of the SDK should I use to stay compatible?",
    "What are some effective strategies I can use to speed up my API?",
    "Help me write the equation of a line through (3, 4).",
])
def test_requests_for_help_or_advice(question):
    assert asks_for_help(question)


@pytest.mark.parametrize("question", [
    "How many days passed between booking the hotel and checking in?",
    "Have I ever deployed applications on AWS Fargate?",
    "What deadline did I set for the first deployment?",
    "How did you recommend structuring the backend?",  # about what was recommended then
    "What advice does Caroline give about adoption?",  # about the conversation, no one asks for it
    "When did Melanie paint a sunrise?",
    "Can you give me a summary of the main points we covered about my project?",  # recounts the conversation
    "Can you list the order in which I brought up the features, in order?",
])
def test_questions_about_what_was_said_or_done_are_not_requests(question):
    assert not asks_for_help(question)
