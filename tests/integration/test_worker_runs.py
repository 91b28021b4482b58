"""Recorded worker runs (issue 14) on both graph backends: archiving past retention at its bounds, dry runs that
change nothing, undo that restores every store (and never overwrites newer work), ``worker run / undo / status`` on
the command line, and a worker that lets the job in flight finish when it is stopped."""

from __future__ import annotations

import asyncio
import json
import math
import time
from datetime import UTC, datetime, timedelta

import pytest

from agentx_memory import AgentMemory, AsyncAgentMemory, Entity, Fact, Turn
from agentx_memory.errors import ConflictError, NotFoundError, ValidationError
from tests.conftest import cli_env, gread, run
from tests.faults import die_after_write
from tests.integration.test_recall_cli import agentx
from workers import scheduler

NOW = datetime(2026, 6, 1, 12, tzinfo=UTC)


def _conversation(memory: AgentMemory, conversation: str, last: datetime, *lines: str, user: str = "alice") -> None:
    """A conversation whose last turn is at ``last`` (the turns before it a minute apart)."""
    memory.store_turns([Turn(conversation_id=conversation, user_id=user, content=line,
                             timestamp=last - timedelta(minutes=len(lines) - 1 - i)) for i, line in enumerate(lines)])


def _found(memory: AgentMemory, query: str, reference_time: datetime | None = None,
           time_window_hours: float | None = None, **recall) -> set[str]:
    bundle = memory.remember(query, top_k=20, include_semantic=False, include_procedural=False, recall=recall or None,
                             reference_time=reference_time, time_window_hours=time_window_hours)
    return {t.item.conversation_id for t in bundle.turns}


def _store_state(memory: AgentMemory) -> dict:
    """What archiving touches, in every store: the log's flags, the graph's flags, recall."""
    log = memory._portal.run(memory.core.ctx.postgres.fetch(
        "SELECT turn_id, archived FROM conversation_logs ORDER BY turn_id"))
    graph = gread(memory, "MATCH (t:Turn) RETURN t.id AS id, t.archived AS archived ORDER BY id")
    conversations = gread(memory, "MATCH (c:Conversation) RETURN c.id AS id, c.archived AS archived ORDER BY id")
    return {"log": [(r["turn_id"], r["archived"]) for r in log], "graph": [(r["id"], r["archived"]) for r in graph],
            "conversations": [(r["id"], r["archived"]) for r in conversations]}


def test_conversations_past_retention_are_archived_at_the_bound_and_the_run_is_undone(settings):
    with AgentMemory(settings(audit={"level": "writes"}), user_id="alice") as memory:
        bound = NOW - timedelta(days=90)
        _conversation(memory, "old", bound - timedelta(milliseconds=1), "We planned the kayak trip to Sintra.")
        _conversation(memory, "at-bound", bound, "The kayak rental in Cascais was cheap.")
        _conversation(memory, "recent", NOW - timedelta(days=1), "Kayak lessons start in June.")
        _conversation(memory, "bob-old", bound - timedelta(days=9), "Bob's kayak is red.", user="bob")
        before = _store_state(memory)
        assert _found(memory, "kayak") == {"old", "at-bound", "recent"}

        dry = memory.archive_conversations(now=NOW, dry_run=True)
        assert (dry.conversations_archived, dry.run_id) == (2, None)
        assert _store_state(memory) == before  # a dry run changes nothing

        alice_only = memory.archive_conversations(now=NOW, user_id="alice")
        assert [c["conversation_id"] for c in alice_only.changes] == ["old"]  # strictly older than 90 days
        assert _found(memory, "kayak") == {"at-bound", "recent"}  # archived turns leave default recall ...
        assert _found(memory, "kayak", include_archived=True) == {"old", "at-bound", "recent"}  # ... on request back
        assert [t.content for t in memory.get_conversation("old")] == ["We planned the kayak trip to Sintra."]
        # a question about that time still finds it: "as of" then, archived or not
        old_day = bound - timedelta(days=1)
        assert "old" in _found(memory, "kayak", reference_time=old_day + timedelta(days=1), time_window_hours=48)
        assert gread(memory, "MATCH (c:Conversation {id: 'old'})-[:HAS_TURN]->(t:Turn) "
                             "RETURN c.archived AS c, t.archived AS t") == [{"c": True, "t": True}]
        with AgentMemory(memory.core.settings, user_id="bob") as bob:
            assert _found(bob, "kayak") == {"bob-old"}  # limited to alice: bob's old conversation stays
        audit = memory._portal.run(memory.core.ctx.postgres.fetch(
            "SELECT conversation_id, metadata FROM memory_audit_log WHERE operation = 'archive'"))
        assert [(a["conversation_id"], a["metadata"]["turns"]) for a in audit] == [("old", 1)]

        assert memory.undo_run(alice_only.run_id)["restored"] == 1
        assert _store_state(memory) == before  # every store as before the run
        assert _found(memory, "kayak") == {"old", "at-bound", "recent"}


