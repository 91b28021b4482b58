"""The background worker's jobs on the real embedded servers."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from agentx_memory import AsyncAgentMemory, Turn
from tests.conftest import run
from workers.scheduler import run_once, run_worker


def test_worker_once_reprojects_lost_turns_and_manages_audit_partitions(settings):
    s = settings()

    async def scenario():
        memory = await AsyncAgentMemory.open(s)
        try:
            stored = await memory.store_turns([Turn(conversation_id="c", user_id="u", content=f"turn {i}") for i in range(3)])
            # the graph lost a turn (e.g. restored from an old backup): the durable log still has it
            await memory.ctx.graph.write("MATCH (t:Turn {id: $id}) DETACH DELETE t", {"id": stored[1].id})
            await memory.ctx.postgres.execute("UPDATE conversation_logs SET projected = FALSE WHERE turn_id = %s", (stored[1].id,))
        finally:
            await memory.close()
        summary = await run_once(s)
        memory = await AsyncAgentMemory.open(s)
        try:
            nodes = await memory.ctx.graph.read("MATCH (t:Turn {conversation_id: 'c'}) RETURN count(t) AS n")
            day = (datetime.now(UTC) + timedelta(days=s.audit.partitions_ahead_days)).strftime("%Y%m%d")
            part = await memory.ctx.postgres.fetch("SELECT to_regclass(%s) IS NOT NULL AS present", (f"memory_audit_log_{day}",))
        finally:
            await memory.close()
        return summary, nodes[0]["n"], part[0]["present"]

    summary, nodes, partition_ahead = run(scenario())
    assert summary["reconcile"] == {"projected": 1}
    assert nodes == 3
    assert partition_ahead
    assert "dropped" in summary["audit_partitions"]


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
            return await memory.ctx.postgres.fetch(
                "SELECT count(*) AS n FROM pg_inherits i JOIN pg_class p ON p.oid = i.inhparent WHERE p.relname = 'memory_audit_log'")
        finally:
            await memory.close()

    rows = run(scenario())
    assert rows[0]["n"] >= s.audit.partitions_ahead_days
