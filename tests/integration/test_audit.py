"""The audit layer on the real embedded PostgreSQL: levels, config snapshots, failure isolation, partitions."""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime, timedelta

import pytest

from agentx_memory import AgentMemory, Entity, Fact, Turn
from tests.conftest import sql


def log_read(memory, **kwargs):
    """Write a read audit entry the way retrieval will (retrieval itself is not built yet)."""
    defaults = dict(query="where does alice live", channels_searched=["proj", "_global"], result_count=3,
                    latency_ms=12, user_id="alice", source_channel="proj", trace={"legs": ["vector", "lexical"]})
    memory._portal.run(memory.core.ctx.audit.log_read(**{**defaults, **kwargs}))


def exercise(memory):
    """One write of each kind, one strategy search and one retrieval read."""
    turn = memory.store_turn(Turn(conversation_id="c1", user_id="alice", content="I live in Lisbon"), channel="proj")
    entity = memory.upsert_entity(Entity(user_id="alice", name="Lisbon"), channel="proj")
    memory.learn_fact(Fact(user_id="alice", claim="Alice lives in Lisbon", source_turn_id=turn.id,
                           entity_ids=[entity.id]), channel="proj")
    memory.learn_strategy("ask where the user lives")
    memory.find_strategies("where does the user live", channels=["proj"])
    log_read(memory)


@pytest.fixture
def open_memory(settings):
    opened = []

    def factory(**overrides):
        mem = AgentMemory(settings(**overrides), user_id="alice")
        opened.append(mem)
        return mem

    yield factory
    for mem in opened:
        mem.close()


def test_level_off_logs_nothing(open_memory):
    memory = open_memory(audit={"level": "off"})
    exercise(memory)
    assert sql(memory, "SELECT count(*) AS n FROM memory_audit_log")[0]["n"] == 0


def test_level_writes_logs_mutations_only_without_payloads(open_memory):
    memory = open_memory(audit={"level": "writes"})
    exercise(memory)
    rows = sql(memory, "SELECT * FROM memory_audit_log ORDER BY id")
    kinds = [(r["operation"], r["memory_type"]) for r in rows]
    assert kinds == [("store", "episodic"), ("upsert", "semantic"), ("store", "semantic"), ("store", "procedural")]
    episodic = rows[0]
    assert episodic["user_id"] == "alice" and episodic["conversation_id"] == "c1"
    assert episodic["source_channel"] == "proj" and episodic["target_channels"] == ["proj"]
    assert episodic["result_count"] == 1 and episodic["success"] is True and episodic["latency_ms"] >= 0
    assert len(episodic["metadata"]["affected_ids"]) == 1
    assert all("payload" not in r["metadata"] for r in rows)
    assert rows[2]["metadata"]["kind"] == "fact"


def test_level_reads_adds_reads_without_traces(open_memory):
    memory = open_memory(audit={"level": "reads"})
    exercise(memory)
    rows = sql(memory, "SELECT * FROM memory_audit_log ORDER BY id")
    reads = [r for r in rows if r["operation"] in ("retrieve", "find_strategies")]
    assert [r["operation"] for r in reads] == ["find_strategies", "retrieve"]
    retrieve = reads[1]
    assert retrieve["query_text"] == "where does alice live" and retrieve["result_count"] == 3
    assert retrieve["target_channels"] == ["proj", "_global"] and retrieve["latency_ms"] == 12
    strategy_read = reads[0]
    assert strategy_read["memory_type"] == "procedural" and strategy_read["target_channels"] == ["proj", "_global"]
    assert strategy_read["query_text"] == "where does the user live" and strategy_read["result_count"] == 1
    assert all("trace" not in r["metadata"] and "payload" not in r["metadata"] for r in rows)
    assert len(rows) == 6


