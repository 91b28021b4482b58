"""The consolidate job (issue 14's first job, built on issue 13's extraction), on both graph backends: only quiet
conversations, again when they go on (already extracted batches skipped), a conversation locked by another worker
left alone, two racing workers never consolidating one conversation twice, the lag reported and audited."""

from __future__ import annotations

import asyncio
import json
import time
from datetime import UTC, datetime, timedelta

import pytest

from agentx_memory import AgentMemory, AsyncAgentMemory, Fact, Turn
from agentx_memory.bench.wire import Reply, WireServer, openai_completion
from agentx_memory.errors import ConflictError
from tests.conftest import cli_env, gread
from tests.faults import die_after_write
from workers.scheduler import run_once

NOW = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)


def _say(memory: AgentMemory, conversation: str, when: datetime, *lines: str) -> None:
    memory.store_turns([Turn(conversation_id=conversation, user_id="alice", role="user", content=line,
                             timestamp=when + timedelta(seconds=i), metadata={"speaker": "Sam"})
                        for i, line in enumerate(lines)])


def _offline(settings, **worker):
    return settings(extraction={"extractor": "offline"}, audit={"level": "writes"}, worker=worker)


def test_only_quiet_conversations_are_consolidated_and_again_when_they_go_on(settings):
    with AgentMemory(_offline(settings, consolidate_quiet_minutes=30), user_id="alice") as memory:
        _say(memory, "quiet", NOW - timedelta(hours=2), "I live in Porto.", "I work at Lumen Labs.")
        _say(memory, "active", NOW - timedelta(minutes=5), "I love hiking in Sintra.")
        report = memory.consolidate(now=NOW)
        assert [c["conversation_id"] for c in report.conversations] == ["quiet"]
        assert report.conversations[0]["lag_seconds"] == 2 * 3600 - 1  # from its last turn (2 h - 1 s ago)
        assert report.summary()["facts"] == 2
        state = gread(memory, "MATCH (c:Conversation {id: 'quiet'}) RETURN c.consolidated AS done, "
                              "c.consolidated_upto AS upto")[0]
        assert state["done"] is True
        assert memory.consolidate(now=NOW).conversations == []  # nothing new: nothing to do
        # later: the active one has gone quiet, and the quiet one went on
        _say(memory, "quiet", NOW + timedelta(minutes=1), "I moved to Lisbon last week.")
        later = memory.consolidate(now=NOW + timedelta(hours=1))
        assert sorted(c["conversation_id"] for c in later.conversations) == ["active", "quiet"]
        claims = {memory.get_fact(i).claim: memory.get_fact(i)
                  for i in (r["id"] for r in gread(memory, "MATCH (f:Fact) RETURN f.id AS id"))}
        assert claims["Sam lives in Porto."].status == "superseded" and "Sam loves hiking in Sintra." in claims
        audit = memory._portal.run(memory.core.ctx.postgres.fetch(
            "SELECT conversation_id, metadata FROM memory_audit_log WHERE operation = 'consolidate' ORDER BY id"))
        assert audit[0]["conversation_id"] == "quiet" and len(audit) == 3
        assert audit[0]["metadata"]["lag_seconds"] == 2 * 3600 - 1


def test_a_conversation_locked_by_another_worker_is_left_for_a_later_run(settings):
    with AgentMemory(_offline(settings), user_id="alice") as memory:
        _say(memory, "c1", NOW - timedelta(hours=2), "I live in Porto.")
        store = memory.core.ctx.working
        token = memory._portal.run(store.acquire_lock("c1", 60))
        report = memory.consolidate(now=NOW)
        assert report.locked == ["c1"] and report.conversations == []
        memory._portal.run(store.release_lock("c1", token))
        assert [c["conversation_id"] for c in memory.consolidate(now=NOW).conversations] == ["c1"]


def test_two_racing_workers_never_consolidate_a_conversation_twice(settings):
    s = _offline(settings)
    with AgentMemory(s, user_id="alice") as memory:
        for i in range(6):
            _say(memory, f"c{i}", NOW - timedelta(hours=2), f"I live in City{i}.", "I work at Lumen Labs.")

    async def race() -> list:
        workers = [await AsyncAgentMemory.open(s) for _ in range(2)]
        try:
            return await asyncio.gather(*(w.consolidate(now=NOW) for w in workers))
        finally:
            for w in workers:
                await w.close()

    reports = asyncio.run(race())
    done = [c["conversation_id"] for r in reports for c in r.conversations]
    assert sorted(done) == [f"c{i}" for i in range(6)]  # each exactly once, between the two
    with AgentMemory(s, user_id="alice") as memory:
        audit = memory._portal.run(memory.core.ctx.postgres.fetch(
            "SELECT count(*) AS n FROM memory_audit_log WHERE operation = 'consolidate'"))[0]["n"]
        assert audit == 6


