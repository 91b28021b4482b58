"""The full isolation suite (issue 11, "keep it fixed" suite 3): two tenants with identical memories never see or
change each other's, whichever read or write path of the public API one of them takes with the other's ids.

Alice and bob store the SAME turn texts, entity names, fact claims, goal descriptions, tool names, strategies,
working-memory keys and profile, in the same channels; only a hidden marker in each object's metadata (``tenant``:
``"<user>/<channel>"``) and the ids tell them apart. Then bob uses alice's ids on every path: each call either raises
our error (NotFoundError / ConflictError) or works on bob's own object, every object a read returns to bob is bob's
(user id and marker), and alice's view -- through the public reads, and her graph nodes, edges and PostgreSQL rows --
is identical before and after. The same holds between two channels of one user where channels scope a read or a
write. (The numbered regressions of items 8-12 are in ``test_isolation.py``.)
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from agentx_memory import AgentMemory, Entity, Fact, Goal, Turn
from agentx_memory.errors import AgentXMemoryError, ConflictError, NotFoundError
from agentx_memory.ingest import ingest_file
from agentx_memory.retrieval.bundle import MemoryBundle
from agentx_memory.sql.conversation_log import projected
from tests.conftest import gread, sql

CHANNELS = ("_global", "proj-a", "proj-b")
TEXTS = (
    "I moved to Lisbon in May.",
    "I'm planning a hiking trip to the Dolomites in July.",
    "My Rust service leaks memory under load.",
)
CLAIM = "Alice lives in Lisbon"
SECOND_CLAIM = "Alice plans to hike the Dolomites in July"
STRATEGY = "Profile allocations with heaptrack before changing code"
QUERY = "Where does Alice live, Lisbon? Hiking the Dolomites; heaptrack for a Rust memory leak"
FLAGS = ((True, True, True), (False, True, True), (True, False, True), (True, True, False), (False, False, False))
EVERYTHING = 10_000  # hours: every turn of the test is recent


@pytest.fixture
def memory(settings):
    """A memory whose audit log keeps everything (reads too, with payloads), so the audit path is checked as well."""
    with AgentMemory(settings(audit={"level": "verbose"}), user_id="alice") as mem:
        yield mem


# --- seeding: the same memories for every tenant ----------------------------------------------------------------------

def seed(memory: AgentMemory, user: str, channel: str) -> dict[str, Any]:
    """One tenant's memories in one channel, identical for every user but for the ``tenant`` marker; their ids."""
    marker = f"{user}/{channel}"
    conv = f"{user}-{channel}-trip"
    at = datetime.now(UTC) - timedelta(minutes=30)
    turns = memory.store_turns([
        Turn(conversation_id=conv, user_id=user, role="user", content=text, timestamp=at + timedelta(seconds=i),
             metadata={"tenant": marker}) for i, text in enumerate(TEXTS)], channel=channel)
    lisbon = memory.upsert_entity(Entity(user_id=user, name="Lisbon", type="place", aliases=["Lisboa"],
                                         properties={"tenant": marker}), channel=channel)
    dolomites = memory.upsert_entity(Entity(user_id=user, name="Dolomites", type="place",
                                            properties={"tenant": marker}), channel=channel)
    route = memory.upsert_entity(Entity(user_id=user, name="Alta Via 1", type="route",
                                        properties={"tenant": marker}), channel=channel)
    memory.create_relationship(route.id, dolomites.id, "LOCATED_IN", {"tenant": marker}, user_id=user)
    fact = memory.learn_fact(Fact(id=f"fact-{user}-{channel}", user_id=user, claim=CLAIM, source_turn_id=turns[0].id,
                                  entity_ids=[lisbon.id], temporal="current", metadata={"tenant": marker}),
                             channel=channel)
    hike = memory.learn_fact(Fact(user_id=user, claim=SECOND_CLAIM, source_turn_id=turns[1].id,
                                  entity_ids=[dolomites.id, route.id], metadata={"tenant": marker}), channel=channel)
    promoted = (None if channel == "_global"
                else memory.promote_to_global(fact.id, "seen in every project", user_id=user))
    trip = memory.add_goal(Goal(user_id=user, description="Hike the Alta Via 1 in July", priority=2,
                                metadata={"tenant": marker}), channel=channel)
    gear = memory.add_goal(Goal(user_id=user, description="Buy hiking boots", parent_id=trip.id,
                                metadata={"tenant": marker}), channel=channel)
    hut = memory.add_goal(Goal(user_id=user, description="Book the mountain huts", metadata={"tenant": marker}),
                          channel=channel)
    memory.block_goal(trip.id, hut.id, user_id=user)
    memory.complete_goal(gear.id, "completed", result="Bought boots", user_id=user)
    invocation = memory.record_invocation(conv, turns[2].id, "heaptrack", {"pid": 4242, "tenant": marker},
                                          {"top": "Vec::push"}, True, 840, channel, user_id=user,
                                          task_type="debug-memory", invocation_id=f"inv-{user}-{channel}")
    strategy = memory.learn_strategy(STRATEGY, "memory leak", ["heaptrack"], conv, True, channel, user_id=user)
    session = memory.working(user, conv, channel)
    session.set("destination", {"region": "Dolomites", "tenant": marker}, ttl_seconds=3600)
    session.set_active_goal(trip.id, trip.description)
    session.push_thought({"thought": "Ask about her fitness level", "tenant": marker})
    return {
        "user": user, "channel": channel, "marker": marker, "conv": conv, "turns": turns,
        "entities": [lisbon, dolomites, route], "facts": [fact, hike], "promoted": promoted,
        "goals": [trip, gear, hut], "invocation": invocation, "strategy": strategy,
    }


