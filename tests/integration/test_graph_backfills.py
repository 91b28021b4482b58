"""A graph written by an earlier version, without the lookup keys of today's nodes, gets them once when it is opened:
what was stored before is found through the keys' indexes as what is stored now (on both backends)."""

from __future__ import annotations

from agentx_memory import AgentMemory, Entity
from tests.conftest import gread, gwrite


def test_an_entity_stored_before_name_keys_is_resolved_by_its_name_and_alias_after_reopening(settings):
    s = settings()
    with AgentMemory(s, user_id="alice") as memory:
        lisbon = memory.upsert_entity(Entity(user_id="alice", name="Lisbon", type="place", aliases=["Lisboa"]))
        memory.upsert_entity(Entity(user_id="bob", name="Lisbon", type="place", aliases=["Lisboa"]))
        # as a graph of an earlier version left them: no keys on any entity, no record of the pass
        gwrite(memory, "MATCH (e:Entity) REMOVE e.name_keys")
        gwrite(memory, "MATCH (m:AgentxMeta {key: 'entity_name_keys'}) DELETE m")
        before = memory.remember("What do you know about Lisboa?", top_k=5).entities
        assert all("resolved" not in e.signals for e in before)  # nothing finds it by its names now
    with AgentMemory(s, user_id="alice") as memory:
        for question in ("Tell me about Lisbon", "What do you know about Lisboa?"):
            entities = memory.remember(question, top_k=5).entities
            assert entities[0].id == lisbon.id and "resolved" in entities[0].signals, question
        assert gread(memory, "MATCH (m:AgentxMeta {key: 'entity_name_keys'}) RETURN m.done AS done") == [
            {"done": True}]


def test_an_entity_without_a_name_does_not_stop_the_backfill(settings):
    """An entity node without a normalized name (written by hand, or by a tool) gets no key for it, and the graph
    still opens; the backfill does not stop at it or come back to it."""
    s = settings()
    with AgentMemory(s, user_id="alice") as memory:
        gwrite(memory, "CREATE (:Entity {id: 'hand-made', user_id: 'alice', channel: '_global', aliases: ['Handy']})")
        gwrite(memory, "MATCH (m:AgentxMeta {key: 'entity_name_keys'}) DELETE m")
    with AgentMemory(s, user_id="alice") as memory:
        assert gread(memory, "MATCH (e:Entity {id: 'hand-made'}) RETURN e.name_keys AS keys") == [
            {"keys": ["alice|handy"]}]
