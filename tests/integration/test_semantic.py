"""Semantic memory on the real embedded servers: entities, facts, relationships, graph neighbourhoods, promotion."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime

import pytest

from agentx_memory import Entity, Fact, Turn
from agentx_memory.errors import ConflictError, NotFoundError, ValidationError
from agentx_memory.models import RELATIONSHIP_TYPES
from tests.conftest import gread, sql


def count_nodes(memory, label_query: str, params: dict | None = None) -> int:
    return gread(memory, label_query, params)[0]["n"]


# --- entities ---------------------------------------------------------------------------------------------------


def test_upsert_entity_merges_by_normalized_name_and_merges_aliases(memory):
    first = memory.upsert_entity(Entity(user_id="alice", name=" Alice ", type="person", aliases=["Ally", "A."]))
    second = memory.upsert_entity(Entity(user_id="alice", name="alice", type="Person", aliases=["A.", "Lissy", "ally"]))
    third = memory.upsert_entity(Entity(user_id="alice", name="ALICE\t", type="person", aliases=["Ally"]))

    assert second.id == first.id == third.id
    assert count_nodes(memory, "MATCH (e:Entity {user_id: 'alice'}) RETURN count(e) AS n") == 1
    stored = memory.get_entity(first.id, user_id="alice")
    # aliases are a set: no duplicates (also not case/space variants), nothing lost, the name itself is not an alias
    assert sorted(a.casefold() for a in stored.aliases) == ["a.", "ally", "lissy"]
    assert len(stored.aliases) == len({a.casefold() for a in stored.aliases})
    assert stored.name == "Alice"  # stored whitespace-normalized


@pytest.mark.parametrize("change", [{"type": "place"}, {"channel": "proj-x"}, {"user_id": "bob"}])
def test_upsert_entity_distinct_by_type_channel_and_user(memory, change):
    base = {"user_id": "alice", "name": "Lisbon", "type": "city"}
    one = memory.upsert_entity(Entity(**base))
    other = memory.upsert_entity(Entity(**{**base, **change}))
    assert other.id != one.id
    for key, value in change.items():
        assert getattr(other, key) == value
    assert count_nodes(memory, "MATCH (e:Entity) RETURN count(e) AS n") == 2
    # each owner sees only its own entity
    assert memory.get_entity(one.id, user_id="alice").id == one.id
    if "user_id" in change:
        with pytest.raises(NotFoundError):
            memory.get_entity(other.id, user_id="alice")
        with pytest.raises(NotFoundError):
            memory.get_entity(one.id, user_id="bob")


def test_upsert_entity_keeps_description_and_merges_properties(memory):
    a = memory.upsert_entity(Entity(user_id="alice", name="Rust", description="a language", properties={"x": 1}))
    b = memory.upsert_entity(Entity(user_id="alice", name="rust", properties={"y": 2}))
    assert b.id == a.id
    assert b.description == "a language"
    assert b.properties == {"x": 1, "y": 2}


def test_upsert_entity_rejects_bad_input_and_writes_nothing(memory):
    with pytest.raises(ValidationError, match="channel"):
        memory.upsert_entity(Entity(user_id="alice", name="X"), channel="Bad Channel!")
    with pytest.raises(ValidationError, match="name"):
        memory.upsert_entity(Entity(user_id="alice", name="   "))
    with pytest.raises(ValidationError, match="embedding"):
        memory.upsert_entity(Entity(user_id="alice", name="X", embedding=[0.1] * 3))
    assert count_nodes(memory, "MATCH (e:Entity) RETURN count(e) AS n") == 0


# --- facts ------------------------------------------------------------------------------------------------------


def _turn(memory, user="alice", conversation="conv-1", content="I moved to Lisbon in May."):
    return memory.store_turn(Turn(conversation_id=conversation, user_id=user, content=content))


def test_learn_fact_links_source_turn_and_entities(memory):
    turn = _turn(memory)
    lisbon = memory.upsert_entity(Entity(user_id="alice", name="Lisbon", type="place"))
    me = memory.upsert_entity(Entity(user_id="alice", name="Alice", type="person"))
    fact = memory.learn_fact(Fact(user_id="alice", claim="Alice lives in Lisbon", source_turn_id=turn.id,
                                  entity_ids=[lisbon.id, me.id], temporal="current", confidence=0.9), channel="trips")

    assert fact.channel == "trips"
    assert fact.conversation_id == "conv-1"
    assert sorted(fact.entity_ids) == sorted([lisbon.id, me.id])
    assert fact.temporal == "current" and fact.confidence == 0.9
    derived = gread(memory, "MATCH (f:Fact {id: $id})-[:DERIVED_FROM]->(t:Turn) RETURN t.id AS id", {"id": fact.id})
    assert [r["id"] for r in derived] == [turn.id]
    about = gread(memory, "MATCH (f:Fact {id: $id})-[:ABOUT]->(e:Entity) RETURN e.id AS id", {"id": fact.id})
    assert sorted(r["id"] for r in about) == sorted([lisbon.id, me.id])
    assert memory.get_fact(fact.id, user_id="alice") == fact

    # store_fact is the same operation, and re-storing the same id is idempotent (no duplicate edges)
    again = memory.store_fact(Fact(id=fact.id, user_id="alice", claim="Alice lives in Lisbon", source_turn_id=turn.id,
                                   entity_ids=[lisbon.id, me.id], temporal="current", confidence=0.9), channel="trips")
    assert again.id == fact.id
    edges = gread(memory, "MATCH (f:Fact {id: $id})-[r]->() RETURN count(r) AS n", {"id": fact.id})
    assert edges[0]["n"] == 3
    timeline = sql(memory, "SELECT memory_type, channel FROM memory_timeline WHERE neo4j_node_id = %s", (fact.id,))
    assert timeline == [{"memory_type": "fact", "channel": "trips"}]
    # re-storing in another channel does not move the fact (issue 11 item 6): a conflict, nothing changes
    with pytest.raises(ConflictError, match="keeps its channel"):
        memory.store_fact(Fact(id=fact.id, user_id="alice", claim="Alice lives in Lisbon"), channel="home")
    assert memory.get_fact(fact.id, user_id="alice") == again
    timeline = sql(memory, "SELECT channel FROM memory_timeline WHERE neo4j_node_id = %s", (fact.id,))
    assert timeline == [{"channel": "trips"}]


def test_store_fact_without_links(memory):
    fact = memory.store_fact(Fact(user_id="alice", claim="The sky is blue"))
    assert fact.entity_ids == [] and fact.source_turn_id is None
    assert gread(memory, "MATCH (f:Fact {id: $id})-[r]->() RETURN count(r) AS n", {"id": fact.id})[0]["n"] == 0


def test_learn_fact_unknown_ids_raise_not_found_and_store_nothing(memory):
    turn = _turn(memory)
    entity = memory.upsert_entity(Entity(user_id="alice", name="Lisbon"))
    bob_entity = memory.upsert_entity(Entity(user_id="bob", name="Porto"))
    bob_turn = _turn(memory, user="bob", conversation="bob-conv")
    cases = [
        dict(entity_ids=[entity.id, "no-such-entity"]),
        dict(source_turn_id="no-such-turn"),
        dict(entity_ids=[bob_entity.id]),          # another user's entity does not exist for alice
        dict(source_turn_id=bob_turn.id),          # nor does another user's turn
        dict(source_turn_id=turn.id, entity_ids=["missing"]),
    ]
    for case in cases:
        with pytest.raises(NotFoundError):
            memory.learn_fact(Fact(user_id="alice", claim="should not be stored", **case))
    assert count_nodes(memory, "MATCH (f:Fact) RETURN count(f) AS n") == 0
    assert sql(memory, "SELECT count(*) AS n FROM memory_timeline WHERE memory_type = 'fact'")[0]["n"] == 0


def test_fact_id_of_another_user_is_not_taken_over(memory):
    fact = memory.learn_fact(Fact(user_id="alice", claim="Alice's secret"))
    with pytest.raises(ConflictError):
        memory.learn_fact(Fact(id=fact.id, user_id="bob", claim="Bob overwrites"))
    assert memory.get_fact(fact.id, user_id="alice").claim == "Alice's secret"
    with pytest.raises(NotFoundError):
        memory.get_fact(fact.id, user_id="bob")


def test_learning_a_fact_again_keeps_its_channel_and_its_higher_confidence(memory):
    """Issue 11 item 6: learn_fact with an existing id moved the fact to the caller's channel and overwrote its
    confidence (with a lower one, too)."""
    first = memory.learn_fact(Fact(user_id="alice", claim="Alice lives in Lisbon", confidence=0.95), channel="proj-a")
    with pytest.raises(ConflictError, match="keeps its channel"):
        memory.learn_fact(Fact(id=first.id, user_id="alice", claim="Alice lives in Porto", confidence=0.5),
                          channel="proj-b")
    kept = memory.get_fact(first.id, user_id="alice")
    assert (kept.channel, kept.claim, kept.confidence) == ("proj-a", "Alice lives in Lisbon", 0.95)
    again = memory.learn_fact(Fact(id=first.id, user_id="alice", claim="Alice lives in Lisbon, Portugal",
                                   confidence=0.7), channel="proj-a")
    assert (again.channel, again.claim, again.confidence) == ("proj-a", "Alice lives in Lisbon, Portugal", 0.95)
    assert memory.get_fact(first.id, user_id="alice") == again
    timeline = sql(memory, "SELECT channel, summary, importance_score FROM memory_timeline WHERE neo4j_node_id = %s",
                   (first.id,))
    assert timeline == [{"channel": "proj-a", "summary": "Alice lives in Lisbon, Portugal", "importance_score": 0.95}]
    higher = memory.learn_fact(Fact(id=first.id, user_id="alice", claim="Alice lives in Lisbon, Portugal",
                                    confidence=0.99), channel="proj-a")
    assert higher.confidence == 0.99
    assert count_nodes(memory, "MATCH (f:Fact) RETURN count(f) AS n") == 1


def test_learn_fact_bad_input(memory):
    for bad in (dict(claim=""), dict(claim="x", confidence=1.5), dict(claim="x" * 40_000)):
        with pytest.raises(ValidationError):
            memory.learn_fact(Fact(user_id="alice", **bad))
    with pytest.raises(ValidationError, match="channel"):
        memory.learn_fact(Fact(user_id="alice", claim="x"), channel="NOT A SLUG")
    assert count_nodes(memory, "MATCH (f:Fact) RETURN count(f) AS n") == 0


# --- relationships ----------------------------------------------------------------------------------------------


def test_create_relationship_for_every_allowed_type(memory):
    a = memory.upsert_entity(Entity(user_id="alice", name="A"))
    b = memory.upsert_entity(Entity(user_id="alice", name="B"))
    for rel_type in RELATIONSHIP_TYPES:
        rel = memory.create_relationship(a.id, b.id, rel_type, {"since": 2020, "note": rel_type})
        assert (rel.source_id, rel.target_id, rel.rel_type) == (a.id, b.id, rel_type)
    rows = gread(memory, "MATCH (a:Entity {id: $a})-[r]->(b:Entity {id: $b}) RETURN type(r) AS t, r.properties AS p",
                 {"a": a.id, "b": b.id})
    assert sorted(r["t"] for r in rows) == sorted(RELATIONSHIP_TYPES)
    # idempotent: creating again updates properties, adds no edge
    memory.create_relationship(a.id, b.id, "KNOWS", {"since": 2021})
    assert gread(memory, "MATCH (:Entity {id: $a})-[r:KNOWS]->() RETURN count(r) AS n", {"a": a.id})[0]["n"] == 1
    graph = memory.get_entity_graph([a.id], depth=1)
    knows = [r for r in graph.relationships if r.rel_type == "KNOWS"]
    assert knows[0].properties == {"since": 2021}


@pytest.mark.parametrize("rel_type", ["HATES", "knows", "", "KNOWS]->(x) DETACH DELETE x //",
                                      "RELATED_TO`]->() MATCH (n) DETACH DELETE n //"])
def test_create_relationship_rejects_unknown_types_and_writes_nothing(memory, rel_type):
    a = memory.upsert_entity(Entity(user_id="alice", name="A"))
    b = memory.upsert_entity(Entity(user_id="alice", name="B"))
    with pytest.raises(ValidationError, match="rel_type"):
        memory.create_relationship(a.id, b.id, rel_type)
    assert gread(memory, "MATCH ()-[r]->() RETURN count(r) AS n")[0]["n"] == 0
    assert count_nodes(memory, "MATCH (e:Entity) RETURN count(e) AS n") == 2


def test_create_relationship_unknown_or_foreign_entity(memory):
    a = memory.upsert_entity(Entity(user_id="alice", name="A"))
    bobs = memory.upsert_entity(Entity(user_id="bob", name="B"))
    with pytest.raises(NotFoundError, match="nope"):
        memory.create_relationship(a.id, "nope", "KNOWS")
    with pytest.raises(ValidationError, match="properties"):
        memory.create_relationship(a.id, a.id, "KNOWS", ["not", "a", "dict"])
    with pytest.raises(NotFoundError, match=bobs.id):
        memory.create_relationship(a.id, bobs.id, "KNOWS", user_id="alice")
    assert gread(memory, "MATCH ()-[r]->() RETURN count(r) AS n")[0]["n"] == 0


# --- entity graph -----------------------------------------------------------------------------------------------


def _chain(memory, user="alice"):
    ids = [memory.upsert_entity(Entity(user_id=user, name=n)).id for n in "ABCD"]
    for src, dst in itertools.pairwise(ids):
        memory.create_relationship(src, dst, "RELATED_TO", user_id=user)
    return ids


def test_get_entity_graph_depths_on_a_chain(memory):
    a, b, c, d = _chain(memory)
    fact = memory.learn_fact(Fact(user_id="alice", claim="C is near D", entity_ids=[c, d]))
    expected = {1: [a, b], 2: [a, b, c], 3: [a, b, c, d]}
    for depth, ids in expected.items():
        graph = memory.get_entity_graph([a], depth=depth)
        assert [e.id for e in graph.entities] == ids, depth
        assert {(r.source_id, r.target_id) for r in graph.relationships} == set(itertools.pairwise(ids))
        assert [f.id for f in graph.facts] == ([fact.id] if c in ids else [])
    # traversal is undirected: from the middle, depth 1 reaches both sides
    assert sorted(e.id for e in memory.get_entity_graph([c], depth=1).entities) == sorted([b, c, d])


@pytest.mark.parametrize("depth", [0, 4, -1])
def test_get_entity_graph_rejects_depth(memory, depth):
    a, *_ = _chain(memory)
    with pytest.raises(ValidationError, match="depth"):
        memory.get_entity_graph([a], depth=depth)


def test_get_entity_graph_is_bounded_and_nearest_first(memory):
    hub = memory.upsert_entity(Entity(user_id="alice", name="hub"))
    spokes = [memory.upsert_entity(Entity(user_id="alice", name=f"spoke {i}")).id for i in range(6)]
    for s in spokes:
        memory.create_relationship(hub.id, s, "PART_OF")
    far = memory.upsert_entity(Entity(user_id="alice", name="far")).id
    memory.create_relationship(spokes[0], far, "PART_OF")
    bounded = memory._portal.run(memory.core.semantic.get_entity_graph([hub.id], 2, user_id="alice", limit=3))
    assert len(bounded.entities) == 1 + 3
    assert far not in [e.id for e in bounded.entities]  # nearer neighbours win the budget
    full = memory.get_entity_graph([hub.id], depth=2)
    assert len(full.entities) == 1 + 6 + 1
    with pytest.raises(ValidationError, match="limit"):
        memory._portal.run(memory.core.semantic.get_entity_graph([hub.id], 2, user_id="alice", limit=-1))


def test_get_entity_graph_orders_its_edges_and_facts(memory):
    """The edges come by (source id, type, target id) whatever order they were written in, the facts newest first:
    two reads of one graph compare equal (Neo4j returned both in another order after unrelated writes, and a
    comparison of two reads failed)."""
    hub = memory.upsert_entity(Entity(user_id="alice", name="hub")).id
    spokes = [memory.upsert_entity(Entity(user_id="alice", name=f"spoke {i}")).id for i in range(6)]
    edges = sorted([(hub, "PART_OF", s) for s in spokes] + [(s, "RELATED_TO", hub) for s in spokes], reverse=True)
    for source, rel_type, target in edges:  # written in the reverse of the promised order
        memory.create_relationship(source, target, rel_type, user_id="alice")
    facts = [memory.learn_fact(Fact(user_id="alice", claim=f"hub fact {i}", entity_ids=[hub, spokes[i]],
                                    created_at=datetime(2026, 1, 1 + i, tzinfo=UTC))).id for i in range(4)]
    graph = memory.get_entity_graph([hub], depth=1)
    assert [(r.source_id, r.rel_type, r.target_id) for r in graph.relationships] == sorted(edges)
    assert [f.id for f in graph.facts] == facts[::-1]


def test_get_entity_graph_keeps_the_asked_entities_newest_facts(memory):
    """Past the limit, the facts kept are those about the entities asked for, newest first, then their neighbours':
    not whichever the traversal met first (an entity with more facts than the limit gave its oldest ones)."""
    hub = memory.upsert_entity(Entity(user_id="alice", name="hub")).id
    spoke = memory.upsert_entity(Entity(user_id="alice", name="spoke")).id
    memory.create_relationship(hub, spoke, "RELATED_TO", user_id="alice")
    hub_facts = [memory.learn_fact(Fact(user_id="alice", claim=f"hub fact {i}", entity_ids=[hub],
                                        created_at=datetime(2026, 1, 1 + i, tzinfo=UTC))).id for i in range(8)]
    spoke_facts = [memory.learn_fact(Fact(user_id="alice", claim=f"spoke fact {i}", entity_ids=[spoke],
                                          created_at=datetime(2026, 2, 1 + i, tzinfo=UTC))).id for i in range(3)]

    def kept(limit: int) -> list[str]:
        graph = memory._portal.run(memory.core.semantic.get_entity_graph([hub], 1, user_id="alice", limit=limit))
        return [f.id for f in graph.facts]

    assert kept(3) == hub_facts[::-1][:3]
    assert kept(10) == spoke_facts[::-1][:2] + hub_facts[::-1]  # returned newest first, the neighbour's too
    assert kept(20) == spoke_facts[::-1] + hub_facts[::-1]
    # a fact about both is one fact, with both entities, kept as the asked entity's
    both = memory.learn_fact(Fact(user_id="alice", claim="hub and spoke", entity_ids=[hub, spoke],
                                  created_at=datetime(2025, 1, 1, tzinfo=UTC))).id
    graph = memory._portal.run(memory.core.semantic.get_entity_graph([hub], 1, user_id="alice", limit=9))
    assert [f.id for f in graph.facts][-1] == both and len(graph.facts) == 9
    assert sorted(graph.facts[-1].entity_ids) == sorted([hub, spoke])


def test_get_entity_graph_never_crosses_users(memory):
    a, *_ = _chain(memory, user="alice")
    bob_ids = _chain(memory, user="bob")
    assert memory.get_entity_graph(bob_ids[:1], depth=3, user_id="alice").entities == []
    assert {e.user_id for e in memory.get_entity_graph([a], depth=3, user_id="alice").entities} == {"alice"}


# --- promotion --------------------------------------------------------------------------------------------------


def test_promote_to_global(memory):
    turn = _turn(memory, conversation="p1")
    e = memory.upsert_entity(Entity(user_id="alice", name="Lisbon"), channel="proj")
    fact = memory.learn_fact(Fact(user_id="alice", claim="Alice likes Lisbon", source_turn_id=turn.id,
                                  entity_ids=[e.id], confidence=0.9, metadata={"k": "v"}), channel="proj")
    promoted = memory.promote_to_global(fact.id, "seen in many conversations")

    assert promoted.id != fact.id
    assert promoted.channel == "_global"
    assert promoted.claim == fact.claim and promoted.confidence == fact.confidence
    assert promoted.metadata == {"k": "v"} and promoted.entity_ids == [e.id]
    link = gread(memory, "MATCH (g:Fact {id: $g})-[:PROMOTED_FROM]->(f:Fact) RETURN f.id AS id", {"g": promoted.id})
    assert [r["id"] for r in link] == [fact.id]
    assert memory.get_fact(fact.id, user_id="alice").channel == "proj"  # the original stays

    # idempotent: the same global fact, no second node or link, no second audit entry
    again = memory.promote_to_global(fact.id, "again")
    assert again.id == promoted.id
    assert count_nodes(memory, "MATCH (f:Fact {channel: '_global'}) RETURN count(f) AS n") == 1
    assert count_nodes(memory, "MATCH ()-[r:PROMOTED_FROM]->() RETURN count(r) AS n") == 1

    rows = sql(memory, "SELECT * FROM memory_audit_log WHERE operation = 'promote'")
    assert len(rows) == 1
    row = rows[0]
    thresholds = memory.settings.promotion.model_dump()
    assert row["metadata"]["thresholds"] == thresholds
    assert row["config_snapshot"]["promotion"] == thresholds
    assert row["metadata"]["fact_id"] == fact.id and row["metadata"]["global_fact_id"] == promoted.id
    assert row["metadata"]["reason"] == "seen in many conversations"
    assert row["promoted_from_channel"] == "proj" and row["target_channels"] == ["_global"]
    assert row["promotion_confidence"] == 0.9 and row["promotion_conversation_count"] == 1
    assert row["user_id"] == "alice"


def test_promote_rejects_global_and_unknown_facts(memory):
    g = memory.learn_fact(Fact(user_id="alice", claim="already global"))
    with pytest.raises(ValidationError, match="_global"):
        memory.promote_to_global(g.id, "why")
    p = memory.learn_fact(Fact(user_id="alice", claim="project fact"), channel="proj")
    promoted = memory.promote_to_global(p.id, "ok")
    with pytest.raises(ValidationError):
        memory.promote_to_global(promoted.id, "promoting a promotion")
    with pytest.raises(NotFoundError):
        memory.promote_to_global("no-such-fact", "why")
    with pytest.raises(NotFoundError):
        memory.promote_to_global(p.id, "why", user_id="bob")
    with pytest.raises(ValidationError, match="reason"):
        memory.promote_to_global(p.id, "")


# --- round trips ------------------------------------------------------------------------------------------------

TRICKY = {
    "nested": {"deep": {"list": [1, 2.5, None, True, {"x": "y"}]}, "empty": {}},
    "unicode": "Zürich – 東京 – emoji 🚀 – ﬁ",
    "quotes": "it's \"quoted\" and `back` ticks",
    "backslashes": "C:\\path\\to\\file \\n not a newline \\\\ double",
    "newlines": "line1\nline2\r\nline3\ttab",
    "cypher": "'}) MATCH (n) DETACH DELETE n //",
    "json_like": "{\"a\": 1}",
    "keys with spaces and 'quotes'": [],
}


def test_metadata_and_properties_round_trip_unchanged(memory):
    entity = memory.upsert_entity(Entity(user_id="alice", name="Ünïcødé \"name\" \\ o'k", properties=TRICKY,
                                         description="desc with 'quotes' and \\ and \n"))
    assert entity.properties == TRICKY
    got = memory.get_entity(entity.id, user_id="alice")
    assert got.properties == TRICKY
    assert got.name == "Ünïcødé \"name\" \\ o'k"
    assert got.description == "desc with 'quotes' and \\ and \n"

    fact = memory.learn_fact(Fact(user_id="alice", claim="claim with \"quotes\" \\ and\nnewline 🚀", metadata=TRICKY,
                                  entity_ids=[entity.id]))
    assert fact.metadata == TRICKY
    assert memory.get_fact(fact.id, user_id="alice").metadata == TRICKY
    assert memory.get_fact(fact.id, user_id="alice").claim == "claim with \"quotes\" \\ and\nnewline 🚀"

    other = memory.upsert_entity(Entity(user_id="alice", name="other"))
    memory.create_relationship(entity.id, other.id, "REFERENCES", TRICKY)
    graph = memory.get_entity_graph([entity.id], depth=1)
    assert graph.relationships[0].properties == TRICKY
    assert graph.facts[0].metadata == TRICKY

    promoted = memory.promote_to_global(memory.learn_fact(Fact(user_id="alice", claim="p", metadata=TRICKY),
                                                          channel="proj").id, "r")
    assert promoted.metadata == TRICKY


# --- concurrency (async API) ------------------------------------------------------------------------------------


def test_concurrent_upserts_of_one_entity_make_one_node(settings):
    import asyncio

    from agentx_memory import AsyncAgentMemory
    from tests.conftest import run

    async def scenario():
        async with await AsyncAgentMemory.open(settings(), user_id="alice") as memory:
            names = ["Alice", "alice", " ALICE", "Alice  "] * 2
            stored = await asyncio.gather(*(
                memory.upsert_entity(Entity(user_id="alice", name=n, type="person", aliases=[f"alias {i}"]))
                for i, n in enumerate(names)))
            assert len({e.id for e in stored}) == 1
            rows = await memory.ctx.graph.read("MATCH (e:Entity) RETURN count(e) AS n, collect(e.aliases) AS a")
            assert rows[0]["n"] == 1
            assert sorted(rows[0]["a"][0]) == sorted(f"alias {i}" for i in range(len(names)))

    run(scenario())


def test_concurrent_upserts_of_one_entity_keep_every_property_key(settings):
    # The properties merge is read-merge-write: without the version check, concurrent upserts lost keys (8 writers
    # kept 2 of 8 keys on FalkorDB).
    import asyncio

    from agentx_memory import AsyncAgentMemory
    from tests.conftest import run

    async def scenario():
        async with await AsyncAgentMemory.open(settings(), user_id="alice") as memory:
            stored = await asyncio.gather(*(
                memory.upsert_entity(Entity(user_id="alice", name="Lisbon", type="city", properties={f"key{i}": i},
                                            description=f"version {i}" if i % 2 else ""))
                for i in range(8)))
            assert len({e.id for e in stored}) == 1
            final = await memory.get_entity(stored[0].id, user_id="alice")
            assert final.properties == {f"key{i}": i for i in range(8)}
            assert final.description.startswith("version ")

    run(scenario())


@pytest.mark.parametrize("vector", [[0.0] * 64, [float("nan")] + [1.0] * 63, [float("inf")] + [0.0] * 63])
def test_a_vector_without_a_direction_is_refused_before_anything_is_stored(memory, vector):
    with pytest.raises(ValidationError, match="embedding"):
        memory.learn_fact(Fact(user_id="alice", claim="Lisbon is sunny", embedding=vector))
    with pytest.raises(ValidationError, match="embedding"):
        memory.upsert_entity(Entity(user_id="alice", name="Lisbon", type="city", embedding=vector))
    assert count_nodes(memory, "MATCH (n) WHERE n:Fact OR n:Entity RETURN count(n) AS n") == 0


def refuse_postgres_writes(memory) -> None:
    """A real PostgreSQL refusal of every timeline row and audit entry in the memory's own schema (a trigger that
    raises), as when PostgreSQL fails after the graph write."""
    run = memory._portal.run
    postgres = memory.core.ctx.postgres
    run(postgres.execute("CREATE FUNCTION refuse_write() RETURNS trigger LANGUAGE plpgsql AS "
                         "$$ BEGIN RAISE EXCEPTION 'write refused (simulated outage)'; END $$"))
    for table in ("memory_timeline", "memory_audit_log"):
        run(postgres.execute(f"CREATE TRIGGER refuse_write BEFORE INSERT ON {table} "
                             "FOR EACH ROW EXECUTE FUNCTION refuse_write()"))


def test_a_postgres_failure_after_the_graph_write_does_not_raise(memory, caplog):
    """Issue 11 item 4: upsert_entity/learn_fact wrote the graph and then raised when the timeline row failed. The
    graph write is the acknowledged write: the call returns it and the missing timeline row is logged."""
    refuse_postgres_writes(memory)
    with caplog.at_level("WARNING", logger="agentx_memory.semantic"):
        entity = memory.upsert_entity(Entity(user_id="alice", name="Lisbon", type="place"))
        fact = memory.learn_fact(Fact(user_id="alice", claim="Alice lives in Lisbon", entity_ids=[entity.id]))
    assert memory.get_entity(entity.id).name == "Lisbon"
    assert memory.get_fact(fact.id).claim == "Alice lives in Lisbon"
    assert sql(memory, "SELECT count(*) AS n FROM memory_timeline")[0]["n"] == 0
    logged = [r.getMessage() for r in caplog.records if r.name == "agentx_memory.semantic"]
    assert any(entity.id in m and "timeline" in m for m in logged)
    assert any(fact.id in m for m in logged)


def test_an_entity_id_too_long_for_postgres_is_refused_before_the_graph_write(memory):
    """Issue 11 item 4: a 1,000-character id raised (VARCHAR(100) timeline column) after the entity was in the graph."""
    with pytest.raises(ValidationError, match="id"):
        memory.upsert_entity(Entity(id="e" * 1000, user_id="alice", name="Lisbon", type="place"))
    assert count_nodes(memory, "MATCH (e:Entity) RETURN count(e) AS n") == 0


def test_a_fact_cannot_name_another_users_conversation(memory):
    """A fact's conversation_id must be the caller's own conversation (or unused), and agree with its source turn:
    bob's fact filed under alice's conversation put his audit entry there (found by the isolation suite)."""
    turn = memory.store_turn(Turn(conversation_id="alice-trip", user_id="alice", content="I moved to Lisbon"))
    with pytest.raises(ConflictError, match="conversation_id"):
        memory.learn_fact(Fact(user_id="bob", claim="x", conversation_id="alice-trip"))
    memory.store_turn(Turn(conversation_id="other", user_id="alice", content="elsewhere"))
    with pytest.raises(ValidationError, match="conversation_id"):
        memory.learn_fact(Fact(user_id="alice", claim="y", source_turn_id=turn.id, conversation_id="other"))
    assert gread(memory, "MATCH (f:Fact) RETURN count(f) AS n") == [{"n": 0}]
    assert sql(memory, "SELECT count(*) AS n FROM memory_audit_log WHERE user_id = 'bob'") == [{"n": 0}]
    own = memory.learn_fact(Fact(user_id="alice", claim="Alice lives in Lisbon", conversation_id="alice-trip"))
    assert own.conversation_id == "alice-trip"