def test_the_worker_runs_consolidation_once(settings):
    s = _offline(settings, consolidate_quiet_minutes=0)
    with AgentMemory(s, user_id="alice") as memory:
        _say(memory, "c1", datetime.now(UTC) - timedelta(minutes=1), "I work at Lumen Labs.")
    summary = asyncio.run(run_once(s))
    assert summary["consolidate"]["consolidated"] == 1 and summary["consolidate"]["facts"] == 1


def test_a_conversation_resumed_after_it_was_archived_is_consolidated_again(settings):
    with AgentMemory(_offline(settings), user_id="alice") as memory:
        _say(memory, "trip", NOW - timedelta(days=120), "I live in Porto.")
        assert [c["conversation_id"] for c in memory.consolidate(now=NOW - timedelta(days=119)).conversations] == [
            "trip"]
        assert memory.archive_conversations(now=NOW).conversations_archived == 1
        _say(memory, "trip", NOW - timedelta(hours=2), "I work at Lumen Labs.")  # the conversation goes on
        report = memory.consolidate(now=NOW)
        assert [c["conversation_id"] for c in report.conversations] == ["trip"]
        claims = {r["claim"] for r in gread(memory, "MATCH (f:Fact) RETURN f.claim AS claim")}
        assert "Sam works at Lumen Labs." in claims
        assert gread(memory, "MATCH (c:Conversation {id: 'trip'})-[:HAS_TURN]->(t:Turn) WITH c, t ORDER BY t.index "
                             "RETURN c.archived AS conversation, t.archived AS turn") == [
            {"conversation": False, "turn": True}, {"conversation": False, "turn": False}]
        # once the new turn is past retention too, the conversation is archived again, whole
        assert memory.archive_conversations(now=NOW + timedelta(days=91)).conversations_archived == 1
        assert gread(memory, "MATCH (c:Conversation {id: 'trip'}) RETURN c.archived AS archived") == [
            {"archived": True}]


def test_a_conversation_that_keeps_failing_does_not_hold_the_others_back(settings):
    """One run takes one conversation; the oldest one's extraction is refused every time. Before, it was first in
    every run and the newer conversation was never consolidated; now a failure puts it behind the others, it is
    still retried while it stays due, and a success clears its count."""
    refuse = {"on": True}

    def answer(body):
        if refuse["on"] and "Lena" in body["messages"][1]["content"]:
            return Reply(openai_completion(None, refusal="I can't help with that"))
        return Reply(openai_completion(json.dumps({"entities": [], "relationships": [], "facts": []})))

    with WireServer().running() as wire:
        wire.answer = answer
        s = settings(llm={"extraction_model": "openai:gpt-4o-mini", "openai_base_url": wire.url + "/v1",
                          "openai_api_key": "sk-test"},
                     extraction={"extractor": "auto"}, worker={"consolidate_max_conversations": 1})
        with AgentMemory(s, user_id="alice") as memory:
            _say(memory, "refused", NOW - timedelta(hours=3), "My sister Lena visits in October.")
            _say(memory, "fine", NOW - timedelta(hours=2), "I work at Lumen Labs.")
            first = memory.consolidate(now=NOW)
            assert [c["conversation_id"] for c in first.stopped] == ["refused"]
            assert "LLMRefusalError" in first.stopped[0]["why"] and first.stopped[0]["failures"] == 1
            assert [c["conversation_id"] for c in memory.consolidate(now=NOW).conversations] == ["fine"]
            again = memory.consolidate(now=NOW)  # the only one due: retried, refused again
            assert [c["conversation_id"] for c in again.stopped] == ["refused"] and again.stopped[0]["failures"] == 2
            refuse["on"] = False
            assert [c["conversation_id"] for c in memory.consolidate(now=NOW).conversations] == ["refused"]
            state = gread(memory, "MATCH (c:Conversation {id: 'refused'}) RETURN c.consolidated AS done, "
                                  "c.consolidation_failures AS failures")[0]
            assert state == {"done": True, "failures": 0}
            assert memory.consolidate(now=NOW).due == []


# --- promote_prominent_facts -----------------------------------------------------------------------------------------

def _proven_fact(memory: AgentMemory, claim: str, *, confidence: float, accesses: int, conversations: int) -> str:
    """A fact in channel "proj" with this confidence, accessed ``accesses`` times, from ``conversations`` turns of
    distinct conversations."""
    turns = [memory.store_turn(Turn(conversation_id=f"{claim}-{i}", user_id="alice", content=f"{claim} ({i})",
                                    channel="proj", timestamp=NOW - timedelta(days=3)))
             for i in range(conversations)]
    fact = Fact(id=f"fact-{abs(hash(claim))}", user_id="alice", channel="proj", claim=claim, confidence=confidence,
                source_turn_id=turns[0].id)
    for turn in turns:  # the same fact learned again from each conversation: one DERIVED_FROM per turn
        memory.learn_fact(fact.model_copy(update={"source_turn_id": turn.id}))
    for _ in range(accesses):
        memory._portal.run(memory.core.semantic.reinforce("alice", fact_ids=[fact.id]))
    return fact.id


