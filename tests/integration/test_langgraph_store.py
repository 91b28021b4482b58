"""AgentXStore, the LangGraph BaseStore over the memory (issue 18), on both graph backends.

LangGraph (1.2) and langgraph-checkpoint publish no store conformance suite (their conformance package covers
checkpointers only), so these tests hold AgentXStore to BaseStore's documented behaviour: put / get / overwrite /
delete, search with namespace prefix, filter, query, limit and offset, list_namespaces with prefix, suffix,
wildcards, max_depth, limit and offset, TTL with refresh on read, batch results in order, the sync and the async
API over AgentMemory and AsyncAgentMemory, plus what the engine adds: items are durable (a new memory reads them),
scoped to their user, and filed under the agent and channel the namespace names.
"""

from __future__ import annotations

import asyncio
import threading
import time
from datetime import timedelta

import pytest
from langgraph.store.base import GetOp, InvalidNamespaceError, ListNamespacesOp, MatchCondition, PutOp, SearchOp

from agentx_memory import AgentMemory, AsyncAgentMemory
from agentx_memory.errors import ConfigurationError, ValidationError
from agentx_memory.integrations.langgraph import AgentXStore


@pytest.fixture
def store(memory):
    return AgentXStore(memory)


def _keys(items) -> list[str]:
    return [i.key for i in items]


def test_put_get_overwrite_delete(store):
    assert store.get(("alice", "prefs"), "food") is None
    store.put(("alice", "prefs"), "food", {"likes": "pizza"})
    first = store.get(("alice", "prefs"), "food")
    assert (first.namespace, first.key, first.value) == (("alice", "prefs"), "food", {"likes": "pizza"})
    assert first.created_at == first.updated_at and first.created_at.tzinfo is not None
    time.sleep(0.01)
    store.put(("alice", "prefs"), "food", {"likes": "sushi"})
    second = store.get(("alice", "prefs"), "food")
    assert second.value == {"likes": "sushi"}
    assert second.created_at == first.created_at and second.updated_at > first.updated_at
    store.delete(("alice", "prefs"), "food")
    assert store.get(("alice", "prefs"), "food") is None
    store.delete(("alice", "prefs"), "food")  # deleting what is not there is no error
    store.put(("alice",), "top", {"at": "the user's own level"})
    assert store.get(("alice",), "top").namespace == ("alice",)


def test_search_prefix_filter_limit_offset(store):
    for i in range(5):
        store.put(("alice", "docs", "a" if i < 3 else "b"), f"d{i}", {"i": i, "kind": "even" if i % 2 == 0 else "odd"})
        time.sleep(0.002)  # distinct update times: without a query, newest first
    store.put(("alice", "other"), "o", {"i": 9})
    assert _keys(store.search(("alice", "docs"))) == ["d4", "d3", "d2", "d1", "d0"]
    assert _keys(store.search(("alice", "docs", "b"))) == ["d4", "d3"]
    assert _keys(store.search(())) == ["o", "d4", "d3", "d2", "d1", "d0"]  # the whole store: this user's items
    assert _keys(store.search(("alice",), limit=2, offset=2)) == ["d3", "d2"]
    assert _keys(store.search(("alice", "docs"), filter={"kind": "even"})) == ["d4", "d2", "d0"]
    assert _keys(store.search(("alice", "docs"), filter={"i": {"$gt": 1}, "kind": {"$ne": "even"}})) == ["d3"]
    found = store.search(("alice", "docs"), filter={"i": {"$lte": 1}})
    assert _keys(found) == ["d1", "d0"] and all(f.score is None for f in found)
    assert found[0].namespace == ("alice", "docs", "a")