def seed_user(memory: AgentMemory, user: str) -> list[dict[str, Any]]:
    """A user's memories in every channel, and their profile."""
    memory.update_profile(user, preferences={"units": "metric"}, expertise_areas=["rust", "hiking"],
                          communication_style={"tone": "brief"}, metadata={"tenant": user})
    return [seed(memory, user, channel) for channel in CHANNELS]


def ids_of(seeds: Iterable[dict[str, Any]]) -> set[str]:
    """Every id in some seeds: conversations, turns, entities, facts, promoted copies, goals, invocations and
    strategies."""
    found: set[str] = set()
    for s in seeds:
        found |= {s["conv"], s["invocation"].id, s["strategy"].id}
        found |= {x.id for key in ("turns", "entities", "facts", "goals") for x in s[key]}
        if s["promoted"] is not None:
            found.add(s["promoted"].id)
    return found


# --- views: what a tenant sees through the public API, and what the stores hold for them ----------------------------

def public_view(memory: AgentMemory, user: str, seeds: list[dict[str, Any]]) -> dict[str, Any]:
    """Everything ``user`` reads back through the public API about the seeded objects (reads that change nothing)."""
    view: dict[str, Any] = {"profile": memory.get_profile(user).model_dump()}
    view["recent"] = [t.model_dump() for t in memory.get_recent_turns(user, list(CHANNELS), hours=EVERYTHING)]
    view["goals"] = [g.model_dump(exclude={"embedding"}) for g in memory.list_goals(user, channels=list(CHANNELS))]
    view["strategies"] = [s.model_dump() for s in memory.find_strategies(STRATEGY, list(CHANNELS), user_id=user)]
    view["tools"] = memory.get_tool_stats(user_id=user)
    entity_ids = [e.id for s in seeds for e in s["entities"]]
    view["graph"] = memory.get_entity_graph(entity_ids, depth=3, user_id=user).model_dump()
    for s in seeds:
        view[s["conv"]] = {
            "turns": [t.model_dump() for t in memory.get_conversation(s["conv"], user)],
            "entities": [memory.get_entity(e.id, user).model_dump() for e in s["entities"]],
            "facts": [memory.get_fact(f.id, user).model_dump()
                      for f in [*s["facts"], *([s["promoted"]] if s["promoted"] else [])]],
            "goals": [memory.get_goal(g.id, user).model_dump(exclude={"embedding"}) for g in s["goals"]],
            "working": memory.working(user, s["conv"], s["channel"]).get_context(),
        }
    return view


