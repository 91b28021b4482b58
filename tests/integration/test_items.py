"""Namespaced items (the engine side of the LangGraph store, issue 18) on both graph backends: put / get / overwrite /
delete, search by prefix, filter, meaning, limit and offset, namespace listing, TTL expiry and refresh, isolation
between users and between agents, validation errors naming the field, forget_user, and vectors made again after a
re-embed emptied them."""

from __future__ import annotations

import contextlib
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from agentx_memory.errors import ConflictError, ValidationError
from tests.conftest import sql

T0 = datetime.now(UTC).replace(microsecond=0)


def _keys(items) -> list[str]:
    return [i.key for i in items]


def test_put_get_overwrite_delete(memory):
    first = memory.put_item(("notes", "food"), "k1", {"text": "likes pizza", "n": 1}, text="likes pizza", now=T0)
    assert (first.user_id, first.namespace, first.key, first.value) == ("alice", ("notes", "food"), "k1",
                                                                        {"text": "likes pizza", "n": 1})
    assert first.searchable and first.created_at == first.updated_at == T0 and first.expires_at is None
    later = T0 + timedelta(seconds=5)
    second = memory.put_item(["notes", "food"], "k1", {"text": "likes sushi"}, now=later)
    assert second.value == {"text": "likes sushi"} and not second.searchable
    assert (second.created_at, second.updated_at) == (T0, later)  # an overwrite keeps the creation time
    got = memory.get_item(("notes", "food"), "k1")
    assert got is not None and got.value == {"text": "likes sushi"} and got.created_at == T0
    assert memory.get_item(("notes",), "k1") is None and memory.get_item(("notes", "food"), "k2") is None
    assert memory.delete_item(("notes", "food"), "k1") is True
    assert memory.get_item(("notes", "food"), "k1") is None
    assert memory.delete_item(("notes", "food"), "k1") is False
    # the empty namespace is a namespace too
    memory.put_item((), "root", {"a": 1})
    assert memory.get_item((), "root").value == {"a": 1}


def test_search_by_prefix_filter_limit_and_offset(memory):
    for i in range(6):
        memory.put_item(("docs", "a" if i < 4 else "b"), f"d{i}",
                        {"i": i, "kind": "even" if i % 2 == 0 else "odd", "tags": ["x", str(i)],
                         "meta": {"lang": "en" if i < 3 else "pt", "v": i}, "title": f"t{i}"},
                        now=T0 + timedelta(seconds=i))
    memory.put_item(("other",), "o", {"i": 99}, now=T0 + timedelta(seconds=10))
    newest_first = _keys(memory.search_items(("docs",)))
    assert newest_first == ["d5", "d4", "d3", "d2", "d1", "d0"]
    assert _keys(memory.search_items(("docs", "a"))) == ["d3", "d2", "d1", "d0"]
    assert _keys(memory.search_items(())) == ["o", "d5", "d4", "d3", "d2", "d1", "d0"]
    assert _keys(memory.search_items(("docs",), limit=2, offset=1)) == ["d4", "d3"]
    assert _keys(memory.search_items(("docs",), limit=0)) == []
    assert _keys(memory.search_items(("do",))) == []  # a prefix is made of whole labels
    f = memory.search_items
    assert _keys(f(("docs",), filter={"kind": "even"})) == ["d4", "d2", "d0"]
    assert _keys(f(("docs",), filter={"kind": {"$ne": "even"}, "i": {"$gte": 3}})) == ["d5", "d3"]
    assert _keys(f(("docs",), filter={"i": {"$gt": 1, "$lt": 4}})) == ["d3", "d2"]
    assert _keys(f(("docs",), filter={"i": {"$lte": 0}})) == ["d0"]
    assert _keys(f(("docs",), filter={"i": {"$eq": 2.0}})) == ["d2"]
    assert _keys(f(("docs",), filter={"title": {"$gte": "t4"}})) == ["d5", "d4"]  # text compares with text
    assert _keys(f(("docs",), filter={"title": {"$gt": 0}})) == []  # ... never with a number
    assert _keys(f(("docs",), filter={"meta": {"lang": "pt"}})) == ["d5", "d4", "d3"]  # inside objects
    assert _keys(f(("docs",), filter={"meta": {"lang": "pt", "v": {"$lt": 4}}})) == ["d3"]
    assert _keys(f(("docs",), filter={"tags": ["x", "1"]})) == ["d1"]  # lists compare whole
    assert _keys(f(("docs",), filter={"missing": None})) == newest_first  # absent counts as null
    assert _keys(f(("docs",), filter={"missing": {"$ne": None}})) == []
    assert _keys(f(("docs",), filter={"kind": "even"}, limit=1, offset=1)) == ["d2"]


