"""The context window (spec 004, issue 15): exact token counts, each prune strategy at its budget (fifo, extractive
and LLM summaries through the real openai SDK and a local wire-format server, semantic by the goal), oversized
messages refused."""

from __future__ import annotations

import pytest

from agentx_memory import AgentMemory, ContextWindow, ValidationError
from agentx_memory.bench.wire import Reply, WireServer, openai_completion
from agentx_memory.tokens import count_tokens

TALK = [
    ("user", "We are planning the hut trip in the Dolomites for July."),
    ("assistant", "The hut trip needs bookings: Rifugio Lagazuoi fills up by March."),
    ("user", "My sister wants to join the hut trip too."),
    ("assistant", "Then book the hut trip for three people."),
    ("user", "By the way, my car needs new tyres."),
    ("assistant", "Tyres for the car can wait until autumn."),
    ("user", "What about the train to Cortina?"),
    ("assistant", "The train stops at Calalzo; a bus goes on to Cortina."),
]


def _fill(window, talk=TALK) -> None:
    for role, content in talk:
        window.add_message(role, content)
        assert window.get_token_count() <= window.core.max_tokens  # never over its budget


def test_fifo_keeps_the_newest_messages_within_the_budget(settings):
    with AgentMemory(settings()) as memory:
        window = memory.context_window(60)
        _fill(window)
        kept = [m.content for m in window.messages]
        assert kept == [c for _, c in TALK[-len(kept):]] and 1 < len(kept) < len(TALK)  # the oldest went first
        assert window.get_token_count() == sum(count_tokens(f"{r}: {c}") for r, c in TALK[-len(kept):])
        newest = window.get_context(max_tokens=count_tokens("assistant: " + TALK[-1][1]))
        assert newest == [{"role": "assistant", "content": TALK[-1][1]}]
        with pytest.raises(ValidationError) as refused:
            window.add_message("user", "word " * 200)
        assert refused.value.field == "content" and "60" in str(refused.value)
        with pytest.raises(ValidationError):
            memory.context_window(100, strategy="lifo")
        window.clear()
        assert window.get_token_count() == 0 and not window.is_full()


def test_summarize_without_an_llm_keeps_the_recent_messages_and_an_extractive_summary(settings):
    with AgentMemory(settings()) as memory:
        window = memory.context_window(80, strategy="summarize", keep_recent=2)
        _fill(window)
        first = window.messages[0]
        assert first.summary and first.role == "system" and first.content.startswith("Summary of")
        assert "hut trip" in first.content  # what recurs most is kept
        assert [m.content for m in window.messages[-2:]] == [c for _, c in TALK[-2:]]
        assert window.get_token_count() <= 80


def test_summarize_with_an_llm_asks_it_through_the_providers_wire_format(settings):
    with WireServer().running() as server:
        server.answer = lambda body: Reply(openai_completion(
            "They plan a Dolomites hut trip in July for three.", input_tokens=50, output_tokens=12,
            model=body["model"]))
        s = settings(llm={"query_model": "openai:gpt-4o-mini", "openai_base_url": server.url,
                          "openai_api_key": "test-key"})
        with AgentMemory(s) as memory:
            window = memory.context_window(80, strategy="summarize", keep_recent=2)
            _fill(window)
            assert window.messages[0].content.endswith("They plan a Dolomites hut trip in July for three.")
            asked = server.requests[0].body
            assert asked["messages"][0]["content"].startswith("Summarize these earlier messages")
            assert "Rifugio Lagazuoi" in asked["messages"][-1]["content"]


def test_semantic_keeps_what_is_closest_to_the_goal(settings):
    with AgentMemory(settings()) as memory:
        window = memory.context_window(90, strategy="semantic", keep_recent=1, goal="car tyres")
        _fill(window)
        contents = [m.content for m in window.messages]
        assert contents[-1] == TALK[-1][1]  # the newest is always kept
        assert TALK[4][1] in contents or TALK[5][1] in contents  # the tyres survive although older
        assert window.get_token_count() <= 90
        order = [c for _, c in TALK]
        assert contents == sorted(contents, key=order.index)  # in their order


def test_the_defaults_are_seed_004s_a_4096_token_window_whose_summary_keeps_the_last_10(settings):
    """Issue 19: ContextWindow has clear(), holds 4,096 tokens by default, and summarize keeps the last 10 messages."""
    assert (ContextWindow().max_tokens, ContextWindow().keep_recent) == (4096, 10)
    with AgentMemory(settings()) as memory:
        window = memory.context_window(strategy="summarize")
        assert (window.core.max_tokens, window.core.keep_recent) == (4096, 10)
        added: list[str] = []
        while not window.messages or not window.messages[0].summary:  # until the first automatic prune
            added.append(f"Message {len(added)}: " + " ".join(f"note{len(added)}-{i}" for i in range(60)))
            window.add_message("user", added[-1])
            assert len(added) < 200
        assert sum(count_tokens(f"user: {c}") for c in added) > 4096  # it summarized because it was over 4,096
        assert [m.content for m in window.messages[1:]] == added[-10:]  # the summary, then the last 10 messages
        assert window.messages[0].content.startswith(f"Summary of {len(added) - 10} earlier messages")
        assert window.get_token_count() <= 4096

        window.clear()
        assert window.messages == [] and window.get_token_count() == 0
        for content in added[:12]:  # under the budget: an explicit summarize still keeps exactly the last 10
            window.add_message("assistant", content)
        window.prune("summarize")
        assert [m.content for m in window.messages[1:]] == added[2:12] and window.messages[0].summary
