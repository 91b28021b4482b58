"""Entity deduplication (issue 14) on both graph backends: what merges and what must not, every alias and edge kept,
the merged name resolving to the survivor afterwards, a dry run that changes nothing, and an undo that restores the
graph and the timeline."""

from __future__ import annotations

import numpy as np
import pytest

from agentx_memory import AgentMemory, Entity, Fact, Turn
from agentx_memory.dedup import content_words, name_evidence
from agentx_memory.errors import NotFoundError
from tests.conftest import TEST_DIMENSION, gread


def _vector(seed: int, noise: float = 0.0, noise_seed: int = 99) -> list[float]:
    """A unit vector; ``noise`` mixes in another direction (0.2 gives a cosine of about 0.98 with the pure one)."""
    v = np.random.default_rng(seed).normal(size=TEST_DIMENSION)
    v /= np.linalg.norm(v)
    if noise:
        w = np.random.default_rng(noise_seed).normal(size=TEST_DIMENSION)
        w /= np.linalg.norm(w)
        v = v + noise * w
        v /= np.linalg.norm(v)
    return v.tolist()


def _entity(memory: AgentMemory, name: str, kind: str, vector: list[float], *, user: str = "alice",
            **extra) -> Entity:
    return memory.upsert_entity(Entity(user_id=user, name=name, type=kind, embedding=vector, **extra))


def _graph(memory: AgentMemory) -> list:
    """Every node (label, id, and for entities what a merge changes) and every edge (with its properties)."""
    nodes = gread(memory, "MATCH (n) RETURN labels(n)[0] AS label, n.id AS id, n.name AS name, n.aliases AS aliases,"
                          " n.access_count AS accesses, n.salience AS salience, n.key AS key ORDER BY label, id")
    edges = gread(memory, "MATCH (a)-[r]->(b) RETURN a.id AS a, type(r) AS t, b.id AS b, r.properties AS p "
                          "ORDER BY a, t, b")
    return [nodes, edges]


def _timeline(memory: AgentMemory) -> list:
    return memory._portal.run(memory.core.ctx.postgres.fetch(
        "SELECT neo4j_node_id, summary, importance_score FROM memory_timeline WHERE memory_type = 'entity'"
        " ORDER BY neo4j_node_id"))


def test_content_words_keep_negations():
    assert content_words("Sam moved to Lisbon.") == content_words("sam  moved to LISBON") == {"sam", "moved", "lisbon"}
    assert content_words("Sam does not like tea") != content_words("Sam does like tea")
    assert content_words("Sam doesn't like tea") != content_words("Sam likes tea")


def test_name_evidence():
    assert name_evidence({"name": "Sam"}, {"name": "sam  lee"})  # one name's words within the other's
    assert name_evidence({"name": "Samuel", "aliases": []}, {"name": "Sam", "aliases": ["samuel"]})
    assert name_evidence({"name": "Lumen Labs"}, {"name": "lumen labs"})
    assert not name_evidence({"name": "Samantha"}, {"name": "Sam Lee"})
    assert not name_evidence({"name": "Sam Porto"}, {"name": "Sam Lee"})  # a shared word is not enough