def test_search_by_meaning_ranks_and_scores(memory):
    memory.put_item(("m",), "pizza", {"t": "Alice loves pizza with olives"}, text="Alice loves pizza with olives")
    memory.put_item(("m",), "lisbon", {"t": "Alice lives in Lisbon near the river"},
                    text="Alice lives in Lisbon near the river")
    memory.put_item(("m",), "job", {"t": "Alice works as a nurse at night"}, text="Alice works as a nurse at night")
    memory.put_item(("m",), "plain", {"t": "no text to search"})
    found = memory.search_items(("m",), query="which city does she live in: Lisbon?")
    assert found[0].key == "lisbon" and found[0].score is not None
    assert [i.score for i in found[:3]] == sorted((i.score for i in found[:3]), reverse=True)
    assert found[-1].key == "plain" and found[-1].score is None  # not searchable: last, unscored
    assert _keys(memory.search_items(("m",), query="pizza olives", limit=1)) == ["pizza"]
    page = memory.search_items(("m",), query="pizza olives", limit=2, offset=1)
    assert len(page) == 2 and "pizza" not in _keys(page)
    filtered = memory.search_items(("m",), query="pizza olives", filter={"t": {"$ne": "Alice loves pizza with olives"}})
    assert "pizza" not in _keys(filtered) and len(filtered) == 3


def test_namespaces_listing(memory):
    for ns in [("a", "b", "c"), ("a", "b", "d", "e"), ("a", "b", "d", "i"), ("a", "b", "f"), ("a", "c", "f"), ()]:
        memory.put_item(ns, "k", {"x": 1})
    assert memory.list_item_namespaces() == [(), ("a", "b", "c"), ("a", "b", "d", "e"), ("a", "b", "d", "i"),
                                             ("a", "b", "f"), ("a", "c", "f")]
    assert memory.list_item_namespaces(("a", "b"), max_depth=3) == [("a", "b", "c"), ("a", "b", "d"), ("a", "b", "f")]
    assert memory.list_item_namespaces(("a", None, "f")) == [("a", "b", "f"), ("a", "c", "f")]
    assert memory.list_item_namespaces(max_depth=1) == [(), ("a",)]
    assert memory.list_item_namespaces(("a",), limit=2, offset=1) == [("a", "b", "d", "e"), ("a", "b", "d", "i")]
    memory.delete_item(("a", "c", "f"), "k")
    assert ("a", "c", "f") not in memory.list_item_namespaces()


