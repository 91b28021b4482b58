"""Conversation summaries (spec 000's episodic memory, issue 15) on both graph backends: written by consolidation
(extractive without an LLM, by the LLM through the real openai SDK and a local wire-format server otherwise), with
decisions, entities and tools, and found by similarity per user."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from agentx_memory import AgentMemory, Turn
from agentx_memory.bench.wire import Reply, WireServer, openai_completion
from agentx_memory.errors import NotFoundError
from agentx_memory.models import TITLE_CHARS, summary_title
from agentx_memory.summaries import conversation_title
from tests.conftest import gread

NOW = datetime.now(UTC)


def _say(memory: AgentMemory, conversation: str, *lines: str, user: str = "alice") -> None:
    start = NOW - timedelta(hours=2)
    memory.store_turns([Turn(conversation_id=conversation, user_id=user, role="user" if i % 2 == 0 else "assistant",
                             content=line, timestamp=start + timedelta(minutes=i), metadata={"speaker": "Sam"})
                        for i, line in enumerate(lines)])


def test_consolidation_summarizes_each_conversation_with_decisions_entities_and_tools(settings):
    s = settings(extraction={"extractor": "offline"}, worker={"consolidate_quiet_minutes": 0})
    with AgentMemory(s, user_id="alice") as memory:
        _say(memory, "trip", "I work at Lumen Labs.", "We are planning the hut trip in the Dolomites.",
             "The huts fill up early in summer.", "We decided to book Rifugio Lagazuoi for July.")
        for i, tool in enumerate(("search_huts", "search_huts", "book_hut")):
            memory.record_invocation("trip", None, tool, {}, {}, True, 10,
                                     timestamp=NOW - timedelta(hours=1) + timedelta(seconds=i))
        report = memory.consolidate(now=NOW)
        assert report.conversations[0]["summarized"] is True
        summary = memory.get_conversation_summary("trip")
        assert summary.method == "extractive" and summary.turn_count == 4
        assert "hut" in summary.summary.casefold()
        assert summary.key_decisions == ["We decided to book Rifugio Lagazuoi for July."]
        assert summary.tools_called == ["search_huts", "book_hut"]
        assert "Lumen Labs" in {e["name"] for e in summary.entities_mentioned}
        with pytest.raises(NotFoundError):
            memory.get_conversation_summary("never")
        with pytest.raises(NotFoundError):
            memory.summarize_conversation("never")


def test_similar_conversations_are_found_by_their_summaries_per_user(settings):
    with AgentMemory(settings(), user_id="alice") as memory:
        _say(memory, "boots", "I need new hiking boots for the Dolomites.", "Try the boots before the hike.")
        _say(memory, "bread", "How long should sourdough bread rise?", "Let the bread dough rise overnight.")
        _say(memory, "taxes", "When are the tax forms due?", "The tax forms are due in April.")
        _say(memory, "bob-bread", "Bob bakes sourdough bread daily.", "Bob's bread dough rises overnight.", user="bob")
        for conversation in ("boots", "bread", "taxes"):
            memory.summarize_conversation(conversation)
        memory.summarize_conversation("bob-bread", user_id="bob")
        found = memory.similar_conversations("sourdough bread dough", top_k=3)
        assert found[0]["summary"].conversation_id == "bread"
        assert len(found) == 3 and found[0]["similarity"] >= found[1]["similarity"]
        assert "bob-bread" not in {f["summary"].conversation_id for f in found}  # another user's
        assert [f["summary"].conversation_id for f in memory.similar_conversations(
            "sourdough bread dough", top_k=1, exclude=["bread"])] != ["bread"]
        again = memory.summarize_conversation("bread")  # summarized again: replaced, one row
        assert again.conversation_id == "bread" and again.updated_at >= again.created_at


def test_with_an_llm_the_summary_is_written_by_it(settings):
    answer = {"summary": "Alice planned a Dolomites hut trip and booked a hut.",
              "key_decisions": ["Book Rifugio Lagazuoi for July"]}
    with WireServer().running() as server:
        server.answer = lambda body: Reply(openai_completion(json.dumps(answer), input_tokens=80, output_tokens=30,
                                                             model=body["model"]))
        s = settings(llm={"query_model": "openai:gpt-4o-mini", "openai_base_url": server.url,
                          "openai_api_key": "test-key"})
        with AgentMemory(s, user_id="alice") as memory:
            _say(memory, "trip", "We are planning the hut trip.", "We decided to book Rifugio Lagazuoi for July.")
            summary = memory.summarize_conversation("trip")
            assert (summary.method, summary.summary, summary.key_decisions) == (
                "llm", answer["summary"], answer["key_decisions"])
            sent = server.requests[0].body
            assert "hut trip" in sent["messages"][-1]["content"]
            assert sent["response_format"]["type"] == "json_schema"


def test_summarizing_sets_the_conversations_title_from_the_summary(settings):
    """Issue 19: spec 003's Conversation.title is set (short, from the summary) when a conversation is summarized."""
    with AgentMemory(settings(), user_id="alice") as memory:
        _say(memory, "trip", "We are planning the hut trip in the Dolomites for July, with my sister and her friends.",
             "The huts fill up early in summer. Rifugio Lagazuoi is the first to go.")
        semantic = memory.core.semantic
        assert memory._portal.run(conversation_title(semantic, "trip", "alice")) == ""  # not summarized yet
        summary = memory.summarize_conversation("trip")
        title = memory._portal.run(conversation_title(semantic, "trip", "alice"))
        assert title and title == summary.title == memory.get_conversation_summary("trip").title
        assert len(title) <= TITLE_CHARS and "\n" not in title
        assert summary.summary.startswith(title.rstrip("…"))  # derived from the summary: its first sentence
        assert gread(memory, "MATCH (c:Conversation {id: 'trip'}) RETURN c.title AS t") == [{"t": title}]
        with pytest.raises(NotFoundError):
            memory._portal.run(conversation_title(semantic, "trip", "bob"))  # another user's conversation

    assert summary_title("Alice booked the hut. Then she left.") == "Alice booked the hut"
    long = summary_title("word " * 40)
    assert len(long) <= TITLE_CHARS and long.endswith("…") and not long[:-1].endswith(" ")
    assert summary_title("") == ""