def test_duplicates_merge_with_every_alias_and_edge_and_the_run_is_undone(settings):
    with AgentMemory(settings(audit={"level": "writes"}), user_id="alice") as memory:
        sam_lee = _entity(memory, "Sam Lee", "person", _vector(1), aliases=["Sammy"], description="Alice's friend")
        sam = _entity(memory, "Sam", "person", _vector(1, 0.2), properties={"city": "Lisbon"})
        bob = _entity(memory, "Bob", "person", _vector(2))
        for _ in range(2):  # Sam Lee is the more used one: it survives
            memory._portal.run(memory.core.semantic.reinforce("alice", entity_ids=[sam_lee.id]))
        memory.create_relationship(sam.id, bob.id, "KNOWS")
        memory.create_relationship(bob.id, sam.id, "KNOWS")
        memory.create_relationship(sam.id, sam_lee.id, "RELATED_TO")  # between the two: dropped by the merge
        turn = memory.store_turn(Turn(conversation_id="c1", user_id="alice", content="Sam moved to Lisbon."))
        about_sam = memory.learn_fact(Fact(user_id="alice", claim="Sam moved to Lisbon", entity_ids=[sam.id],
                                           source_turn_id=turn.id))
        memory._portal.run(memory.core.ctx.graph.write(
            "MATCH (c:Conversation {id: 'c1'}), (e:Entity {id: $id}) MERGE (c)-[:MENTIONS]->(e)", {"id": sam.id}))
        # not duplicates: another user's Sam, a project named like a person, a different Sam, a name without evidence
        _entity(memory, "Sam", "person", _vector(1), user="bob")
        _entity(memory, "Sam Porto", "person", _vector(7))
        _entity(memory, "Samantha", "person", _vector(1, 0.1))
        _entity(memory, "Sam", "project", _vector(1, 0.1, noise_seed=5))
        before, timeline = _graph(memory), _timeline(memory)

        dry = memory.dedup(dry_run=True)
        assert [(c["kind"], c["survivor_id"], c["loser_id"]) for c in dry.changes] == [("entity", sam_lee.id, sam.id)]
        assert _graph(memory) == before  # a dry run changes nothing

        run = memory.dedup()
        assert run.entities_merged == 1 and run.run_id
        merged = memory.get_entity(sam_lee.id)
        assert merged.aliases == ["Sammy", "Sam"] and merged.access_count == 2
        assert merged.properties == {"city": "Lisbon"} and merged.description == "Alice's friend"
        with pytest.raises(NotFoundError):
            memory.get_entity(sam.id)
        edges = {(r["a"], r["t"], r["b"]) for r in gread(memory, "MATCH (a)-[r]->(b:Entity) WHERE a.id IS NOT NULL "
                                                                 "RETURN a.id AS a, type(r) AS t, b.id AS b")}
        assert {(sam_lee.id, "KNOWS", bob.id), (bob.id, "KNOWS", sam_lee.id), (about_sam.id, "ABOUT", sam_lee.id),
                ("c1", "MENTIONS", sam_lee.id)} <= edges
        assert memory.get_fact(about_sam.id).entity_ids == [sam_lee.id]
        assert len({r["n"] for r in gread(memory, "MATCH (e:Entity {user_id: 'bob'}) RETURN e.id AS n")}) == 1
        audit = memory._portal.run(memory.core.ctx.postgres.fetch(
            "SELECT metadata FROM memory_audit_log WHERE operation = 'merge'"))
        assert [a["metadata"]["merged"] for a in audit] == ["Sam"]

        assert memory.undo_run(run.run_id)["restored"] == 1
        assert _graph(memory) == before  # every node, property a merge changes and edge as before
        assert _timeline(memory) == timeline

        again = memory.dedup()  # merged again: now the merged name and type resolve to the survivor
        assert again.entities_merged == 1
        assert memory.upsert_entity(Entity(user_id="alice", name="sam", type="person")).id == sam_lee.id
        assert {r["name"] for r in gread(memory, "MATCH (e:Entity {user_id: 'alice', type: 'person'}) "
                                                 "RETURN e.name AS name")} == {"Sam Lee", "Bob", "Sam Porto",
                                                                               "Samantha"}


def test_the_same_claim_learned_twice_is_merged_and_the_merge_undone(settings):
    with AgentMemory(settings(audit={"level": "writes"}), user_id="alice") as memory:
        sam = _entity(memory, "Sam", "person", _vector(1))
        first, second = memory.store_turns([
            Turn(conversation_id="c1", user_id="alice", content="Sam moved to Lisbon."),
            Turn(conversation_id="c2", user_id="alice", content="sam moved to lisbon, yes")])
        same = _vector(3)  # one vector for all: only the words tell these facts apart

        def learn(claim: str, confidence: float, turn: Turn | None = None, user: str = "alice", **extra) -> Fact:
            return memory.learn_fact(Fact(user_id=user, claim=claim, confidence=confidence, embedding=same,
                                          source_turn_id=turn.id if turn else None, **extra))

        weak = learn("Sam moved to Lisbon.", 0.7, first, entity_ids=[sam.id])
        strong = learn("sam moved to lisbon", 0.9, second)
        negated = learn("Sam did not move to Lisbon", 0.9)
        other_city = learn("Sam moved to Porto", 0.9)
        past = learn("Sam moved to Lisbon", 0.8, temporal="past")
        learn("Sam moved to Lisbon", 0.9, user="bob")
        before = _facts(memory)

        run = memory.dedup()
        assert (run.entities_merged, run.facts_merged) == (0, 2)
        merged = {(c["survivor_id"], c["loser_id"]) for c in run.changes}
        assert merged == {(strong.id, weak.id), (strong.id, past.id)}  # "past" fits the unset temporal of the best
        assert memory.get_fact(weak.id).status == "duplicate" and memory.get_fact(weak.id).superseded_by == strong.id
        kept = memory.get_fact(strong.id)
        assert kept.status == "active" and kept.confidence == 0.9 and kept.entity_ids == [sam.id]
        sources = {r["t"] for r in gread(memory, "MATCH (f:Fact {id: $id})-[:DERIVED_FROM]->(t:Turn) "
                                                 "RETURN t.id AS t", {"id": strong.id})}
        assert sources == {first.id, second.id}  # the provenance of both
        for untouched in (negated, other_city):
            assert memory.get_fact(untouched.id).status == "active"
        assert len(gread(memory, "MATCH (f:Fact {user_id: 'bob'}) WHERE f.status IS NULL OR f.status = 'active' "
                                 "RETURN f.id AS id")) == 1

        assert memory.undo_run(run.run_id)["restored"] == 2
        assert _facts(memory) == before


