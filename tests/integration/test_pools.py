"""Shared memory pools (seed 002, issue 16) on both graph backends: each pool operation allowed for the agents its
access list names and denied (403, audited) for the others; versioned writes where a stale write is refused and
never lost, also under concurrency; expiry; agent_private pools; one user's pools invisible to another; inputs
checked before anything is written."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta

import pytest

from agentx_memory import (
    AgentMemory,
    AsyncAgentMemory,
    ControlMemory,
    Entity,
    Fact,
    Goal,
    NotFoundError,
    PermissionDeniedError,
    StaleVersionError,
    ValidationError,
)
from agentx_memory.errors import ConflictError
from tests.conftest import sql
from tests.store_counts import store_counts
from workers.jobs import cleanup


def _audit(memory: AgentMemory) -> list[dict]:
    return sql(memory, "SELECT operation, success, metadata, error_message FROM memory_audit_log"
                       " WHERE memory_type = 'pool' ORDER BY timestamp, id")


def _decisions(memory: AgentMemory) -> set[tuple[str, str, str]]:
    """(operation, agent, decision) of every pool audit entry."""
    return {(a["operation"], a["metadata"].get("agent_id"), a["metadata"].get("decision")) for a in _audit(memory)}


def test_owner_creates_writes_reads_and_sees_statistics(settings):
    with AgentMemory(settings(), user_id="alice") as memory:
        pool = memory.create_pool("trip", agent_id="planner", pool_type="team_shared", scope="team",
                                  data={"city": "Porto"})
        assert (pool.owner_agent_id, pool.version, pool.expires_at) == ("planner", 1, None)
        assert pool.access_control == {"read": ["planner"], "write": ["planner"], "public_read": False}
        assert memory.read_pool_data("trip", agent_id="planner") == ({"city": "Porto"}, 1)
        assert memory.write_pool_data("trip", {"city": "Lisbon", "days": 3}, agent_id="planner",
                                      expected_version=1) == 2
        assert memory.merge_pool_data("trip", {"days": None, "hotel": "Baixa"}, agent_id="planner",
                                      expected_version=2) == 3
        assert memory.read_pool_data("trip", agent_id="planner") == ({"city": "Lisbon", "hotel": "Baixa"}, 3)
        stats = memory.pool_statistics("trip", agent_id="planner")
        assert (stats.entries, stats.version, stats.reads, stats.writes) == (2, 3, 2, 2)
        assert stats.bytes == len('{"city": "Lisbon", "hotel": "Baixa"}')
        assert stats.last_accessed_at is not None and stats.readers == ("planner",)
        with pytest.raises(ConflictError):  # the id is taken
            memory.create_pool("trip", agent_id="other")
        assert memory.delete_pool("trip", by_agent="planner") and not memory.delete_pool("trip", by_agent="planner")
        with pytest.raises(NotFoundError):
            memory.read_pool_data("trip", agent_id="planner")


def test_every_pool_operation_allows_the_granted_and_denies_and_audits_the_others(settings):
    with AgentMemory(settings(audit={"level": "reads"}), user_id="alice") as memory:
        memory.create_pool("notes", agent_id="owner")
        fact = memory.learn_fact(Fact(user_id="alice", claim="Alice prefers trains"))
        pool = memory.grant_pool_access("notes", "writer", "write", by_agent="owner")
        pool = memory.grant_pool_access("notes", "reader", "read", by_agent="owner")
        assert (pool.readers, pool.writers) == (("owner", "writer", "reader"), ("owner", "writer"))
        assert memory.pool_accessible_by("notes", "writer", "write")
        assert memory.pool_accessible_by("notes", "reader") and not memory.pool_accessible_by("notes", "reader",
                                                                                               "write")
        assert not memory.pool_accessible_by("notes", "stranger")

        # allowed: readers read, writers also write (write implies read)
        for agent in ("owner", "writer", "reader"):
            assert memory.get_pool("notes", agent_id=agent).pool_id == "notes"
            assert [p.pool_id for p in memory.list_pools(agent_id=agent)] == ["notes"]
            assert memory.read_pool_data("notes", agent_id=agent)[1] == 1
            assert memory.pool_statistics("notes", agent_id=agent).version == 1
        version = memory.write_pool_data("notes", {"a": 1}, agent_id="writer", expected_version=1)
        version = memory.merge_pool_data("notes", {"b": 2}, agent_id="writer", expected_version=version)
        version = memory.share_memory("notes", fact.id, agent_id="writer", expected_version=version)
        assert version == 4

        # denied: a stranger reads nothing, a reader writes nothing, only the owner grants, revokes and deletes
        denied = [
            lambda: memory.get_pool("notes", agent_id="stranger"),
            lambda: memory.read_pool_data("notes", agent_id="stranger"),
            lambda: memory.pool_statistics("notes", agent_id="stranger"),
            lambda: memory.write_pool_data("notes", {}, agent_id="reader", expected_version=4),
            lambda: memory.merge_pool_data("notes", {"c": 3}, agent_id="reader", expected_version=4),
            lambda: memory.share_memory("notes", fact.id, agent_id="reader", expected_version=4),
            lambda: memory.grant_pool_access("notes", "stranger", "read", by_agent="writer"),
            lambda: memory.revoke_pool_access("notes", "reader", by_agent="writer"),
            lambda: memory.delete_pool("notes", by_agent="writer"),
        ]
        for call in denied:
            with pytest.raises(PermissionDeniedError) as caught:
                call()
            assert caught.value.status == 403 and "notes" in str(caught.value)
        assert memory.list_pools(agent_id="stranger") == []
        data, version = memory.read_pool_data("notes", agent_id="owner")  # no denied write changed anything
        assert version == 4 and set(data) == {"a", "b", f"memory:{fact.id}"} and (data["a"], data["b"]) == (1, 2)

        decisions = _decisions(memory)
        for operation, agent in [("pool_get", "stranger"), ("pool_read", "stranger"), ("pool_statistics", "stranger"),
                                 ("pool_write", "reader"), ("pool_merge", "reader"), ("pool_share", "reader"),
                                 ("pool_grant", "writer"), ("pool_revoke", "writer"), ("pool_delete", "writer")]:
            assert (operation, agent, "denied") in decisions, operation
        for operation, agent in [("pool_create", "owner"), ("pool_grant", "owner"), ("pool_get", "reader"),
                                 ("pool_list", "reader"), ("pool_read", "reader"), ("pool_statistics", "reader"),
                                 ("pool_write", "writer"), ("pool_merge", "writer"), ("pool_share", "writer")]:
            assert (operation, agent, "allowed") in decisions, operation
        refusals = [a for a in _audit(memory) if a["metadata"].get("decision") == "denied"]
        assert len(refusals) == len(denied) and all(not a["success"] and "may not" in a["error_message"]
                                                    for a in refusals)

        # revoking takes read and write away; granting read to a writer takes its write away; the owner deletes
        memory.revoke_pool_access("notes", "reader", by_agent="owner")
        with pytest.raises(PermissionDeniedError):
            memory.read_pool_data("notes", agent_id="reader")
        memory.grant_pool_access("notes", "writer", "read", by_agent="owner")
        with pytest.raises(PermissionDeniedError):
            memory.merge_pool_data("notes", {"d": 4}, agent_id="writer", expected_version=4)
        assert memory.read_pool_data("notes", agent_id="writer")[1] == 4
        with pytest.raises(ValidationError, match="agent_id"):  # the owner's own access never changes
            memory.revoke_pool_access("notes", "owner", by_agent="owner")
        assert memory.delete_pool("notes", by_agent="owner")
        assert ("pool_delete", "owner", "allowed") in _decisions(memory)


def test_public_read_lets_every_agent_of_the_user_read_but_not_write(settings):
    with AgentMemory(settings(), user_id="alice") as memory:
        memory.create_pool("board", agent_id="owner", scope="global", public_read=True, data={"topic": "launch"})
        memory.create_pool("closed", agent_id="owner")
        assert memory.read_pool_data("board", agent_id="anyone") == ({"topic": "launch"}, 1)
        assert [p.pool_id for p in memory.list_pools(agent_id="anyone")] == ["board"]
        with pytest.raises(PermissionDeniedError):
            memory.write_pool_data("board", {}, agent_id="anyone", expected_version=1)


def test_a_stale_write_is_refused_and_the_first_write_is_kept(settings):
    with AgentMemory(settings(), user_id="alice") as memory:
        memory.create_pool("plan", agent_id="a", data={"step": 0})
        memory.grant_pool_access("plan", "b", "write", by_agent="a")
        _, seen_by_a = memory.read_pool_data("plan", agent_id="a")
        _, seen_by_b = memory.read_pool_data("plan", agent_id="b")
        assert seen_by_a == seen_by_b == 1
        assert memory.write_pool_data("plan", {"step": 1, "by": "a"}, agent_id="a", expected_version=seen_by_a) == 2
        for stale in (lambda: memory.write_pool_data("plan", {"step": 1, "by": "b"}, agent_id="b",
                                                     expected_version=seen_by_b),
                      lambda: memory.merge_pool_data("plan", {"by": "b"}, agent_id="b", expected_version=seen_by_b)):
            with pytest.raises(StaleVersionError) as caught:
                stale()
            assert (caught.value.expected, caught.value.current, caught.value.status) == (1, 2, 409)
        assert memory.read_pool_data("plan", agent_id="b") == ({"step": 1, "by": "a"}, 2)
        assert memory.pool_statistics("plan", agent_id="a").writes == 1


def test_concurrent_merges_exactly_one_wins_per_version(settings):
    s = settings()

    async def scenario() -> None:
        async with await AsyncAgentMemory.open(s, user_id="alice") as memory:
            await memory.create_pool("counter", agent_id="owner")
            agents = [f"agent-{i}" for i in range(6)]
            for agent in agents:
                await memory.grant_pool_access("counter", agent, "write", by_agent="owner")
            winners = []
            for round_ in range(3):
                _, version = await memory.read_pool_data("counter", agent_id="owner")
                outcomes = await asyncio.gather(*(
                    memory.merge_pool_data("counter", {agent: round_}, agent_id=agent, expected_version=version)
                    for agent in agents), return_exceptions=True)
                won = [(agent, out) for agent, out in zip(agents, outcomes, strict=True) if isinstance(out, int)]
                assert len(won) == 1 and won[0][1] == version + 1, outcomes
                assert all(isinstance(out, StaleVersionError) for out in outcomes if not isinstance(out, int))
                winners.append(won[0][0])
            data, version = await memory.read_pool_data("counter", agent_id="owner")
            assert version == 4 and data == {agent: round_ for round_, agent in enumerate(winners)}  # the last win
            assert (await memory.pool_statistics("counter", agent_id="owner")).writes == 3

    asyncio.run(scenario())


def test_an_expired_pool_is_absent_everywhere_and_the_cleanup_job_deletes_it(settings):
    s = settings(audit={"level": "writes"})
    with AgentMemory(s, user_id="alice") as memory:
        pool = memory.create_pool("brief", agent_id="owner", pool_type="task_scoped", scope="task", ttl_seconds=1)
        assert pool.expires_at is not None and pool.expires_at - pool.created_at == timedelta(seconds=1)
        memory.create_pool("lasting", agent_id="owner", ttl_seconds=3600)
        time.sleep(1.2)
        for call in (lambda: memory.get_pool("brief", agent_id="owner"),
                     lambda: memory.read_pool_data("brief", agent_id="owner"),
                     lambda: memory.write_pool_data("brief", {}, agent_id="owner", expected_version=1),
                     lambda: memory.pool_statistics("brief", agent_id="owner"),
                     lambda: memory.grant_pool_access("brief", "x", "read", by_agent="owner"),
                     lambda: memory.pool_accessible_by("brief", "owner")):
            with pytest.raises(NotFoundError):
                call()
        assert [p.pool_id for p in memory.list_pools(agent_id="owner")] == ["lasting"]
        assert not memory.delete_pool("brief", by_agent="owner")

        dry = memory.expire_pools(dry_run=True)
        assert dry.pools_deleted == 1 and dry.changes[0]["pool_id"] == "brief"
        assert sql(memory, "SELECT count(*) AS n FROM memory_pools")[0]["n"] == 2

    async def job() -> dict:
        async with await AsyncAgentMemory.open(s) as memory:
            return await cleanup.run(memory)

    summary = asyncio.run(job())
    assert summary["pools"]["pools_deleted"] == 1 and summary["pools"]["run_id"]
    with AgentMemory(s, user_id="alice") as memory:
        assert [r["pool_id"] for r in sql(memory, "SELECT pool_id FROM memory_pools")] == ["lasting"]
        assert ("expire", None, None) in _decisions(memory)
        # a sweep "as of" a later time takes the pool whose time has come then; an expired id is free again
        assert memory.expire_pools(now=datetime.now(UTC) + timedelta(hours=2)).pools_deleted == 1
        assert memory.create_pool("brief", agent_id="other").owner_agent_id == "other"


def test_an_agent_private_pool_refuses_grants_and_public_read(settings):
    with AgentMemory(settings(), user_id="alice") as memory:
        memory.create_pool("scratch", agent_id="solo", pool_type="agent_private", scope="agent", data={"x": 1})
        with pytest.raises(PermissionDeniedError, match="agent_private") as caught:
            memory.grant_pool_access("scratch", "helper", "read", by_agent="solo")
        assert caught.value.agent_id == "solo"
        assert not memory.pool_accessible_by("scratch", "helper")
        with pytest.raises(PermissionDeniedError):
            memory.read_pool_data("scratch", agent_id="helper")
        assert memory.get_pool("scratch", agent_id="solo").readers == ("solo",)
        with pytest.raises(ValidationError, match="public_read"):
            memory.create_pool("open", agent_id="solo", pool_type="agent_private", public_read=True)


def test_one_users_pools_are_invisible_to_another_whatever_the_ids(settings):
    with AgentMemory(settings(), user_id="alice") as memory:
        memory.create_pool("shared", agent_id="assistant", public_read=True, data={"owner": "alice"})
        alice_fact = memory.learn_fact(Fact(user_id="alice", claim="Alice's secret plan"))
        with pytest.raises(NotFoundError):  # same pool id, same agent id, another user
            memory.read_pool_data("shared", agent_id="assistant", user_id="bob")
        assert memory.list_pools(agent_id="assistant", user_id="bob") == []
        assert not memory.delete_pool("shared", by_agent="assistant", user_id="bob")
        # bob may own a pool of the same name; each sees only their own
        memory.create_pool("shared", agent_id="assistant", data={"owner": "bob"}, user_id="bob")
        assert memory.read_pool_data("shared", agent_id="assistant", user_id="bob") == ({"owner": "bob"}, 1)
        assert memory.read_pool_data("shared", agent_id="assistant") == ({"owner": "alice"}, 1)
        # bob's pool cannot take in alice's memory
        with pytest.raises(NotFoundError):
            memory.share_memory("shared", alice_fact.id, agent_id="assistant", expected_version=1, user_id="bob")
        memory.grant_pool_access("shared", "helper", "write", by_agent="assistant", user_id="bob")
        assert not memory.pool_accessible_by("shared", "helper", "write")  # alice's pool did not change
        assert memory.delete_pool("shared", by_agent="assistant", user_id="bob")
        assert memory.read_pool_data("shared", agent_id="assistant") == ({"owner": "alice"}, 1)


def test_share_memory_copies_every_kind_of_the_users_memory(settings):
    with AgentMemory(settings(), user_id="alice") as memory:
        memory.create_pool("kb", agent_id="owner")
        shared = {
            "fact": memory.learn_fact(Fact(user_id="alice", claim="The API pages by cursor")).id,
            "entity": memory.upsert_entity(Entity(user_id="alice", name="Orders API", type="service",
                                                  description="returns 100 items a page")).id,
            "control": memory.add_control(ControlMemory(user_id="alice", content="Never use range() to page")).id,
            "strategy": memory.learn_strategy("Follow the cursor until has_more is false").id,
            "goal": memory.add_goal(Goal(user_id="alice", description="Read every order")).id,
        }
        version = 1
        for kind, memory_id in shared.items():
            version = memory.share_memory("kb", memory_id, agent_id="owner", expected_version=version,
                                          memory_type=kind if kind == "goal" else None)
        data, version = memory.read_pool_data("kb", agent_id="owner")
        assert version == 6
        texts = {entry["type"]: entry["text"] for entry in data.values()}
        assert texts == {"fact": "The API pages by cursor", "entity": "Orders API: returns 100 items a page",
                         "control": "Never use range() to page",
                         "strategy": "Follow the cursor until has_more is false", "goal": "Read every order"}
        entry = data[f"memory:{shared['fact']}"]
        assert (entry["source_id"], entry["channel"], entry["shared_by"]) == (shared["fact"], "_global", "owner")
        with pytest.raises(NotFoundError):
            memory.share_memory("kb", "no-such-memory", agent_id="owner", expected_version=6)
        with pytest.raises(NotFoundError):  # not a goal
            memory.share_memory("kb", shared["fact"], agent_id="owner", expected_version=6, memory_type="goal")
        assert memory.read_pool_data("kb", agent_id="owner")[1] == 6


#: (call, the field its ValidationError names, what its message says), on a memory holding pools "base" and "second"
#: of owner "a", with pools.max_data_bytes = 200 and pools.max_pools_per_user = 2.
BAD_INPUTS = [
    (lambda m: m.create_pool("", agent_id="a"), "pool_id", "non-empty"),
    (lambda m: m.create_pool("x" * 101, agent_id="a"), "pool_id", "limit is 100"),
    (lambda m: m.create_pool("p", agent_id="a\n"), "agent_id", "control characters"),
    (lambda m: m.create_pool("p", agent_id="a", pool_type="public"), "pool_type", "agent_private"),
    (lambda m: m.create_pool("p", agent_id="a", scope="world"), "scope", "global, account"),
    (lambda m: m.create_pool("p", agent_id="a", ttl_seconds=0), "ttl_seconds", "between 1 and"),
    (lambda m: m.create_pool("p", agent_id="a", public_read="yes"), "public_read", "True or False"),
    (lambda m: m.create_pool("p", agent_id="a", data=["x"]), "data", "dict"),
    (lambda m: m.create_pool("p", agent_id="a", data={"x": "y" * 300}), "data", "pools.max_data_bytes"),
    (lambda m: m.create_pool("third", agent_id="a"), "pool_id", "pools.max_pools_per_user"),
    (lambda m: m.grant_pool_access("base", "b", "admin", by_agent="a"), "level", "read, write"),
    (lambda m: m.grant_pool_access("base", "b", "read", by_agent=""), "by_agent", "non-empty"),
    (lambda m: m.pool_accessible_by("base", "b", "owner"), "level", "read, write"),
    (lambda m: m.write_pool_data("base", {"x": "y" * 300}, agent_id="a", expected_version=1), "data",
     "pools.max_data_bytes"),
    (lambda m: m.write_pool_data("base", {1: "one"}, agent_id="a", expected_version=1), "data", "strings"),
    (lambda m: m.write_pool_data("base", {}, agent_id="a", expected_version=0), "expected_version", "between 1"),
    (lambda m: m.merge_pool_data("base", {"x": "y" * 300}, agent_id="a", expected_version=1), "patch",
     "pools.max_data_bytes"),
    (lambda m: m.merge_pool_data("base", {}, agent_id="a", expected_version=1), "patch", "at least one key"),
    (lambda m: m.merge_pool_data("base", "x=1", agent_id="a", expected_version=1), "patch", "dict"),
    (lambda m: m.share_memory("base", "m", agent_id="a", expected_version=1, memory_type="turn"), "memory_type",
     "fact, entity"),
    (lambda m: m.share_memory("base", " m", agent_id="a", expected_version=1), "memory_id", "whitespace"),
    (lambda m: m.list_pools(agent_id="a", limit=0), "limit", "between 1"),
]


def test_pool_inputs_are_checked_before_anything_is_written(settings):
    with AgentMemory(settings(pools={"max_data_bytes": 200, "max_pools_per_user": 2}), user_id="alice") as memory:
        memory.create_pool("base", agent_id="a", data={"x": 1})
        memory.create_pool("second", agent_id="a")
        before = store_counts(memory)
        for call, field, says in BAD_INPUTS:
            with pytest.raises(ValidationError) as caught:
                call(memory)
            assert (caught.value.field, says in str(caught.value)) == (field, True), str(caught.value)
        assert store_counts(memory) == before
        assert memory.read_pool_data("base", agent_id="a") == ({"x": 1}, 1)
