"""Spec 000's working memory and injection ledger (issue 15) on the real Redis: one hash per conversation capped at
64 KB as a whole (just under, at, just over; nothing stored over it), 24 h expiry refreshed on read and write, field
merge and delete, the scratchpad and entities helpers, Redis Cluster hash tags, and a ledger that keeps memories from
being injected twice across the turns of a conversation."""

from __future__ import annotations

import pytest
from redis.crc import key_slot

from agentx_memory import AgentMemory, Fact, WorkingMemoryFullError
from agentx_memory.errors import ValidationError

CAP = 64 * 1024


def _ttl(memory: AgentMemory, wm, suffix: str) -> int:
    key = memory.core.ctx.working.session_key(wm.user_id, wm.channel, wm.conversation_id, suffix)
    return memory._portal.run(memory.core.ctx.working.client.ttl(key))


def _shorten(memory: AgentMemory, wm, suffix: str, seconds: int) -> None:
    key = memory.core.ctx.working.session_key(wm.user_id, wm.channel, wm.conversation_id, suffix)
    memory._portal.run(memory.core.ctx.working.client.expire(key, seconds))


def test_the_cap_holds_for_the_whole_conversation_at_its_boundary(settings):
    with AgentMemory(settings(), user_id="alice") as memory:
        wm = memory.working(None, "conv-1")
        # a field "blob" holding a string of n characters takes 4 + n + 2 bytes (name, JSON quotes)
        assert wm.set_fields({"blob": "x" * (CAP - 7)}) == CAP - 1  # just under
        assert wm.set_fields({"blob": "x" * (CAP - 6)}) == CAP  # at the cap: a field replaced counts once
        with pytest.raises(WorkingMemoryFullError) as over:  # one more byte: refused whole
            wm.set_fields({"blob": "x" * (CAP - 5)})
        assert (over.value.size, over.value.cap, over.value.status, over.value.field) == (CAP + 1, CAP, 413, "data")
        assert wm.memory_size() == CAP and len(wm.get_field("blob")) == CAP - 6  # what was stored stays

        wm.set_fields({"blob": "small"})
        with pytest.raises(WorkingMemoryFullError):  # the cap is per conversation, not per value
            wm.set_fields({"a": "y" * 40_000, "b": "z" * 30_000})
        assert wm.get_fields() == {"blob": "small"}  # neither field of the refused write was stored
        with pytest.raises(WorkingMemoryFullError):  # too big on its own: refused before any round trip
            wm.set_fields({"huge": "q" * (CAP + 10)})
        other = memory.working(None, "conv-2")
        assert other.set_fields({"blob": "x" * (CAP - 6)}) == CAP  # another conversation has its own cap


def test_fields_merge_delete_and_helpers(settings):
    with AgentMemory(settings(), user_id="alice") as memory:
        wm = memory.working(None, "conv-1", "proj")
        wm.set_fields({"well_api": "42-123", "count": 3})
        wm.set_fields({"count": 4, "flags": {"draft": True}})  # merge, not replace
        assert wm.get_fields() == {"well_api": "42-123", "count": 4, "flags": {"draft": True}}
        wm.set_scratchpad("compare the two offsets")
        wm.set_entities([{"type": "well", "id": "w-1", "name": "Mitchell Ranch 2H"}])
        assert wm.get_scratchpad() == "compare the two offsets"
        assert wm.get_entities() == [{"type": "well", "id": "w-1", "name": "Mitchell Ranch 2H"}]
        assert wm.delete_fields(["count", "missing"]) == 1
        assert set(wm.get_fields()) == {"well_api", "flags", "scratchpad", "entities"}
        assert memory.working(None, "conv-1").get_fields() == {}  # another channel: another memory
        assert memory.working("bob", "conv-1", "proj").get_fields() == {}  # another user: another memory
        assert wm.delete_fields() == 1 and wm.get_fields() == {}
        for bad in ({"": 1}, {"a:b" * 200: 1}, ["not", "a", "mapping"]):
            with pytest.raises(ValidationError):
                wm.set_fields(bad)
        with pytest.raises(ValidationError):
            wm.set_entities("Sam")


def test_the_expiry_is_24_hours_and_refreshed_on_read_and_write(settings):
    with AgentMemory(settings(), user_id="alice") as memory:
        wm = memory.working(None, "conv-1")
        wm.set_fields({"a": 1})
        wm.ledger_mark("fact:f1")
        for suffix in ("memory", "ledger"):
            assert 86_000 < _ttl(memory, wm, suffix) <= 86_400
            _shorten(memory, wm, suffix, 5)
        assert wm.get_fields() == {"a": 1} and wm.ledger_has("fact:f1")  # reads refresh
        for suffix in ("memory", "ledger"):
            assert _ttl(memory, wm, suffix) > 86_000
        _shorten(memory, wm, "memory", 5)
        wm.set_fields({"b": 2})  # and writes
        assert _ttl(memory, wm, "memory") > 86_000