def stored_view(memory: AgentMemory, user: str, channel: str | None = None) -> dict[str, Any]:
    """Everything the stores hold for ``user`` (in ``channel``, if given): graph nodes (vectors left out) and every
    edge that touches one, and the user's rows of every PostgreSQL table."""
    where = "n.user_id = $user AND ($channel IS NULL OR n.channel = $channel)"
    nodes = gread(memory, f"MATCH (n) WHERE {where} RETURN labels(n) AS labels, properties(n) AS p",
                  {"user": user, "channel": channel})
    nodes += gread(memory, "MATCH (n:User {id: $user}) RETURN labels(n) AS labels, properties(n) AS p", {"user": user})
    edges = gread(memory, f"MATCH (a)-[r]-(n) WHERE {where} RETURN labels(a) AS a_labels, "
                          "coalesce(a.id, a.name) AS a, type(r) AS type, startNode(r) = n AS outgoing, "
                          "labels(n) AS n_labels, n.id AS n, properties(r) AS p", {"user": user, "channel": channel})
    by_channel = "user_id = %(user)s AND (%(channel)s::text IS NULL OR channel = %(channel)s)"
    args = {"user": user, "channel": channel}
    return {
        "nodes": sorted(json.dumps({"labels": sorted(r["labels"]), **{k: v for k, v in r["p"].items()
                                                                    if k != "embedding"}}, sort_keys=True, default=str)
                        for r in nodes),
        "edges": sorted(json.dumps(r, sort_keys=True, default=str) for r in edges),
        "log": sql(memory, "SELECT turn_id, conversation_id, turn_index, timestamp, role, content, channel, metadata,"
                           f" embedding::text AS embedding, {projected()} FROM conversation_logs WHERE {by_channel}"
                           " ORDER BY turn_id", args),
        "tools": sql(memory, f"SELECT * FROM tool_invocations WHERE {by_channel} ORDER BY invocation_id", args),
        "timeline": sql(memory, "SELECT user_id, memory_type, neo4j_node_id, event_time, summary, importance_score,"
                                f" access_count, channel, metadata FROM memory_timeline WHERE {by_channel}"
                                " ORDER BY memory_type, neo4j_node_id", args),
        "profile": sql(memory, "SELECT * FROM user_profiles WHERE user_id = %(user)s", args),
        "audit": sql(memory, "SELECT id, operation, memory_type, conversation_id, source_channel, metadata"
                             " FROM memory_audit_log WHERE user_id = %(user)s"
                             " AND (%(channel)s::text IS NULL OR source_channel = %(channel)s) ORDER BY id", args),
    }


# --- checks ----------------------------------------------------------------------------------------------------------

def refused(error: type[AgentXMemoryError], call: Callable[[], Any]) -> AgentXMemoryError:
    """``call`` raises our ``error`` (not a driver's, not pydantic's, not another of ours)."""
    with pytest.raises(AgentXMemoryError) as caught:
        call()
    assert type(caught.value) is error, f"expected {error.__name__}, got {type(caught.value).__name__}: {caught.value}"
    return caught.value


def marker_of(item: Any) -> str | None:
    """The ``tenant`` marker an object carries (metadata, or an entity's properties), if it has one."""
    holder = getattr(item, "metadata", None) if not isinstance(item, Entity) else item.properties
    return holder.get("tenant") if isinstance(holder, dict) else None


def assert_owned(items: Iterable[Any], user: str, channels: Iterable[str] = CHANNELS) -> None:
    """Every object is ``user``'s (its user id and, where it has one, its marker) and in one of ``channels``."""
    allowed = set(channels)
    for item in items:
        assert item.user_id == user, f"{user} got {item.user_id}'s {type(item).__name__} {item.id}"
        marker = marker_of(item)
        if marker is not None:
            assert marker.split("/")[0] == user, f"{user} got an object marked {marker!r}: {item!r}"
        assert item.channel in allowed, f"{item.channel!r} is not one of {sorted(allowed)}: {item!r}"