def test_search_by_query_ranks_by_meaning(store):
    store.put(("alice", "memories"), "m1", {"text": "Alice lives in Lisbon near the river"})
    store.put(("alice", "memories"), "m2", {"text": "Alice loves pizza with olives"})
    store.put(("alice", "memories"), "m3", {"text": "Alice works as a nurse at night", "tag": "job"})
    store.put(("alice", "memories"), "m4", {"text": "Lisbon pizza nurse"}, index=False)  # never embedded
    store.put(("alice", "memories"), "m5", {"title": "olives", "body": "unrelated words here"}, index=["title"])
    ranked = store.search(("alice", "memories"), query="pizza with olives")
    assert ranked[0].key == "m2" and ranked[0].score is not None
    scores = [r.score for r in ranked if r.score is not None]
    assert scores == sorted(scores, reverse=True) and len(scores) == 4
    assert ranked[-1].key == "m4" and ranked[-1].score is None
    assert _keys(store.search(("alice", "memories"), query="Lisbon river", limit=1)) == ["m1"]
    assert _keys(store.search(("alice", "memories"), query="olives", limit=1, offset=0))[0] in ("m2", "m5")
    assert _keys(store.search(("alice", "memories"), query="night nurse", filter={"tag": "job"})) == ["m3"]
    assert len(store.search(("alice", "memories"), query="pizza with olives", limit=2, offset=3)) == 2


def test_list_namespaces(store):
    # the example of BaseStore.list_namespaces, under the user's level
    for ns in [("a", "b", "c"), ("a", "b", "d", "e"), ("a", "b", "d", "i"), ("a", "b", "f"), ("a", "c", "f")]:
        store.put(("alice", *ns), "k", {"x": 1})
    assert store.list_namespaces(prefix=("alice", "a", "b"), max_depth=4) == [
        ("alice", "a", "b", "c"), ("alice", "a", "b", "d"), ("alice", "a", "b", "f")]
    assert store.list_namespaces() == [("alice", "a", "b", "c"), ("alice", "a", "b", "d", "e"),
                                       ("alice", "a", "b", "d", "i"), ("alice", "a", "b", "f"),
                                       ("alice", "a", "c", "f")]
    assert store.list_namespaces(suffix=("f",)) == [("alice", "a", "b", "f"), ("alice", "a", "c", "f")]
    assert store.list_namespaces(prefix=("alice", "*", "c")) == [("alice", "a", "c", "f")]
    assert store.list_namespaces(prefix=("*", "a", "b"), suffix=("d", "*")) == [("alice", "a", "b", "d", "e"),
                                                                              ("alice", "a", "b", "d", "i")]
    assert store.list_namespaces(suffix=("alice", "a", "c", "f")) == [("alice", "a", "c", "f")]  # suffix = whole
    assert store.list_namespaces(max_depth=2) == [("alice", "a")]
    assert store.list_namespaces(max_depth=1) == [("alice",)]
    assert store.list_namespaces(max_depth=0) == [()]
    assert store.list_namespaces(limit=2, offset=1) == [("alice", "a", "b", "d", "e"), ("alice", "a", "b", "d", "i")]
    assert store.list_namespaces(suffix=("f",), limit=1, offset=1) == [("alice", "a", "c", "f")]
    assert store.batch([ListNamespacesOp(match_conditions=(
        MatchCondition("prefix", ("alice", "a", "b")), MatchCondition("prefix", ("alice", "a", "c"))))]) == [[]]


def test_batch_runs_in_order(store):
    results = store.batch([
        PutOp(("alice", "n"), "k", {"v": 1}),
        GetOp(("alice", "n"), "k"),
        SearchOp(("alice",), filter={"v": 1}),
        ListNamespacesOp(),
        PutOp(("alice", "n"), "k", None),
        GetOp(("alice", "n"), "k"),
    ])
    assert results[0] is None and results[1].value == {"v": 1}
    assert _keys(results[2]) == ["k"] and results[3] == [("alice", "n")]
    assert results[4] is None and results[5] is None