def test_every_key_of_a_conversation_is_in_one_cluster_slot(settings):
    with AgentMemory(settings(), user_id="alice") as memory:
        store = memory.core.ctx.working
        for user, conversation in (("alice", "conv-1"), ("a{b}", "c}{d"), ("x:y", "%7B")):
            keys = [store.session_key(user, "proj", conversation, s)
                    for s in ("turns", "context", "goal", "thoughts", "memory", "ledger")]
            assert len({key_slot(k.encode()) for k in keys}) == 1, keys
        # braces and colons in ids are encoded: they neither open a tag of their own nor collide
        assert store.session_key("a{b}", "proj", "c", "memory") != store.session_key("a", "proj", "b}c", "memory")
        wm = memory.working("a{b}", "c}{d", "proj")
        wm.set_fields({"k": 1})
        wm.ledger_mark("fact:x")
        assert wm.clear_session() == 2  # one multi-key DEL: fine on a cluster, the keys share a slot


def test_the_ledger_has_a_cap_and_a_mark_past_it_is_refused_whole(settings):
    """One request could put millions of item keys into a conversation's ledger (Redis, which embedded also holds
    the graph): the ledger holds at most working.ledger_max_bytes, item keys and markers counted as the hash is."""
    with AgentMemory(settings(working={"ledger_max_bytes": 100}), user_id="alice") as memory:
        wm = memory.working(None, "conv-1")
        wm.ledger_mark_many([f"fact:{i:04d}" for i in range(9)])  # 9 x (9 + 1) bytes = 90
        assert len(wm.ledger_get()) == 9
        with pytest.raises(WorkingMemoryFullError) as over:  # two more would make 110: neither is marked
            wm.ledger_mark_many(["fact:0100", "fact:0101"])
        assert (over.value.field, over.value.size, over.value.cap, over.value.status) == ("item_keys", 110, 100, 413)
        assert len(wm.ledger_get()) == 9 and not wm.ledger_has("fact:0100")
        wm.ledger_mark("fact:0000")  # marking a key it holds again adds nothing
        wm.ledger_mark("fact:0100")  # one more fits: 100
        with pytest.raises(WorkingMemoryFullError):  # too big on its own: refused before any round trip
            wm.ledger_mark_many([f"turn:{i:05d}" for i in range(20)])
        assert len(wm.ledger_get()) == 10
        assert memory.working(None, "conv-2").ledger_mark("fact:x") is None  # another conversation's own ledger


def test_the_ledger_keeps_memories_from_being_injected_twice(settings):
    with AgentMemory(settings(), user_id="alice") as memory:
        memory.learn_fact(Fact(user_id="alice", claim="Sam lives in Lisbon", confidence=0.9))
        memory.learn_fact(Fact(user_id="alice", claim="Sam works at Lumen Labs", confidence=0.9))
        wm = memory.working(None, "conv-1")

        first = wm.inject(memory.remember("Where does Sam live and work?"), max_tokens=500)
        assert "Sam lives in Lisbon" in first and "Sam works at Lumen Labs" in first
        assert wm.inject(memory.remember("Where does Sam live and work?"), max_tokens=500) == ""  # nothing new
        moved = memory.learn_fact(Fact(user_id="alice", claim="Sam moved to Porto in May", confidence=0.95))
        third = wm.inject(memory.remember("Where does Sam live now?"), max_tokens=500)
        assert "Sam moved to Porto" in third and "Sam lives in Lisbon" not in third  # only what is new
        assert wm.ledger_has(f"fact:{moved.id}") and wm.ledger_get()[f"fact:{moved.id}"] == "injected"

        assert wm.ledger_evict(f"fact:{moved.id}") and not wm.ledger_has(f"fact:{moved.id}")
        assert "Sam moved to Porto" in wm.inject(memory.remember("Where does Sam live now?"), max_tokens=500)
        other = memory.working(None, "conv-2")  # another conversation has its own ledger
        assert "Sam lives in Lisbon" in other.inject(memory.remember("Where does Sam live?"), max_tokens=500)
        # the plain block is unchanged by the ledger
        assert "Sam lives in Lisbon" in memory.remember("Where does Sam live?").to_prompt(500)
