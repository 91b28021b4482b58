"""A user who says the same thing again and again still gets ``top_k`` different turns back.

Recall returns one turn per text (the copies of a text are one memory), so when a user's nearest turns are copies of
one message ("Can you summarize what we discussed?" asked every week) the search must look past them: a candidate list
of the same text over and over collapses to one turn, and the rest of the answer would be missing.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from agentx_memory import AgentMemory, Turn
from agentx_memory.bench.scale.config import HYBRID_ONLY, VECTOR_ONLY

REF = datetime(2024, 6, 1, 12, 0, tzinfo=UTC)
REPEATED = "Can you summarize what we discussed about the incident postmortem?"
TOPICS = ["database failover", "pager rotation", "incident timeline", "postmortem template", "root cause of the outage",
          "summary of the rollback", "alert thresholds", "on-call handover", "status page update", "customer email",
          "capacity review", "load test results", "runbook for the cache", "deploy freeze", "error budget"]


def _store(memory: AgentMemory, copies: int, topics: list[str]) -> None:
    """``copies`` of the repeated question (more than a leg's 70 candidates) in their own conversations, with
    differently cased and padded copies among them, then one turn on each of ``topics``."""
    memory.store_turns([
        Turn(conversation_id=f"weekly-{i}", user_id="alice", timestamp=REF - timedelta(days=200 - i),
             content=(f"  {REPEATED.upper()} " if i % 10 == 3 else REPEATED))
        for i in range(copies)])
    if topics:
        memory.store_turns([
            Turn(conversation_id="notes", user_id="alice", timestamp=REF - timedelta(days=5, minutes=-i),
                 content=f"We discussed the {topic} in the incident postmortem meeting")
            for i, topic in enumerate(topics)])


def _contents(bundle) -> list[str]:
    return [t.item.content.strip().casefold() for t in bundle.turns]


@pytest.mark.parametrize("recall", [VECTOR_ONLY, HYBRID_ONLY, None], ids=["vector", "hybrid", "full"])
@pytest.mark.parametrize("index", [False, True], ids=["exact", "hnsw"])
def test_copies_of_one_text_do_not_crowd_out_the_rest(settings, recall, index):
    overrides = {"retrieval": {"exact_scan_max_vectors": 0}} if index else {}
    with AgentMemory(settings(**overrides), user_id="alice") as memory:
        _store(memory, 90, TOPICS)
        bundle = memory.remember("summarize what we discussed about the incident postmortem", top_k=10,
                                 reference_time=REF, recall=recall, include_semantic=False,
                                 include_procedural=False)
    contents = _contents(bundle)
    assert len(contents) == 10, f"{len(contents)} turns for top_k=10: {contents}"
    assert len(set(contents)) == 10, contents
    assert REPEATED.casefold() in contents  # the repeated question itself is one of them, once


def test_a_user_with_only_copies_gets_one_turn(settings):
    """Looking past the copies never invents variety: 90 copies and nothing else are one turn."""
    with AgentMemory(settings(), user_id="alice") as memory:
        _store(memory, 90, [])
        bundle = memory.remember("the incident postmortem", top_k=10, reference_time=REF, recall=VECTOR_ONLY,
                                 include_semantic=False, include_procedural=False)
    assert _contents(bundle) == [REPEATED.casefold()]


def test_the_plain_vector_search_returns_copies_like_any_other_turns(settings):
    """``EpisodicMemory.vector_search`` is the nearest turns, not recall: ten copies come back as ten turns."""
    with AgentMemory(settings(), user_id="alice") as memory:
        _store(memory, 90, TOPICS)
        core = memory.core
        vector = memory._portal.run(core.ctx.embedder.embed([REPEATED], is_query=True))[0]
        hits = memory._portal.run(core.episodic.vector_search(vector.tolist(), 10, "alice"))
    assert len(hits) == 10
    assert {h["turn"].content.strip().casefold() for h in hits} == {REPEATED.casefold()}