def test_ttl_expires_and_reads_refresh_it(memory):
    store = AgentXStore(memory, ttl={"default_ttl": 0.03, "refresh_on_read": True})
    assert store.supports_ttl
    store.put(("alice", "t"), "default", {"v": 1})  # the store's default TTL, 1.8 s
    store.put(("alice", "t"), "long", {"v": 2}, ttl=10)
    store.put(("alice", "t"), "never", {"v": 3}, ttl=None)
    default = memory.get_item(("t",), "default", refresh_ttl=False)
    assert default.ttl_minutes == 0.03 and memory.get_item(("t",), "never").expires_at is None
    time.sleep(1.0)
    before = memory.get_item(("t",), "default", refresh_ttl=False).expires_at
    assert store.get(("alice", "t"), "default") is not None  # a read refreshes the TTL ...
    refreshed = memory.get_item(("t",), "default", refresh_ttl=False).expires_at
    assert refreshed - before >= timedelta(seconds=0.9)
    assert store.get(("alice", "t"), "default", refresh_ttl=False) is not None  # ... unless told not to
    assert memory.get_item(("t",), "default", refresh_ttl=False).expires_at == refreshed
    time.sleep(2.0)
    assert store.get(("alice", "t"), "default") is None  # expired: absent from reads, searches and listings
    assert _keys(store.search(("alice", "t"))) == ["never", "long"] or \
        sorted(_keys(store.search(("alice", "t")))) == ["long", "never"]
    long = memory.get_item(("t",), "long", refresh_ttl=False)
    assert long.expires_at - long.updated_at >= timedelta(minutes=9)


def test_one_users_store_never_reaches_another(memory):
    alice, bob = AgentXStore(memory), AgentXStore(memory, user_id="bob")
    alice.put(("alice", "notes"), "k", {"secret": "alice's"})
    bob.put(("bob", "notes"), "k", {"secret": "bob's"})
    assert bob.search(()) and [i.value for i in bob.search(())] == [{"secret": "bob's"}]
    assert bob.list_namespaces() == [("bob", "notes")]
    for call in (lambda: bob.get(("alice", "notes"), "k"), lambda: bob.put(("alice", "notes"), "k", {"x": 1}),
                 lambda: bob.delete(("alice", "notes"), "k"), lambda: bob.search(("alice",)),
                 lambda: bob.list_namespaces(prefix=("alice",))):
        with pytest.raises(ValidationError) as caught:
            call()
        assert caught.value.field in ("namespace[0]", "namespace_prefix[0]", "prefix[0]")
    assert alice.get(("alice", "notes"), "k").value == {"secret": "alice's"}
    assert bob.list_namespaces(suffix=("notes",)) == [("bob", "notes")]


def test_a_store_without_a_user_takes_it_from_the_namespace(memory):
    with AgentMemory(memory.settings) as shared:  # no default user
        store = AgentXStore(shared)
        store.put(("carol", "n"), "k", {"v": "carol"})
        store.put(("dave", "n"), "k", {"v": "dave"})
        assert store.get(("carol", "n"), "k").value == {"v": "carol"}
        assert [i.value for i in store.search(("dave",))] == [{"v": "dave"}]
        assert store.list_namespaces(prefix=("carol",)) == [("carol", "n")]
        for call in (lambda: store.search(()), lambda: store.list_namespaces(),
                     lambda: store.list_namespaces(prefix=("*", "n"))):
            with pytest.raises(ValidationError):
                call()
    assert memory.get_item(("n",), "k", user_id="carol").value == {"v": "carol"}


def test_items_are_durable(memory):
    AgentXStore(memory).put(("alice", "facts"), "home", {"text": "Alice lives in Lisbon"})
    with AgentMemory(memory.settings, user_id="alice") as reopened:
        found = AgentXStore(reopened).search(("alice",), query="where does Alice live")
        assert [(i.key, i.value) for i in found] == [("home", {"text": "Alice lives in Lisbon"})]