def assert_bundle_owned(bundle: MemoryBundle, user: str, own_entity_ids: set[str], flags: tuple[bool, bool, bool],
                        channels: Iterable[str] = CHANNELS) -> None:
    """A recall of ``user`` holds only ``user``'s objects, and only the layers asked for (all of them non-empty, so
    the tenant's own identical memories were found)."""
    episodic, semantic, procedural = flags
    assert bundle.user_id == user
    assert bundle.user_context is not None and bundle.user_context.user_id == user
    assert bundle.user_context.metadata["tenant"] == user
    assert_owned([*(t.item for t in bundle.turns), *(f.item for f in bundle.facts), *(e.item for e in bundle.entities),
                  *(s.item for s in bundle.strategies), *bundle.goals], user, channels)
    for entity in bundle.entities:
        assert set(entity.related) <= own_entity_ids, f"{user}'s entity is related to another tenant's: {entity}"
    assert bool(bundle.turns) is episodic and bool(bundle.strategies) is procedural
    assert bool(bundle.facts) is semantic and bool(bundle.entities) is semantic
    assert bundle.goals, "the tenant's own active goals are part of every recall"


# --- the suite -------------------------------------------------------------------------------------------------------

def test_bob_with_alices_ids_gets_nothing_of_hers_and_changes_nothing_of_hers(memory, tmp_path):
    """Alice and bob hold identical memories; bob takes every read and write path of the public API with alice's ids
    (and her caller-chosen fact and invocation ids). Each call is refused with our NotFoundError / ConflictError or
    acts on bob's own object, every object bob reads back is his, the audit entries of bob's calls name nothing of
    alice's, and alice's public view and her stored nodes, edges and rows are the same before and after."""
    alice = seed_user(memory, "alice")
    bob = seed_user(memory, "bob")
    alice_ids, bob_entity_ids = ids_of(alice), {e.id for s in bob for e in s["entities"]}
    public_before = public_view(memory, "alice", alice)
    stored_before = stored_view(memory, "alice")

    for mine, hers in zip(bob, alice, strict=True):
        attack(memory, mine, hers)
    bob_reads(memory, bob, alice, bob_entity_ids)
    ingest_and_reconcile_as_bob(memory, alice, tmp_path)
    memory.drain()  # recall's background reinforcement and audit writes

    assert stored_view(memory, "alice") == stored_before
    assert public_view(memory, "alice", alice) == public_before
    # bob's audit entries, timeline rows and graph nodes name none of alice's ids or markers
    bob_audit = sql(memory, "SELECT memory_type, conversation_id, metadata::text AS meta FROM memory_audit_log"
                            " WHERE user_id = 'bob'")
    assert bob_audit, "bob's writes and reads are audited"
    for row in bob_audit:
        # bob's working-memory session on her conversation id is his own (attack() opens it on purpose): its entries
        # name the session id bob gave, and nothing of hers
        assert "alice/" not in row["meta"], row  # none of her content
        if row["memory_type"] == "working":
            # bob's working-memory session on her conversation id is his own (attack() opens it on purpose, and sets
            # her goal id as his active goal: working memory stores strings): its entries echo what bob passed
            continue
        assert row["conversation_id"] not in alice_ids, row
        assert not {i for i in alice_ids if i in row["meta"]}, row
    timeline = {r["id"] for r in sql(memory, "SELECT neo4j_node_id AS id FROM memory_timeline WHERE user_id = 'bob'")}
    assert not timeline & alice_ids
    linked = gread(memory, "MATCH (a)-[r]-(b) WHERE a.user_id = 'bob' AND b.user_id <> 'bob' "
                           "RETURN type(r) AS type, a.id AS a, b.id AS b")
    assert linked == []
    # and alice's own recall, after all that, is still all hers
    alice_entity_ids = {e.id for s in alice for e in s["entities"]}
    for flags in FLAGS:
        bundle = memory.remember(QUERY, user_id="alice", include_episodic=flags[0], include_semantic=flags[1],
                                 include_procedural=flags[2])
        assert_bundle_owned(bundle, "alice", alice_entity_ids, flags)


