"""The short-term tier (issue 16, seed 002) on both graph backends: TTL expiry at its bound, counted reads (none lost
under concurrency), refresh_ttl, the consolidation job's 2-vs-3 promotion boundary and its drops, dry run, undo that
never overwrites newer work, the promoted fact found by recall, one-user mode, isolation between users, validation
errors that name the field, the tier router, and ``agentx-memory worker run short_term``."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta

import pytest

from agentx_memory import AgentMemory
from agentx_memory.errors import NotFoundError, ValidationError
from agentx_memory.short_term import fact_id_for
from tests.conftest import cli_env
from tests.integration.test_recall_cli import agentx

T0 = datetime.now(UTC).replace(microsecond=0)


def _read(memory: AgentMemory, key: str, times: int, *, session: str = "s1", user: str | None = None,
          now: datetime = T0) -> None:
    for _ in range(times):
        assert memory.read_short_term(session, key, user, now=now) is not None


def _entries(memory: AgentMemory, session: str = "s1", user: str | None = None, now: datetime = T0) -> dict:
    """Key → (value, access count) of the session's live entries, read without counting."""
    return {e.key: (e.value, e.access_count) for e in memory.list_short_term(session, user, now=now)}


def test_an_entry_expires_at_its_ttl_and_every_read_is_counted(settings):
    with AgentMemory(settings(), user_id="alice") as memory:
        written = memory.write_short_term("s1", "plan", {"step": 1}, memory_type="task_context", ttl_seconds=60,
                                          agent_id="planner", now=T0)
        assert (written.access_count, written.expires_at, written.agent_id) == (0, T0 + timedelta(seconds=60),
                                                                                "planner")
        first = memory.read_short_term("s1", "plan", now=T0 + timedelta(seconds=59))
        assert first is not None and first.value == {"step": 1} and first.access_count == 1
        assert first.last_accessed_at == T0 + timedelta(seconds=59)
        assert memory.touch_short_term("s1", "plan", now=T0 + timedelta(seconds=59)) == 2

        # concurrent reads: each one counted, none lost
        async def many() -> list:
            return await asyncio.gather(*(memory.core.read_short_term("s1", "plan", now=T0) for _ in range(20)))
        counts = sorted(e.access_count for e in memory._portal.run(many()))
        assert counts == list(range(3, 23))

        at_bound = T0 + timedelta(seconds=60)
        assert memory.read_short_term("s1", "plan", now=at_bound) is None  # expired reads as absent ...
        assert memory.touch_short_term("s1", "plan", now=at_bound) is None
        assert memory.list_short_term("s1", now=at_bound) == []
        stats = memory.short_term_statistics("s1", now=at_bound)
        assert (stats["entries"], stats["expired"]) == (0, 1)  # ... and waits for the job
        live = memory.short_term_statistics("s1", now=T0)
        assert live["by_type"] == {"task_context": 1} and live["mean_access_count"] == 22.0 and live["bytes"] > 0


def test_refresh_ttl_extends_from_now_and_an_overwrite_keeps_the_count(settings):
    with AgentMemory(settings(short_term={"default_ttl_seconds": 120}), user_id="alice") as memory:
        memory.write_short_term("s1", "topic", "kayaks", memory_type="conversation", ttl_seconds=60, now=T0)
        _read(memory, "topic", 2)
        refreshed = memory.refresh_short_term_ttl("s1", "topic", now=T0 + timedelta(seconds=50))
        assert refreshed is not None and refreshed.expires_at == T0 + timedelta(seconds=110)  # its own TTL, from now
        assert memory.read_short_term("s1", "topic", now=T0 + timedelta(seconds=100)) is not None
        longer = memory.refresh_short_term_ttl("s1", "topic", 600, now=T0 + timedelta(seconds=100))
        assert longer is not None and (longer.ttl_seconds, longer.expires_at) == (600, T0 + timedelta(seconds=700))

        over = memory.write_short_term("s1", "topic", "canoes", memory_type="conversation",
                                       now=T0 + timedelta(seconds=200))
        assert (over.value, over.access_count) == ("canoes", 3)  # the key's reads stay with it
        assert over.expires_at == T0 + timedelta(seconds=320)  # default TTL, from the write
        assert over.created_at == T0

        gone = T0 + timedelta(seconds=320)
        assert memory.refresh_short_term_ttl("s1", "topic", now=gone) is None  # an expired entry is not revived
        fresh = memory.write_short_term("s1", "topic", "rafts", memory_type="conversation", now=gone)
        assert fresh.access_count == 0 and fresh.created_at == gone  # written after expiry: a new entry
        assert memory.delete_short_term("s1", "topic", now=gone) is True
        assert memory.delete_short_term("s1", "topic", now=gone) is False


