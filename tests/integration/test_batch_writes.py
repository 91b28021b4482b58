"""Batch writes (issue 17): upsert_entities, learn_facts / store_facts and create_relationships on both backends.

A batch must store what its single-item call made for every item in order would store (checked by storing the same
items both ways in two namespaces and comparing graph and timeline), refuse the whole batch before any write when one
item is invalid or names something that is not the user's, keep the batch cap, and merge entities correctly when
two batches of the same names race."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from agentx_memory import AgentMemory, AsyncAgentMemory, Entity, Fact, Relationship, Turn, semantic_batch
from agentx_memory.errors import ConflictError, NotFoundError, ValidationError
from tests.conftest import gread, sql

T0 = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)

# --- what is stored: graph and timeline, without the values that depend on the clock or on write counts -----------

_ENTITY_KEYS = ("key", "id", "user_id", "channel", "type", "name", "normalized_name", "aliases", "description",
                "salience", "salience_base", "properties", "access_count")
_FACT_KEYS = ("id", "user_id", "channel", "claim", "confidence", "confidence_base", "source", "source_turn_id",
              "conversation_id", "temporal", "certainty", "metadata", "agent_id", "scope", "created_at", "stated_at",
              "superseded", "access_count")


def _vector(value) -> list[float]:
    return [round(float(x), 5) for x in value]


def stored_state(memory: AgentMemory) -> dict:
    """Everything the batch and single paths write that does not depend on the clock: entity and fact nodes (with
    their vectors), their edges, the timeline rows (entities' event time is their first_seen, a clock value)."""
    entities = {r["n"]["id"]: {**{k: r["n"].get(k) for k in _ENTITY_KEYS}, "embedding": _vector(r["v"])}
                for r in gread(memory, "MATCH (n:Entity) RETURN n {.*} AS n, n.embedding AS v")}
    facts = {r["n"]["id"]: {**{k: r["n"].get(k) for k in _FACT_KEYS}, "embedding": _vector(r["v"])}
             for r in gread(memory, "MATCH (n:Fact) RETURN n {.*} AS n, n.embedding AS v")}
    edges = sorted((r["s"], r["t"], r["x"], r["p"]) for r in gread(
        memory, "MATCH (a)-[r]->(b) WHERE (a:Entity OR a:Fact) "
                "RETURN a.id AS s, type(r) AS t, b.id AS x, r.properties AS p"))
    timeline = sorted(
        (r["memory_type"], r["neo4j_node_id"], r["user_id"], r["channel"], r["summary"],
         round(r["importance_score"], 6), r["agent_id"], r["scope"],
         r["event_time"] if r["memory_type"] == "fact" else None,
         _vector(r["embedding"]) if r["embedding"] is not None else None)
        for r in sql(memory, "SELECT * FROM memory_timeline WHERE memory_type IN ('entity', 'fact')"))
    for entity in entities.values():
        entity["aliases"] = sorted(entity["aliases"] or [])
    return {"entities": entities, "facts": facts, "edges": edges, "timeline": timeline}


def _turns(memory: AgentMemory) -> list[Turn]:
    return memory.store_turns([
        Turn(id=f"t{i}", conversation_id="c1" if i < 3 else "c2", user_id="alice", content=text,
             timestamp=T0 + timedelta(minutes=i))
        for i, text in enumerate(["I moved to Lisbon in May.", "My sister Ana lives in Porto.",
                                  "I work for Acme as a pilot.", "Ana visited me last week.",
                                  "Acme opened an office in Lisbon."])])


def _entities() -> list[Entity]:
    vector = [0.0] * 63 + [1.0]
    return [
        Entity(id="e-lisbon", user_id="alice", name="Lisbon", type="place", aliases=["Lisboa"],
               properties={"country": "PT"}, salience=0.4),
        Entity(id="e-ana", user_id="alice", name=" Ana ", type="person", description="alice's sister"),
        Entity(id="e-acme", user_id="alice", name="Acme", type="company", properties={"size": 10},
               embedding=vector),
        # the same entities again: merged into the first ones (aliases, properties, description, salience)
        Entity(id="e-lisbon-2", user_id="alice", name="LISBON", type="Place", aliases=["lisboa", "Olisipo"],
               properties={"population": 545000}, salience=0.9),
        Entity(id="e-ana-2", user_id="alice", name="ana", type="person", aliases=["Aninha"]),
        Entity(id="e-acme-2", user_id="alice", name="acme", type="company", description="an airline",
               properties={"size": 12}),
        Entity(id="e-porto", user_id="alice", name="Porto", type="place", channel="proj-x"),
        Entity(id="e-bob-porto", user_id="bob", name="Porto", type="place"),
    ]


def _facts() -> list[Fact]:
    return [
        Fact(id="f1", user_id="alice", claim="alice lives in Lisbon", confidence=0.6, source_turn_id="t0",
             entity_ids=["e-lisbon"], created_at=T0, temporal="current", metadata={"n": 1}),
        Fact(id="f2", user_id="alice", claim="Ana is alice's sister", source_turn_id="t1",
             entity_ids=["e-ana"], created_at=T0 + timedelta(minutes=1), certainty="explicit"),
        Fact(id="f3", user_id="alice", claim="alice is a pilot at Acme", conversation_id="c1",
             entity_ids=["e-acme"], created_at=T0 + timedelta(minutes=2), embedding=[1.0] + [0.0] * 63),
        # f1 again: the last claim and metadata, the higher confidence, the first source turn, both turns linked
        Fact(id="f1", user_id="alice", claim="alice lives in Lisbon since May", confidence=0.9,
             source_turn_id="t4", entity_ids=["e-acme", "e-lisbon"], created_at=T0 + timedelta(minutes=4),
             certainty="implied", metadata={"n": 2}),
        # f2 again, lower confidence: keeps 0.7 and its certainty (None does not clear it)
        Fact(id="f2", user_id="alice", claim="Ana is alice's older sister", confidence=0.3,
             created_at=T0 - timedelta(days=1)),
        Fact(id="f4", user_id="alice", claim="Ana visited alice", source_turn_id="t3", entity_ids=["e-ana"],
             created_at=T0 + timedelta(minutes=3), channel="_global", scope="global"),
    ]


def _relationships() -> list:
    return [
        Relationship(source_id="e-ana", target_id="e-lisbon", rel_type="LOCATED_IN", properties={"since": 2020}),
        ("e-acme", "e-lisbon", "LOCATED_IN"),
        ("e-ana", "e-acme", "KNOWS", {"how": "work"}),
        ("e-ana", "e-lisbon", "LOCATED_IN", {"since": 2021}),  # the same edge again: the last properties
        Relationship(source_id="e-bob-porto", target_id="e-bob-porto", rel_type="RELATED_TO", user_id="bob"),
    ]


def _fact(fact: Fact) -> Fact:
    # the order of a fact's entity ids is the order the graph keeps its ABOUT edges in
    return fact.model_copy(update={"entity_ids": sorted(fact.entity_ids)})


def _single_path(memory: AgentMemory) -> tuple[list, list, list]:
    entities = [memory.upsert_entity(e) for e in _entities()]
    facts = [memory.learn_fact(f) for f in _facts()]
    relationships = [memory.create_relationship(*r, user_id="alice") if isinstance(r, tuple)
                     else memory.create_relationship(r.source_id, r.target_id, r.rel_type, r.properties,
                                                     user_id=r.user_id or "alice")
                     for r in _relationships()]
    return entities, facts, relationships


def _batch_path(memory: AgentMemory) -> tuple[list, list, list]:
    return (memory.upsert_entities(_entities()), memory.learn_facts(_facts()),
            memory.create_relationships(_relationships()))


def test_a_batch_stores_what_the_single_item_calls_in_order_store(settings, monkeypatch):
    monkeypatch.setattr(semantic_batch, "NODE_CHUNK", 2)  # several round trips per batch
    monkeypatch.setattr(semantic_batch, "EDGE_CHUNK", 2)
    # Two namespaces, one after the other: on Neo4j they share the one database, so the first one's graph is
    # emptied once its state is read.
    with AgentMemory(settings(), user_id="alice") as single:
        _turns(single)
        single_entities, single_facts, single_rels = _single_path(single)
        expected = stored_state(single)
        single._portal.run(single.core.ctx.graph.write("MATCH (n) DETACH DELETE n"))
    with AgentMemory(settings(), user_id="alice") as batch:
        _turns(batch)
        entities, facts, rels = _batch_path(batch)
        got = stored_state(batch)

        assert got["entities"] == expected["entities"]
        assert got["facts"] == expected["facts"]
        assert got["edges"] == expected["edges"]
        assert got["timeline"] == expected["timeline"]
        # and the comparison has teeth: the merged values are there
        lisbon = got["entities"]["e-lisbon"]
        assert lisbon["aliases"] == ["Lisboa", "Olisipo"] and lisbon["salience"] == 0.9
        assert lisbon["properties"] == '{"country": "PT", "population": 545000}'
        assert got["facts"]["f1"]["claim"] == "alice lives in Lisbon since May"
        assert got["facts"]["f1"]["confidence"] == 0.9 and got["facts"]["f1"]["source_turn_id"] == "t0"
        assert got["facts"]["f2"]["certainty"] == "explicit" and got["facts"]["f2"]["confidence"] == 0.7
        assert ("f1", "DERIVED_FROM", "t4", None) in got["edges"] and ("f1", "ABOUT", "e-acme", None) in got["edges"]
        assert len(got["timeline"]) == 5 + 4  # five entities, four facts

        # what the calls return: an item's memory as stored after the batch, which the last single call of its key
        # returned too (but for the clock's first_seen)
        assert [e.id for e in entities] == [e.id for e in single_entities]
        assert [e.id for e in entities][:3] == ["e-lisbon", "e-ana", "e-acme"]
        assert entities[0] == entities[3]
        assert entities[3].model_dump(exclude={"first_seen"}) == single_entities[3].model_dump(exclude={"first_seen"})
        # (an earlier item of an id gets the fact after the batch; its single call returned it before the later one)
        last = sorted({f.id: i for i, f in enumerate(_facts())}.values())
        assert [_fact(facts[i]) for i in last] == [_fact(single_facts[i]) for i in last]
        assert facts[0] == facts[3]
        assert [(r.source_id, r.target_id, r.rel_type, r.user_id) for r in rels] == \
            [(r.source_id, r.target_id, r.rel_type, r.user_id) for r in single_rels]
        assert rels[0].properties == rels[3].properties == {"since": 2021}
        assert rels[1] == single_rels[1] and rels[2] == single_rels[2] and rels[4] == single_rels[4]

        _batch_path(batch)  # the same batches again change nothing, as the same single calls again would not
        assert stored_state(batch) == got


# --- all or nothing --------------------------------------------------------------------------------------------------

def _count(memory, label: str) -> int:
    return gread(memory, f"MATCH (n:{label}) RETURN count(n) AS n")[0]["n"]


def _nothing_written(memory) -> None:
    assert _count(memory, "Entity") == 0
    assert _count(memory, "Fact") == 0
    assert sql(memory, "SELECT count(*) AS n FROM memory_timeline WHERE memory_type IN ('entity', 'fact')")[0]["n"] == 0


def test_one_invalid_item_refuses_the_whole_batch_naming_the_item(memory):
    good = [Entity(user_id="alice", name=f"thing {i}") for i in range(4)]
    bad = [*good[:2], Entity(user_id="alice", name="   "), *good[2:]]
    with pytest.raises(ValidationError, match=r"^entities\[2\]\.name: ") as caught:
        memory.upsert_entities(bad)
    assert caught.value.field == "entities[2].name"
    with pytest.raises(ValidationError, match=r"entities\[1\]\.embedding"):
        memory.upsert_entities([good[0], Entity(user_id="alice", name="x", embedding=[0.1] * 3)])
    with pytest.raises(ValidationError, match=r"entities\[1\]: must be an Entity"):
        memory.upsert_entities([good[0], {"name": "x"}])
    with pytest.raises(ValidationError, match=r"^entities: must be a list"):
        memory.upsert_entities(good[0])
    with pytest.raises(ValidationError, match=r"^channel|entities\[0\]\.channel"):
        memory.upsert_entities(good, channel="Bad Channel!")

    facts = [Fact(user_id="alice", claim=f"claim {i}") for i in range(5)]
    facts[3] = Fact(user_id="alice", claim="")
    with pytest.raises(ValidationError, match=r"^facts\[3\]\.claim: "):
        memory.learn_facts(facts)
    with pytest.raises(ValidationError, match=r"facts\[1\]\.confidence"):
        memory.learn_facts([Fact(user_id="alice", claim="a"), Fact(user_id="alice", claim="b", confidence=2.0)])
    with pytest.raises(ValidationError, match=r"facts\[0\]\.scope"):
        memory.learn_facts([Fact(user_id="alice", claim="a", scope="agent")])
    _nothing_written(memory)

    entities = memory.upsert_entities([Entity(id="a", user_id="alice", name="A"),
                                       Entity(id="b", user_id="alice", name="B")])
    assert [e.id for e in entities] == ["a", "b"]
    # an unknown entity, turn or conversation mismatch in any item: no fact of the batch is written
    with pytest.raises(NotFoundError, match=r"entity 'nope' not found \(facts\[2\]\.entity_ids\)"):
        memory.learn_facts([Fact(user_id="alice", claim="x", entity_ids=["a"]),
                            Fact(user_id="alice", claim="y"),
                            Fact(user_id="alice", claim="z", entity_ids=["b", "nope"])])
    with pytest.raises(NotFoundError, match=r"turn 'no-turn' not found \(facts\[1\]\.source_turn_id\)"):
        memory.learn_facts([Fact(user_id="alice", claim="x"),
                            Fact(user_id="alice", claim="y", source_turn_id="no-turn")])
    turn = memory.store_turn(Turn(conversation_id="c1", user_id="alice", content="hello"))
    with pytest.raises(ValidationError, match=r"facts\[1\]\.conversation_id"):
        memory.learn_facts([Fact(user_id="alice", claim="x"),
                            Fact(user_id="alice", claim="y", source_turn_id=turn.id, conversation_id="c2")])
    assert _count(memory, "Fact") == 0

    # relationships: a bad item or an unknown end refuses them all
    with pytest.raises(ValidationError, match=r"^relationships\[1\]\.rel_type: "):
        memory.create_relationships([("a", "b", "KNOWS"), ("a", "b", "LIVES_WITH")])
    with pytest.raises(ValidationError, match=r"relationships\[0\]: must be a Relationship"):
        memory.create_relationships([("a", "b")])
    with pytest.raises(ValidationError, match=r"relationships\[1\]\.properties"):
        memory.create_relationships([("a", "b", "KNOWS"), ("a", "b", "KNOWS", {1: 2})])
    with pytest.raises(ValidationError, match=r"^relationships\[1\]\.user_id: "):
        memory.create_relationships([("a", "b", "KNOWS"),
                                     Relationship(source_id="a", target_id="b", rel_type="KNOWS", user_id=" alice")])
    with pytest.raises(ValidationError, match=r"^relationships\[0\]\.user_id: "):
        memory.create_relationships([("a", "b", "KNOWS")], user_id=["alice"])  # type: ignore[arg-type]
    with pytest.raises(NotFoundError, match=r"\(relationships\[1\]\.target_id\)"):
        memory.create_relationships([("a", "b", "KNOWS"), ("b", "ghost", "KNOWS")])
    assert gread(memory, "MATCH ()-[r:KNOWS]->() RETURN count(r) AS n")[0]["n"] == 0
    assert memory.upsert_entities([]) == [] and memory.learn_facts([]) == [] and memory.create_relationships([]) == []


def test_relationships_in_several_chunks_are_all_checked_before_the_first(memory, monkeypatch):
    monkeypatch.setattr(semantic_batch, "EDGE_CHUNK", 1)
    ids = [e.id for e in memory.upsert_entities([Entity(user_id="alice", name=f"n{i}") for i in range(3)])]
    with pytest.raises(NotFoundError, match=r"\(relationships\[2\]\.source_id\)"):
        memory.create_relationships([(ids[0], ids[1], "KNOWS"), (ids[1], ids[2], "KNOWS"), ("ghost", ids[0], "KNOWS")])
    assert gread(memory, "MATCH ()-[r]->() RETURN count(r) AS n")[0]["n"] == 0
    made = memory.create_relationships([(ids[0], ids[1], "KNOWS"), (ids[1], ids[2], "PART_OF")])
    assert [r.rel_type for r in made] == ["KNOWS", "PART_OF"]
    assert gread(memory, "MATCH ()-[r]->() RETURN count(r) AS n")[0]["n"] == 2


def test_a_batch_over_the_cap_is_refused_naming_the_limit(settings):
    with AgentMemory(settings(limits={"max_batch_items": 3}), user_id="alice") as memory:
        entities = [Entity(id=f"e{i}", user_id="alice", name=f"n{i}") for i in range(4)]
        with pytest.raises(ValidationError, match=r"^entities: has 4 items; the limit is 3 \(limits.max_batch_items\)"):
            memory.upsert_entities(entities)
        with pytest.raises(ValidationError, match=r"^facts: has 4 items; the limit is 3 \(limits.max_batch_items\)"):
            memory.learn_facts(Fact(user_id="alice", claim=f"c{i}") for i in range(4))
        _nothing_written(memory)
        memory.upsert_entities(entities[:3])  # at the cap: accepted
        with pytest.raises(ValidationError, match=r"^relationships: has 4 items; the limit is 3"):
            memory.create_relationships([("e0", "e1", "KNOWS")] * 4)
        assert gread(memory, "MATCH ()-[r]->() RETURN count(r) AS n")[0]["n"] == 0
        assert len(memory.store_facts([Fact(user_id="alice", claim=f"c{i}") for i in range(3)])) == 3


# --- duplicates inside a batch -------------------------------------------------------------------------------------

def test_duplicates_inside_a_batch_merge_as_in_order(memory):
    out = memory.upsert_entities([
        Entity(user_id="alice", name="Rust", type="language", aliases=["rust-lang"], properties={"x": 1}),
        Entity(user_id="alice", name=" rust", type="Language", description="a language", properties={"y": 2}),
        Entity(user_id="alice", name="RUST", type="language", aliases=["Rust-Lang", "ferris"]),
    ])
    assert len({e.id for e in out}) == 1
    assert _count(memory, "Entity") == 1
    stored = memory.get_entity(out[0].id)
    assert stored.name == "Rust" and stored.description == "a language"
    assert stored.properties == {"x": 1, "y": 2}
    assert sorted(stored.aliases) == ["ferris", "rust-lang"]

    # one audit entry for the batch's entities of one user and channel, written with the batch
    entries = sql(memory, "SELECT metadata FROM memory_audit_log WHERE operation = 'upsert'")
    assert [e["metadata"]["affected_ids"] for e in entries] == [[out[0].id]]

    facts = memory.learn_facts([Fact(id="dup", user_id="alice", claim="first", confidence=0.8),
                                Fact(id="dup", user_id="alice", claim="second", confidence=0.5)])
    assert [f.claim for f in facts] == ["second", "second"] and facts[0].confidence == 0.8
    assert _count(memory, "Fact") == 1
    # the same id in two channels inside one batch: the single path would refuse the second; the batch refuses all
    with pytest.raises(ConflictError, match=r"facts\[1\]\.channel"):
        memory.learn_facts([Fact(id="new", user_id="alice", claim="a"),
                            Fact(id="new", user_id="alice", claim="b", channel="proj-x")])
    with pytest.raises(ConflictError, match=r"facts\[0\]\.channel.*already stored in channel '_global'"):
        memory.learn_facts([Fact(id="dup", user_id="alice", claim="moved", channel="proj-x")])
    assert _count(memory, "Fact") == 1
    assert memory.get_fact("dup").claim == "second"


# --- another user's ids ---------------------------------------------------------------------------------------------

def test_another_users_ids_refuse_the_batch(memory):
    bob_turn = memory.store_turn(Turn(conversation_id="bob-c", user_id="bob", content="I am bob"))
    bob_entity = memory.upsert_entity(Entity(id="bob-e", user_id="bob", name="Bob's cat"))
    memory.learn_fact(Fact(id="bob-f", user_id="bob", claim="bob has a cat"))
    mine = memory.upsert_entities([Entity(id="alice-e", user_id="alice", name="Alice's dog")])

    with pytest.raises(ConflictError, match=r"facts\[1\]\.id: fact id 'bob-f' is already used by another user"):
        memory.learn_facts([Fact(id="alice-f", user_id="alice", claim="mine"),
                            Fact(id="bob-f", user_id="alice", claim="taken over?")])
    with pytest.raises(ConflictError, match=r"facts\[1\]\.id: fact id 'x' is another user's fact in this batch"):
        memory.learn_facts([Fact(id="x", user_id="alice", claim="a"), Fact(id="x", user_id="bob", claim="b")])
    with pytest.raises(NotFoundError, match=r"bob-e"):
        memory.learn_facts([Fact(user_id="alice", claim="about bob's cat", entity_ids=[bob_entity.id])])
    with pytest.raises(NotFoundError, match=r"turn"):
        memory.learn_facts([Fact(user_id="alice", claim="from bob's turn", source_turn_id=bob_turn.id)])
    with pytest.raises(ConflictError, match=r"facts\[0\]\.conversation_id: 'bob-c' belongs to another user"):
        memory.learn_facts([Fact(user_id="alice", claim="in bob's conversation", conversation_id="bob-c")])
    with pytest.raises(NotFoundError, match=r"relationships\[0\]\.target_id"):
        memory.create_relationships([(mine[0].id, bob_entity.id, "KNOWS")])
    with pytest.raises(NotFoundError, match=r"relationships\[0\]\.source_id"):
        memory.create_relationships([Relationship(source_id=mine[0].id, target_id=bob_entity.id, rel_type="KNOWS",
                                                  user_id="bob")])
    assert gread(memory, "MATCH (f:Fact) RETURN collect(f.id) AS ids")[0]["ids"] == ["bob-f"]
    assert memory.get_fact("bob-f", user_id="bob").claim == "bob has a cat"
    assert gread(memory, "MATCH ()-[r:KNOWS]->() RETURN count(r) AS n")[0]["n"] == 0


# --- vectors ------------------------------------------------------------------------------------------------------

def test_batch_vectors_are_embedded_in_one_call_stored_and_searchable(memory):
    embedder = memory.core.ctx.embedder
    calls: list[int] = []
    original = embedder.embed_documents

    async def counting(texts):
        calls.append(len(texts))
        return await original(texts)

    embedder.embed_documents = counting
    try:
        entities = memory.upsert_entities([Entity(user_id="alice", name=f"Harbour {i}", description=f"pier {i}")
                                           for i in range(6)])
        assert calls == [6]
        facts = memory.learn_facts([
            Fact(user_id="alice", claim="alice keeps her kayak at the harbour of Setubal", entity_ids=[entities[0].id]),
            *[Fact(user_id="alice", claim=f"unrelated note number {i} about taxes") for i in range(5)]])
        assert calls == [6, 6]
    finally:
        embedder.embed_documents = original
    for fact in facts:
        stored = gread(memory, "MATCH (f:Fact {id: $id}) RETURN f.embedding AS v", {"id": fact.id})[0]["v"]
        expected = memory._portal.run(original([fact.claim]))[0]
        assert np.allclose(np.asarray(stored, dtype=float), expected, atol=1e-5)
    recalled = [f.item.id for f in memory.remember("where is alice's kayak kept?", top_k=5).facts]
    assert facts[0].id in recalled

    # written again with new text, the new text's vector is stored (FalkorDB keeps an old vector unless removed)
    for i in range(3):
        text = f"the kayak moved to Lagos, round {i}"
        memory.learn_facts([Fact(id=facts[0].id, user_id="alice", claim=text)])
        stored = gread(memory, "MATCH (f:Fact {id: $id}) RETURN f.embedding AS v", {"id": facts[0].id})[0]["v"]
        assert np.allclose(np.asarray(stored, dtype=float), memory._portal.run(original([text]))[0], atol=1e-5)
        before = gread(memory, "MATCH (e:Entity {id: $id}) RETURN e.embedding AS v", {"id": entities[1].id})[0]["v"]
        memory.upsert_entities([Entity(user_id="alice", name="Harbour 1", description=f"a new pier, round {i}")])
        after = gread(memory, "MATCH (e:Entity {id: $id}) RETURN e.embedding AS v", {"id": entities[1].id})[0]["v"]
        assert not np.allclose(np.asarray(after, dtype=float), np.asarray(before, dtype=float))
        assert np.allclose(np.asarray(after, dtype=float),
                           memory._portal.run(original([f"Harbour 1: a new pier, round {i}"]))[0], atol=1e-5)


# --- concurrency --------------------------------------------------------------------------------------------------

def test_concurrent_batches_of_the_same_names_give_one_entity_each(settings):
    config = settings()
    names = [f"Place {i}" for i in range(20)]

    async def main() -> None:
        first = await AsyncAgentMemory.open(config, user_id="alice")
        second = await AsyncAgentMemory.open(config, user_id="alice")
        try:
            for round_ in range(3):
                batches = [[Entity(user_id="alice", name=n, type="place", aliases=[f"{n} {who}{round_}"],
                                   properties={who: round_}) for n in names] for who in ("a", "b")]
                got = await asyncio.gather(first.upsert_entities(batches[0]), second.upsert_entities(batches[1]))
                assert [e.id for e in got[0]] == [e.id for e in got[1]]
            rows = await first.ctx.graph.read(
                "MATCH (e:Entity) RETURN e.name AS name, e.aliases AS aliases, e.properties AS p")
            assert sorted(r["name"] for r in rows) == sorted(names)  # one entity per name
            for row in rows:  # no lost update: every alias of both writers in every round
                assert sorted(row["aliases"]) == sorted(f"{row['name']} {w}{r}" for w in "ab" for r in range(3))
                assert row["p"] == '{"a": 2, "b": 2}'
        finally:
            await first.close()
            await second.close()

    asyncio.run(main())


# --- an agent's view -------------------------------------------------------------------------------------------------

def test_an_agents_batch_of_facts_is_the_agents(memory):
    coder = memory.for_agent("coder")
    mine, shared = coder.learn_facts([Fact(user_id="alice", claim="the build uses ninja", scope="agent"),
                                      Fact(user_id="alice", claim="the repo is on GitHub")])
    assert (mine.agent_id, mine.scope) == ("coder", "agent") and shared.agent_id == "coder"
    with pytest.raises(ValidationError, match=r"^facts\[1\]\.agent_id: "):
        coder.learn_facts([Fact(user_id="alice", claim="a"), Fact(user_id="alice", claim="b", agent_id="planner")])
    with pytest.raises(NotFoundError):  # another agent's private fact is not readable by it
        memory.for_agent("planner").get_fact(mine.id)
    assert coder.get_fact(mine.id).claim == "the build uses ninja"
    assert _count(memory, "Fact") == 2