def test_ttl_expires_and_reads_refresh_it(memory):
    memory.put_item(("t",), "k", {"v": 1}, ttl_minutes=10, now=T0)
    memory.put_item(("t",), "forever", {"v": 2}, now=T0)
    assert memory.get_item(("t",), "k", now=T0 + timedelta(minutes=9)).expires_at == T0 + timedelta(minutes=19)
    no_refresh = memory.get_item(("t",), "k", refresh_ttl=False, now=T0 + timedelta(minutes=18))
    assert no_refresh.expires_at == T0 + timedelta(minutes=19)
    hits = memory.search_items(("t",), now=T0 + timedelta(minutes=18))
    assert _keys(hits) == ["k", "forever"] or _keys(hits) == ["forever", "k"]
    assert {i.key: i.expires_at for i in hits}["k"] == T0 + timedelta(minutes=28)  # a search refreshes too
    gone = T0 + timedelta(minutes=28)
    assert memory.get_item(("t",), "k", now=gone) is None  # expired at its bound
    assert _keys(memory.search_items(("t",), now=gone)) == ["forever"]
    assert memory.list_item_namespaces(now=gone) == [("t",)]
    memory.put_item(("u",), "k", {"v": 3}, now=gone)  # the user's next write deletes what expired
    assert sql(memory, "SELECT item_key FROM store_items WHERE namespace = '{t}'") == [{"item_key": "forever"}]
    with pytest.raises(ValidationError) as caught:
        memory.put_item(("t",), "k", {"v": 1}, ttl_minutes=0)
    assert caught.value.field == "ttl_minutes"


def test_the_cleanup_sweep_deletes_expired_items_of_users_who_never_write_again(memory):
    memory.put_item(("t",), "brief", {"v": 1}, ttl_minutes=10, channel="work", now=T0)
    memory.put_item(("t",), "lasting", {"v": 2}, ttl_minutes=60, now=T0)
    memory.put_item(("t",), "forever", {"v": 3}, now=T0)
    memory.put_item(("t",), "brief", {"v": 4}, ttl_minutes=10, user_id="bob", now=T0)
    later = T0 + timedelta(minutes=11)
    dry = memory.expire_items(now=later, dry_run=True)
    assert dry.items_deleted == 2 and dry.run_id is None
    assert sorted((c["user_id"], c["key"], c["channel"]) for c in dry.changes) == [
        ("alice", "brief", "work"), ("bob", "brief", "_global")]
    assert all("value" not in c and "v" not in str(c) for c in dry.changes)  # what expired, never what it held
    assert sql(memory, "SELECT count(*) AS n FROM store_items")[0]["n"] == 4

    only_bob = memory.expire_items(now=later, user_id="bob")
    assert [c["user_id"] for c in only_bob.changes] == ["bob"] and only_bob.run_id
    swept = memory.expire_items(now=later)
    assert swept.items_deleted == 1 and swept.changes[0]["key"] == "brief"
    left = sql(memory, "SELECT user_id, item_key FROM store_items ORDER BY user_id, item_key")
    assert left == [{"user_id": "alice", "item_key": "forever"}, {"user_id": "alice", "item_key": "lasting"}]
    assert memory.expire_items(now=later).items_deleted == 0  # idempotent
    logged = sql(memory, "SELECT user_id, metadata FROM memory_audit_log WHERE operation = 'expire'"
                         " AND memory_type = 'item' ORDER BY id")
    assert [(r["user_id"], r["metadata"]["affected_ids"]) for r in logged] == [("bob", ["t/brief"]),
                                                                                 ("alice", ["t/brief"])]
    with pytest.raises(ValidationError) as caught:
        memory.expire_items(now="yesterday")
    assert caught.value.field == "now"


def test_users_never_see_each_other(memory):
    memory.put_item(("notes",), "k", {"secret": "alice's"}, text="alice's secret")
    memory.put_item(("notes",), "k", {"secret": "bob's"}, text="bob's secret", user_id="bob")
    assert memory.get_item(("notes",), "k").value == {"secret": "alice's"}
    assert memory.get_item(("notes",), "k", user_id="bob").value == {"secret": "bob's"}
    assert [i.value for i in memory.search_items(query="secret", user_id="bob")] == [{"secret": "bob's"}]
    assert memory.delete_item(("notes",), "k", user_id="bob")
    assert memory.get_item(("notes",), "k").value == {"secret": "alice's"}
    assert memory.list_item_namespaces(user_id="bob") == []
    receipt = memory.forget_user("alice")
    assert receipt.postgres["store_items"] == 1
    assert memory.get_item(("notes",), "k") is None