def test_consolidation_promotes_at_three_reads_drops_expired_rare_ones_and_is_undone(settings):
    with AgentMemory(settings(), user_id="alice") as memory:
        memory.write_short_term("s1", "deploy_day", "The deploy runs on Fridays", memory_type="observation", now=T0)
        memory.write_short_term("s1", "editor", "vim", memory_type="observation", now=T0)
        memory.write_short_term("s1", "stale", {"x": 1}, memory_type="tool_result", ttl_seconds=60,
                                now=T0 - timedelta(hours=2))
        memory.write_short_term("s1", "fresh", "unread", memory_type="reflection", now=T0)
        _read(memory, "deploy_day", 3)
        _read(memory, "editor", 2)
        _read(memory, "stale", 1, now=T0 - timedelta(hours=2))
        before = _entries(memory)

        dry = memory.consolidate_short_term(now=T0, dry_run=True)
        assert (dry.run_id, dry.promoted, dry.dropped) == (None, 1, 1)
        assert {(c["kind"], c["entry"]["key"]) for c in dry.changes} == {("promoted", "deploy_day"),
                                                                         ("dropped", "stale")}
        assert _entries(memory) == before and memory.short_term_statistics(now=T0)["expired"] == 1
        with pytest.raises(NotFoundError):  # a dry run writes no fact
            memory.get_fact(fact_id_for("alice", "s1", "deploy_day"))

        done = memory.consolidate_short_term(now=T0)
        assert (done.promoted, done.dropped) == (1, 1) and done.run_id
        assert set(_entries(memory)) == {"editor", "fresh"}  # read 2 times: not promoted; 3 times: promoted
        assert memory.short_term_statistics(now=T0)["expired"] == 0
        (fact,) = done.facts
        assert fact.claim == "deploy_day: The deploy runs on Fridays" and fact.channel == "_global"
        assert fact.source == "short_term"
        assert fact.metadata["short_term"] | {"run_id": None} == {
            "session_id": "s1", "key": "deploy_day", "memory_type": "observation", "agent_id": None,
            "access_count": 3, "run_id": None}
        recalled = memory.remember("When does the deploy run?", include_episodic=False, include_procedural=False)
        assert fact.id in {f.item.id for f in recalled.facts}
        assert memory.tiers("s1").read("deploy_day") == "The deploy runs on Fridays"  # found where it went

        undone = memory.undo_run(done.run_id)
        assert (undone["restored"], undone["skipped"]) == (2, 0)
        with pytest.raises(NotFoundError):
            memory.get_fact(fact.id)
        assert _entries(memory) == before  # both entries back as they were, counts included
        assert memory.short_term_statistics(now=T0)["expired"] == 1


def test_undo_leaves_a_fact_changed_since_and_an_entry_written_since(settings):
    with AgentMemory(settings(), user_id="alice") as memory:
        for key in ("lang", "tz"):
            memory.write_short_term("s1", key, f"{key} value", memory_type="task_context", now=T0)
            _read(memory, key, 3)
        done = memory.consolidate_short_term(now=T0)
        assert done.promoted == 2
        # newer work after the run: lang's fact rewritten, tz's key written again in the short-term tier
        router = memory.tiers("s1")
        router.write("lang", "Portuguese", tier="long_term")
        memory.write_short_term("s1", "tz", "Europe/Lisbon", memory_type="task_context", now=T0)

        undone = memory.undo_run(done.run_id)
        assert (undone["restored"], undone["skipped"]) == (0, 2)
        assert router.read("lang", tier="long_term") == "Portuguese"  # the rewritten fact stays
        assert _entries(memory) == {"tz": ("Europe/Lisbon", 0)}  # the newer entry stays; lang is not put back
        with pytest.raises(NotFoundError):  # the unchanged fact of tz is taken back
            memory.get_fact(fact_id_for("alice", "s1", "tz"))


