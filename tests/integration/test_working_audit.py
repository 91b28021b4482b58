"""Issue 19: working-memory operations are audited like the other stores' — writes at level ``writes``, reads at
``reads``, values only at ``verbose`` — and a level that leaves an operation out sends nothing to PostgreSQL."""

from __future__ import annotations

import pytest

from agentx_memory import AgentMemory, MemoryBundle, Turn
from tests.conftest import content_text, sql


@pytest.fixture
def open_memory(settings):
    opened = []

    def factory(level: str) -> AgentMemory:
        mem = AgentMemory(settings(audit={"level": level}), user_id="alice")
        opened.append(mem)
        return mem

    yield factory
    for mem in opened:
        mem.close()


def exercise(memory) -> None:
    """Every kind of working-memory operation once, through the public API."""
    wm = memory.working(None, "c1", "proj")
    wm.set("secret", "the launch code is 1234")
    wm.get("secret")
    wm.delete("secret")
    wm.set_fields({"plan": "pack boxes"})
    wm.get_fields()
    wm.delete_fields(["plan"])
    wm.set_scratchpad("call the movers")
    wm.get_scratchpad()
    wm.set_entities([{"type": "city", "id": "e1", "name": "Lisbon"}])
    wm.get_entities()
    wm.ledger_mark("fact:f1")
    wm.ledger_has("fact:f1")
    wm.ledger_get()
    wm.ledger_evict("fact:f1")
    wm.inject(MemoryBundle(query="moving", user_id="alice", channels=["_global"]))
    wm.clear_session()


def rows(memory) -> list[dict]:
    return sql(memory, "SELECT * FROM memory_audit_log WHERE memory_type = 'working' ORDER BY id")


WRITES = ["set", "delete", "set_fields", "delete_fields", "set_fields", "set_fields", "ledger_mark", "ledger_evict",
          "inject", "clear_session"]
READS = ["get", "get_fields", "get_field", "get_field", "ledger_has", "ledger_get"]


def test_level_writes_logs_the_writes_without_values(open_memory):
    memory = open_memory("writes")
    exercise(memory)
    logged = rows(memory)
    assert [r["operation"] for r in logged] == WRITES
    assert all(r["user_id"] == "alice" and r["conversation_id"] == "c1" and r["session_id"] == "c1"
               and r["source_channel"] == "proj" and r["query_text"] is None for r in logged)
    assert logged[0]["metadata"]["affected_ids"] == ["secret"]
    assert logged[4]["metadata"]["affected_ids"] == ["scratchpad"]
    assert all("payload" not in r["metadata"] for r in logged)
    assert "1234" not in content_text(logged) and "pack boxes" not in content_text(logged)


def test_level_reads_adds_the_reads_without_values(open_memory):
    memory = open_memory("reads")
    exercise(memory)
    logged = rows(memory)
    reads = [r for r in logged if r["query_text"] is not None]
    assert [r["operation"] for r in reads] == READS
    assert [r["query_text"] for r in reads] == ["secret", "*", "scratchpad", "entities", "fact:f1", "*"]
    assert reads[0]["result_count"] == 1 and reads[0]["target_channels"] == ["proj"]
    assert all(r["session_id"] == "c1" for r in reads)
    assert [r["operation"] for r in logged if r["query_text"] is None] == WRITES
    assert "1234" not in content_text(logged) and all("payload" not in r["metadata"] for r in logged)


def test_level_verbose_records_the_values(open_memory):
    memory = open_memory("verbose")
    exercise(memory)
    logged = rows(memory)
    assert logged[0]["operation"] == "set" and logged[0]["metadata"]["payload"] == {
        "secret": "the launch code is 1234"}
    assert logged[1]["operation"] == "get" and logged[1]["metadata"]["payload"] == "the launch code is 1234"


def test_inject_is_one_entry(open_memory):
    memory = open_memory("reads")
    memory.working(None, "c1").set_scratchpad("call the movers")
    memory.working(None, "c1").inject(MemoryBundle(query="moving", user_id="alice", channels=["_global"]))
    assert [r["operation"] for r in rows(memory)] == ["set_fields", "inject"]


def test_a_level_that_leaves_an_operation_out_sends_nothing(open_memory):
    memory = open_memory("writes")
    audit = memory.core.ctx.audit
    sent = []

    async def insert(entry):
        sent.append(entry["operation"])

    audit._entries.insert = insert
    wm = memory.working(None, "c1")
    wm.set("k", 1)
    wm.get("k")
    wm.get_fields()
    wm.ledger_get()
    assert sent == ["set"]

    quiet = open_memory("off")
    quiet.core.ctx.audit._entries.insert = insert
    quiet.working(None, "c1").set("k", 2)
    assert sent == ["set"]


def test_the_recent_turns_cache_of_store_turn_is_not_audited_again(open_memory):
    memory = open_memory("reads")
    memory.store_turn(Turn(conversation_id="c1", user_id="alice", content="hello"))
    assert memory.working(None, "c1").get_recent_turns()[0]["content"] == "hello"
    logged = sql(memory, "SELECT operation, memory_type FROM memory_audit_log ORDER BY id")
    assert [(r["operation"], r["memory_type"]) for r in logged] == [("store", "episodic"),
                                                                     ("get_recent_turns", "working")]
