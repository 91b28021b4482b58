"""Forgetting a user (issue 16) on both graph backends: after forget_user, no store returns anything of theirs —
recall, every read, the graph, every PostgreSQL table, Redis, the run records — the audit keeps only that it happened
and who asked, the receipt matches what was there, and another user's data is untouched."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from agentx_memory import AgentMemory, ControlMemory, Entity, Fact, Goal, Turn
from agentx_memory.errors import NotFoundError, ValidationError
from tests.conftest import content_text, gread

TABLES = ("conversation_logs", "memory_timeline", "tool_invocations", "user_profiles", "episodic_summaries",
          "memory_pools", "short_term_memory", "working_memory_saves", "store_items")


def _fill(memory: AgentMemory, user: str) -> None:
    turns = memory.store_turns([Turn(conversation_id=f"{user}-c1", user_id=user, content=f"{user} lives in Porto."),
                                Turn(conversation_id=f"{user}-c1", user_id=user, content="We decided to visit.")])
    place = memory.upsert_entity(Entity(user_id=user, name="Porto", type="place", salience=0.05))
    memory.learn_fact(Fact(user_id=user, claim=f"{user} lives in Porto", entity_ids=[place.id],
                           source_turn_id=turns[0].id))
    memory.add_goal(Goal(user_id=user, description="Visit Porto"))
    memory.learn_strategy("Book early", user_id=user)
    memory.add_control(ControlMemory(user_id=user, content="Never share the address"))
    memory.record_invocation(f"{user}-c1", None, "maps", {"q": "Porto"}, {"ok": True}, True, 5, user_id=user)
    memory.update_profile(user, preferences={"units": "metric"})
    memory.create_pool("trip", agent_id="planner", data={"city": "Porto"}, user_id=user)
    memory.write_short_term(f"{user}-s1", "city", "Porto", memory_type="observation", user_id=user)
    memory.put_item(("memories",), "home", {"city": "Porto"}, text="lives in Porto", user_id=user)
    memory.summarize_conversation(f"{user}-c1", user_id=user)
    wm = memory.working(user, f"{user}-c1")
    wm.set("k", 1)
    wm.set_fields({"scratchpad": "notes"})
    wm.ledger_mark("fact:x")
    wm.persist()
    memory.remember("Where do I live?", user_id=user)


def _counts(memory: AgentMemory, user: str) -> dict:
    graph = gread(memory, "MATCH (n) WHERE n.user_id = $u OR (n:User AND n.id = $u) RETURN count(n) AS n", {"u": user})
    rows = {t: memory._portal.run(memory.core.ctx.postgres.fetch(
        f"SELECT count(*) AS n FROM {t} WHERE user_id = %s", (user,)))[0]["n"] for t in TABLES}
    client = memory.core.ctx.working.client
    keys = memory._portal.run(client.keys(memory.settings.redis.key_prefix + "working:{" + user + ":*"))
    return {"graph": graph[0]["n"], **rows, "redis": len(keys)}


def test_forgetting_a_user_removes_them_from_every_store_and_leaves_others(settings):
    with AgentMemory(settings(audit={"level": "reads"}), user_id="alice") as memory:
        for user in ("alice", "bob"):
            _fill(memory, user)
        memory.drain()
        decay = memory.apply_decay(now=datetime.now(UTC) + timedelta(days=5))  # a run over both users
        assert {c["user_id"] for c in decay.changes} == {"alice", "bob"}
        before, bob_before = _counts(memory, "alice"), _counts(memory, "bob")
        assert all(before.values())

        receipt = memory.forget_user("alice", requested_by="dpo@example.com")
        assert sum(receipt.graph.values()) == before["graph"]
        assert {t: receipt.postgres[t] for t in TABLES} == {t: before[t] for t in TABLES}
        assert receipt.redis_keys == before["redis"]
        assert set(_counts(memory, "alice").values()) == {0}
        assert _counts(memory, "bob") == bob_before  # another user's data is untouched
        # the audit keeps that it happened and who asked, never what
        audit = memory._portal.run(memory.core.ctx.postgres.fetch(
            "SELECT operation, query_text, metadata FROM memory_audit_log WHERE user_id = 'alice'"))
        content = [a for a in audit if a["operation"] != "forget"]
        assert content and all(a["query_text"] is None and a["metadata"] == {"forgotten": True} for a in content)
        (entry,) = [a["metadata"] for a in audit if a["operation"] == "forget"]
        assert entry["requested_by"] == "dpo@example.com" and entry["graph"]["Fact"] == 1
        assert "Porto" not in str(audit)

        # no read path returns anything of alice's
        assert memory.remember("Where do I live?").all_scored() == []
        with pytest.raises(NotFoundError):
            memory.get_conversation("alice-c1")
        assert memory.get_profile().preferences == {} and memory.list_goals() == []
        assert memory.find_strategies("Book early") == [] and memory.list_controls() == []
        assert memory.working("alice", "alice-c1").get_context()["values"] == {}
        assert memory.similar_conversations("Porto") == []
        with pytest.raises(NotFoundError):
            memory.read_pool_data("trip", agent_id="planner")
        assert memory.list_short_term("alice-s1") == [] and memory.short_term_statistics()["expired"] == 0
        assert memory.search_items(query="Porto") == [] and memory.list_item_namespaces() == []
        runs = memory.worker_runs()
        assert all(c["user_id"] != "alice" for c in memory._portal.run(memory.core.ctx.sql.runs.get(
            decay.run_id))["changes"]) and runs

        again = memory.forget_user("alice")  # idempotent: nothing left to remove (but the reads made since)
        assert sum(again.graph.values()) == again.redis_keys == 0
        assert {k: v for k, v in again.postgres.items() if k != "memory_audit_log"} == dict.fromkeys(
            [*TABLES, "worker_runs", "worker_runs.changes"], 0)


def _log_rows(memory: AgentMemory, table: str, where: str, params: tuple) -> list[dict]:
    return memory._portal.run(memory.core.ctx.postgres.fetch(f"SELECT * FROM {table} WHERE {where}", params))


def test_forgetting_a_turn_removes_it_and_what_was_derived_from_it_everywhere(settings):
    with AgentMemory(settings(audit={"level": "verbose"}), user_id="alice") as memory:
        kept, secret = memory.store_turns([
            Turn(user_id="alice", conversation_id="c1", content="We planned the trip to Porto in May."),
            Turn(user_id="alice", conversation_id="c1", content="My bank PIN is 4711, keep it safe.")])
        other = memory.store_turn(Turn(user_id="alice", conversation_id="c2", content="The garage PIN is 1234."))
        bobs = memory.store_turn(Turn(user_id="bob", conversation_id="b1", content="Bob's PIN is 9999."))
        derived = memory.learn_fact(Fact(user_id="alice", claim="alice's bank PIN is 4711",
                                         source_turn_id=secret.id, conversation_id="c1"))
        unrelated = memory.learn_fact(Fact(user_id="alice", claim="alice likes Porto", source_turn_id=kept.id))
        memory.summarize_conversation("c1")
        wm = memory.working("alice", "c1")  # store_turns cached both turns in it
        wm.ledger_mark_many([f"turn:{secret.id}", f"fact:{derived.id}", f"turn:{kept.id}"])
        memory.drain()
        assert secret.id in {t.id for t in memory.remember("bank PIN").turns}

        receipt = memory.forget([secret.id, "no-such-id", bobs.id], requested_by="alice herself")
        assert set(receipt.ids) == {secret.id, derived.id} and receipt.not_found == ["no-such-id", bobs.id]
        assert receipt.graph["Turn"] == 1 and receipt.graph["Fact"] == 1
        assert receipt.postgres["conversation_logs"] == 1 and receipt.postgres["episodic_summaries"] == 1
        assert receipt.redis_keys == 3  # the cached turn and the two ledger entries naming forgotten memories

        # nothing of the turn or its fact is readable any more; the rest is
        assert [t.id for t in memory.get_conversation("c1")] == [kept.id]
        assert "4711" not in content_text([t.model_dump() for t in memory.remember("bank PIN").all_scored()])
        with pytest.raises(NotFoundError):
            memory.get_fact(derived.id)
        assert memory.get_fact(unrelated.id).claim == "alice likes Porto"
        assert [t["id"] for t in wm.get_recent_turns()] == [kept.id]
        assert set(wm.ledger_get()) == {f"turn:{kept.id}"}
        assert not gread(memory, "MATCH (n) WHERE n.id IN $ids RETURN n.id AS id", {"ids": [secret.id, derived.id]})
        assert _log_rows(memory, "conversation_logs", "turn_id = %s", (secret.id,)) == []
        assert _log_rows(memory, "memory_timeline", "neo4j_node_id = %s", (derived.id,)) == []
        assert _log_rows(memory, "episodic_summaries", "conversation_id = 'c1'", ()) == []
        # the audit keeps that it happened and who asked, never the content
        audit = _log_rows(memory, "memory_audit_log", "user_id = 'alice'", ())
        assert [(a["operation"], a["query_text"], a["metadata"]) for a in audit if "4711" in content_text(a)] == []
        (entry,) = [a["metadata"] for a in audit if a["operation"] == "forget"]
        assert entry["requested_by"] == "alice herself" and set(entry["affected_ids"]) == {secret.id, derived.id}
        # another conversation of alice and bob's data are untouched
        assert [t.id for t in memory.get_conversation("c2")] == [other.id]
        assert [t.id for t in memory.get_conversation("b1", user_id="bob")] == [bobs.id]

        again = memory.forget([secret.id])  # idempotent
        assert again.ids == [] and again.not_found == [secret.id] and again.redis_keys == 0


def test_forgetting_a_conversation_by_id_or_filter_removes_all_its_turns(settings):
    with AgentMemory(settings(), user_id="alice") as memory:
        for conversation, city, n in (("c1", "Lisbon", 3), ("c2", "Rome", 2)):
            memory.store_turns([Turn(user_id="alice", conversation_id=conversation, content=f"turn {i} about {city}")
                                for i in range(n)])
        memory.record_invocation("c2", None, "maps", {"q": "Rome"}, {"ok": True}, True, 5)
        memory.drain()

        receipt = memory.forget(["c1"])
        assert receipt.graph["Turn"] == 3 and receipt.graph["Conversation"] == 1 and receipt.not_found == []
        with pytest.raises(NotFoundError):
            memory.get_conversation("c1")

        receipt = memory.forget(conversation_id="c2", memory_types=["episodic"])  # turns only: the tool log stays
        assert receipt.graph["Turn"] == 2 and receipt.graph.get("ToolInvocation", 0) == 0
        assert receipt.graph["Conversation"] == 0  # it still has its tool call
        assert memory.get_tool_stats()
        receipt = memory.forget(conversation_id="c2")
        assert receipt.graph["ToolInvocation"] == 1 and receipt.graph["Conversation"] == 1
        assert gread(memory, "MATCH (n {user_id: 'alice'}) RETURN count(n) AS n")[0]["n"] == 0
        assert memory.remember("Lisbon Rome").all_scored() == []


def test_forgetting_by_type_and_time_reaches_only_what_matches(settings):
    with AgentMemory(settings(), user_id="alice") as memory:
        old, new = datetime(2024, 1, 1, tzinfo=UTC), datetime(2026, 1, 1, tzinfo=UTC)
        early = memory.learn_fact(Fact(user_id="alice", claim="alice worked at Acme", created_at=old))
        late = memory.learn_fact(Fact(user_id="alice", claim="alice works at Initech", created_at=new))
        place = memory.upsert_entity(Entity(user_id="alice", name="Acme", type="organization"))
        turn = memory.store_turn(Turn(user_id="alice", conversation_id="c1", content="I used to work at Acme.",
                                      timestamp=old))
        memory.drain()

        receipt = memory.forget(memory_types=["semantic"], before=datetime(2025, 1, 1, tzinfo=UTC))
        assert receipt.ids == [early.id]  # the entity was first seen now, the turn is episodic
        assert memory.get_fact(late.id) and memory.get_entity(place.id)
        assert [t.id for t in memory.get_conversation("c1")] == [turn.id]
        receipt = memory.forget(channel="_global", after=datetime(2025, 6, 1, tzinfo=UTC), memory_types=["semantic"])
        assert set(receipt.ids) == {late.id, place.id}


@pytest.mark.parametrize(("kwargs", "field"), [
    ({}, "where"),
    ({"ids": ["t1"], "channel": "_global"}, "ids"),
    ({"memory_types": ["dreams"]}, "memory_types"),
    ({"memory_types": []}, "memory_types"),
    ({"before": datetime(2024, 1, 1, tzinfo=UTC), "after": datetime(2025, 1, 1, tzinfo=UTC)}, "after"),
    ({"ids": ["bad id\x00"]}, "ids"),
    ({"ids": "t1"}, "ids"),
])
def test_a_forget_request_that_is_unclear_is_refused_naming_the_field(memory, kwargs, field):
    memory.store_turn(Turn(user_id="alice", conversation_id="c1", content="Keep me."))
    with pytest.raises(ValidationError) as err:
        memory.forget(**kwargs)
    assert err.value.field.startswith(field)
    assert len(memory.get_conversation("c1")) == 1


def test_forgetting_a_memory_cuts_its_copies_out_of_shared_pools(memory):
    fact = memory.learn_fact(Fact(user_id="alice", claim="alice's door code is 2580"))
    kept = memory.learn_fact(Fact(user_id="alice", claim="alice likes tea"))
    memory.create_pool("team", agent_id="planner")
    version = memory.share_memory("team", fact.id, agent_id="planner", expected_version=1)
    version = memory.share_memory("team", kept.id, agent_id="planner", expected_version=version)

    receipt = memory.forget([fact.id])
    assert receipt.postgres["memory_pools.data"] == 1
    data, now = memory.read_pool_data("team", agent_id="planner")
    assert set(data) == {f"memory:{kept.id}"} and now == version + 1  # a writer holding the old version reads again
    assert "2580" not in content_text(data)