def test_level_verbose_adds_payloads_and_traces(open_memory):
    memory = open_memory(audit={"level": "verbose"})
    exercise(memory)
    rows = sql(memory, "SELECT * FROM memory_audit_log ORDER BY id")
    assert len(rows) == 6
    episodic = rows[0]
    assert episodic["metadata"]["payload"][0]["content"] == "I live in Lisbon"
    assert "embedding" not in episodic["metadata"]["payload"][0]
    fact_row = next(r for r in rows if r["metadata"].get("kind") == "fact")
    assert fact_row["metadata"]["payload"]["claim"] == "Alice lives in Lisbon"
    retrieve = next(r for r in rows if r["operation"] == "retrieve")
    assert retrieve["metadata"]["trace"] == {"legs": ["vector", "lexical"]}
    strategy_read = next(r for r in rows if r["operation"] == "find_strategies")
    assert strategy_read["metadata"]["trace"][0]["similarity"] > 0


def test_a_trace_with_non_json_values_is_still_logged(open_memory):
    memory = open_memory(audit={"level": "verbose"})
    at = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
    log_read(memory, trace={"at": at, "ids": {"x"}})
    rows = sql(memory, "SELECT metadata FROM memory_audit_log")
    assert rows[0]["metadata"]["trace"] == {"at": str(at), "ids": str({"x"})}


def test_config_snapshot_holds_the_thresholds(open_memory):
    memory = open_memory(promotion={"min_confidence": 0.91, "min_access_count": 7},
                         retrieval={"episodic_weight": 0.35}, audit={"level": "reads"})
    fact = memory.learn_fact(Fact(user_id="alice", claim="x"), channel="proj")
    memory.promote_to_global(fact.id, "test")
    log_read(memory)
    rows = sql(memory, "SELECT operation, config_snapshot FROM memory_audit_log ORDER BY id")
    assert [r["operation"] for r in rows] == ["store", "promote", "retrieve"]
    for row in rows:
        snap = row["config_snapshot"]
        assert snap["promotion"] == {"min_confidence": 0.91, "min_access_count": 7, "min_conversations": 2,
                                     "max_per_run": 500}
        assert snap["retrieval"]["episodic_weight"] == 0.35
        assert snap["embedding"] == {"model": "hash:test", "dimension": 64}
        assert snap["audit_level"] == "reads"
        assert "password" not in str(snap) and "api_key" not in str(snap)


def test_audit_failure_never_loses_the_memory_write(open_memory, caplog):
    memory = open_memory(audit={"level": "verbose"})
    memory._portal.run(memory.core.ctx.postgres.execute("DROP TABLE memory_audit_log CASCADE"))
    with caplog.at_level(logging.ERROR, logger="agentx_memory.audit"):
        stored = memory.store_turn(Turn(conversation_id="c1", user_id="alice", content="still stored"))
        entity = memory.upsert_entity(Entity(user_id="alice", name="Lisbon"))
        fact = memory.learn_fact(Fact(user_id="alice", claim="still a fact", entity_ids=[entity.id]), channel="p")
        promoted = memory.promote_to_global(fact.id, "audit is down")
        log_read(memory)
    assert [t.content for t in memory.get_conversation("c1")] == ["still stored"]
    assert memory.get_recent_turns()[0].id == stored.id
    assert memory.get_fact(fact.id).claim == "still a fact"
    assert memory.get_fact(promoted.id).channel == "_global"
    assert any("audit entry could not be written" in r.getMessage() for r in caplog.records)


def test_missing_partition_is_created_on_demand(open_memory):
    memory = open_memory()
    today = datetime.now(UTC).date()
    memory._portal.run(memory.core.ctx.postgres.execute(f"DROP TABLE memory_audit_log_{today:%Y%m%d}"))
    memory.store_turn(Turn(conversation_id="c1", user_id="alice", content="hello"))
    rows = sql(memory, "SELECT tableoid::regclass::text AS part FROM memory_audit_log")
    assert [r["part"] for r in rows] == [f"memory_audit_log_{today:%Y%m%d}"]


def _partitions(memory) -> list[str]:
    rows = sql(memory, "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid"
                       " JOIN pg_class p ON p.oid = i.inhparent JOIN pg_namespace n ON n.oid = p.relnamespace"
                       " WHERE p.relname = 'memory_audit_log' AND n.nspname = current_schema() ORDER BY 1")
    return [r["relname"] for r in rows]


