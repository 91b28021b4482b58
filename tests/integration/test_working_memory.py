"""Working memory on the real embedded Redis (FalkorDB server): session keys, TTLs, caps, locks and job records."""

from __future__ import annotations

import inspect
import json
import time

import pytest
import redis.exceptions

from agentx_memory import AgentMemory, Turn
from agentx_memory.errors import StorageError, StorageUnavailableError, ValidationError
from agentx_memory.working import MAX_TTL_SECONDS, WorkingStore


@pytest.fixture
def memory(settings):
    """A sync memory whose default user is alice, with a small turn cap."""
    with AgentMemory(settings(working={"max_turns": 5, "max_thoughts": 3, "max_value_bytes": 1024}),
                     user_id="alice") as mem:
        yield mem


def redis_call(memory, coro):
    return memory._portal.run(coro)


def keys(memory) -> dict[str, int]:
    """Every key of this test's namespace (prefix removed) with its TTL in seconds."""
    prefix = memory.settings.redis.key_prefix
    client = memory.core.ctx.working.client

    async def scan():
        found = {}
        async for key in client.scan_iter(match=prefix + "*"):
            found[key[len(prefix):]] = await client.ttl(key)
        return found

    return redis_call(memory, scan())


def test_turns_are_ordered_and_capped(memory):
    wm = memory.working(None, "conv-1")
    for i in range(8):
        wm.add_turn(Turn(conversation_id="conv-1", user_id="alice", index=i, content=f"turn {i}",
                         metadata={"i": i}, embedding=[0.0] * 64))
    recent = wm.get_recent_turns(limit=3)
    assert [t["content"] for t in recent] == ["turn 5", "turn 6", "turn 7"]  # oldest first
    assert recent[-1]["metadata"] == {"i": 7} and "embedding" not in recent[-1]
    everything = wm.get_recent_turns(limit=100)
    assert [t["index"] for t in everything] == [3, 4, 5, 6, 7]  # capped at working.max_turns = 5
    assert wm.get_recent_turns(limit=0) == []
    wm.add_turn({"role": "assistant", "content": "a plain dict works too"})
    assert wm.get_recent_turns(limit=1) == [{"role": "assistant", "content": "a plain dict works too"}]


def test_add_turns_caches_a_batch_in_order_and_refuses_it_whole(memory):
    wm = memory.working(None, "conv-batch")
    wm.add_turns([Turn(conversation_id="conv-batch", user_id="alice", index=i, content=f"turn {i}",
                       embedding=[0.5] * 8) for i in range(7)])
    recent = wm.get_recent_turns(limit=100)
    assert [t["index"] for t in recent] == [2, 3, 4, 5, 6]  # the last is the newest; capped at max_turns = 5
    assert all("embedding" not in t for t in recent)
    limit = memory.settings.working.max_value_bytes
    with pytest.raises(ValidationError, match=r"turns\[1\]"):
        wm.add_turns([{"content": "fits"}, "not a turn"])
    with pytest.raises(ValidationError, match="max_value_bytes"):
        wm.add_turns([{"content": "fits"}, {"content": "x" * (limit + 1)}])
    assert [t["index"] for t in wm.get_recent_turns(limit=100)] == [2, 3, 4, 5, 6]  # nothing of either batch
    wm.add_turns([])
    assert len(wm.get_recent_turns(limit=100)) == 5


def test_store_turn_fills_the_working_memory_cache(memory):
    memory.store_turn(Turn(conversation_id="conv-2", user_id="alice", content="hello"), channel="proj")
    cached = memory.working(None, "conv-2", "proj").get_recent_turns()
    assert [t["content"] for t in cached] == ["hello"]
    assert memory.working(None, "conv-2").get_recent_turns() == []  # another channel is another session


def test_set_get_delete_and_ttl_expiry(memory):
    wm = memory.working(None, "conv-1")
    value = {"nested": {"list": [1, "two", None]}, "text": "ünï \"q\" \\ \n"}
    wm.set("plan", value)
    assert wm.get("plan") == value
    assert wm.get("missing") is None
    wm.set("short", "gone soon", ttl_seconds=1)
    assert wm.get("short") == "gone soon"
    assert wm.delete("plan") is True
    assert wm.delete("plan") is False
    assert wm.get("plan") is None
    time.sleep(1.3)
    assert wm.get("short") is None  # the per-value TTL really expires
    assert "short" not in wm.get_context()["values"]
    with pytest.raises(ValidationError, match="ttl_seconds"):
        wm.set("bad", 1, ttl_seconds=-5)
    with pytest.raises(ValidationError, match="key"):
        wm.set("", 1)