def test_promotion_thresholds_are_exact_at_their_boundaries(settings):
    with AgentMemory(settings(audit={"level": "writes"}), user_id="alice") as memory:
        at = _proven_fact(memory, "at every bound", confidence=0.85, accesses=5, conversations=2)
        above = _proven_fact(memory, "above every bound", confidence=0.99, accesses=9, conversations=3)
        low_confidence = _proven_fact(memory, "confidence just below", confidence=0.8499, accesses=5, conversations=2)
        few_accesses = _proven_fact(memory, "one access short", confidence=0.9, accesses=4, conversations=2)
        one_conversation = _proven_fact(memory, "one conversation", confidence=0.9, accesses=5, conversations=1)
        assert memory.promote_prominent_facts(dry_run=True).candidates == 2  # a dry run copies nothing
        assert not gread(memory, "MATCH (g:Fact)-[:PROMOTED_FROM]->(f:Fact) RETURN g.id AS id")
        promoted = memory.promote_prominent_facts().promoted
        sources = {r["source"] for r in gread(memory, "MATCH (g:Fact)-[:PROMOTED_FROM]->(f:Fact) "
                                                      "RETURN f.id AS source")}
        assert sources == {at, above}
        assert {f.channel for f in promoted} == {"_global"} and len(promoted) == 2
        assert not {low_confidence, few_accesses, one_conversation} & sources
        assert memory.promote_prominent_facts().promoted == []  # promoted once: never again
        audit = memory._portal.run(memory.core.ctx.postgres.fetch(
            "SELECT promotion_confidence, promotion_access_count, promotion_conversation_count, metadata "
            "FROM memory_audit_log WHERE operation = 'promote' ORDER BY promotion_confidence"))
        assert [(a["promotion_confidence"], a["promotion_access_count"], a["promotion_conversation_count"])
                for a in audit] == [(0.85, 5, 2), (0.99, 9, 3)]
        assert audit[0]["metadata"]["thresholds"]["min_confidence"] == 0.85


def test_a_promotion_run_is_undone_and_the_facts_can_be_promoted_again(settings):
    with AgentMemory(settings(), user_id="alice") as memory:
        source = _proven_fact(memory, "proven", confidence=0.9, accesses=5, conversations=2)
        other = memory.learn_fact(Fact(user_id="alice", channel="_global", claim="Sam likes tea"))
        before = _graph_state(memory)
        run = memory.promote_prominent_facts()
        (copy,) = run.promoted
        assert copy.id in {r["id"] for r in gread(memory, "MATCH (f:Fact) RETURN f.id AS id")}
        assert memory.undo_run(run.run_id) == {"run_id": run.run_id, "job": "promote", "restored": 1, "skipped": 0}
        assert _graph_state(memory) == before  # the copy and its edges are gone; the source and the rest untouched
        timeline = memory._portal.run(memory.core.ctx.postgres.fetch(
            "SELECT neo4j_node_id FROM memory_timeline WHERE memory_type = 'fact'"))
        assert copy.id not in {r["neo4j_node_id"] for r in timeline} and other.id in {
            r["neo4j_node_id"] for r in timeline}
        with pytest.raises(ConflictError):  # a run is undone once
            memory.undo_run(run.run_id)
        assert [f.id for f in memory.promote_prominent_facts().promoted] == [copy.id]  # promotable again
        assert memory.get_fact(source).channel == "proj"


def _graph_state(memory: AgentMemory) -> list:
    nodes = gread(memory, "MATCH (n) RETURN n.id AS id, labels(n)[0] AS label, n.channel AS channel ORDER BY id")
    edges = gread(memory, "MATCH (a)-[r]->(b) RETURN a.id AS a, type(r) AS t, b.id AS b ORDER BY a, t, b")
    return [nodes, edges]


def test_a_worker_that_dies_right_after_promoting_leaves_the_copy_undoable(settings):
    """The promotion run records the copy (its id is known beforehand) before writing it: a worker process that dies
    right after the write leaves a record that undo closes as interrupted and uses to delete the copy. Before, the
    change was recorded after the write, and the copy outlived every record of it."""
    import subprocess
    import sys

    s = settings(worker={"stale_run_minutes": 0.01})
    with AgentMemory(s, user_id="alice") as memory:
        _proven_fact(memory, "proven", confidence=0.9, accesses=5, conversations=2)
        before = _graph_state(memory)
        program = die_after_write("PROMOTED_FROM", "memory.promote_prominent_facts()")  # dies after the copy's write
        died = subprocess.run([sys.executable, "-c", program], env=cli_env(s), capture_output=True, text=True,
                              timeout=120)
        assert died.returncode == 9, died.stderr[-3000:]
        assert gread(memory, "MATCH (g:Fact)-[:PROMOTED_FROM]->(f:Fact) RETURN g.id AS id")  # the copy was written
        [record] = memory.worker_runs()
        time.sleep(1.0)  # past stale_run_minutes without a checkpoint
        assert memory.undo_run(record["run_id"])["restored"] == 1
        assert _graph_state(memory) == before