def attack(memory: AgentMemory, mine: dict[str, Any], hers: dict[str, Any]) -> None:
    """Bob's writes and id reads in one channel with alice's ids of that channel: refused, or acting on bob's own."""
    channel, conv = hers["channel"], hers["conv"]
    turn: Turn = hers["turns"][0]
    lisbon: Entity = hers["entities"][0]
    dolomites: Entity = hers["entities"][1]
    route: Entity = hers["entities"][2]
    fact: Fact = hers["facts"][0]
    trip: Goal = hers["goals"][0]
    gear: Goal = hers["goals"][1]

    # episodic: her conversation and her turn ids
    refused(NotFoundError, lambda: memory.get_conversation(conv, user_id="bob"))
    refused(ConflictError, lambda: memory.store_turn(Turn(conversation_id=conv, user_id="bob", content=TEXTS[0]),
                                                     channel=channel))
    refused(ConflictError, lambda: memory.store_turn(Turn(id=turn.id, conversation_id=mine["conv"], user_id="bob",
                                                          content=TEXTS[0]), channel=channel))
    refused(ConflictError, lambda: memory.store_turns([
        Turn(conversation_id=f"bob-{channel}-new", user_id="bob", content="a new turn"),
        Turn(id=turn.id, conversation_id=f"bob-{channel}-new", user_id="bob", content=TEXTS[0])], channel=channel))
    refused(NotFoundError, lambda: memory.get_conversation(f"bob-{channel}-new", user_id="bob"))  # nothing written

    # semantic: her entity ids, fact ids and turn ids
    for entity in hers["entities"]:
        refused(NotFoundError, partial(memory.get_entity, entity.id, user_id="bob"))
    merged = memory.upsert_entity(Entity(id=lisbon.id, user_id="bob", name="Lisbon", type="place",
                                         properties={"tenant": mine["marker"]}), channel=channel)
    assert (merged.id, merged.user_id) == (mine["entities"][0].id, "bob")  # merged into bob's own Lisbon
    refused(ConflictError, lambda: memory.upsert_entity(Entity(id=lisbon.id, user_id="bob", name="Lisbon Airport",
                                                               type="place"), channel=channel))
    for fact_id in (f.id for f in hers["facts"]):
        refused(NotFoundError, partial(memory.get_fact, fact_id, user_id="bob"))
    refused(ConflictError, lambda: memory.learn_fact(Fact(id=fact.id, user_id="bob", claim=CLAIM,
                                                          metadata={"tenant": mine["marker"]}), channel=channel))
    refused(ConflictError, lambda: memory.store_fact(Fact(id=fact.id, user_id="bob", claim=CLAIM), channel=channel))
    refused(NotFoundError, lambda: memory.learn_fact(Fact(user_id="bob", claim=CLAIM, source_turn_id=turn.id),
                                                     channel=channel))
    refused(NotFoundError, lambda: memory.learn_fact(Fact(user_id="bob", claim=CLAIM, entity_ids=[lisbon.id]),
                                                     channel=channel))
    refused(NotFoundError, lambda: memory.create_relationship(route.id, dolomites.id, "PART_OF", user_id="bob"))
    refused(NotFoundError, lambda: memory.create_relationship(mine["entities"][2].id, dolomites.id, "LOCATED_IN",
                                                              user_id="bob"))
    refused(NotFoundError, lambda: memory.create_relationship(route.id, mine["entities"][1].id, "LOCATED_IN",
                                                              user_id="bob"))
    graph = memory.get_entity_graph([e.id for e in hers["entities"]], depth=3, user_id="bob")
    assert (graph.entities, graph.relationships, graph.facts) == ([], [], [])
    mixed = memory.get_entity_graph([lisbon.id, route.id, mine["entities"][2].id], depth=3, user_id="bob")
    assert_owned([*mixed.entities, *mixed.facts], "bob")
    assert {e.id for e in mixed.entities} == {mine["entities"][1].id, mine["entities"][2].id}
    assert {(r.source_id, r.target_id) for r in mixed.relationships} == {(mine["entities"][2].id,
                                                                          mine["entities"][1].id)}
    if hers["promoted"] is not None:
        refused(NotFoundError, lambda: memory.promote_to_global(fact.id, "mine now", user_id="bob"))
        refused(NotFoundError, lambda: memory.get_fact(hers["promoted"].id, user_id="bob"))

    # procedural: her conversation, turn, invocation and strategy ids
    refused(ConflictError, lambda: memory.record_invocation(conv, None, "heaptrack", {}, None, False, 1, channel,
                                                            user_id="bob", task_type="debug-memory"))
    refused(NotFoundError, lambda: memory.record_invocation(mine["conv"], turn.id, "heaptrack", {}, None, False, 1,
                                                            channel, user_id="bob"))
    invocation_id = hers["invocation"].id
    refused(ConflictError, lambda: memory.record_invocation(mine["conv"], None, "heaptrack", {}, None, False, 1,
                                                            channel, user_id="bob", invocation_id=invocation_id))
    refused(NotFoundError, lambda: memory.reinforce_strategy(hers["strategy"].id, False, user_id="bob"))
    again = memory.learn_strategy(STRATEGY, "", (), conv, True, channel, user_id="bob")  # not SUCCEEDED_IN hers
    assert (again.id, again.user_id) == (mine["strategy"].id, "bob")

    # goals: her goal ids as goal, parent and blocker
    for goal in hers["goals"]:
        refused(NotFoundError, partial(memory.get_goal, goal.id, user_id="bob"))
    refused(NotFoundError, lambda: memory.complete_goal(trip.id, "abandoned", "mine now", user_id="bob"))
    refused(NotFoundError, lambda: memory.complete_goal(gear.id, "active", user_id="bob"))
    refused(NotFoundError, lambda: memory.block_goal(mine["goals"][0].id, gear.id, user_id="bob"))
    refused(NotFoundError, lambda: memory.block_goal(trip.id, mine["goals"][2].id, user_id="bob"))
    refused(NotFoundError, lambda: memory.block_goal(trip.id, gear.id, user_id="bob"))
    refused(ConflictError, lambda: memory.add_goal(Goal(id=trip.id, user_id="bob", description="Hike the Alta Via 1"),
                                                   channel=channel))
    refused(NotFoundError, lambda: memory.add_goal(Goal(user_id="bob", description="Buy boots", parent_id=trip.id),
                                                   channel=channel))
    refused(NotFoundError, lambda: memory.add_goal(Goal(user_id="bob", description="Buy boots",
                                                        blocked_by=[gear.id]), channel=channel))

    # working memory: bob's session on her conversation id is his own, empty one
    session = memory.working("bob", conv, channel)
    context = session.get_context()
    assert (context["values"], context["recent_turns"], context["active_goal"], context["thoughts"]) == ({}, [], None,
                                                                                                       [])
    assert (session.get("destination"), session.get_recent_turns(), session.delete("destination")) == (None, [], False)
    assert session.clear_session() == 0
    session.set("destination", {"region": "Dolomites", "tenant": mine["marker"]})
    session.add_turn(Turn(conversation_id=conv, user_id="bob", content=TEXTS[0], metadata={"tenant": mine["marker"]}))
    session.push_thought({"thought": "Ask about her fitness level", "tenant": mine["marker"]})
    session.set_active_goal(trip.id, "not hers")
    assert session.get("destination") == {"region": "Dolomites", "tenant": mine["marker"]}
    assert session.clear_session() == 4


