"""Create the audit log's future daily partitions and drop the ones past retention (spec 003 manage_audit_partitions)."""

from __future__ import annotations

from agentx_memory import AsyncAgentMemory


async def run(memory: AsyncAgentMemory) -> dict:
    """``create_audit_partitions(audit.partitions_ahead_days)`` then ``drop_old_audit_partitions(retention.audit_days)``."""
    settings = memory.settings
    created = await memory.ctx.postgres.fetch(
        "SELECT create_audit_partitions(%s) AS n", (settings.audit.partitions_ahead_days,))
    dropped = await memory.ctx.postgres.fetch(
        "SELECT drop_old_audit_partitions(%s) AS n", (settings.retention.audit_days,))
    return {"created": created[0]["n"], "dropped": dropped[0]["n"]}