def test_partition_functions_create_ahead_and_drop_past_retention(open_memory):
    memory = open_memory()
    today = datetime.now(UTC).date()
    name = lambda d: f"memory_audit_log_{d:%Y%m%d}"  # noqa: E731
    # the migration created yesterday .. today + 6
    assert _partitions(memory) == [name(today + timedelta(days=i)) for i in range(-1, 7)]

    created = sql(memory, "SELECT create_audit_partitions(3, %s::date) AS n", (today + timedelta(days=30),))[0]["n"]
    assert created == 4
    assert sql(memory, "SELECT create_audit_partitions(3, %s::date) AS n", (today + timedelta(days=30),))[0]["n"] == 0
    future = today + timedelta(days=31)
    assert name(future) in _partitions(memory)
    # rows are routed to their day's partition
    at = datetime(future.year, future.month, future.day, 23, 59, tzinfo=UTC)
    memory._portal.run(memory.core.ctx.postgres.execute(
        "INSERT INTO memory_audit_log (timestamp, operation, memory_type) VALUES (%s, 'store', 'episodic')", (at,)))
    assert sql(memory, "SELECT tableoid::regclass::text AS p FROM memory_audit_log")[0]["p"] == name(future)

    old = today - timedelta(days=400)
    assert sql(memory, "SELECT create_audit_partitions(1, %s::date) AS n", (old,))[0]["n"] == 2
    memory._portal.run(memory.core.ctx.postgres.execute(
        "INSERT INTO memory_audit_log (timestamp, operation, memory_type) VALUES (%s, 'store', 'episodic')",
        (datetime(old.year, old.month, old.day, 12, tzinfo=UTC),)))
    dropped = sql(memory, "SELECT drop_old_audit_partitions(365) AS n")[0]["n"]
    assert dropped == 2
    parts = _partitions(memory)
    assert name(old) not in parts and name(old + timedelta(days=1)) not in parts
    assert name(today - timedelta(days=1)) in parts and name(future) in parts
    assert sql(memory, "SELECT count(*) AS n FROM memory_audit_log")[0]["n"] == 1  # the future row only

    # retention 0 drops everything before today, never today or later
    assert sql(memory, "SELECT drop_old_audit_partitions(0) AS n")[0]["n"] == 1
    assert _partitions(memory)[0] == name(today)


def test_a_users_recalls_are_logged_in_call_order_and_dated_when_they_answered(open_memory):
    memory = open_memory(audit={"level": "reads"})
    turn = memory.store_turn(Turn(conversation_id="c1", user_id="alice", content="I live in Lisbon"))
    memory.learn_fact(Fact(user_id="alice", claim="Alice lives in Lisbon", source_turn_id=turn.id))
    # A recall that finds the fact counts the access in the timeline before its entry is written; one that finds
    # nothing does not. The timeline is locked while the recalls are made, so the first kind's background work waits
    # and the second's would not: the entries must still follow the calls, and carry the times the recalls answered.
    questions = [q for i in range(3) for q in (f"where does alice live {i}", f"zebra quota {i}")]
    pg = memory.core.ctx.postgres

    async def calls() -> list[datetime]:
        answered = []
        async with pg.connection() as conn, conn.transaction():
            await conn.execute("LOCK TABLE memory_timeline IN SHARE MODE")  # blocks its updates until the commit
            for question in questions:
                await memory.core.remember(question, "alice")
                answered.append(datetime.now(UTC))
            await asyncio.sleep(0.2)
        await memory.core.drain()
        return answered

    answered = memory._portal.run(calls())
    reads = sql(memory, "SELECT query_text, timestamp FROM memory_audit_log WHERE operation = 'retrieve' ORDER BY id")
    assert [r["query_text"] for r in reads] == questions
    for entry, before, at in zip(reads, [answered[0] - timedelta(seconds=5), *answered], answered, strict=False):
        assert before <= entry["timestamp"] <= at, entry["query_text"]