def bob_reads(memory: AgentMemory, bob: list[dict[str, Any]], alice: list[dict[str, Any]],
              bob_entity_ids: set[str]) -> None:
    """Every read bob takes returns his objects only, and each of his identical memories exactly once."""
    recent = memory.get_recent_turns("bob", list(CHANNELS), hours=EVERYTHING)
    assert_owned(recent, "bob")
    assert sorted(t.id for t in recent) == sorted(t.id for s in bob for t in s["turns"])
    for s in bob:
        assert_owned(memory.get_conversation(s["conv"], "bob"), "bob")
        assert_owned([memory.get_entity(e.id, "bob") for e in s["entities"]], "bob")
        assert_owned([memory.get_fact(f.id, "bob") for f in s["facts"]], "bob")
        assert_owned([memory.get_goal(g.id, "bob") for g in s["goals"]], "bob")
        assert memory.working("bob", s["conv"], s["channel"]).get("destination")["tenant"] == s["marker"]
    goals = memory.list_goals("bob", channels=list(CHANNELS))
    assert_owned(goals, "bob")
    assert sorted(g.id for g in goals) == sorted(g.id for s in bob for g in s["goals"])
    strategies = memory.find_strategies(STRATEGY, list(CHANNELS), user_id="bob")
    assert_owned(strategies, "bob")
    assert sorted(s.id for s in strategies) == sorted(s["strategy"].id for s in bob)
    stats = memory.get_tool_stats(user_id="bob")  # bob's refused calls were not counted
    assert [(s["tool_name"], s["usage_count"], s["success_count"]) for s in stats] == [("heaptrack", 3, 3)]
    for channel in CHANNELS:
        stats = memory.get_tool_stats(task_type="debug-memory", channel=channel, user_id="bob")
        assert [(s["tool_name"], s["usage_count"]) for s in stats] == [("heaptrack", 1)]
    # alice's identical objects score exactly as bob's: they never crowd bob's out of a small top-k
    (best,) = memory.find_strategies(STRATEGY, list(CHANNELS), top_k=1, user_id="bob")
    assert best.user_id == "bob"
    top = memory.remember(QUERY, user_id="bob", top_k=1)
    assert_owned([top.turns[0].item, top.facts[0].item, top.entities[0].item, top.strategies[0].item], "bob")
    graph = memory.get_entity_graph(sorted(bob_entity_ids), depth=3, user_id="bob")
    assert_owned([*graph.entities, *graph.facts], "bob")
    assert {e.id for e in graph.entities} == bob_entity_ids
    profile = memory.get_profile("bob")
    assert (profile.user_id, profile.metadata) == ("bob", {"tenant": "bob"})
    memory.update_profile("bob", preferences={"units": "imperial"}, expertise_areas=["go"], metadata={"x": 1})
    for channel, flags in [*(("proj-a", f) for f in FLAGS), ("_global", FLAGS[0]), ("proj-b", FLAGS[0])]:
        bundle = memory.remember(QUERY, user_id="bob", channel=channel, include_episodic=flags[0],
                                 include_semantic=flags[1], include_procedural=flags[2])
        assert_bundle_owned(bundle, "bob", bob_entity_ids, flags)
    alice_turns = {t.id for s in alice for t in s["turns"]}
    assert not alice_turns & {t.id for t in memory.get_recent_turns("bob", list(CHANNELS), hours=EVERYTHING)}