def test_context_active_goal_thoughts_and_clear(memory):
    wm = memory.working(None, "conv-1", "proj")
    wm.add_turn({"content": "t1"})
    wm.set("topic", "travel")
    wm.set_active_goal("g-1", "Plan the Lisbon trip")
    for i in range(5):
        wm.push_thought(f"thought {i}")
    wm.push_thought({"thought": "structured", "confidence": 0.5})

    goal = wm.get_active_goal()
    assert goal["goal_id"] == "g-1" and goal["description"] == "Plan the Lisbon trip" and goal["set_at"] > 0
    thoughts = wm.get_thoughts(limit=10)
    assert [t["thought"] for t in thoughts] == ["thought 3", "thought 4", "structured"]  # capped at 3, oldest first
    assert wm.get_thoughts(limit=1)[0]["confidence"] == 0.5

    ctx = wm.get_context()
    assert ctx["user_id"] == "alice" and ctx["channel"] == "proj" and ctx["conversation_id"] == "conv-1"
    assert ctx["values"] == {"topic": "travel"}
    assert [t["content"] for t in ctx["recent_turns"]] == ["t1"]
    assert ctx["active_goal"] == goal
    assert len(ctx["thoughts"]) == 3

    other = memory.working("bob", "conv-1", "proj")  # same conversation id, another user: separate
    assert other.get("topic") is None and other.get_active_goal() is None

    assert wm.clear_session() == 4
    ctx = wm.get_context()
    assert ctx["values"] == {} and ctx["recent_turns"] == [] and ctx["active_goal"] is None and ctx["thoughts"] == []
    assert keys(memory) == {}


def test_key_patterns_and_ttls(memory):
    ttl = memory.settings.working.ttl_seconds
    prefix = memory.settings.redis.key_prefix
    assert prefix
    wm = memory.working(None, "conv-9", "my-proj")
    wm.add_turn({"content": "x"})
    wm.set("k", 1)
    wm.set("short", 1, ttl_seconds=5)
    wm.set_active_goal("g", "d")
    wm.push_thought("t")
    found = keys(memory)
    base = "working:{alice:my-proj:conv-9}:"
    assert set(found) == {base + "turns", base + "context", base + "goal", base + "thoughts"}
    for key, remaining in found.items():
        assert 0 < remaining <= ttl, key
    # every key of the namespace carries the prefix: nothing was written without it
    raw = redis_call(memory, memory.core.ctx.working.client.exists(*(base + s for s in ("turns", "context"))))
    assert raw == 0


