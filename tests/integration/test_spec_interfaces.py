"""Spec 003's named interfaces (issue 19), thin public methods over the engine's own paths, on both graph backends:
``EpisodicMemory.store_turn_log`` and ``vector_search``, ``SemanticMemory.vector_search_facts`` and
``vector_search_entities``, ``MemoryRetriever.retrieve``. docs/spec-interfaces.md lists every interface of spec 003."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from agentx_memory import Entity, Fact, Goal, MemoryBundle, Turn
from agentx_memory.errors import ValidationError
from agentx_memory.sql.conversation_log import projected
from tests.conftest import gread, sql

NOW = datetime.now(UTC)


def _vector(memory, text: str) -> list[float]:
    return memory._portal.run(memory.core.ctx.embedder.embed_documents([text]))[0].tolist()


def test_store_turn_log_writes_the_durable_log_only_and_reconcile_projects_it(memory):
    episodic = memory.core.episodic
    logged = memory._portal.run(episodic.store_turn_log(Turn(conversation_id="c1", user_id="alice",
                                                             content="I bought hiking boots"), "proj"))
    assert logged.index == 0 and logged.channel == "proj" and logged.pending_projection
    rows = sql(memory, f"SELECT turn_id, {projected()}, embedding IS NOT NULL AS embedded FROM conversation_logs")
    assert rows == [{"turn_id": logged.id, "projected": False, "embedded": True}]
    assert gread(memory, "MATCH (t:Turn) RETURN t.id AS id") == []  # the graph is store_turn's
    again = memory._portal.run(episodic.store_turn_log(logged))  # the same turn again: a no-op
    assert again.id == logged.id and len(sql(memory, "SELECT 1 FROM conversation_logs")) == 1
    assert memory.reconcile().projected == 1
    assert gread(memory, "MATCH (t:Turn) RETURN t.id AS id") == [{"id": logged.id}]
    with pytest.raises(ValidationError) as refused:
        memory._portal.run(episodic.store_turn_log(Turn(conversation_id="c1", user_id="alice", content="")))
    assert refused.value.field == "content"


def test_episodic_vector_search_ranks_the_users_turns_by_cosine_in_channels_and_time(memory):
    episodic = memory.core.episodic
    boots = memory.store_turn(Turn(conversation_id="a", user_id="alice", content="I need new hiking boots"))
    memory.store_turn(Turn(conversation_id="b", user_id="alice", content="The tax forms are due in April"))
    project = memory.store_turn(Turn(conversation_id="c", user_id="alice", content="hiking boots for the project"),
                                "proj")
    old = memory.store_turn(Turn(conversation_id="d", user_id="alice", content="old hiking boots story",
                                 timestamp=NOW - timedelta(days=10)))
    memory.store_turn(Turn(conversation_id="e", user_id="bob", content="I need new hiking boots"))

    found = memory._portal.run(episodic.vector_search(_vector(memory, "I need new hiking boots"), 3, "alice"))
    assert found[0]["turn"].id == boots.id and found[0]["similarity"] == pytest.approx(1.0, abs=1e-4)
    assert len(found) == 3 and [f["similarity"] for f in found] == sorted((f["similarity"] for f in found),
                                                                            reverse=True)
    assert {f["turn"].user_id for f in found} == {"alice"} and project.id not in {f["turn"].id for f in found}
    both = memory._portal.run(episodic.vector_search(_vector(memory, "hiking boots"), 10, "alice", ["proj"]))
    assert project.id in {f["turn"].id for f in both} and len(both) == 4
    recent = memory._portal.run(episodic.vector_search(_vector(memory, "hiking boots"), 10, "alice", None, 24))
    assert old.id not in {f["turn"].id for f in recent} and boots.id in {f["turn"].id for f in recent}
    for args, field in (((0, "alice"), "top_k"), ((3, "alice", None, 0), "time_window_hours")):
        with pytest.raises(ValidationError) as refused:
            memory._portal.run(episodic.vector_search(_vector(memory, "x"), *args))
        assert refused.value.field == field
    with pytest.raises(ValidationError) as refused:
        memory._portal.run(episodic.vector_search([1.0, 2.0], 3, "alice"))
    assert refused.value.field == "query_embedding"


def test_semantic_vector_searches_filter_by_confidence_and_channels(memory):
    semantic = memory.core.semantic
    sure = memory.learn_fact(Fact(user_id="alice", claim="Sam lives in Lisbon", confidence=0.95))
    unsure = memory.learn_fact(Fact(user_id="alice", claim="Sam lives in Lisbon maybe", confidence=0.3))
    project = memory.learn_fact(Fact(user_id="alice", claim="Sam lives in Lisbon for the project", confidence=0.9),
                                "proj")
    memory.learn_fact(Fact(user_id="bob", claim="Sam lives in Lisbon", confidence=0.95))
    query = _vector(memory, "Sam lives in Lisbon")

    found = memory._portal.run(semantic.vector_search_facts(query, 5, "alice"))
    assert [f["fact"].id for f in found][:1] == [sure.id] and {f["fact"].id for f in found} == {sure.id, unsure.id}
    assert found[0]["similarity"] == pytest.approx(1.0, abs=1e-4)
    confident = memory._portal.run(semantic.vector_search_facts(query, 5, "alice", ["proj"], min_confidence=0.5))
    assert {f["fact"].id for f in confident} == {sure.id, project.id}
    assert all(f["fact"].confidence >= 0.5 for f in confident)
    assert [f["fact"].id for f in memory._portal.run(semantic.vector_search_facts(query, 1, "alice", None, 0.9))] == [
        sure.id]
    with pytest.raises(ValidationError) as refused:
        memory._portal.run(semantic.vector_search_facts(query, 5, "alice", None, 1.5))
    assert refused.value.field == "min_confidence"

    lisbon = memory.upsert_entity(Entity(user_id="alice", name="Lisbon", type="place"))
    # a fact found comes with the entities it is about, as stored (it came with none before)
    about = memory.learn_fact(Fact(user_id="alice", claim="Sam moved to Lisbon in May", entity_ids=[lisbon.id]))
    moved = memory._portal.run(semantic.vector_search_facts(_vector(memory, "Sam moved to Lisbon in May"), 5, "alice"))
    assert moved[0]["fact"].id == about.id and moved[0]["fact"].entity_ids == [lisbon.id]
    assert all(f["fact"].entity_ids == [] for f in moved[1:])
    memory.upsert_entity(Entity(user_id="alice", name="Tax office", type="organization"))
    porto = memory.upsert_entity(Entity(user_id="alice", name="Lisbon", type="place"), "proj")
    entities = memory._portal.run(semantic.vector_search_entities(_vector(memory, "Lisbon"), 1, "alice"))
    assert [e["entity"].id for e in entities] == [lisbon.id] and entities[0]["similarity"] > 0.9
    both = memory._portal.run(semantic.vector_search_entities(_vector(memory, "Lisbon"), 5, "alice", ["proj"]))
    assert {lisbon.id, porto.id} <= {e["entity"].id for e in both}
    with pytest.raises(ValidationError) as refused:
        memory._portal.run(semantic.vector_search_entities(query, 0, "alice"))
    assert refused.value.field == "top_k"


def test_memory_retriever_retrieve_returns_a_bundle_with_goals_and_profile(memory):
    retriever = memory.core.recall.retriever
    memory.store_turn(Turn(conversation_id="trip", user_id="alice", content="Sam told me he moved to Lisbon"))
    memory.learn_fact(Fact(user_id="alice", claim="Sam lives in Lisbon", confidence=0.9), "proj")
    memory.learn_strategy("Ask Sam for the address before visiting Lisbon")
    goal = memory.add_goal(Goal(user_id="alice", description="Visit Sam in Lisbon"))
    memory.update_profile(preferences={"units": "metric"})

    bundle = memory._portal.run(retriever.retrieve("Where does Sam live?", "alice", ["proj"], 5))
    assert isinstance(bundle, MemoryBundle) and bundle.channels == ["proj", "_global"]
    assert "Sam lives in Lisbon" in {f.item.claim for f in bundle.facts}
    assert bundle.turns and bundle.turns[0].item.conversation_id == "trip"
    assert bundle.strategies and [g.id for g in bundle.goals] == [goal.id]
    assert bundle.user_context is not None and bundle.user_context.preferences == {"units": "metric"}
    assert "Sam lives in Lisbon" in bundle.to_prompt(500)

    only_global = memory._portal.run(retriever.retrieve("Where does Sam live?", "alice"))
    assert only_global.channels == ["_global"] and not only_global.facts  # the fact is in "proj"
    narrow = memory._portal.run(retriever.retrieve("Where does Sam live?", "alice", ["proj"], 5,
                                                   include_episodic=False, include_semantic=True,
                                                   include_procedural=False))
    assert not narrow.turns and not narrow.strategies and narrow.facts
    later = memory._portal.run(retriever.retrieve("Where does Sam live?", "alice", ["proj"], 5,
                                                  time_window_hours=1, reference_time=NOW + timedelta(days=3)))
    assert not later.turns  # the turn is older than the window
    for kwargs, field in (({"top_k": 0}, "top_k"), ({"time_window_hours": -1}, "time_window_hours")):
        with pytest.raises(ValidationError) as refused:
            memory._portal.run(retriever.retrieve("Where does Sam live?", "alice", **kwargs))
        assert refused.value.field == field