def ingest_and_reconcile_as_bob(memory: AgentMemory, alice: list[dict[str, Any]], tmp_path: Path) -> None:
    """Bob's JSONL lines naming alice's conversation or turn ids are skipped, his own line is stored; a log row of
    bob's in alice's conversation written around the API is quarantined by reconcile, never attached to hers."""
    hers = alice[0]
    now = datetime.now(UTC).isoformat()
    lines = [
        {"user_id": "bob", "conversation_id": hers["conv"], "role": "user", "content": TEXTS[0], "timestamp": now},
        {"id": hers["turns"][0].id, "user_id": "bob", "conversation_id": "bob-ingest", "role": "user",
         "content": TEXTS[0], "timestamp": now},
        {"user_id": "bob", "conversation_id": "bob-ingest", "role": "user", "content": TEXTS[1], "timestamp": now,
         "metadata": {"tenant": "bob/_global"}},
    ]
    path = tmp_path / "bob.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    report = memory._portal.run(ingest_file(memory.core, path))
    assert report.stored == 1
    assert [number for number, _ in report.skipped] == [1, 2]
    assert_owned(memory.get_conversation("bob-ingest", "bob"), "bob", ["_global"])

    # rows of bob's written around the API (a restore, a manual fix): one in alice's conversation at her next index
    insert = ("INSERT INTO conversation_logs (turn_id, user_id, conversation_id, turn_index, role, content, channel,"
              " metadata) VALUES (%(id)s, 'bob', %(conv)s, %(index)s, 'user', %(content)s, '_global',"
              " '{\"tenant\": \"bob/_global\"}'::jsonb)")
    sql(memory, insert, {"id": "bob-restored-1", "conv": hers["conv"], "index": len(TEXTS), "content": TEXTS[0]})
    sql(memory, insert, {"id": "bob-restored-2", "conv": "bob-restored", "index": 0, "content": TEXTS[0]})
    result = memory.reconcile()
    assert result.projected == 1
    assert [q.turn_id for q in result.quarantined] == ["bob-restored-1"]
    assert [t.id for t in memory.get_conversation("bob-restored", "bob")] == ["bob-restored-2"]
    assert gread(memory, "MATCH (t:Turn {id: 'bob-restored-1'}) RETURN count(t) AS n") == [{"n": 0}]