def test_a_key_promoted_again_is_undone_to_its_earlier_fact(settings):
    with AgentMemory(settings(), user_id="alice") as memory:
        memory.write_short_term("s1", "city", "Porto", memory_type="observation", now=T0)
        _read(memory, "city", 3)
        first = memory.consolidate_short_term(now=T0)
        memory.write_short_term("s1", "city", "Lisbon", memory_type="observation", now=T0)
        _read(memory, "city", 4)
        second = memory.consolidate_short_term(now=T0)
        fact_id = fact_id_for("alice", "s1", "city")
        assert memory.get_fact(fact_id).claim == "city: Lisbon"
        assert memory.undo_run(second.run_id)["restored"] == 1
        assert memory.get_fact(fact_id).claim == "city: Porto"  # back to what the first run made
        assert _entries(memory) == {"city": ("Lisbon", 4)}
        assert first.facts[0].id == fact_id


def test_one_user_mode_and_isolation_between_users(settings):
    with AgentMemory(settings(), user_id="alice") as memory:
        for user in ("alice", "bob"):
            memory.write_short_term("s1", "pet", f"{user}'s cat", memory_type="observation", user_id=user, now=T0)
            _read(memory, "pet", 3, user=user)
        assert memory.read_short_term("s1", "pet", "bob", now=T0).value == "bob's cat"
        assert memory.read_short_term("s1", "pet", now=T0).value == "alice's cat"
        assert memory.short_term_statistics(user_id="bob", now=T0)["entries"] == 1

        only_alice = memory.consolidate_short_term(now=T0, user_id="alice")
        assert [c["user_id"] for c in only_alice.changes] == ["alice"]
        assert _entries(memory) == {} and set(_entries(memory, user="bob")) == {"pet"}
        assert memory.tiers("s1", "bob").read("pet", tier="long_term") is None  # bob's was not promoted
        assert memory.tiers("s1").read("pet", tier="long_term") == "alice's cat"
        bob_recall = memory.remember("cat", user_id="bob", include_episodic=False, include_procedural=False)
        assert bob_recall.facts == []  # alice's promoted fact is hers alone
        runs = {r["run_id"]: r for r in memory.worker_runs()}
        assert runs[only_alice.run_id]["user_id"] == "alice"


@pytest.mark.parametrize(("call", "field", "hint"), [
    (lambda m: m.write_short_term("s1", "k", 1, memory_type="memo"), "memory_type", "task_context"),
    (lambda m: m.write_short_term("s1", "k", 1, memory_type="observation", ttl_seconds=0), "ttl_seconds", "1"),
    (lambda m: m.write_short_term("s1", "k", 1, memory_type="observation", ttl_seconds=31 * 86400), "ttl_seconds",
     "2592000"),
    (lambda m: m.write_short_term("s1", "k", "x" * 300, memory_type="observation"), "value",
     "limits.max_metadata_bytes"),
    (lambda m: m.write_short_term("s1", "k", {1, 2}, memory_type="observation"), "value", "JSON"),
    (lambda m: m.write_short_term("", "k", 1, memory_type="observation"), "session_id", "non-empty"),
    (lambda m: m.write_short_term("s1", "k\n", 1, memory_type="observation"), "key", "control"),
    (lambda m: m.write_short_term("s1", "k", 1, memory_type="observation", agent_id=" a"), "agent_id", "whitespace"),
    (lambda m: m.write_short_term("s1", "k", 1, memory_type="observation", user_id="x" * 101), "user_id", "100"),
    (lambda m: m.refresh_short_term_ttl("s1", "k", -5), "ttl_seconds", "1"),
    (lambda m: m.tiers("s1").read("k", tier="cold"), "tier", "working"),
    (lambda m: m.tiers("s1").write("k", 1, tier="long_term", memory_type="memo"), "memory_type", "task_context"),
])
def test_bad_input_is_refused_naming_the_field_and_nothing_is_written(settings, call, field, hint):
    with AgentMemory(settings(limits={"max_metadata_bytes": 256}), user_id="alice") as memory:
        with pytest.raises(ValidationError) as refused:
            call(memory)
        assert refused.value.field == field and hint in str(refused.value)
        assert memory.short_term_statistics()["entries"] == 0 and memory.list_short_term("s1") == []