def test_agents_read_their_own_and_the_users_items(memory):
    planner, critic = memory.for_agent("planner"), memory.for_agent("critic")
    planner.put_item(("plans",), "p", {"by": "planner"})
    memory.put_item(("plans",), "shared", {"by": "user"})
    assert planner.get_item(("plans",), "p").agent_id == "planner"
    assert critic.get_item(("plans",), "p") is None  # another agent's item
    assert _keys(critic.search_items(("plans",))) == ["shared"]
    assert critic.list_item_namespaces() == [("plans",)]
    assert critic.delete_item(("plans",), "p") is False
    with pytest.raises(ConflictError):
        critic.put_item(("plans",), "p", {"by": "critic"})
    assert planner.get_item(("plans",), "p").value == {"by": "planner"}
    with pytest.raises(ValidationError) as caught:
        critic.put_item(("plans",), "c", {"x": 1}, agent_id="planner")
    assert caught.value.field == "agent_id"
    assert sorted(_keys(memory.search_items(("plans",)))) == ["p", "shared"]  # the user reads everything
    labelled = memory.put_item(("plans",), "l", {"x": 1}, agent_id="critic", channel="travel")
    assert (labelled.agent_id, labelled.channel) == ("critic", "travel")
    assert critic.get_item(("plans",), "l") is not None and planner.get_item(("plans",), "l") is None


@pytest.mark.parametrize(("call", "field"), [
    (lambda m: m.put_item("notes", "k", {}), "namespace"),
    (lambda m: m.put_item(("",), "k", {}), "namespace[0]"),
    (lambda m: m.put_item(("a",) * 21, "k", {}), "namespace"),
    (lambda m: m.put_item(("a", "b\n"), "k", {}), "namespace[1]"),
    (lambda m: m.put_item(("a",), "", {}), "key"),
    (lambda m: m.put_item(("a",), "k", ["not", "a", "mapping"]), "value"),
    (lambda m: m.put_item(("a",), "k", {"big": "x" * 40_000}), "value"),
    (lambda m: m.put_item(("a",), "k", {1: "x"}), "value"),
    (lambda m: m.put_item(("a",), "k", {}, text=""), "text"),
    (lambda m: m.put_item(("a",), "k", {}, channel="Not A Channel"), "channel"),
    (lambda m: m.search_items(("a",), filter={"x": {"$regex": "a"}}), "filter.x"),
    (lambda m: m.search_items(("a",), filter={"x": {"$gt": [1]}}), "filter.x.$gt"),
    (lambda m: m.search_items(("a",), filter=["x"]), "filter"),
    (lambda m: m.search_items(("a",), limit=-1), "limit"),
    (lambda m: m.search_items(("a",), offset=-1), "offset"),
    (lambda m: m.search_items(("a",), query=""), "query"),
    (lambda m: m.list_item_namespaces(max_depth=-1), "max_depth"),
    (lambda m: m.get_item(("a",), "k", user_id=""), "user_id"),
])
def test_bad_input_names_the_field_and_writes_nothing(memory, call, field):
    with pytest.raises(ValidationError) as caught:
        call(memory)
    assert caught.value.field == field
    assert sql(memory, "SELECT count(*) AS n FROM store_items") == [{"n": 0}]


def test_items_travel_in_a_snapshot(memory, tmp_path):
    memory.put_item(("notes",), "home", {"city": "Lisbon"}, text="lives in Lisbon", ttl_minutes=60, channel="travel")
    stored = memory.get_item(("notes",), "home", refresh_ttl=False)
    memory.export_memory(tmp_path / "alice.jsonl")
    memory.forget_user("alice")
    assert memory.get_item(("notes",), "home") is None
    assert memory.import_memory(tmp_path / "alice.jsonl")["postgres rows"] >= 1
    assert memory.get_item(("notes",), "home", refresh_ttl=False) == stored
    assert _keys(memory.search_items(query="Lisbon")) == ["home"]