def test_values_over_the_size_limit_are_rejected(memory):
    wm = memory.working(None, "conv-1")
    limit = memory.settings.working.max_value_bytes
    with pytest.raises(ValidationError, match="max_value_bytes"):
        wm.set("big", "x" * (limit + 1))
    with pytest.raises(ValidationError, match="max_value_bytes"):
        wm.push_thought("x" * (limit + 1))
    with pytest.raises(ValidationError, match="max_value_bytes"):
        wm.add_turn({"content": "x" * (limit + 1)})
    with pytest.raises(ValidationError, match="max_value_bytes"):
        wm.set_active_goal("g", "x" * (limit + 1))
    with pytest.raises(ValidationError):
        wm.set("not-json", object())
    assert keys(memory) == {}
    wm.set("fits", "x" * (limit // 2))
    assert wm.get("fits") == "x" * (limit // 2)


class _Blocking:
    """The internal WorkingStore with its coroutine methods run on the memory's portal."""

    def __init__(self, target, portal):
        self._target, self._portal = target, portal

    def __getattr__(self, name):
        attr = getattr(self._target, name)
        if not inspect.iscoroutinefunction(attr):
            return attr
        return lambda *args, **kwargs: self._portal.run(attr(*args, **kwargs))


def test_working_store_locks_jobs_and_session_keys(memory):
    store = _Blocking(memory.core.ctx.working, memory._portal)
    token = store.acquire_lock("conv-1", ttl_seconds=30)
    assert token
    assert store.acquire_lock("conv-1") is None  # a second acquire fails while held
    assert store.release_lock("conv-1", "wrong-token") is False
    assert store.acquire_lock("conv-1") is None  # still held after a wrong release
    assert store.release_lock("conv-1", token) is True
    assert store.release_lock("conv-1", token) is False
    again = store.acquire_lock("conv-1", ttl_seconds=0.2)
    assert again and again != token
    time.sleep(0.3)
    assert store.acquire_lock("conv-1") is not None  # an expired lock can be taken

    assert store.get_job("job-1") is None
    store.record_job("job-1", {"status": "running", "turns": 3})
    store.record_job("job-1", {"status": "done", "facts": ["f1", "f2"]})
    assert store.get_job("job-1") == {"status": "done", "turns": 3, "facts": ["f1", "f2"]}

    store.session_set("s-1", "scratch", {"a": [1, 2]})
    assert store.session_get("s-1", "scratch") == {"a": [1, 2]}
    assert store.session_get("s-1", "other") is None
    with pytest.raises(ValidationError):
        store.session_set("s-1", "big", "x" * 2000)

    found = keys(memory)
    assert {"consolidation:lock:conv-1", "consolidation:job:job-1", "session:s-1:scratch"} <= set(found)
    assert 0 < found["session:s-1:scratch"] <= memory.settings.working.ttl_seconds
    assert found["consolidation:job:job-1"] > 0 and found["consolidation:lock:conv-1"] > 0


# (user, conversation) pairs whose plainly ':'-joined keys would be equal (or equal after a naive ':' escape)
_COLLIDING = [
    (("w", "b:_global:c"), ("w:_global:b", "c")),
    (("a:b", "c"), ("a", "b:c")),
    (("a%3Ab", "c"), ("a:b", "c")),
    (("a%253A", "c"), ("a%3A", "c")),
    (("u", "c:turns"), ("u:_global:c", "turns")),
]


@pytest.mark.parametrize(("first", "second"), _COLLIDING)
def test_ids_with_separators_never_share_a_session(memory, first, second):
    one, two = memory.working(*first), memory.working(*second)
    one.add_turn({"content": "first's turn"})
    one.set("secret", "first's value")
    one.set_active_goal("g-1", "first's goal")
    one.push_thought("first's thought")
    assert two.get_context()["values"] == {} and two.get_recent_turns() == []
    assert two.get_active_goal() is None and two.get_thoughts() == [] and two.get("secret") is None
    assert two.clear_session() == 0  # clearing the other session deletes nothing of the first
    assert one.get("secret") == "first's value" and len(one.get_recent_turns()) == 1
    assert len(keys(memory)) == 4  # and every key still starts with a key family drop_namespace deletes
    assert all(key.split(":", 1)[0] in WorkingStore.KEY_FAMILIES for key in keys(memory))


def test_session_and_lock_keys_with_separators_are_distinct(memory):
    store = _Blocking(memory.core.ctx.working, memory._portal)
    store.session_set("s:k", "x", {"v": 1})
    assert store.session_get("s", "k:x") is None
    assert store.session_get("s:k", "x") == {"v": 1}
    store.record_job("j:1", {"status": "done"})
    assert store.get_job("j%3A1") is None


@pytest.mark.parametrize("ttl", [0, -1, 10**12, MAX_TTL_SECONDS + 1, 2.5, "60", True])
def test_a_bad_ttl_is_rejected_before_anything_is_written(memory, ttl):
    wm = memory.working(None, "conv-1")
    store = _Blocking(memory.core.ctx.working, memory._portal)
    with pytest.raises(ValidationError, match="ttl_seconds"):
        wm.set("k", "v", ttl_seconds=ttl)
    with pytest.raises(ValidationError, match="ttl_seconds"):
        store.session_set("s-1", "k", "v", ttl_seconds=ttl)
    with pytest.raises(ValidationError, match="ttl_seconds"):
        store.record_job("job-1", {"status": "x"}, ttl_seconds=ttl)
    assert keys(memory) == {}  # no value left behind without its expiry
    wm.set("k", "v", ttl_seconds=MAX_TTL_SECONDS)  # the bound itself is accepted, and the value expires
    found = keys(memory)
    assert list(found) == ["working:{alice:_global:conv-1}:context"] and found[next(iter(found))] > 0


@pytest.mark.parametrize("ttl", [0, -0.5, float("nan"), float("inf"), "1"])
def test_a_bad_lock_ttl_is_rejected(memory, ttl):
    store = _Blocking(memory.core.ctx.working, memory._portal)
    with pytest.raises(ValidationError, match="ttl_seconds"):
        store.acquire_lock("conv-1", ttl_seconds=ttl)
    assert keys(memory) == {}


def test_redis_refusals_are_storage_errors(memory):
    wm = memory.working(None, "conv-1")
    client = memory.core.ctx.working.client
    prefix = memory.settings.redis.key_prefix
    base = prefix + "working:{alice:_global:conv-1}:"
    for suffix in ("context", "turns", "thoughts"):  # another program wrote the wrong type under our keys
        redis_call(memory, client.set(base + suffix, "not a hash or list"))
    redis_call(memory, client.rpush(base + "goal", "not a string"))
    calls = [lambda: wm.set("k", 1), lambda: wm.get("k"), lambda: wm.delete("k"), lambda: wm.get_context(),
             lambda: wm.add_turn({"content": "x"}), lambda: wm.get_recent_turns(), lambda: wm.push_thought("t"),
             lambda: wm.get_thoughts(), lambda: wm.get_active_goal()]
    for call in calls:
        with pytest.raises(StorageError) as caught:
            call()
        assert not isinstance(caught.value, StorageUnavailableError)
        assert isinstance(caught.value.__cause__, redis.exceptions.ResponseError)
        assert "WRONGTYPE" in str(caught.value)
    redis_call(memory, client.set(base + "goal", "{not json"))
    with pytest.raises(StorageError, match="JSON"):
        wm.get_active_goal()


def test_bad_working_memory_arguments_are_validation_errors(memory):
    """Arguments Redis cannot take (a lone surrogate is not UTF-8) or of the wrong type raise our ValidationError
    naming the argument, never UnicodeEncodeError, TypeError or a redis error; nothing is written."""
    wm = memory.working(None, "conv-1")
    for key in ("\ud800", "a\x00b", 5, None, ""):
        for call in (lambda k=key: wm.set(k, 1), lambda k=key: wm.get(k), lambda k=key: wm.delete(k)):
            with pytest.raises(ValidationError, match="key"):
                call()
    with pytest.raises(ValidationError, match="key"):
        wm.set("x" * 1001, 1)
    for thought in (5, None, ["a"]):
        with pytest.raises(ValidationError, match="thought"):
            wm.push_thought(thought)
    for turn in (5, "text", ["a"]):
        with pytest.raises(ValidationError, match="turn"):
            wm.add_turn(turn)
    for limit in ("5", 2.5, True, None):
        with pytest.raises(ValidationError, match="limit"):
            wm.get_recent_turns(limit)
        with pytest.raises(ValidationError, match="limit"):
            wm.get_thoughts(limit)
    with pytest.raises(ValidationError, match="goal_id"):
        wm.set_active_goal("\ud800", "d")
    assert keys(memory) == {}
    wm.set("ünï €", "kept")  # ordinary unicode is fine, and a lone surrogate inside a value is JSON-escaped
    wm.push_thought("half a pair: \ud800")
    assert wm.get("ünï €") == "kept" and wm.get_thoughts()[0]["thought"] == "half a pair: \ud800"


def test_working_store_ids_are_checked(memory):
    store = _Blocking(memory.core.ctx.working, memory._portal)
    for bad in ("\ud800", "", " padded", 5):
        calls = {
            "conversation_id": [lambda b=bad: store.acquire_lock(b), lambda b=bad: store.release_lock(b, "t")],
            "job_id": [lambda b=bad: store.record_job(b, {"a": 1}), lambda b=bad: store.get_job(b)],
            "session_id": [lambda b=bad: store.session_set(b, "k", 1), lambda b=bad: store.session_get(b, "k")],
            "key": [lambda b=bad: store.session_set("s", b, 1), lambda b=bad: store.session_get("s", b)],
        }
        for field, fns in calls.items():
            for fn in fns:
                with pytest.raises(ValidationError, match=field):
                    fn()
    with pytest.raises(ValidationError, match="fields"):
        store.record_job("job-1", {"\ud800": 1})
    assert keys(memory) == {}


def test_a_long_turn_is_stored_whole_and_cached_cut(settings):
    """A turn over ``working.max_value_bytes`` (but within ``limits.max_turn_bytes``) is stored whole in the log;
    the recent-turns cache keeps a copy cut to fit, marked ``content_truncated`` with the full ``content_bytes``."""
    content = "Ünïcode and \"quotes\" " * 6000  # ≈ 140 KB, with characters JSON and UTF-8 both widen
    with AgentMemory(settings(), user_id="alice") as memory:
        limit = memory.settings.working.max_value_bytes
        memory.store_turn(Turn(conversation_id="c-long", user_id="alice", content=content))
        assert [t.content for t in memory.get_conversation("c-long")] == [content]
        cached = memory.working("alice", "c-long").get_recent_turns(limit=1)[0]
    assert cached["content_truncated"] is True and cached["content_bytes"] == len(content.encode())
    assert content.startswith(cached["content"]) and len(cached["content"]) > limit // 3
    assert len(json.dumps(cached).encode()) <= limit