def test_a_full_session_refuses_new_keys_but_takes_overwrites(settings):
    with AgentMemory(settings(short_term={"max_entries_per_session": 2}), user_id="alice") as memory:
        memory.write_short_term("s1", "a", 1, memory_type="observation", now=T0)
        memory.write_short_term("s1", "b", 2, memory_type="observation", ttl_seconds=10, now=T0)
        with pytest.raises(ValidationError) as full:
            memory.write_short_term("s1", "c", 3, memory_type="observation", now=T0)
        assert full.value.field == "session_id" and "short_term.max_entries_per_session" in str(full.value)
        assert memory.write_short_term("s1", "a", 10, memory_type="observation", now=T0).value == 10
        memory.write_short_term("s2", "c", 3, memory_type="observation", now=T0)  # another session has room
        later = T0 + timedelta(seconds=10)  # b expired: it no longer takes a place
        memory.write_short_term("s1", "c", 3, memory_type="observation", now=later)
        assert set(_entries(memory, now=later)) == {"a", "c"}


def test_the_router_reads_through_the_tiers_in_order_and_counts_each(settings):
    with AgentMemory(settings(), user_id="alice") as memory:
        router = memory.tiers("s1", conversation_id="c1", agent_id="planner")
        router.write("goal", "working copy")
        router.write("goal", "short-term copy", tier="short_term", memory_type="task_context")
        router.write("goal", {"text": "long-term copy"}, tier="long_term")
        assert router.read("goal") == "working copy"
        assert router.read("goal", tier="short_term") == "short-term copy"
        assert router.read("goal", tier="long_term") == {"text": "long-term copy"}
        assert memory.working("alice", "c1").get("goal") == "working copy"  # the conversation's working memory
        assert memory.list_short_term("s1")[0].agent_id == "planner"
        memory.working("alice", "c1").delete("goal")
        assert router.read("goal") == "short-term copy"
        memory.delete_short_term("s1", "goal")
        assert router.read("goal") == {"text": "long-term copy"}
        assert router.read("nothing") is None

        stats = router.stats()
        assert set(stats) == {"working_memory", "short_term", "long_term", "shared"}
        assert stats["shared"] == {"pools": 0, "bytes": 0}
        assert stats["working_memory"]["keys"] == 0 and stats["short_term"]["entries"] == 0
        assert stats["long_term"]["facts"] == 1 and stats["long_term"]["turns"] == 0
        router.write("note", "n", tier="working")
        router.write("note", "n", tier="short_term", memory_type="reflection")
        stats = router.stats()
        assert stats["working_memory"]["keys"] == 1 and stats["working_memory"]["bytes"] > 0
        assert stats["short_term"]["by_type"] == {"reflection": 1}
        assert memory.tiers("s1", "bob").stats()["long_term"] == {"facts": 0, "entities": 0, "turns": 0}
        memory.create_pool("board", agent_id="planner", data={"step": 1})
        memory.create_pool("other", agent_id="coder", data={"x": 2})
        assert router.stats()["shared"]["pools"] == 1  # the planner's router counts what the planner may read
        assert memory.tiers("s1").stats()["shared"] == {"pools": 2, "bytes": len('{"step": 1}') + len('{"x": 2}')}


def test_the_job_runs_from_the_command_line_with_dry_run_one_user_and_undo(settings):
    s = settings()
    with AgentMemory(s, user_id="alice") as memory:
        memory.write_short_term("s1", "deadline", "Friday", memory_type="task_context")
        _read(memory, "deadline", 3, now=datetime.now(UTC))
        memory.write_short_term("s1", "deadline", "Monday", memory_type="task_context", user_id="bob")
        _read(memory, "deadline", 3, user="bob", now=datetime.now(UTC))
    env = cli_env(s)
    dry = agentx("worker", "run", "short_term", "--dry-run", "--user", "alice", env=env)
    assert dry.returncode == 0, dry.stderr
    assert json.loads(dry.stdout) == {"promoted": 1, "dropped": 0, "dry_run": True}
    done = agentx("worker", "run", "short_term", "--user", "alice", env=env)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert (summary["promoted"], summary["dry_run"]) == (1, False)
    with AgentMemory(s, user_id="alice") as memory:
        assert memory.list_short_term("s1") == [] and len(memory.list_short_term("s1", "bob")) == 1
        assert memory.tiers("s1").read("deadline") == "Friday"
    undone = agentx("worker", "undo", summary["run_id"], env=env)
    assert undone.returncode == 0, undone.stderr
    assert json.loads(undone.stdout)["restored"] == 1
    with AgentMemory(s, user_id="alice") as memory:
        assert [e.value for e in memory.list_short_term("s1")] == ["Friday"]
        assert memory.tiers("s1").read("deadline", tier="long_term") is None
        with pytest.raises(NotFoundError):
            memory.get_fact(fact_id_for("alice", "s1", "deadline"))