def test_vectors_emptied_by_a_reembed_are_made_again_by_the_next_search(memory):
    memory.put_item(("m",), "lisbon", {"t": "lives in Lisbon"}, text="lives in Lisbon")
    memory.put_item(("m",), "pizza", {"t": "loves pizza"}, text="loves pizza")
    before = memory.search_items(("m",), query="Lisbon")
    sql(memory, "UPDATE store_items SET embedding = NULL RETURNING 1")  # what the re-embed switch leaves
    after = memory.search_items(("m",), query="Lisbon")
    assert [(i.key, round(i.score, 5)) for i in after] == [(i.key, round(i.score, 5)) for i in before]
    assert sql(memory, "SELECT count(*) AS n FROM store_items WHERE embedding IS NULL") == [{"n": 0}]


def test_a_real_reembed_switches_item_vectors_to_the_new_model(settings):
    from agentx_memory import AgentMemory
    from tests.integration.test_reembed import NEW_DIMENSION, NEW_MODEL, _new_settings

    s = settings()
    with AgentMemory(s, user_id="alice") as memory:
        memory.put_item(("m",), "lisbon", {"t": "lives in Lisbon"}, text="lives in Lisbon")
        memory.put_item(("m",), "pizza", {"t": "loves pizza"}, text="loves pizza")
        assert memory.reembed(NEW_MODEL, NEW_DIMENSION).switched
        assert sql(memory, "SELECT count(*) AS n FROM store_items WHERE embedding IS NOT NULL") == [{"n": 0}]
    with AgentMemory(_new_settings(s), user_id="alice") as memory:
        assert _keys(memory.search_items(("m",), query="Lisbon")) == ["lisbon", "pizza"]
        rows = sql(memory, "SELECT vector_dims(embedding) AS d FROM store_items")
        assert [r["d"] for r in rows] == [NEW_DIMENSION, NEW_DIMENSION]


def test_the_async_facade_is_the_same(settings):
    import asyncio

    from agentx_memory import AsyncAgentMemory

    async def main() -> None:
        async with await AsyncAgentMemory.open(settings(), user_id="alice") as memory:
            await memory.put_item(("a",), "k", {"v": 1}, text="one")
            assert (await memory.get_item(("a",), "k")).value == {"v": 1}
            assert [i.key for i in await memory.search_items(("a",), query="one")] == ["k"]
            assert await memory.list_item_namespaces() == [("a",)]
            assert await memory.delete_item(("a",), "k")

    asyncio.run(main())


#: Hostile values: any Unicode (NUL, lone surrogates, control characters), long text, wrong types, odd numbers.
_HOSTILE = st.one_of(st.text(max_size=300), st.text(min_size=190, max_size=600), st.none(), st.integers(),
                     st.floats(), st.booleans(), st.lists(st.text(max_size=5), max_size=3),
                     st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=2))


@hsettings(max_examples=60, derandomize=True, deadline=None, database=None,
           suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_hostile_input_is_stored_or_refused_with_our_error(memory, data):
    namespace = data.draw(st.one_of(st.lists(_HOSTILE, max_size=3), _HOSTILE), label="namespace")
    key = data.draw(_HOSTILE, label="key")
    value = data.draw(st.one_of(st.dictionaries(st.text(max_size=10), _HOSTILE, max_size=3), _HOSTILE), label="value")
    text = data.draw(st.one_of(st.none(), st.text(max_size=50)), label="text")
    where = data.draw(st.one_of(st.none(), st.dictionaries(st.text(max_size=5), _HOSTILE, max_size=2)), label="filter")
    before = sql(memory, "SELECT count(*) AS n FROM store_items")
    try:
        stored = memory.put_item(namespace, key, value, text=text)
    except ValidationError:
        assert sql(memory, "SELECT count(*) AS n FROM store_items") == before  # refused: nothing written
    else:
        assert memory.get_item(namespace, key) == stored.model_copy(update={"score": None})
    with contextlib.suppress(ValidationError):  # a search returns or refuses with our error, nothing else
        memory.search_items(namespace if isinstance(namespace, list) else (), filter=where,
                            query=text if text and text.strip() else None)
