"""Facts lift the turns they were derived from by how well they match the question, on the real servers: facts about
the user that do not answer the question must not push their turns above the turn that does (the defect: every
recalled fact lent half its whole score, graph and tag boosts included, so turn recall fell with facts on)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from agentx_memory import Entity, Fact, Turn

REF = datetime(2024, 5, 10, 12, 0, tzinfo=UTC)
LINES = [
    "I started a new job as a nurse at the Leeds hospital.",
    "My sister Jo moved to Canada last winter.",
    "I finally adopted a beagle puppy, his name is Rex.",
    "Work has been busy with night shifts lately.",
    "I want to learn to cook Thai food this year.",
]


def _world(memory):
    turns = memory.store_turns([
        Turn(conversation_id="life", user_id="alice", timestamp=REF - timedelta(days=10, minutes=-i), content=text,
             metadata={"speaker": "Alice"})
        for i, text in enumerate(LINES)])
    alice = memory.upsert_entity(Entity(user_id="alice", name="Alice", type="person", description="the user"))
    memory.learn_facts([
        Fact(user_id="alice", claim=claim, entity_ids=[alice.id], source_turn_id=turns[i].id, temporal="current")
        for claim, i in [("Alice works as a nurse in Leeds", 0), ("Alice's sister Jo lives in Canada", 1),
                         ("Alice works night shifts", 3), ("Alice wants to learn to cook Thai food", 4)]])
    return turns


def test_facts_that_do_not_answer_never_lift_their_turns_above_the_answer(memory):
    turns = _world(memory)
    question = "What is the name of Alice's dog?"
    without = memory.remember(question, top_k=5, reference_time=REF, include_semantic=False)
    assert without.turns[0].item.id == turns[2].id  # the engine finds it without facts
    bundle = memory.remember(question, top_k=5, reference_time=REF)
    assert len(bundle.facts) >= 3  # the facts about Alice are recalled (her name matches) ...
    assert bundle.turns[0].item.id == turns[2].id, [t.item.content for t in bundle.turns]  # ... and lend little
    lent = {t.item.id: t.signals["fact"] for t in bundle.turns if "fact" in t.signals}
    assert lent and all(s.contribution < bundle.turns[0].score / 2 for s in lent.values())


def test_the_fact_that_matches_lifts_its_turn_and_explains_it(memory):
    turns = _world(memory)
    bundle = memory.remember("Where does Alice's sister live?", top_k=5, reference_time=REF)
    top = bundle.turns[0]
    assert top.item.id == turns[1].id
    fact = next(f for f in bundle.facts if f.item.source_turn_id == turns[1].id)
    assert top.signals["fact"].detail.startswith(f"source of fact {fact.item.id} (its match ")
    # the best-matching fact lends the most
    lent = {t.item.id: t.signals["fact"].contribution for t in bundle.turns if "fact" in t.signals}
    assert max(lent, key=lambda i: lent[i]) == turns[1].id


def test_fact_lending_off_adds_no_fact_signal(memory):
    _world(memory)
    memory.core.ctx.settings.retrieval.fact_lending = 0.0
    bundle = memory.remember("Where does Alice's sister live?", top_k=5, reference_time=REF)
    assert bundle.facts and not any("fact" in t.signals for t in bundle.turns)
