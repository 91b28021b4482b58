"""Working memory saved to PostgreSQL and loaded back (seed 002's persist_to_database / load_from_database)."""

from __future__ import annotations

import json

import pytest

from agentx_memory import AgentMemory, Turn
from agentx_memory.errors import StorageError, WorkingMemoryFullError


@pytest.fixture
def memory(settings):
    """A sync memory whose default user is alice."""
    with AgentMemory(settings(working={"max_turns": 5, "max_thoughts": 3}), user_id="alice") as mem:
        yield mem


def run(memory, coro):
    return memory._portal.run(coro)


def session_keys(memory, user: str = "alice") -> dict[str, dict]:
    """Every working-memory key of ``user``: key → type, value, TTL left (ms)."""
    return {e["key"]: e for e in run(memory, memory.core.ctx.working.export_user(user))}


def field_ttls(memory, wm) -> dict[str, int]:
    key = wm.core._key("context")
    client = memory.core.ctx.working.client
    names = run(memory, client.hkeys(key))
    left = run(memory, client.execute_command("HPTTL", key, "FIELDS", len(names), *names))
    return dict(zip(names, left, strict=True))


def fill(memory, wm) -> None:
    memory.store_turn(Turn(conversation_id="c1", user_id="alice", content="first turn"), channel="proj")
    wm.add_turn({"role": "assistant", "content": "second turn"})
    wm.set("city", "Lisbon")
    wm.set("short", {"n": 1}, ttl_seconds=120)
    wm.set_active_goal("g1", "book a flight")
    wm.push_thought("check the dates")
    wm.set_scratchpad("notes: window seat")
    wm.set_entities([{"type": "city", "id": "lis", "name": "Lisbon"}])
    wm.ledger_mark("fact:f1", "injected")


def test_persist_then_load_restores_every_key_value_and_ttl(memory):
    wm = memory.working(None, "c1", "proj")
    fill(memory, wm)
    before = session_keys(memory)
    before_fields = field_ttls(memory, wm)
    assert {k.rsplit(":", 1)[1] for k in before} == {"turns", "context", "goal", "thoughts", "memory", "ledger"}

    saved = wm.persist()
    assert saved["keys"] == ["turns", "context", "goal", "thoughts", "memory", "ledger"]
    assert saved["saved_at"] is not None
    assert wm.clear_session() == 6
    assert session_keys(memory) == {}

    loaded = wm.load()
    assert loaded["saved_at"] == saved["saved_at"]
    assert loaded["restored"] == {"turns": 2, "context": 2, "goal": 1, "thoughts": 1, "memory": 2, "ledger": 1}
    after = session_keys(memory)
    assert after.keys() == before.keys()
    for key, entry in before.items():
        assert after[key]["type"] == entry["type"] and after[key]["value"] == entry["value"], key
        assert 0 < after[key]["ttl_ms"] <= entry["ttl_ms"], key  # the time left when saved, counted from the load
    after_fields = field_ttls(memory, wm)
    assert after_fields.keys() == before_fields.keys()
    assert 0 < after_fields["short"] <= 120_000 < after_fields["city"] <= before_fields["city"]
    # and through the API
    assert wm.get("city") == "Lisbon" and wm.get("short") == {"n": 1}
    assert wm.get_active_goal()["goal_id"] == "g1"
    assert [t["content"] for t in wm.get_recent_turns()] == ["first turn", "second turn"]
    assert wm.get_scratchpad() == "notes: window seat" and wm.ledger_has("fact:f1")
    assert wm.load_from_database()["restored"]["turns"] == 2  # seed 002's names work too


def test_load_replaces_what_redis_holds_and_a_save_replaces_the_last(memory):
    wm = memory.working(None, "c2")
    wm.set("a", 1)
    wm.persist()
    wm.set("a", 2)
    wm.set("b", 3)
    wm.push_thought("not saved")
    wm.load()
    assert wm.get("a") == 1 and wm.get("b") is None and wm.get_thoughts() == []
    wm.set("a", 4)
    wm.persist_to_database()
    wm.clear_session()
    wm.load()
    assert wm.get("a") == 4
    rows = run(memory, memory.core.ctx.postgres.fetch(
        "SELECT count(*) AS n FROM working_memory_saves WHERE user_id = 'alice'"))
    assert rows[0]["n"] == 1


def test_load_without_a_save_returns_none_and_changes_nothing(memory):
    wm = memory.working(None, "c3")
    wm.set("a", 1)
    assert wm.load() is None
    assert wm.get("a") == 1


def test_another_users_save_is_never_loaded(memory):
    alice = memory.working(None, "shared-conv", "proj")
    alice.set("secret", "alice's")
    alice.persist()
    bob = memory.working("bob", "shared-conv", "proj")
    assert bob.load() is None
    assert bob.get("secret") is None and session_keys(memory, "bob") == {}
    bob.set("mine", "bob's")
    bob.persist()
    alice.clear_session()
    alice.load()
    assert alice.get("secret") == "alice's" and alice.get("mine") is None
    assert memory.working(None, "shared-conv", "other").load() is None  # another channel: another session


def test_load_respects_the_conversation_hash_cap(memory):
    wm = memory.working(None, "c4")
    wm.set("keep", "me")
    big = {"blob": json.dumps("x" * (memory.settings.working.conversation_max_bytes + 10))}
    run(memory, memory.core.ctx.sql.working_saves.save(
        "alice", "_global", "c4", [{"suffix": "memory", "type": "hash", "value": big, "ttl_ms": 60_000}]))
    with pytest.raises(WorkingMemoryFullError) as raised:
        wm.load()
    assert raised.value.field == "memory" and raised.value.cap == memory.settings.working.conversation_max_bytes
    assert wm.get("keep") == "me" and wm.get_fields() == {}  # nothing written, nothing deleted


def test_a_save_that_is_not_session_keys_is_refused(memory):
    wm = memory.working(None, "c5")
    run(memory, memory.core.ctx.sql.working_saves.save(
        "alice", "_global", "c5", [{"suffix": "other", "type": "string", "value": "x", "ttl_ms": None}]))
    with pytest.raises(StorageError):
        wm.load()


def test_list_caps_hold_on_load(memory):
    wm = memory.working(None, "c6")
    items = [json.dumps({"thought": f"t{i}"}) for i in range(10)]
    run(memory, memory.core.ctx.sql.working_saves.save(
        "alice", "_global", "c6", [{"suffix": "thoughts", "type": "list", "value": items, "ttl_ms": 60_000}]))
    assert wm.load()["restored"] == {"thoughts": 3}
    assert [t["thought"] for t in wm.get_thoughts()] == ["t2", "t1", "t0"]


def test_forget_user_and_forget_ids_cover_the_saves(memory):
    turn = memory.store_turn(Turn(conversation_id="c7", user_id="alice", content="forget me"))
    kept = memory.store_turn(Turn(conversation_id="c7", user_id="alice", content="keep me"))
    wm = memory.working(None, "c7")
    wm.ledger_mark(f"episodic:{turn.id}", "injected")
    wm.ledger_mark("fact:other", "injected")
    wm.persist()
    memory.forget([turn.id])
    wm.clear_session()
    wm.load()
    assert [t["id"] for t in wm.get_recent_turns()] == [kept.id]
    assert wm.ledger_get() == {"fact:other": "injected"}

    memory.forget_user("alice")
    rows = run(memory, memory.core.ctx.postgres.fetch("SELECT count(*) AS n FROM working_memory_saves"))
    assert rows[0]["n"] == 0
    assert wm.load() is None