def test_the_channels_of_one_user_stay_apart(memory):
    """Alice holds identical memories in proj-a and proj-b. Every read scoped to proj-b returns proj-b's and _global's
    objects only; writes in proj-b with proj-a's ids are refused (entity and fact ids keep their channel) or act on
    proj-b's own objects, and proj-a's nodes, edges and rows are unchanged."""
    seeds = {s["channel"]: s for s in seed_user(memory, "alice")}
    a, b = seeds["proj-a"], seeds["proj-b"]
    visible = ("proj-b", "_global")
    before = stored_view(memory, "alice", "proj-a")

    # reads scoped to proj-b
    recent = memory.get_recent_turns("alice", "proj-b", hours=EVERYTHING)
    assert_owned(recent, "alice", visible)
    assert {t.metadata["tenant"] for t in recent} == {"alice/proj-b", "alice/_global"}
    goals = memory.list_goals("alice", channels="proj-b")
    assert_owned(goals, "alice", visible)
    assert {g.id for g in goals} == {g.id for s in (b, seeds["_global"]) for g in s["goals"]}
    strategies = memory.find_strategies(STRATEGY, "proj-b", user_id="alice")
    assert sorted(s.id for s in strategies) == sorted([b["strategy"].id, seeds["_global"]["strategy"].id])
    stats = memory.get_tool_stats(channel="proj-b", user_id="alice")
    assert [(s["tool_name"], s["usage_count"]) for s in stats] == [("heaptrack", 1)]
    own_entities = {e.id for s in seeds.values() for e in s["entities"]}
    for flags in FLAGS:
        bundle = memory.remember(QUERY, user_id="alice", channel="proj-b", include_episodic=flags[0],
                                 include_semantic=flags[1], include_procedural=flags[2])
        assert_bundle_owned(bundle, "alice", own_entities, flags, visible)
        assert not {f.item.id for f in bundle.facts} & {f.id for f in a["facts"]}
    session = memory.working("alice", a["conv"], "proj-b")  # proj-a's conversation id, in proj-b
    assert session.get_context()["values"] == {} and session.get("destination") is None
    assert session.clear_session() == 0

    # writes in proj-b with proj-a's ids
    merged = memory.upsert_entity(Entity(id=a["entities"][0].id, user_id="alice", name="Lisbon", type="place",
                                         properties={"tenant": "alice/proj-b"}), channel="proj-b")
    assert merged.id == b["entities"][0].id
    refused(ConflictError, lambda: memory.upsert_entity(Entity(id=a["entities"][0].id, user_id="alice",
                                                               name="Lisbon Airport", type="place"), channel="proj-b"))
    refused(ConflictError, lambda: memory.learn_fact(Fact(id=a["facts"][0].id, user_id="alice", claim=CLAIM,
                                                          metadata={"tenant": "alice/proj-b"}), channel="proj-b"))
    strategy = memory.learn_strategy(STRATEGY, "", (), a["conv"], False, "proj-b", user_id="alice")
    assert strategy.id == b["strategy"].id
    memory.working("alice", a["conv"], "proj-b").set("destination", {"tenant": "alice/proj-b"})
    memory.drain()

    assert stored_view(memory, "alice", "proj-a") == before
    assert memory.working("alice", a["conv"], "proj-a").get("destination") == {"region": "Dolomites",
                                                                                "tenant": "alice/proj-a"}