def test_a_decay_run_is_undone_except_what_changed_since(settings):
    made = datetime(2026, 1, 5, 12, tzinfo=UTC)
    with AgentMemory(settings(), user_id="alice") as memory:
        porto = memory.upsert_entity(Entity(user_id="alice", name="Porto", type="place", salience=0.8))
        lisbon = memory.upsert_entity(Entity(user_id="alice", name="Lisbon", type="place", salience=0.6))
        guess = memory.learn_fact(Fact(user_id="alice", claim="Sam probably likes hiking", confidence=0.7,
                                       certainty="inferred", created_at=made))
        later = datetime.now(UTC) + timedelta(days=10)

        dry = memory.apply_decay(now=later, dry_run=True)
        assert dry.run_id is None and dry.entities_changed == 2 and dry.facts_changed == 1
        assert memory.get_entity(porto.id).salience == 0.8  # nothing written

        run_ = memory.apply_decay(now=later)
        assert memory.get_entity(porto.id).salience < 0.8
        assert {c["id"]: c["before"] for c in run_.changes} == {porto.id: 0.8, lisbon.id: 0.6, guess.id: 0.7}
        # Lisbon is used again after the run (a newer value): the undo must leave it
        memory._portal.run(memory.core.ctx.graph.write("MATCH (e:Entity {id: $id}) SET e.salience = 0.99",
                                                       {"id": lisbon.id}))
        undone = memory.undo_run(run_.run_id)
        assert (undone["restored"], undone["skipped"]) == (2, 1)
        assert memory.get_entity(porto.id).salience == 0.8
        assert memory.get_fact(guess.id).confidence == 0.7
        assert memory.get_entity(lisbon.id).salience == 0.99
        runs = {r["run_id"]: r for r in memory.worker_runs()}
        assert runs[run_.run_id]["status"] == "undone" and runs[run_.run_id]["undo_summary"]["skipped"] == 1
        assert runs[run_.run_id]["summary"]["entities_changed"] == 2


def test_undo_refuses_unknown_runs_jobs_without_undo_and_a_second_undo(settings):
    with AgentMemory(settings(), user_id="alice") as memory:
        with pytest.raises(NotFoundError):
            memory.undo_run("no-such-run")
        cleanup = memory.cleanup(now=NOW)
        with pytest.raises(ValidationError) as refused:
            memory.undo_run(cleanup.run_id)
        assert refused.value.field == "run_id" and "cleanup" in str(refused.value)
        decay = memory.apply_decay(now=NOW)
        memory.undo_run(decay.run_id)
        with pytest.raises(ConflictError):
            memory.undo_run(decay.run_id)
        with pytest.raises(ValidationError):
            memory.apply_decay(now=NOW, user_id="")


def test_a_deleted_entity_leaves_no_timeline_row(settings):
    """Defect: cleanup deleted the entity from the graph and left its memory_timeline row behind, so the lexical
    timeline search kept returning the id of an entity that no longer exists."""
    with AgentMemory(settings(), user_id="alice") as memory:
        faded = memory.upsert_entity(Entity(user_id="alice", name="Old Cafe", type="place", salience=0.05))
        kept = memory.upsert_entity(Entity(user_id="alice", name="Home", type="place", salience=0.9))
        report = memory.cleanup(now=datetime.now(UTC) + timedelta(days=31))
        assert [c["entity"]["id"] for c in report.changes] == [faded.id]
        rows = memory._portal.run(memory.core.ctx.postgres.fetch(
            "SELECT neo4j_node_id FROM memory_timeline WHERE memory_type = 'entity'"))
        assert {r["neo4j_node_id"] for r in rows} == {kept.id}


