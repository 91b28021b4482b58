"""What recall may return, on the real embedded servers: channels (active + ``_global``, never another project),
time windows (a hard filter), reinforcement of what was returned, user isolation tested adversarially with
identical content, and tenant-correct vector search (a user's results do not depend on other users' data).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from agentx_memory import AgentMemory, ConflictError, Entity, Fact, Goal, NotFoundError, Turn
from agentx_memory.models import GLOBAL_CHANNEL
from agentx_memory.polling import wait_until
from tests.conftest import run, sql

REF = datetime(2024, 3, 20, 12, 0, tzinfo=UTC)


def scored_lists(bundle) -> dict[str, list]:
    return {"turns": bundle.turns, "facts": bundle.facts, "entities": bundle.entities, "strategies": bundle.strategies}


# --- channels ---------------------------------------------------------------------------------------------------


def _fill_channels(memory, user: str = "alice") -> dict[str, dict[str, list[str]]]:
    """Budget memories of every kind in proj-a, proj-b and _global; returns ids by channel and kind."""
    ids: dict[str, dict[str, list[str]]] = {}
    for channel in ("proj-a", "proj-b", GLOBAL_CHANNEL):
        tag = channel.strip("_")
        mine = ids.setdefault(channel, {"turns": [], "facts": [], "entities": [], "strategies": [], "goals": []})
        for i in range(2):
            turn = memory.store_turn(Turn(conversation_id=f"{user}-{tag}-{i}", user_id=user,
                                          content=f"The {tag} budget review number {i} went over the budget",
                                          timestamp=REF - timedelta(days=2, hours=i)), channel=channel)
            mine["turns"].append(turn.id)
            entity = memory.upsert_entity(Entity(user_id=user, name=f"Budget {tag} {i}", type="document",
                                                 description="the budget spreadsheet"), channel=channel)
            mine["entities"].append(entity.id)
            fact = memory.learn_fact(Fact(user_id=user, claim=f"The {tag} budget {i} is 40k over",
                                          source_turn_id=turn.id, entity_ids=[entity.id]), channel=channel)
            mine["facts"].append(fact.id)
        strategy = memory.learn_strategy(f"Review the {tag} budget line by line", tool_sequence=["sheet"],
                                         channel=channel, user_id=user)
        mine["strategies"].append(strategy.id)
        goal = memory.add_goal(Goal(user_id=user, description=f"Cut the {tag} budget by 10%"), channel=channel)
        mine["goals"].append(goal.id)
    return ids


@pytest.fixture
def reads_memory(settings):
    with AgentMemory(settings(audit={"level": "reads"}), user_id="alice") as mem:
        yield mem


def test_a_project_query_sees_its_project_and_global_but_never_another_project(reads_memory):
    memory = reads_memory
    ids = _fill_channels(memory)
    bundle = memory.remember("How is the budget review going?", channel="proj-a", top_k=20, reference_time=REF)
    assert bundle.channels == ["proj-a", GLOBAL_CHANNEL]

    forbidden = {i for kind in ids["proj-b"].values() for i in kind}
    for kind, items in scored_lists(bundle).items():
        assert items, kind
        assert {s.channel for s in items} == {"proj-a", GLOBAL_CHANNEL}, kind  # both merged
        assert not {s.id for s in items} & forbidden, kind
        assert len({s.id for s in items}) == len(items), f"duplicate {kind}"
        for s in items:  # the channel reported is the stored one
            assert s.id in ids[s.channel][kind]
    for entity in bundle.entities:
        assert not set(entity.related) & forbidden
    assert {g.channel for g in bundle.goals} == {"proj-a", GLOBAL_CHANNEL}
    assert not {g.id for g in bundle.goals} & forbidden
    assert "proj-b" not in bundle.to_prompt(max_tokens=5000)

    # _global alone sees only _global
    only_global = memory.remember("How is the budget review going?", top_k=20, reference_time=REF)
    assert only_global.channels == [GLOBAL_CHANNEL]
    for kind, items in scored_lists(only_global).items():
        assert items and {s.channel for s in items} == {GLOBAL_CHANNEL}, kind


def test_cross_channel_matches_are_logged_at_level_reads(reads_memory):
    memory = reads_memory
    _fill_channels(memory)
    bundle = memory.remember("How is the budget review going?", channel="proj-a", top_k=10, reference_time=REF)
    memory.drain()
    cross = [s for s in bundle.all_scored() if s.channel != "proj-a"]
    assert cross  # _global items matched a proj-a query
    rows = sql(memory, "SELECT operation, source_channel, target_channels, query_text, result_count,"
                       " (metadata->>'cross_channel_matches')::int AS cross_matches,"
                       " metadata->'cross_channel_items' AS items"
                       " FROM memory_audit_log WHERE operation = 'retrieve' AND user_id = 'alice'")
    assert len(rows) == 1
    row = rows[0]
    assert row["source_channel"] == "proj-a"
    assert row["target_channels"] == ["proj-a", GLOBAL_CHANNEL]
    assert row["query_text"] == "How is the budget review going?"
    assert row["cross_matches"] == len(cross)
    assert {i["id"] for i in row["items"]} == {s.id for s in cross}
    assert all(i["channel"] == GLOBAL_CHANNEL for i in row["items"])

    # a query in the active channel _global has no cross-channel matches
    memory.remember("How is the budget review going?", top_k=10, reference_time=REF)
    memory.drain()
    counts = sql(memory, "SELECT (metadata->>'cross_channel_matches')::int AS n FROM memory_audit_log"
                         " WHERE operation = 'retrieve' AND source_channel = '_global'")
    assert [r["n"] for r in counts] == [0]


def test_reads_are_not_logged_below_level_reads(settings):
    with AgentMemory(settings(audit={"level": "writes"}), user_id="alice") as memory:
        _fill_channels(memory)
        memory.remember("How is the budget review going?", channel="proj-a", reference_time=REF)
        memory.drain()
        assert sql(memory, "SELECT count(*) AS n FROM memory_audit_log WHERE operation = 'retrieve'")[0]["n"] == 0


def test_duplicates_across_channels_are_merged(settings):
    with AgentMemory(settings(), user_id="alice") as memory:
        # the same turn text said in the project and globally, and a project fact promoted to _global
        for channel, conversation in (("proj-a", "c-a"), (GLOBAL_CHANNEL, "c-g")):
            memory.store_turn(Turn(conversation_id=conversation, user_id="alice", timestamp=REF - timedelta(days=1),
                                   content="The deploy key lives in the team vault"), channel=channel)
        fact = memory.learn_fact(Fact(user_id="alice", claim="The deploy key lives in the team vault",
                                      confidence=0.95), channel="proj-a")
        promoted = memory.promote_to_global(fact.id, "used everywhere")
        assert promoted.channel == GLOBAL_CHANNEL and promoted.id != fact.id

        bundle = memory.remember("Where does the deploy key live?", channel="proj-a", reference_time=REF)
        assert [t.item.content for t in bundle.turns].count("The deploy key lives in the team vault") == 1
        assert [f.item.claim for f in bundle.facts].count("The deploy key lives in the team vault") == 1
        assert bundle.to_prompt(max_tokens=2000).count("The deploy key lives in the team vault") == 2  # 1 turn, 1 fact


# --- time windows -----------------------------------------------------------------------------------------------


def _timed_memories(memory):
    """Parcel memories 1 h, 30 h and 100 h before REF (turns and facts)."""
    out = {}
    for hours in (1, 30, 100):
        turn = memory.store_turn(Turn(conversation_id=f"c-{hours}", user_id="alice",
                                      timestamp=REF - timedelta(hours=hours),
                                      content=f"The parcel arrived, delivery note {hours}"))
        fact = memory.learn_fact(Fact(user_id="alice", claim=f"A parcel was delivered, note {hours}",
                                      created_at=REF - timedelta(hours=hours)))
        out[hours] = (turn, fact)
    return out


def test_time_window_excludes_older_turns_and_facts(memory):
    made = _timed_memories(memory)
    bundle = memory.remember("When did the parcel arrive?", time_window_hours=24, reference_time=REF)
    assert [t.id for t in bundle.turns] == [made[1][0].id]
    assert [f.item.claim for f in bundle.facts] == [made[1][1].claim], "facts outside the time window came back"

    wider = memory.remember("When did the parcel arrive?", time_window_hours=48, reference_time=REF)
    assert {t.id for t in wider.turns} == {made[1][0].id, made[30][0].id}
    assert {f.id for f in wider.facts} == {made[1][1].id, made[30][1].id}

    everything = memory.remember("When did the parcel arrive?", reference_time=REF)
    assert len(everything.turns) == 3 and len(everything.facts) == 3


def test_time_window_bounds_facts_reached_through_the_graph(memory):
    lisbon = memory.upsert_entity(Entity(user_id="alice", name="Lisbon", type="place"))
    old = memory.learn_fact(Fact(user_id="alice", claim="Alice visited Lisbon in the spring", entity_ids=[lisbon.id],
                                 created_at=REF - timedelta(days=30)))
    new = memory.learn_fact(Fact(user_id="alice", claim="Alice booked a tram tour in Lisbon", entity_ids=[lisbon.id],
                                 created_at=REF - timedelta(hours=2)))
    bundle = memory.remember("Tell me about Lisbon", time_window_hours=24, reference_time=REF)
    assert lisbon.id in {e.id for e in bundle.entities}
    ids = {f.id for f in bundle.facts}
    assert new.id in ids
    assert old.id not in ids, "a fact outside the time window came back through graph expansion"


def test_time_window_bounds_turns_reached_through_facts(memory):
    old_turn = memory.store_turn(Turn(conversation_id="c-old", user_id="alice", timestamp=REF - timedelta(days=10),
                                      content="By the way, my locker code is 4711"))
    fact = memory.learn_fact(Fact(user_id="alice", claim="Alice's locker code is 4711", source_turn_id=old_turn.id,
                                  created_at=REF - timedelta(hours=1)))
    bundle = memory.remember("What is the locker code?", time_window_hours=24, reference_time=REF)
    assert fact.id in {f.id for f in bundle.facts}
    assert old_turn.id not in {t.id for t in bundle.turns}, \
        "a turn outside the time window came back as a fact's source"
    assert all(t.item.timestamp >= REF - timedelta(hours=24) for t in bundle.turns)


# --- reinforcement ----------------------------------------------------------------------------------------------


def test_returned_facts_and_entities_are_reinforced(memory):
    lisbon = memory.upsert_entity(Entity(user_id="alice", name="Lisbon", type="place", description="city"))
    fact = memory.learn_fact(Fact(user_id="alice", claim="Alice lives in Lisbon", entity_ids=[lisbon.id]))
    other_user = memory.upsert_entity(Entity(user_id="bob", name="Lisbon", type="place", description="city"))
    other_fact = memory.learn_fact(Fact(user_id="bob", claim="Bob lives in Lisbon", entity_ids=[other_user.id]))
    assert memory.get_fact(fact.id).access_count == 0 and memory.get_fact(fact.id).last_accessed is None

    before = datetime.now(UTC) - timedelta(seconds=1)
    bundle = memory.remember("Tell me about Lisbon", include_episodic=False)
    memory.drain()
    assert fact.id in {f.id for f in bundle.facts} and lisbon.id in {e.id for e in bundle.entities}
    for scored in bundle.facts:
        stored = memory.get_fact(scored.id)
        assert stored.access_count == scored.item.access_count + 1
        assert stored.last_accessed is not None and stored.last_accessed >= before
    for scored in bundle.entities:
        stored = memory.get_entity(scored.id)
        assert stored.access_count == scored.item.access_count + 1
        assert stored.last_accessed is not None and stored.last_accessed >= before

    memory.remember("Tell me about Lisbon", include_episodic=False)
    memory.drain()
    assert memory.get_fact(fact.id).access_count == 2
    assert memory.get_entity(lisbon.id).access_count == 2
    # another user's identical memories were not touched
    assert memory.get_fact(other_fact.id, user_id="bob").access_count == 0
    assert memory.get_entity(other_user.id, user_id="bob").access_count == 0
    assert memory.get_entity(other_user.id, user_id="bob").last_accessed is None


def test_only_returned_items_are_reinforced(memory):
    kept = [memory.learn_fact(Fact(user_id="alice", claim=f"note number {i} about apples")) for i in range(6)]
    bundle = memory.remember("apples", top_k=2, include_episodic=False, include_procedural=False)
    memory.drain()
    returned = {f.id for f in bundle.facts}
    assert len(returned) == 2
    for fact in kept:
        assert memory.get_fact(fact.id).access_count == (1 if fact.id in returned else 0)


def _timeline_accesses(memory, fact_id: str) -> int:
    rows = sql(memory, "SELECT access_count FROM memory_timeline WHERE neo4j_node_id = %s", (fact_id,))
    return int(rows[0]["access_count"] or 0)


def test_recalls_in_the_flush_window_write_a_node_once_with_their_count(settings, backend):
    """Recall gathers its access counts for ``retrieval.reinforcement_flush_seconds`` and writes each node once: on
    FalkorDB every write of a node also adds an entry to its vector index (its old vector stays as an orphan), so two
    recalls that each wrote a fact left two orphans of it where one write leaves one."""
    with AgentMemory(settings(retrieval={"reinforcement_flush_seconds": 600}), user_id="alice") as memory:
        fact = memory.learn_fact(Fact(user_id="alice", claim="Alice lives in Lisbon"))
        graph = memory.core.ctx.graph

        def fact_index_entries() -> int:
            rows = memory._portal.run(graph.read(graph.dialect.INDEX_USAGE))
            return next(int(r["versions"]) for r in rows if r["label"] == "Fact" and r["versions"] is not None)

        before = fact_index_entries() if backend == "falkordb" else 0
        first = memory.remember("Where does Alice live?", include_episodic=False)
        second = memory.remember("Where does Alice live?", include_episodic=False)
        assert fact.id in {f.id for f in first.facts} and fact.id in {f.id for f in second.facts}
        # the timeline counts each access at once; the graph waits for the window (or drain)
        wait_until(lambda: _timeline_accesses(memory, fact.id) == 2, timeout=20, what="two timeline accesses")
        assert memory.get_fact(fact.id).access_count == 0
        memory.drain()
        stored = memory.get_fact(fact.id)
        assert stored.access_count == 2 and stored.last_accessed is not None
        if backend == "falkordb":
            assert fact_index_entries() == before + 1


def test_gathered_access_counts_are_written_when_the_window_ends(settings):
    """Without drain() or close(), the counts are written once the first of them has waited the window."""
    with AgentMemory(settings(retrieval={"reinforcement_flush_seconds": 0.3}), user_id="alice") as memory:
        fact = memory.learn_fact(Fact(user_id="alice", claim="Alice lives in Lisbon"))
        assert fact.id in {f.id for f in memory.remember("Where does Alice live?", include_episodic=False).facts}
        wait_until(lambda: memory.get_fact(fact.id).access_count == 1, timeout=20, what="the graph's access count")


# --- isolation --------------------------------------------------------------------------------------------------


def _same_world(memory, user: str) -> dict[str, set[str]]:
    """Identical memories for ``user``: turns (with a speaker), entities and a relationship, facts, strategies,
    goals and a profile, in _global and in proj-a. Returns the ids."""
    ids: dict[str, set[str]] = {k: set() for k in ("turns", "facts", "entities", "strategies", "goals")}
    for channel in (GLOBAL_CHANNEL, "proj-a"):
        tag = channel.strip("_")
        turns = memory.store_turns([
            Turn(conversation_id=f"{user}-{tag}", user_id=user, timestamp=REF - timedelta(days=3, minutes=i),
                 content=text, metadata={"speaker": "Ann", "dia_id": f"D1:{i}"})
            for i, text in enumerate(["I moved to Lisbon last month for the robotics job",
                                      "My sister Clara visits me in Lisbon next week",
                                      "The robot arm demo is due in May"])], channel=channel)
        ids["turns"].update(t.id for t in turns)
        lisbon = memory.upsert_entity(Entity(user_id=user, name="Lisbon", type="place", aliases=["Lisboa"],
                                             description="city"), channel=channel)
        clara = memory.upsert_entity(Entity(user_id=user, name="Clara", type="person", description="sister"),
                                     channel=channel)
        memory.create_relationship(clara.id, lisbon.id, "RELATED_TO", user_id=user)
        ids["entities"].update({lisbon.id, clara.id})
        for claim, entity in (("Ann lives in Lisbon", lisbon), ("Clara is Ann's sister", clara)):
            fact = memory.learn_fact(Fact(user_id=user, claim=claim, entity_ids=[entity.id],
                                          source_turn_id=turns[0].id, temporal="current"), channel=channel)
            ids["facts"].add(fact.id)
        ids["strategies"].add(memory.learn_strategy("Book the robotics lab before the demo", tool_sequence=["calendar"],
                                                    channel=channel, user_id=user).id)
        ids["goals"].add(memory.add_goal(Goal(user_id=user, description="Ship the robot arm demo"), channel=channel).id)
    memory.update_profile(user, preferences={"tone": "brief"})
    return ids


QUESTIONS = ["Where does Ann live?", "Tell me about Lisbon", "What did Ann say last month?", "robot arm demo",
             "Who is Clara?", "lisboa", "How do I book the robotics lab?"]


def test_a_user_never_sees_another_users_identical_memories(settings):
    with AgentMemory(settings()) as memory:
        alice = _same_world(memory, "alice")
        bob = _same_world(memory, "bob")
        alice_all = set().union(*alice.values())
        for user, own, other in (("bob", bob, alice_all), ("alice", alice, set().union(*bob.values()))):
            for question in QUESTIONS:
                for channel in (GLOBAL_CHANNEL, "proj-a"):
                    bundle = memory.remember(question, user_id=user, channel=channel, top_k=50, reference_time=REF)
                    assert bundle.user_id == user
                    assert bundle.turns and bundle.facts and bundle.entities and bundle.strategies and bundle.goals
                    for kind, items in scored_lists(bundle).items():
                        assert all(s.item.user_id == user for s in items), (question, kind)
                        assert {s.id for s in items} <= own[kind], (question, kind)
                        assert not {s.id for s in items} & other, (question, kind)
                    for entity in bundle.entities:
                        assert not set(entity.related) & other
                    for fact in bundle.facts:
                        assert not set(fact.item.entity_ids) & other
                        assert fact.item.source_turn_id is None or fact.item.source_turn_id in own["turns"]
                    assert all(g.user_id == user for g in bundle.goals) and {g.id for g in bundle.goals} <= own["goals"]
                    assert bundle.user_context is not None and bundle.user_context.user_id == user
        memory.drain()
        # reinforcement stayed with the reader: alice's items were read by alice only
        for fact_id in alice["facts"]:
            with pytest.raises(NotFoundError):
                memory.get_fact(fact_id, user_id="bob")


def test_another_users_ids_cannot_be_reused_to_reach_their_memories(settings):
    with AgentMemory(settings()) as memory:
        turn = memory.store_turn(Turn(id="turn-1", conversation_id="conv-1", user_id="alice",
                                      timestamp=REF - timedelta(days=1), content="The safe code is 1234"))
        entity = memory.upsert_entity(Entity(id="ent-1", user_id="alice", name="Safe", type="thing"))
        fact = memory.learn_fact(Fact(id="fact-1", user_id="alice", claim="The safe code is 1234",
                                      entity_ids=[entity.id], source_turn_id=turn.id))
        goal = memory.add_goal(Goal(id="goal-1", user_id="alice", description="Open the safe"))

        # bob stores identical memories under alice's ids: refused, nothing of alice's changes hands
        attempts = [
            lambda: memory.store_turn(Turn(id="turn-1", conversation_id="conv-b", user_id="bob",
                                           content="The safe code is 1234")),
            lambda: memory.store_turn(Turn(conversation_id="conv-1", user_id="bob", content="The safe code is 1234")),
            lambda: memory.upsert_entity(Entity(id="ent-1", user_id="bob", name="Safe", type="thing")),
            lambda: memory.learn_fact(Fact(id="fact-1", user_id="bob", claim="The safe code is 1234")),
            lambda: memory.add_goal(Goal(id="goal-1", user_id="bob", description="Open the safe")),
        ]
        for attempt in attempts:
            with pytest.raises(ConflictError):
                attempt()
        # bob cannot link or cite alice's memories either
        with pytest.raises(NotFoundError):
            memory.learn_fact(Fact(user_id="bob", claim="The safe code is 1234", entity_ids=["ent-1"]))
        with pytest.raises(NotFoundError):
            memory.learn_fact(Fact(user_id="bob", claim="The safe code is 1234", source_turn_id="turn-1"))

        memory.store_turn(Turn(conversation_id="conv-b", user_id="bob", timestamp=REF - timedelta(days=1),
                               content="The safe code is 1234"))
        bundle = memory.remember("What is the safe code?", user_id="bob", top_k=50, reference_time=REF)
        assert bundle.turns
        seen = {s.id for s in bundle.all_scored()} | {g.id for g in bundle.goals}
        assert not seen & {"turn-1", "ent-1", "fact-1", "goal-1"}
        assert all(s.item.user_id == "bob" for s in bundle.all_scored())
        memory.drain()
        assert memory.get_fact(fact.id, user_id="alice").user_id == "alice"
        assert memory.get_goal(goal.id, user_id="alice").user_id == "alice"
        assert [t.id for t in memory.get_conversation("conv-1", user_id="alice")] == [turn.id]


# --- tenant-correct vector search --------------------------------------------------------------------------------

TOPICS = ["sailing", "pottery", "chess", "jazz", "baking", "cycling", "astronomy", "gardening", "climbing", "poetry",
          "knitting", "surfing", "photography", "running", "painting", "fishing"]
QUESTIONS_TENANT = ["Which sailing session at the club did I love?", "chess club practice at the club",
                    "What about astronomy at the club?", "Week 12 painting at the club",
                    "Do I enjoy baking at the club?"]


def _tenant_data(memory, users: list[tuple[str, int]]) -> None:
    """Deterministic turns and facts per ``(user, variant)``. Other users get the same sentences with other numbers,
    so their vectors are near-duplicates of alice's and crowd a global nearest-neighbour search. (Lengths vary so
    that no two of alice's memories tie on cosine for the questions: ties would be broken by storage order, which
    is not what this tests.)"""
    turns = [Turn(id=f"{user}-t{i}", conversation_id=f"{user}-c{i // 4}", user_id=user,
                  timestamp=REF - timedelta(days=i, hours=variant % 7),
                  content=f"Week {i + variant}: we practised {topic} at the club" + " and it was fun" * (i % 4)
                          + f" and I loved the {topic} session")
             for user, variant in users for i, topic in enumerate(TOPICS)]
    memory.store_turns(turns)
    for user, _ in users:
        for i, topic in enumerate(TOPICS[:4]):
            memory.learn_fact(Fact(id=f"{user}-f{i}", user_id=user, created_at=REF - timedelta(days=i),
                                   claim=f"{user} enjoys {topic} at the club" + " a lot" * i))


def _alice_results(s) -> dict[str, list]:
    """alice's turn and fact ids and scores for every question, with the exact scan and through the vector index."""
    out: dict[str, list] = {}
    for path, threshold in (("exact-scan", 20_000), ("vector-index", 0)):
        # exact_scan_max_vectors = 0 sends every user through the HNSW index path, as a large user would be
        retrieval = s.retrieval.model_copy(update={"exact_scan_max_vectors": threshold})
        variant = s.model_copy(update={"retrieval": retrieval})
        with AgentMemory(variant) as memory:
            for question in QUESTIONS_TENANT:
                for hybrid in (True, False):
                    bundle = memory.remember(question, user_id="alice", top_k=10, reference_time=REF,
                                             recall={"hybrid": hybrid})
                    assert len(bundle.turns) == 10 and len(bundle.facts) == 4, (path, question)
                    out.setdefault(path, []).append((
                        question, hybrid, [t.id for t in bundle.turns], [round(t.score, 9) for t in bundle.turns],
                        [f.id for f in bundle.facts], [round(f.score, 9) for f in bundle.facts]))
    return out


def test_results_do_not_depend_on_other_users_in_the_store(settings, namespaces):
    # Whole remember() calls, ids, order and scores. (At this size PostgreSQL reads a user's rows through the user
    # index even on the vector-index path; test_recall_plans forces the HNSW plan to check it is not starved.)
    alone_settings = settings()
    with AgentMemory(alone_settings) as memory:
        _tenant_data(memory, [("alice", 0)])
    alone = _alice_results(alone_settings)
    run(namespaces.drop_graph(alone_settings))  # Neo4j tests share one graph: the crowded store starts empty too
    crowded_settings = settings()
    with AgentMemory(crowded_settings) as memory:
        # the others are stored first, so alice's rows are never the first in a table or index
        _tenant_data(memory, [(f"user{n:02d}", n + 1) for n in range(49)])
        _tenant_data(memory, [("alice", 0)])
        assert sql(memory, "SELECT count(DISTINCT user_id) AS n FROM conversation_logs")[0]["n"] == 50
    crowded = _alice_results(crowded_settings)
    for path in ("exact-scan", "vector-index"):
        for got_alone, got_crowded in zip(alone[path], crowded[path], strict=True):
            assert got_crowded == got_alone, path
