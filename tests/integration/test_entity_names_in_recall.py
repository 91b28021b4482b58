"""A question that calls an entity by one of its names also finds the turns that call it by the others.

People call one another by nicknames and first names; the turns say "Robert", the question says "Bob". Once the
entity is known (name "Robert Hale", alias "Bob"), recall resolves the question's names to it and its lexical legs
search the names the question does not say too.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from agentx_memory import AgentMemory, Entity, Turn

REF = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
ANSWER = "Robert said the release slips a week because the firmware is late."
OTHERS = [
    "Carol says the launch party needs a bigger venue, what would you say?",
    "The launch checklist says to freeze the API on Monday before we launch.",
    "Dana wants to say a few words at the launch, she says it matters to the team.",
    "What do you say we launch on a Tuesday instead of the Friday launch?",
    "I made soup for dinner and watched a film about a rocket launch.",
]


def _store(memory: AgentMemory, user_id: str) -> None:
    memory.store_turns([
        Turn(conversation_id=f"{user_id}-c{i}", user_id=user_id, timestamp=REF - timedelta(days=10 - i),
             content=text)
        for i, text in enumerate([ANSWER, *OTHERS])])


def test_a_nickname_finds_the_turn_that_uses_the_full_name(settings):
    with AgentMemory(settings(), user_id="alice") as memory:
        _store(memory, "alice")
        memory.upsert_entity(Entity(user_id="alice", name="Robert Hale", type="person", aliases=["Bob"]))
        bundle = memory.remember("What did Bob say about the launch?", top_k=3, reference_time=REF)
        unaware = memory.remember("What did Bob say about the launch?", top_k=3, reference_time=REF,
                                  recall={"entity_centric": False})
    assert bundle.turns[0].item.content == ANSWER, [t.item.content for t in bundle.turns]
    assert bundle.metrics.techniques["entity_centric"].detail["also_searched"] == ["Robert Hale"]
    # the entity found by its alias is still one of the entities recalled
    assert "Robert Hale" in [e.item.name for e in bundle.entities]
    # with the technique off the question searches its own words only, and the turn is not first
    assert unaware.turns[0].item.content != ANSWER
    assert "entity_centric" not in unaware.metrics.techniques


def test_another_users_entity_never_widens_the_question(settings):
    """Only the asking user's entities resolve: mallory's "Bob" (another Robert) adds nothing to alice's search."""
    s = settings()
    with AgentMemory(s, user_id="mallory") as mallory:
        mallory.upsert_entity(Entity(user_id="mallory", name="Robert Hale", type="person", aliases=["Bob"]))
    with AgentMemory(s, user_id="alice") as memory:
        _store(memory, "alice")
        bundle = memory.remember("What did Bob say about the launch?", top_k=3, reference_time=REF)
    assert "also_searched" not in bundle.metrics.techniques["entity_centric"].detail
    assert bundle.turns[0].item.content != ANSWER
    assert bundle.entities == [] or all(e.item.user_id == "alice" for e in bundle.entities)


def test_a_recall_of_strategies_only_resolves_no_names(settings):
    """Resolved names serve the turns' and the entities' searches: a recall that asks for neither resolves none
    (its metrics name no entity-centric step), one that asks for facts does."""
    with AgentMemory(settings(), user_id="alice") as memory:
        memory.upsert_entity(Entity(user_id="alice", name="Robert Hale", type="person", aliases=["Bob"]))
        procedural = memory.remember("How did Bob deploy the launch?", top_k=3, reference_time=REF,
                                     include_episodic=False, include_semantic=False)
        semantic = memory.remember("How did Bob deploy the launch?", top_k=3, reference_time=REF,
                                   include_episodic=False)
    assert "entity_centric" not in procedural.metrics.techniques
    assert procedural.turns == [] and procedural.entities == [] and procedural.facts == []
    assert "entity_centric" in semantic.metrics.techniques
    assert "Robert Hale" in [e.item.name for e in semantic.entities]
