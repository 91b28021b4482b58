"""The decay job (issue 14) on both graph backends: salience and inferred facts' confidence match the formula to
the digit, the idle and interval thresholds hold at their boundaries, a run is idempotent, and salience ranks."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest

from agentx_memory import AgentMemory, Entity, Fact
from tests.conftest import gread

DAY_MS = 86_400_000


def _stored(memory: AgentMemory, label: str, node_id: str) -> dict:
    return gread(memory, f"MATCH (n:{label} {{id: $id}}) RETURN n.salience AS salience, n.confidence AS confidence, "
                         "n.first_seen AS first_seen, n.last_accessed AS last_accessed, n.created_at AS created_at",
                 {"id": node_id})[0]


def _ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def test_salience_decays_by_the_formula_after_the_idle_time(settings):
    with AgentMemory(settings(), user_id="alice") as memory:
        idle = memory.upsert_entity(Entity(user_id="alice", name="Porto", type="place", salience=0.8))
        used = memory.upsert_entity(Entity(user_id="alice", name="Lisbon", type="place", salience=0.8))
        for _ in range(3):
            memory._portal.run(memory.core.semantic.reinforce("alice", entity_ids=[used.id]))
        first_seen = _stored(memory, "Entity", idle.id)["first_seen"]
        last_access = _stored(memory, "Entity", used.id)["last_accessed"]
        start = datetime.fromtimestamp(max(first_seen, last_access) / 1000, UTC)

        # 23 h 59 min after: nothing is idle for 24 h yet
        memory.apply_decay(now=start + timedelta(hours=23, minutes=59))
        assert _stored(memory, "Entity", idle.id)["salience"] == 0.8

        now = start + timedelta(days=10, hours=3)
        report = memory.apply_decay(now=now)
        assert report.entities_examined == 2
        days_idle = (_ms(now) - first_seen) / DAY_MS
        assert _stored(memory, "Entity", idle.id)["salience"] == pytest.approx(
            min(1.0, 0.8 * 0.95 ** days_idle * (1 + 0.1 * math.log(1 + 0))), rel=1e-12)
        days_used = (_ms(now) - last_access) / DAY_MS
        assert _stored(memory, "Entity", used.id)["salience"] == pytest.approx(
            min(1.0, 0.8 * 0.95 ** days_used * (1 + 0.1 * math.log(1 + 3))), rel=1e-12)  # used often: fades slower
        before = _stored(memory, "Entity", idle.id)["salience"]
        memory.apply_decay(now=now)  # again for the same moment: the same values, not decayed twice
        assert _stored(memory, "Entity", idle.id)["salience"] == before
        # an access resets the clock: the salience comes back from the base on the next run
        memory._portal.run(memory.core.semantic.reinforce("alice", entity_ids=[idle.id]))
        accessed = _stored(memory, "Entity", idle.id)["last_accessed"]
        later = datetime.fromtimestamp(accessed / 1000, UTC) + timedelta(days=2)
        memory.apply_decay(now=later)
        assert _stored(memory, "Entity", idle.id)["salience"] == pytest.approx(
            min(1.0, 0.8 * 0.95 ** 2 * (1 + 0.1 * math.log(2))), rel=1e-12)


def test_inferred_facts_lose_confidence_weekly_and_stated_facts_do_not(settings):
    made = datetime(2026, 1, 5, 12, tzinfo=UTC)
    with AgentMemory(settings(), user_id="alice") as memory:
        inferred = memory.learn_fact(Fact(user_id="alice", claim="Sam probably likes hiking", confidence=0.7,
                                          certainty="inferred", created_at=made))
        stated = memory.learn_fact(Fact(user_id="alice", claim="Sam lives in Lisbon", confidence=0.95,
                                        certainty="explicit", created_at=made))
        memory.apply_decay(now=made + timedelta(days=6, hours=23))  # within the first week: no step yet
        assert _stored(memory, "Fact", inferred.id)["confidence"] == 0.7
        memory.apply_decay(now=made + timedelta(days=7))  # exactly one week: one step of 7 days
        assert _stored(memory, "Fact", inferred.id)["confidence"] == pytest.approx(0.7 * 0.95 ** 7, rel=1e-12)
        report = memory.apply_decay(now=made + timedelta(days=20))  # two whole weeks
        assert report.facts_examined == 1
        assert memory.get_fact(inferred.id).confidence == pytest.approx(0.7 * 0.95 ** 14, rel=1e-12)
        assert memory.get_fact(stated.id).confidence == 0.95


def test_salience_lifts_an_entity_of_equal_standing(settings):
    with AgentMemory(settings(), user_id="alice") as memory:
        for kind in ("project", "person"):
            memory.upsert_entity(Entity(user_id="alice", name="Nova", type=kind, description="Nova"))

        def order(weight: float) -> list[str]:
            memory.core.settings.retrieval.salience_weight = weight  # the retriever reads the live settings
            return [e.id for e in memory.remember("Tell me about Nova", top_k=5).entities]

        winner, other = order(0.0)[:2]
        for entity_id, salience in ((winner, 0.01), (other, 1.0)):  # as if decay had faded the winner
            memory._portal.run(memory.core.ctx.graph.write("MATCH (e:Entity {id: $id}) SET e.salience = $s",
                                                           {"id": entity_id, "s": salience}))
        assert order(0.0)[:2] == [winner, other]  # without the signal salience changes nothing
        assert order(0.2)[:2] == [other, winner]  # with it, the salient entity comes first


# --- cleanup ---------------------------------------------------------------------------------------------------------

def test_cleanup_deletes_faded_unused_entities_at_its_bounds_and_audits_them(settings):
    with AgentMemory(settings(audit={"level": "writes"}), user_id="alice") as memory:
        faded = memory.upsert_entity(Entity(user_id="alice", name="Old Cafe", type="place", salience=0.0999))
        at_bound = memory.upsert_entity(Entity(user_id="alice", name="Bookshop", type="place", salience=0.1))
        used = memory.upsert_entity(Entity(user_id="alice", name="Gym", type="place", salience=0.05))
        home = memory.upsert_entity(Entity(user_id="alice", name="Home", type="place", salience=0.9))
        memory.create_relationship(faded.id, home.id, "LOCATED_IN")
        fact = memory.learn_fact(Fact(user_id="alice", claim="The Old Cafe closed", entity_ids=[faded.id]))
        seen = _stored(memory, "Entity", faded.id)["first_seen"]
        thirty = datetime.fromtimestamp(seen / 1000, UTC) + timedelta(days=30)  # the faded one's 30 days
        memory._portal.run(memory.core.semantic.reinforce("alice", entity_ids=[used.id]))  # used: its clock restarts

        assert memory.cleanup(now=thirty - timedelta(milliseconds=1)).entities_deleted == 0  # not yet 30 days
        report = memory.cleanup(now=thirty)
        assert report.entities_deleted == 1
        left = {r["name"] for r in gread(memory, "MATCH (e:Entity) RETURN e.name AS name")}
        assert left == {"Bookshop", "Gym", "Home"}  # salience exactly at the bound stays; so does a used one
        assert memory.get_fact(fact.id).entity_ids == []  # the fact stays, its link to the deleted entity goes
        audit = memory._portal.run(memory.core.ctx.postgres.fetch(
            "SELECT metadata FROM memory_audit_log WHERE operation = 'delete'"))
        (entry,) = [a["metadata"] for a in audit]
        assert entry["entity"]["name"] == "Old Cafe" and entry["affected_ids"] == [faded.id]
        assert entry["edges"]["outgoing"] == [{"type": "LOCATED_IN", "to": home.id}]
        assert entry["edges"]["incoming"] == [{"type": "ABOUT", "from": fact.id}]
        # a day later every one of them is idle for 30 days: salience exactly at the bound still stays
        memory.cleanup(now=thirty + timedelta(days=1))
        assert {r["name"] for r in gread(memory, "MATCH (e:Entity) RETURN e.name AS name")} == {"Bookshop", "Home"}
        assert memory.get_entity(at_bound.id).salience == 0.1