def test_worker_run_dry_run_undo_and_status_on_the_command_line(settings, embedded_home):
    s = settings()
    env = cli_env(s, COLUMNS="250")
    with AgentMemory(s, user_id="alice") as memory:
        _conversation(memory, "ancient", datetime.now(UTC) - timedelta(days=200), "An old chat about kayaks.")

    dry = agentx("worker", "run", "cleanup", "--dry-run", "--user", "alice", env=env)
    assert dry.returncode == 0, dry.stderr
    assert json.loads(dry.stdout)["archive"] == {"conversations_archived": 1, "turns_archived": 1, "dry_run": True}
    done = agentx("worker", "run", "cleanup", env=env)
    assert done.returncode == 0, done.stderr
    archive_run = json.loads(done.stdout)["archive"]["run_id"]

    status = agentx("worker", "status", "--json", env=env)
    assert status.returncode == 0, status.stderr
    latest = {r["job"]: r for r in json.loads(status.stdout)["latest_per_job"]}
    assert latest["archive"]["run_id"] == archive_run and latest["archive"]["status"] == "ok"
    assert latest["archive"]["summary"]["conversations_archived"] == 1
    assert "duration_seconds" in latest["archive"]["summary"]
    table = agentx("worker", "status", env=env)
    assert table.returncode == 0 and archive_run in table.stdout

    undone = agentx("worker", "undo", archive_run, env=env)
    assert undone.returncode == 0, undone.stderr
    assert json.loads(undone.stdout)["restored"] == 1
    again = agentx("worker", "undo", archive_run, env=env)
    assert again.returncode == 2 and "undone" in again.stdout

    for args, field in ((("worker", "run", "nonsense"), "job"), (("worker", "run", "reconcile", "--dry-run"),
                                                                  "dry_run")):
        refused = agentx(*args, env=env)
        assert refused.returncode == 2 and field in refused.stdout, refused.stdout


def test_a_stopped_worker_lets_the_job_in_flight_finish(settings, monkeypatch):
    s = settings()
    finished: list[str] = []
    started = asyncio.Event()

    async def slow(memory: AsyncAgentMemory, options: scheduler.JobOptions) -> dict:
        started.set()
        await asyncio.sleep(1.0)
        await memory.apply_decay(now=NOW)  # the memory is still open when the job ends
        finished.append("slow")
        return {}

    monkeypatch.setattr(scheduler, "JOBS", {"slow": (slow, "decay_minutes")})

    async def scenario() -> float:
        stop = asyncio.Event()
        worker = asyncio.create_task(scheduler.run_worker(s, stop))
        await asyncio.wait_for(started.wait(), 60)
        stop.set()  # as SIGTERM does
        t0 = asyncio.get_running_loop().time()
        await asyncio.wait_for(worker, 30)
        return asyncio.get_running_loop().time() - t0

    waited = run(scenario())
    assert finished == ["slow"]
    assert not math.isclose(waited, 0.0, abs_tol=0.5)  # it waited for the job rather than cutting it


def test_the_worker_logs_one_json_object_per_job(settings, embedded_home):
    done = agentx("worker", "--once", "--json-logs", env=cli_env(settings()))
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in done.stderr.splitlines() if line.startswith("{")]
    jobs = {r["job"]: r for r in records if "job" in r}
    assert set(jobs) == set(scheduler.JOBS)
    assert {r["outcome"] for r in jobs.values()} == {"ok"}
    assert jobs["decay"]["summary"]["dry_run"] is False and jobs["decay"]["level"] == "INFO"


