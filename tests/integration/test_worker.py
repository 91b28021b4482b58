"""The background worker's jobs on the real embedded servers."""

from __future__ import annotations

import asyncio
from datetime import UTC, date, datetime, timedelta

from agentx_memory import AgentMemory, AsyncAgentMemory, Turn
from tests.conftest import run
from workers import scheduler
from workers.jobs import audit_partitions
from workers.scheduler import run_once, run_worker

AUDIT_PARTITIONS = (
    "SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid"
    " JOIN pg_class p ON p.oid = i.inhparent JOIN pg_namespace n ON n.oid = p.relnamespace"
    " WHERE p.relname = 'memory_audit_log' AND n.nspname = current_schema()"
)


def _partition(day: date) -> str:
    return f"memory_audit_log_{day:%Y%m%d}"


async def _partitions(memory: AsyncAgentMemory) -> set[str]:
    return {row["name"] for row in await memory.ctx.postgres.fetch(AUDIT_PARTITIONS)}


def test_worker_once_reprojects_lost_turns_and_manages_audit_partitions(settings):
    s = settings()

    async def scenario():
        memory = await AsyncAgentMemory.open(s)
        try:
            turns = [Turn(conversation_id="c", user_id="u", content=f"turn {i}") for i in range(3)]
            stored = await memory.store_turns(turns)
            # the graph lost a turn (e.g. restored from an old backup): the durable log still has it
            await memory.ctx.graph.write("MATCH (t:Turn {id: $id}) DETACH DELETE t", {"id": stored[1].id})
            await memory.ctx.postgres.execute(
                "INSERT INTO turn_projection_queue (log_id) SELECT id FROM conversation_logs WHERE turn_id = %s",
                (stored[1].id,))
        finally:
            await memory.close()
        summary = await run_once(s)
        memory = await AsyncAgentMemory.open(s)
        try:
            nodes = await memory.ctx.graph.read("MATCH (t:Turn {conversation_id: 'c'}) RETURN count(t) AS n")
            partitions = await _partitions(memory)
        finally:
            await memory.close()
        return summary, nodes[0]["n"], partitions

    summary, nodes, partitions = run(scenario())
    assert summary["reconcile"] == {"projected": 1}
    assert nodes == 3
    assert _partition(datetime.now(UTC).date() + timedelta(days=s.audit.partitions_ahead_days)) in partitions
    assert set(summary["audit_partitions"]) == {"created", "dropped"}


def test_reconcile_job_reports_a_quarantined_row_and_still_projects_the_others(settings):
    """A log row reconcile cannot project (here a timestamp of 'infinity', which no Python datetime holds) is
    quarantined and reported; it used to fail the job every run and block every other unprojected row."""
    s = settings()

    async def scenario():
        memory = await AsyncAgentMemory.open(s)
        try:
            for turn_id, index, timestamp in (("a", 0, "now()"), ("b", 1, "'infinity'"), ("c", 2, "now()")):
                await memory.ctx.postgres.execute(
                    "INSERT INTO conversation_logs (turn_id, user_id, conversation_id, turn_index, timestamp, role,"
                    " content) VALUES (%s, 'u', 'c', %s, " + timestamp + ", 'user', 'text')", (turn_id, index))
        finally:
            await memory.close()
        return await run_once(s), await run_once(s)

    first, second = run(scenario())
    assert first["reconcile"] == {"projected": 2, "quarantined": 1, "quarantined_total": 1}
    assert second["reconcile"] == {"projected": 0, "quarantined": 0, "quarantined_total": 1}


def test_audit_partition_job_creates_ahead_drops_past_retention_and_is_idempotent(settings):
    s = settings()
    today = datetime.now(UTC).date()
    expired = today - timedelta(days=s.retention.audit_days + 1)
    kept = today - timedelta(days=s.retention.audit_days - 1)

    async def scenario():
        memory = await AsyncAgentMemory.open(s)
        try:
            for day in (expired, kept):  # create_audit_partitions(0, day): that one day's partition
                await memory.ctx.postgres.fetch("SELECT create_audit_partitions(0, %s::date) AS n", (day,))
            before = await _partitions(memory)
            first = await audit_partitions.run(memory)
            after = await _partitions(memory)
        finally:
            await memory.close()
        return before, first, after

    before, first, after = run(scenario())
    assert {_partition(expired), _partition(kept)} <= before
    ahead = {_partition(today + timedelta(days=i)) for i in range(s.audit.partitions_ahead_days + 1)}
    assert first == {"created": len(ahead - before), "dropped": 1}
    assert _partition(expired) not in after
    assert {_partition(kept)} | ahead <= after
    with AgentMemory(s) as memory:  # the blocking twin, and a second run has nothing left to do
        assert memory.maintain_audit_partitions() == {"created": 0, "dropped": 0}


def test_a_failing_job_is_logged_and_the_others_still_run(settings, monkeypatch, caplog):
    s = settings()

    async def broken(memory: AsyncAgentMemory, options: scheduler.JobOptions) -> dict:
        raise RuntimeError("boom")

    jobs = {"broken": (broken, "reconcile_minutes"), "reconcile": scheduler.JOBS["reconcile"]}
    monkeypatch.setattr(scheduler, "JOBS", jobs)
    summary = run(run_once(s))
    assert summary == {"broken": {"error": True}, "reconcile": {"projected": 0}}
    assert any(record.message == "job broken failed" and record.exc_info for record in caplog.records)


def test_worker_runs_jobs_at_start_and_stops_cleanly(settings):
    s = settings()

    async def scenario():
        stop = asyncio.Event()
        task = asyncio.create_task(run_worker(s, stop))
        await asyncio.sleep(2)
        stop.set()
        await asyncio.wait_for(task, 10)
        memory = await AsyncAgentMemory.open(s)
        try:
            return await _partitions(memory)
        finally:
            await memory.close()

    partitions = run(scenario())
    assert len(partitions) >= s.audit.partitions_ahead_days