def _facts(memory: AgentMemory) -> list:
    nodes = gread(memory, "MATCH (f:Fact) RETURN f.id AS id, f.status AS status, f.superseded AS superseded, "
                          "f.superseded_by AS by, f.valid_until AS until, f.confidence AS confidence, "
                          "f.access_count AS accesses ORDER BY id")
    edges = gread(memory, "MATCH (f:Fact)-[r]->(x) RETURN f.id AS f, type(r) AS t, x.id AS x ORDER BY f, t, x")
    return [nodes, edges]


def test_undoing_a_dedup_run_takes_back_what_its_merges_added_and_keeps_what_changed_since(settings):
    """Undo gives back what each merge added to the survivor (the duplicate's accesses, its aliases) and keeps what
    happened to the survivor since (recalled again, a new alias): before, it put the survivor's values back as they
    were before the merge, and the accesses since were lost."""
    with AgentMemory(settings(), user_id="alice") as memory:
        same = _vector(3)

        def learn(claim: str, confidence: float, vector: list[float]) -> Fact:
            return memory.learn_fact(Fact(user_id="alice", claim=claim, confidence=confidence, embedding=vector))

        def reinforce(times: int, **ids: list[str]) -> None:
            for _ in range(times):
                memory._portal.run(memory.core.semantic.reinforce("alice", **ids))

        weak, strong = learn("Sam moved to Lisbon.", 0.7, same), learn("sam moved to lisbon", 0.9, same)
        sam_lee = _entity(memory, "Sam Lee", "person", _vector(1), aliases=["Sammy"])
        sam = _entity(memory, "Sam", "person", _vector(1, 0.2))
        reinforce(2, fact_ids=[weak.id], entity_ids=[sam.id])
        reinforce(3, entity_ids=[sam_lee.id])  # the more used: it survives

        run = memory.dedup()
        assert (run.entities_merged, run.facts_merged) == (1, 1)
        assert memory.get_fact(strong.id).access_count == 2 and memory.get_entity(sam_lee.id).access_count == 5
        # after the run: both survivors are recalled again, and one gets an alias of its own
        reinforce(4, fact_ids=[strong.id], entity_ids=[sam_lee.id])
        memory._portal.run(memory.core.ctx.graph.write(
            "MATCH (e:Entity {id: $id}) SET e.aliases = e.aliases + ['S. Lee']", {"id": sam_lee.id}))

        undone = memory.undo_run(run.run_id)
        assert (undone["restored"], undone["skipped"]) == (2, 0)
        kept, back = memory.get_fact(strong.id), memory.get_fact(weak.id)
        assert (kept.access_count, kept.confidence) == (4, 0.9)  # its own 4 accesses since, not the duplicate's 2
        assert (back.status, back.superseded_by, back.access_count) == ("active", None, 2)
        survivor, loser = memory.get_entity(sam_lee.id), memory.get_entity(sam.id)
        assert survivor.access_count == 3 + 4 and survivor.aliases == ["Sammy", "S. Lee"]
        assert (loser.name, loser.access_count) == ("Sam", 2)