def test_agent_and_channel_levels(memory):
    store = AgentXStore(memory, agent_level=1, channel_level=2)
    store.put(("alice", "planner", "travel", "notes"), "k", {"v": 1})
    store.put(("alice", "critic", "_global"), "k", {"v": 2})
    item = memory.get_item(("planner", "travel", "notes"), "k")
    assert (item.agent_id, item.channel) == ("planner", "travel")
    planner = AgentXStore(memory.for_agent("planner"), agent_level=1, channel_level=2)
    assert planner.get(("alice", "planner", "travel", "notes"), "k").value == {"v": 1}
    assert planner.get(("alice", "critic", "_global"), "k") is None  # another agent's item
    assert planner.list_namespaces() == [("alice", "planner", "travel", "notes")]
    with pytest.raises(ValidationError) as caught:
        planner.put(("alice", "critic", "travel"), "k2", {"v": 3})
    assert caught.value.field == "namespace[1]"
    with pytest.raises(ValidationError) as caught:
        store.put(("alice", "planner", "Not-A-Channel"), "k", {"v": 1})
    assert caught.value.field == "namespace[2]"
    with pytest.raises(ValidationError) as caught:
        AgentXStore(memory, agent_level=1, channel_level=1)
    assert caught.value.field == "channel_level"
    mine = AgentXStore(memory.for_agent("writer"))  # no agent level: the view's agent owns what it writes
    mine.put(("alice", "drafts"), "d", {"v": 1})
    assert memory.get_item(("drafts",), "d").agent_id == "writer"


def test_bad_input(store):
    with pytest.raises(InvalidNamespaceError):
        store.put(("alice", "a.b"), "k", {"v": 1})  # LangGraph's own rule
    with pytest.raises(InvalidNamespaceError):
        store.put(("langgraph",), "k", {"v": 1})
    with pytest.raises(ValidationError) as caught:
        store.put(("alice",), "k", {"big": "x" * 40_000})
    assert caught.value.field == "value"
    with pytest.raises(ValidationError) as caught:
        store.search(("alice",), filter={"v": {"$near": 1}})
    assert caught.value.field == "filter.v"
    with pytest.raises(ValidationError) as caught:
        store.put(("alice",), "k", {"v": 1}, ttl=-1)
    assert caught.value.field == "ttl_minutes"
    assert store.search(()) == []


def test_async_api_over_agent_memory(store):
    async def main() -> None:
        await store.aput(("alice", "a"), "k", {"text": "the async road"})
        assert (await store.aget(("alice", "a"), "k")).value == {"text": "the async road"}
        assert _keys(await store.asearch(("alice",), query="async road")) == ["k"]
        assert await store.alist_namespaces() == [("alice", "a")]
        await store.adelete(("alice", "a"), "k")
        assert await store.aget(("alice", "a"), "k") is None

    asyncio.run(main())


def test_async_memory_sync_and_async_calls(settings):
    s = settings()

    async def main() -> None:
        async with await AsyncAgentMemory.open(s, user_id="alice") as memory:
            store = AgentXStore(memory)
            await store.aput(("alice", "a"), "k", {"text": "written on the loop"})
            assert (await store.aget(("alice", "a"), "k")).value == {"text": "written on the loop"}
            with pytest.raises(ConfigurationError):
                store.get(("alice", "a"), "k")  # would block the loop it needs
            seen: list = []

            def in_a_thread() -> None:  # a sync node in a worker thread: runs on the memory's loop
                store.put(("alice", "b"), "k", {"text": "from a thread"})
                seen.append(store.get(("alice", "b"), "k").value)

            worker = threading.Thread(target=in_a_thread)
            worker.start()
            await asyncio.to_thread(worker.join)
            assert seen == [{"text": "from a thread"}]
            assert await store.alist_namespaces() == [("alice", "a"), ("alice", "b")]

    asyncio.run(main())
    with pytest.raises(ConfigurationError):
        asyncio.run(_store_outside_its_loop(s))


async def _store_outside_its_loop(s) -> None:
    memory = await AsyncAgentMemory.open(s, user_id="alice")
    try:
        store = await asyncio.to_thread(AgentXStore, memory)  # made where no loop runs: it knows none yet
        await asyncio.to_thread(store.get, ("alice", "a"), "k")
    finally:
        await memory.close()
