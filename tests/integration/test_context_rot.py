"""Context-rot archival (issue 19, seed 002) on both graph backends: staleness by its formula, the threshold, dry runs,
one-user runs, recall leaving archived memories out, listing and restoring them, and the indexed candidate read."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest

from agentx_memory import AgentMemory, Entity, Fact
from agentx_memory.context_rot import min_idle_days, staleness
from agentx_memory.graph import cypher
from agentx_memory.settings import ContextRotSettings
from agentx_memory.sql.timeline import REINFORCE, ROT_CANDIDATES, Timeline
from tests.conftest import gread


def test_staleness_follows_its_formula():
    s = ContextRotSettings()
    assert staleness(0, 0, 0.5, s) == 0
    assert staleness(30, 0, 0.5, s) == pytest.approx(0.5)  # one half-life
    assert staleness(120, 0, 0.5, s) == pytest.approx(1 - 2 ** -4)
    assert staleness(120, 10, 0.5, s) == pytest.approx(1 - 2 ** (-120 / (30 * (1 + math.log(11)))))  # used: slower
    assert staleness(120, 0, 1.0, s) == pytest.approx(1 - 2 ** (-120 / 45))  # salient: slower
    assert staleness(min_idle_days(s), 0, 0.0, s) == pytest.approx(0.9)  # nothing is stale sooner
    assert staleness(min_idle_days(s) * 0.99, 0, 0.0, s) < 0.9


def _seed(memory: AgentMemory):
    old = memory.learn_fact(Fact(user_id="alice", claim="The Zanzibar office uses the blue printer", confidence=0.5))
    used = memory.learn_fact(Fact(user_id="alice", claim="The deploy window is Tuesday morning", confidence=0.5))
    for _ in range(10):
        memory._portal.run(memory.core.semantic.reinforce("alice", fact_ids=[used.id]))
    faded = memory.upsert_entity(Entity(user_id="alice", name="Quokka Project", type="project", salience=0.5))
    salient = memory.upsert_entity(Entity(user_id="alice", name="Wombat Team", type="team", salience=1.0))
    bobs = memory.learn_fact(Fact(user_id="bob", claim="Bob's locker code changed", confidence=0.5))
    return old, used, faded, salient, bobs


def test_stale_memories_leave_recall_stay_listed_and_come_back(settings):
    with AgentMemory(settings(), user_id="alice") as memory:
        old, used, faded, salient, bobs = _seed(memory)
        later = datetime.now(UTC) + timedelta(days=120)

        preview = memory.archive_stale(now=later, dry_run=True, user_id="alice")
        assert preview.run_id is None and (preview.facts_archived, preview.entities_archived) == (1, 1)
        by_id = {c["id"]: c for c in preview.changes}
        assert set(by_id) == {old.id, faded.id}
        assert by_id[old.id]["staleness"] == pytest.approx(1 - 2 ** -4, abs=1e-4)
        assert memory.get_fact(old.id).status != "archived"

        report = memory.archive_stale(now=later, user_id="alice")
        assert (report.facts_archived, report.entities_archived) == (1, 1) and report.run_id
        assert memory.get_fact(old.id).status == "archived"
        assert memory.get_fact(bobs.id, user_id="bob").status != "archived"  # a one-user run
        assert memory.get_entity(faded.id).name == "Quokka Project"  # still readable by id

        bundle = memory.remember("Which printer does the Zanzibar office use?")
        assert old.id not in [f.item.id for f in bundle.facts]
        assert faded.id not in [e.item.id for e in memory.remember("What is the Quokka Project?").entities]
        listed = {e["node_id"]: e for e in memory.timeline(memory_types=["fact", "entity"], include_archived=True)}
        assert listed[old.id]["archived"] and listed[faded.id]["archived"] and not listed[used.id]["archived"]
        assert {e["node_id"] for e in memory.timeline(memory_types=["fact", "entity"])} == {used.id, salient.id}

        again = memory.archive_stale(now=later, user_id="alice")  # archived already: nothing more
        assert (again.facts_archived, again.entities_archived) == (0, 0)

        assert memory.undo_run(report.run_id)["restored"] == 2
        assert memory.get_fact(old.id).status == "active"
        assert old.id in [f.item.id for f in memory.remember("Which printer does the Zanzibar office use?").facts]
        assert faded.id in [e.item.id for e in memory.remember("What is the Quokka Project?").entities]
        assert all(not e["archived"] for e in memory.timeline(memory_types=["fact", "entity"], include_archived=True))


def test_a_memory_used_after_the_read_is_not_archived_and_unarchive_restores_chosen_ids(settings):
    with AgentMemory(settings(), user_id="alice") as memory:
        old, _, faded, _, bobs = _seed(memory)
        later = datetime.now(UTC) + timedelta(days=400)
        report = memory.archive_stale(now=later)  # every user
        assert {c["id"] for c in report.changes} >= {old.id, faded.id, bobs.id}
        assert memory.unarchive([old.id, faded.id, "no-such-id"]) == {"restored": 2, "skipped": 1}
        assert memory.unarchive([bobs.id]) == {"restored": 0, "skipped": 1}  # bob's, not alice's
        assert memory.get_fact(bobs.id, user_id="bob").status == "archived"
        # the archiving write checks the use time again: a fact used since it was read stays
        memory._portal.run(memory.core.semantic.reinforce("alice", fact_ids=[old.id]))
        state = gread(memory, "MATCH (f:Fact {id: $id}) RETURN f.last_accessed AS since", {"id": old.id})[0]
        assert state["since"] is not None
        archived = memory._portal.run(memory.core.ctx.graph.write(cypher.ARCHIVE_FACTS, {
            "rows": [{"id": old.id, "user_id": "alice", "since": state["since"] - 1}], "now": 0}))
        assert archived == [] and memory.get_fact(old.id).status == "active"


def test_the_worker_job_runs_dry_and_for_one_user(settings):
    from workers.jobs import JobOptions
    from workers.scheduler import JOBS, run_job

    assert JOBS["context_rot"][1] == "context_rot_minutes"
    with AgentMemory(settings(), user_id="alice") as memory:
        memory.learn_fact(Fact(user_id="alice", claim="A fresh fact", confidence=0.5))
        summary = memory._portal.run(run_job("context_rot", memory.core, JobOptions(dry_run=True, user_id="alice")))
        assert summary == {"examined": 0, "facts_archived": 0, "entities_archived": 0, "dry_run": True}
        summary = memory._portal.run(run_job("context_rot", memory.core))
        assert summary["facts_archived"] == 0 and summary["run_id"]


def test_the_candidate_read_uses_the_partial_index(settings):
    with AgentMemory(settings(), user_id="alice") as memory:
        params = {"idle_before": datetime.now(UTC), "user_id": None, "after_time": datetime(1, 1, 2, tzinfo=UTC),
                  "after_id": 0, "limit": 500}

        async def plan() -> str:
            async with memory.core.ctx.postgres.connection() as conn:
                await conn.execute("SET enable_seqscan = off")  # a tiny table: make the planner show what it can use
                rows = await (await conn.execute("EXPLAIN " + ROT_CANDIDATES, params)).fetchall()
                await conn.execute("RESET enable_seqscan")
            return "\n".join(str(next(iter(r.values())) if isinstance(r, dict) else r[0]) for r in rows)

        assert "idx_timeline_rot_candidates" in memory._portal.run(plan())


def test_a_recalls_access_count_is_a_heap_only_update(settings):
    """Recall counts an access on every fact and entity it returns. The update must not change an indexed value, or
    each row is written anew into every index of the timeline, its HNSW graph among them (~0.5 ms a row at 100k)."""
    with AgentMemory(settings(), user_id="alice") as memory:
        facts = [memory.learn_fact(Fact(user_id="alice", claim=f"Office {n} has a {n}-seat room", confidence=0.5))
                 for n in range(3)]

        async def counted() -> dict:
            # the xact counters also hold this backend's counts not yet flushed: the difference is the statement's
            counts = ("SELECT pg_stat_get_xact_tuples_updated('memory_timeline'::regclass) AS updated,"
                      " pg_stat_get_xact_tuples_hot_updated('memory_timeline'::regclass) AS hot")
            async with memory.core.ctx.postgres.connection() as conn, conn.transaction(force_rollback=True):
                before = (await (await conn.execute(counts)).fetchall())[0]
                await conn.execute(REINFORCE, {"user_id": "alice", "types": ["fact"],
                                               "ids": [f.id for f in facts], "now": datetime.now(UTC)})
                after = (await (await conn.execute(counts)).fetchall())[0]
                return {key: after[key] - before[key] for key in after}

        assert memory._portal.run(counted()) == {"updated": 3, "hot": 3}


def test_an_old_memory_used_lately_is_not_a_candidate_and_candidates_page_oldest_first(settings):
    with AgentMemory(settings(), user_id="alice") as memory:
        now = datetime.now(UTC)
        old = [memory.learn_fact(Fact(user_id="alice", claim=f"Archive shelf {n} holds tax files", confidence=0.5,
                                      created_at=now - timedelta(days=300 - n))) for n in range(5)]
        used = memory.learn_fact(Fact(user_id="alice", claim="The badge reader is by the lift", confidence=0.5,
                                      created_at=now - timedelta(days=400)))
        timeline = Timeline(memory.core.ctx.postgres)
        memory._portal.run(timeline.reinforce("alice", fact_ids=[used.id], now=now))
        seen, after = [], (datetime(1, 1, 2, tzinfo=UTC), 0)
        while rows := memory._portal.run(timeline.rot_candidates(
                idle_before=now - timedelta(days=100), user_id="alice", after=after, limit=2)):
            seen += [r["node_id"] for r in rows]
            after = (rows[-1]["event_time"], rows[-1]["id"])
        assert seen == [f.id for f in old]  # every idle one once, oldest first, pages of 2; not the one used today
