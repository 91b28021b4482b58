"""The MemoryBundle users get from ``remember()`` on the real embedded servers: explanations that add up, stored
models (metadata, channel) that round-trip, the token-budgeted prompt block, and input validation.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest

from agentx_memory import AgentMemory, AsyncAgentMemory, Entity, Fact, Goal, Turn, ValidationError
from agentx_memory.retrieval.prompt import SECTION_TITLES
from agentx_memory.tokens import count_tokens
from tests.conftest import run

REF = datetime(2024, 5, 10, 12, 0, tzinfo=UTC)


@pytest.fixture
def world(memory):
    """A bit of everything: turns over two channels (one very long), entities with a relationship, facts, a
    strategy, a goal and a profile."""
    turns = memory.store_turns([
        Turn(conversation_id="trip", user_id="alice", timestamp=REF - timedelta(days=20, minutes=-i), content=text,
             metadata={"speaker": speaker, "dia_id": f"D1:{i}"})
        for i, (speaker, text) in enumerate([
            ("Alice", "I am moving to Lisbon in May for the robotics job"),
            ("Bob", "Lisbon is lovely, the trams are great and the food is cheap"),
            ("Alice", "My sister Clara will visit me in Lisbon in June"),
            ("Bob", "Do you need help moving the piano to Lisbon?"),
        ])])
    memory.store_turn(Turn(conversation_id="work", user_id="alice", timestamp=REF - timedelta(days=3),
                           content="The robotics demo in Lisbon needs a new gripper " + "and more testing " * 150,
                           metadata={"speaker": "Alice"}), channel="robotics")
    lisbon = memory.upsert_entity(Entity(user_id="alice", name="Lisbon", type="place", aliases=["Lisboa"],
                                         description="capital of Portugal", properties={"country": "PT"}))
    clara = memory.upsert_entity(Entity(user_id="alice", name="Clara", type="person", description="Alice's sister"))
    memory.create_relationship(clara.id, lisbon.id, "RELATED_TO")
    memory.learn_fact(Fact(user_id="alice", claim="Alice moves to Lisbon in May", entity_ids=[lisbon.id],
                           source_turn_id=turns[0].id, temporal="current", metadata={"extractor": "test", "n": [1, 2]}))
    memory.learn_fact(Fact(user_id="alice", claim="Clara is Alice's sister", entity_ids=[clara.id], temporal="current"))
    memory.learn_fact(Fact(user_id="alice", claim="Alice lived in Porto", temporal="past"))
    memory.learn_strategy("Pack the piano with a professional mover", tool_sequence=["search", "book"], user_id="alice")
    memory.add_goal(Goal(user_id="alice", description="Find a flat in Lisbon before May", priority=2))
    memory.update_profile(preferences={"tone": "brief"}, expertise_areas=["robotics"])
    return turns


QUESTIONS = [("Tell me about Lisbon", "_global"), ("When does Clara visit?", "_global"),
             ("What did Bob say about the piano last month?", "_global"), ("robotics demo gripper", "robotics"),
             ("How do I move a piano?", "robotics")]


def all_bundles(memory, **kwargs):
    return [memory.remember(q, channel=ch, reference_time=REF, top_k=10, **kwargs) for q, ch in QUESTIONS]


# --- explain ----------------------------------------------------------------------------------------------------


RECALL_VARIANTS = [None, {"hybrid": False}, {"fusion": "rrf"},
                   {"entity_centric": False, "query_expansion": False, "self_query": False}]


def test_every_score_is_the_sum_of_its_signals(memory, world):
    bundles = [b for recall in RECALL_VARIANTS for b in all_bundles(memory, recall=recall)]
    for bundle in bundles:
        explained = bundle.explain()
        items = bundle.all_scored()
        assert items
        assert len(explained) == len(items)  # every item listed, once
        for scored in items:
            assert scored.signals, scored.id
            total = sum(s.contribution for s in scored.signals.values())
            assert abs(total - scored.score) <= 1e-9, (scored.id, total, scored.score)
            for name, signal in scored.signals.items():
                assert abs(signal.contribution - signal.value * signal.weight) <= 1e-12, name
            entry = explained[scored.id]
            assert entry["score"] == scored.score
            assert abs(sum(s["contribution"] for s in entry["signals"].values()) - entry["score"]) <= 1e-9
            assert set(entry["signals"]) == set(scored.signals)
        kinds = {"turn": bundle.turns, "fact": bundle.facts, "entity": bundle.entities, "strategy": bundle.strategies}
        for kind, scored_items in kinds.items():
            assert all(explained[s.id]["kind"] == kind for s in scored_items)
            # each list is ranked best first
            assert [s.score for s in scored_items] == sorted((s.score for s in scored_items), reverse=True)


# --- stored models round-trip -----------------------------------------------------------------------------------


def test_metadata_and_channel_round_trip(memory):
    stored = {}
    odd = {"dia_id": "D7:3", "nested": {"quote": 'a "b" \\ c\nd', "ü": [1, 2.5, None, True]}, "emoji": "🚀",
           "empty": {}, "list": [], "big": 2 ** 53}
    for i, channel in enumerate(["_global", "proj-x", "proj-x", "_global"]):
        turn = memory.store_turn(Turn(conversation_id=f"c-{channel}-{i}", user_id="alice",
                                      timestamp=REF - timedelta(hours=i),
                                      content=f"the gripper prototype, revision {i}", metadata={**odd, "i": i}),
                                 channel=channel)
        stored[turn.id] = turn
    fact = memory.learn_fact(Fact(user_id="alice", claim="The gripper prototype works", metadata=odd), channel="proj-x")
    entity = memory.upsert_entity(Entity(user_id="alice", name="Gripper", type="thing", properties=odd),
                                  channel="proj-x")

    bundle = memory.remember("gripper prototype", channel="proj-x", reference_time=REF)
    assert {t.id for t in bundle.turns} == set(stored)
    for scored in bundle.turns:
        original = stored[scored.id]
        assert scored.item.metadata == original.metadata
        assert scored.channel == original.channel == scored.item.channel
        assert scored.item.content == original.content
        assert scored.item.timestamp == original.timestamp
        assert scored.item.conversation_id == original.conversation_id and scored.item.index == original.index
        assert scored.item.user_id == "alice"
    facts = {f.id: f for f in bundle.facts}
    assert facts[fact.id].item.metadata == odd and facts[fact.id].channel == "proj-x"
    entities = {e.id: e for e in bundle.entities}
    assert entities[entity.id].item.properties == odd and entities[entity.id].channel == "proj-x"
    # and through JSON (what the CLI prints)
    payload = bundle.model_dump(mode="json")
    metadata = {t["item"]["id"]: t["item"]["metadata"] for t in payload["turns"]}
    assert metadata == {i: t.metadata for i, t in stored.items()}


@pytest.mark.parametrize("entity_centric", [True, False], ids=["graph around the question", "legs alone"])
def test_a_returned_fact_names_the_entities_it_is_about(memory, world, entity_centric):
    """However a recall found a fact (its words or vector, or the graph around an entity the question names), the
    fact it returns names the entities it is about, as stored: before, a fact any leg found came back with no
    ``entity_ids`` at all."""
    stored = {r.fact.claim: sorted(r.fact.entity_ids) for r in memory.list_facts()}
    assert sorted(map(len, stored.values())) == [0, 1, 1]
    for question in ("Where is Alice moving in May?", "Who is Clara?", "Where did Alice live?"):
        bundle = memory.remember(question, reference_time=REF, recall={"entity_centric": entity_centric})
        assert bundle.facts and not bundle.metrics.skipped
        assert {f.item.claim: sorted(f.item.entity_ids) for f in bundle.facts} == {
            f.item.claim: stored[f.item.claim] for f in bundle.facts}
    assert {f.item.claim for f in bundle.facts} >= {"Alice lived in Porto"}


# --- the prompt block -------------------------------------------------------------------------------------------

BUDGETS = [0, 1, 5, 12, 13, 20, 30, 50, 80, 120, 200, 400, 800, 5000]


def rendered_scored_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("- ")]


def test_to_prompt_never_exceeds_the_budget_and_drops_lowest_scored_first(memory, world):
    for bundle in all_bundles(memory):
        full = bundle.to_prompt(max_tokens=100_000)
        for budget in BUDGETS:
            text = bundle.to_prompt(max_tokens=budget)
            assert count_tokens(text) <= budget, (bundle.query, budget)
            # what is kept is what the full block has, in its order
            lines = rendered_scored_lines(text)
            full_lines = rendered_scored_lines(full)
            assert all(line in full_lines for line in lines)
        # scored memories are kept best first: whenever an item is in, every better-scored item is in too
        order = [s.id for s in bundle.all_scored()]
        for budget in BUDGETS:
            text = bundle.to_prompt(max_tokens=budget)
            kept = kept_ids(bundle, text)
            assert kept == set(order[:len(kept)]), (bundle.query, budget)
            # goals and the profile are dropped before any scored memory
            if SECTION_TITLES["goal"] in text or SECTION_TITLES["profile"] in text:
                assert kept == set(order), (bundle.query, budget)


def kept_ids(bundle, text: str) -> set[str]:
    """Which scored items a prompt text shows (matched by their rendered line)."""
    from agentx_memory.retrieval.prompt import _line

    kinds = (("turn", bundle.turns), ("fact", bundle.facts), ("entity", bundle.entities),
             ("strategy", bundle.strategies))
    lines = set(text.splitlines())
    return {s.id for kind, items in kinds for s in items if _line(kind, s) in lines}


def test_to_prompt_format_follows_spec_000(memory, world):
    bundle = memory.remember("Tell me about Lisbon", reference_time=REF)
    text = bundle.to_prompt(max_tokens=2000)
    lines = text.splitlines()
    assert lines[0] == "[Episodic Memory -- Relevant Past Conversations]"
    episodic = []
    for line in lines[1:]:
        if line.startswith("["):
            break
        episodic.append(line)
    assert len(episodic) == len(bundle.turns)
    for line, scored in zip(episodic, bundle.turns, strict=True):
        match = re.match(r"^- \(similarity: (-?\d\.\d\d)\) (\d{4}-\d\d-\d\d) (\w+): (.+)$", line)
        assert match, line
        assert float(match[1]) == pytest.approx(scored.cosine, abs=0.005)
        assert match[2] == f"{scored.item.timestamp:%Y-%m-%d}" and match[3] == scored.item.role
    for kind in ("fact", "entity", "strategy", "goal", "profile"):
        assert SECTION_TITLES[kind] in text, kind
    assert "(confidence: 0.70) Alice moves to Lisbon in May [current]" in text
    assert "- Lisbon (place) (also: Lisboa): capital of Portugal" in text
    assert "(priority 2) Find a flat in Lisbon before May" in text
    assert 'preferences: {"tone": "brief"}' in text
    # sections in spec order
    positions = [text.index(SECTION_TITLES[k]) for k in ("turn", "fact", "entity", "strategy", "goal", "profile")]
    assert positions == sorted(positions)


def test_to_prompt_clips_one_long_turn(memory, world):
    bundle = memory.remember("robotics demo gripper testing", channel="robotics", reference_time=REF)
    long_turn = next(t for t in bundle.turns if len(t.item.content) > 1000)
    text = bundle.to_prompt(max_tokens=5000)
    line = next(x for x in text.splitlines() if "needs a new gripper" in x)
    assert line.endswith("...") and len(line) <= 660  # the content is clipped to 600 characters
    assert line.split(f" {long_turn.item.role}: ", 1)[1][:-3] in " ".join(long_turn.item.content.split())
    assert count_tokens(text) < count_tokens(long_turn.item.content)


def test_empty_bundle_renders_empty(memory):
    bundle = memory.remember("anything at all", reference_time=REF)
    assert bundle.all_scored() == [] and bundle.goals == []
    assert bundle.to_prompt(max_tokens=500) == ""


# --- bad input --------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def shared_memory(namespaces):
    """One memory (default user alice) for the validation cases, which write nothing."""
    s = namespaces.new()
    with AgentMemory(s, user_id="alice") as mem:
        yield mem
    run(namespaces.drop(s))


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"query": ""}, "query"),
    ({"query": "   \n\t"}, "query"),
    ({"query": "x" * 40_000}, "query"),
    ({"top_k": 0}, "top_k"),
    ({"top_k": 201}, "top_k"),
    ({"top_k": -5}, "top_k"),
    ({"channel": "Bad Channel!"}, "channel"),
    ({"channel": ""}, "channel"),
    ({"channel": "a" * 101}, "channel"),
    ({"time_window_hours": -1}, "time_window_hours"),
    ({"time_window_hours": 0}, "time_window_hours"),
    ({"user_id": "u" * 101}, "user_id"),
    ({"recall": {"hybrid": "maybe"}}, "recall"),
    ({"recall": {"no_such_technique": True}}, "recall"),
])
def test_bad_input_is_rejected_naming_the_field(shared_memory, kwargs, field):
    args = {"query": "where do I live?", **kwargs}
    with pytest.raises(ValidationError) as info:
        shared_memory.remember(**args)
    assert info.value.field == field
    assert str(info.value).startswith(f"{field}:")


def test_an_empty_user_id_is_rejected_not_replaced_by_the_default_user(memory):
    # A caller that passes an empty user id (a missing header, an unset variable) must get an error, not the
    # memories of the user the memory was opened with.
    memory.store_turn(Turn(conversation_id="c", user_id="alice", content="alice's secret plan"))
    with pytest.raises(ValidationError) as info:
        memory.remember("secret plan", user_id="")
    assert info.value.field == "user_id"


def test_valid_edges_are_accepted(memory):
    memory.store_turn(Turn(conversation_id="c", user_id="alice", content="hello there"))
    assert len(memory.remember("hello", top_k=1).turns) == 1
    memory.remember("hello", top_k=200, time_window_hours=0.01, channel="a" * 100)


def test_async_twin_validates_and_returns_the_same_bundle(settings):
    async def go():
        async with await AsyncAgentMemory.open(settings(), user_id="alice") as memory:
            await memory.store_turn(Turn(conversation_id="c", user_id="alice", content="the blue kettle is broken",
                                         timestamp=REF - timedelta(days=1)))
            with pytest.raises(ValidationError) as info:
                await memory.remember("kettle", top_k=0)
            assert info.value.field == "top_k"
            one = await memory.remember("kettle", reference_time=REF)
            two = await memory.remember("kettle", reference_time=REF)
            await memory.drain()
            return one, two
    one, two = run(go())
    assert [t.id for t in one.turns] == [t.id for t in two.turns]
    assert one.turns[0].item.content == "the blue kettle is broken"


def test_equal_scores_are_ranked_by_id_whatever_the_storage_order(memory):
    # 30 turns the question matches equally (same words, same time, vector leg off): which 5 come back must not
    # depend on the order the rows were stored in (it did: the lexical LIMIT and the final sort kept physical order,
    # and deep-K recall moved between runs and backends).
    turns = [Turn(id=f"tie-{i:02d}", conversation_id=f"c{i:02d}", user_id="alice", timestamp=REF,
                  content=f"We went to the harp concert, ticket {i}") for i in range(30)]
    for turn in reversed(turns):  # one call each: rows are stored (and laid out) from tie-29 down to tie-00
        memory.store_turn(turn)
    bundle = memory.remember("harp concert", top_k=5, reference_time=REF,
                             recall={"vector_weight": 0.0, "candidates": 10, "query_expansion": False})
    assert [t.id for t in bundle.turns] == [f"tie-{i:02d}" for i in range(5)]
