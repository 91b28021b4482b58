"""memory_timeline carries each memory's vector, counts recall's accesses and honours archiving (issue 19)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from agentx_memory import Entity, Fact, Goal, Turn
from agentx_memory.errors import ValidationError


def sql(memory, query, params=()):
    return memory._portal.run(memory.core.ctx.postgres.fetch(query, params))


def stored_vector(memory, node_id) -> np.ndarray:
    row = sql(memory, "SELECT embedding FROM memory_timeline WHERE neo4j_node_id = %s", (node_id,))[0]
    return np.asarray(row["embedding"], dtype=np.float32)


def embed(memory, text) -> np.ndarray:
    return memory._portal.run(memory.core.ctx.embedder.embed_documents([text]))[0]


def test_facts_entities_and_goals_carry_their_graph_vector_without_a_second_embedding(memory, monkeypatch):
    embedder = memory.core.ctx.embedder
    calls = []
    original = embedder.embed_documents

    async def counting(texts):
        calls.append(list(texts))
        return await original(texts)

    monkeypatch.setattr(embedder, "embed_documents", counting)
    place = memory.upsert_entity(Entity(user_id="alice", name="Lisbon", type="city", description="capital"))
    fact = memory.learn_fact(Fact(user_id="alice", claim="Alice lives in Lisbon", entity_ids=[place.id]))
    goal = memory.add_goal(Goal(user_id="alice", description="Move to Porto"))
    assert len(calls) == 3  # one per memory: the timeline reuses the graph write's vector
    np.testing.assert_allclose(stored_vector(memory, place.id), embed(memory, "Lisbon: capital"), atol=1e-6)
    np.testing.assert_allclose(stored_vector(memory, fact.id), embed(memory, "Alice lives in Lisbon"), atol=1e-6)
    np.testing.assert_allclose(stored_vector(memory, goal.id), embed(memory, "Move to Porto"), atol=1e-6)
    entries = {e["node_id"]: e for e in memory.timeline()}
    assert all(entries[i]["has_embedding"] for i in (place.id, fact.id, goal.id))

    # re-learning the fact with a new claim refreshes the row's vector with the summary
    memory.learn_fact(Fact(id=fact.id, user_id="alice", claim="Alice lives in Porto now"))
    np.testing.assert_allclose(stored_vector(memory, fact.id), embed(memory, "Alice lives in Porto now"), atol=1e-6)


def test_recall_counts_accesses_on_the_timeline(memory):
    place = memory.upsert_entity(Entity(user_id="alice", name="Lisbon", type="city"))
    fact = memory.learn_fact(Fact(user_id="alice", claim="Alice lives in Lisbon", entity_ids=[place.id]))
    other = memory.learn_fact(Fact(user_id="bob", claim="Bob lives in Lisbon"))
    before = {e["node_id"]: e for e in memory.timeline(memory_types=["fact", "entity"])}
    assert before[fact.id]["access_count"] == 0 and before[fact.id]["last_accessed"] is None

    started = datetime.now(UTC)
    bundle = memory.remember("Where does Alice live? Lisbon")
    memory.drain()
    assert fact.id in {f.id for f in bundle.facts}
    after = {e["node_id"]: e for e in memory.timeline(memory_types=["fact", "entity"])}
    assert after[fact.id]["access_count"] == 1 and after[fact.id]["last_accessed"] >= started - timedelta(seconds=1)
    if place.id in {e.id for e in bundle.entities}:
        assert after[place.id]["access_count"] == 1
    memory.remember("Where does Alice live? Lisbon")
    memory.drain()
    assert {e["node_id"]: e for e in memory.timeline()}[fact.id]["access_count"] == 2
    # the graph counted the same accesses; another user's row is untouched
    assert memory.get_fact(fact.id).access_count == 2
    assert memory.timeline("bob")[0]["node_id"] == other.id and memory.timeline("bob")[0]["access_count"] == 0


def test_timeline_filters_and_checks_its_arguments(memory):
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    memory.store_turns([Turn(conversation_id="c1", user_id="alice", content=f"turn {i}",
                             timestamp=t0 + timedelta(days=i)) for i in range(3)])
    memory.learn_fact(Fact(user_id="alice", claim="Alice likes tea"), channel="proj")
    turns = memory.timeline(memory_types=["episodic"])
    assert [e["summary"] for e in turns] == ["turn 2", "turn 1", "turn 0"]  # newest first
    window = memory.timeline(since=t0 + timedelta(days=1), until=t0 + timedelta(days=2), memory_types=["episodic"])
    assert [e["summary"] for e in window] == ["turn 1"]
    assert len(memory.timeline(limit=1)) == 1
    assert [e["summary"] for e in memory.timeline(channels=["proj"])] == ["Alice likes tea"]
    assert memory.timeline("bob") == []
    for kwargs, field in (({"limit": 0}, "limit"), ({"memory_types": ["nope"]}, "memory_types"),
                          ({"memory_types": "fact"}, "memory_types"), ({"channels": ["Bad Channel"]}, "channels"),
                          ({"since": "yesterday"}, "since")):
        with pytest.raises(ValidationError) as raised:
            memory.timeline(**kwargs)
        assert raised.value.field == field


def test_archiving_marks_the_turns_timeline_rows_and_undo_clears_them(memory):
    now = datetime.now(UTC)
    memory.store_turns([Turn(conversation_id="old", user_id="alice", content="an old turn",
                             timestamp=now - timedelta(days=200))])
    memory.store_turns([Turn(conversation_id="new", user_id="alice", content="a new turn")])
    report = memory.archive_conversations(now=now)
    assert report.conversations_archived == 1
    assert [e["summary"] for e in memory.timeline(memory_types=["episodic"])] == ["a new turn"]
    everything = memory.timeline(memory_types=["episodic"], include_archived=True)
    assert [(e["summary"], e["archived"]) for e in everything] == [("a new turn", False), ("an old turn", True)]
    memory.undo_run(report.run_id)
    assert [e["archived"] for e in memory.timeline(memory_types=["episodic"])] == [False, False]