def test_runs_past_the_undo_window_expire_and_past_retention_go(settings):
    with AgentMemory(settings(worker={"undo_days": 1e-6}), user_id="alice") as memory:  # ~0.09 s
        memory.upsert_entity(Entity(user_id="alice", name="Porto", type="place", salience=0.8))
        first = memory.apply_decay(now=datetime.now(UTC) + timedelta(days=3))
        assert first.changes
        time.sleep(0.3)
        memory.apply_decay(now=datetime.now(UTC) + timedelta(days=4))  # finishing expires the older run
        runs = {r["run_id"]: r for r in memory.worker_runs()}
        assert runs[first.run_id]["status"] == "expired"
        with pytest.raises(ConflictError, match="expired"):
            memory.undo_run(first.run_id)
        memory._portal.run(memory.core.ctx.postgres.execute(
            "UPDATE worker_runs SET started_at = started_at - interval '366 days' WHERE run_id = %s",
            (first.run_id,)))
        memory.apply_decay(now=datetime.now(UTC) + timedelta(days=5))
        assert first.run_id not in {r["run_id"] for r in memory.worker_runs()}  # past retention.audit_days


def test_unused_facts_expire_at_the_retention_bound_and_the_run_is_undone(settings):
    now = datetime.now(UTC)
    bound = now - timedelta(days=365)
    with AgentMemory(settings(audit={"level": "writes"}), user_id="alice") as memory:
        def learn(claim: str, made: datetime) -> Fact:
            return memory.learn_fact(Fact(user_id="alice", claim=claim, created_at=made))

        old = learn("Sam used to row on the Douro", bound - timedelta(milliseconds=1))
        at_bound = learn("Sam owns a red kayak", bound)
        used = learn("Sam likes green tea", bound - timedelta(days=30))
        restated = learn("Sam lives near the river", bound - timedelta(days=30))
        memory._portal.run(memory.core.semantic.reinforce("alice", fact_ids=[used.id]))  # accessed: its clock restarts
        memory.learn_fact(restated.model_copy(update={"created_at": now - timedelta(days=1)}))  # said again

        dry = memory.expire_facts(now=now, dry_run=True)
        assert [c["id"] for c in dry.changes] == [old.id] and memory.get_fact(old.id).status == "active"
        run_ = memory.expire_facts(now=now)
        assert run_.facts_expired == 1
        gone = memory.get_fact(old.id)
        assert gone.status == "expired"
        for kept in (at_bound, used, restated):
            assert memory.get_fact(kept.id).status == "active"
        recalled = {f.item.id for f in memory.remember("Douro rowing", top_k=20).facts}
        assert old.id not in recalled
        assert old.id in {f.id for f in memory.facts_as_of(now - timedelta(days=1))}  # it held until it expired
        assert old.id not in {f.id for f in memory.facts_as_of(now + timedelta(seconds=1))}
        assert memory.undo_run(run_.run_id)["restored"] == 1
        assert memory.get_fact(old.id).status == "active"
        assert old.id in {f.item.id for f in memory.remember("Douro rowing", top_k=20).facts}


def test_a_worker_that_dies_mid_run_leaves_its_changes_to_undo(settings):
    """The changes a run makes are in its record before they are written, not only at its end: a worker process that
    dies mid-run (here right after its first write) leaves a record that the next undo closes as interrupted and
    undoes. Before, the record stayed ``running`` with no changes, and what the run wrote could not be undone."""
    import subprocess
    import sys

    s = settings(worker={"stale_run_minutes": 0.01})
    with AgentMemory(s, user_id="alice") as memory:
        porto = memory.upsert_entity(Entity(user_id="alice", name="Porto", type="place", salience=0.8))
        later = datetime.now(UTC) + timedelta(days=10)
        # the worker dies right after writing its first page of decayed entities
        program = die_after_write("salience", "memory.apply_decay(now=datetime.fromisoformat(sys.argv[1]))")
        died = subprocess.run([sys.executable, "-c", program, later.isoformat()], env=cli_env(s),
                              capture_output=True, text=True, timeout=120)
        assert died.returncode == 9, died.stderr[-3000:]
        assert memory.get_entity(porto.id).salience < 0.8  # the write the worker made before it died

        [record] = memory.worker_runs()
        assert record["job"] == "decay" and record["status"] == "running"
        time.sleep(1.0)  # past stale_run_minutes without a checkpoint
        undone = memory.undo_run(record["run_id"])
        assert (undone["restored"], undone["skipped"]) == (1, 0)
        assert memory.get_entity(porto.id).salience == 0.8
        [closed] = memory.worker_runs()
        assert closed["status"] == "undone" and "interrupted" in closed["summary"]["error"]
