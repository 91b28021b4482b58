"""Forgetting a user (issue 16) on both graph backends: after forget_user, no store returns anything of theirs —
recall, every read, the graph, every PostgreSQL table, Redis, the run records — the audit keeps only that it happened
and who asked, the receipt matches what was there, and another user's data is untouched."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from agentx_memory import AgentMemory, ControlMemory, Entity, Fact, Goal, Turn
from agentx_memory.errors import NotFoundError
from tests.conftest import gread

TABLES = ("conversation_logs", "memory_timeline", "tool_invocations", "user_profiles", "episodic_summaries",
          "short_term_memory")


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
    memory.write_short_term(f"{user}-s1", "city", "Porto", memory_type="observation", user_id=user)
    memory.summarize_conversation(f"{user}-c1", user_id=user)
    wm = memory.working(user, f"{user}-c1")
    wm.set("k", 1)
    wm.set_fields({"scratchpad": "notes"})
    wm.ledger_mark("fact:x")
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
        assert memory.list_short_term("alice-s1") == [] and memory.short_term_statistics()["expired"] == 0
        runs = memory.worker_runs()
        assert all(c["user_id"] != "alice" for c in memory._portal.run(memory.core.ctx.sql.runs.get(
            decay.run_id))["changes"]) and runs

        again = memory.forget_user("alice")  # idempotent: nothing left to remove (but the reads made since)
        assert sum(again.graph.values()) == again.redis_keys == 0
        assert {k: v for k, v in again.postgres.items() if k != "memory_audit_log"} == dict.fromkeys(
            [*TABLES, "worker_runs", "worker_runs.changes"], 0)
