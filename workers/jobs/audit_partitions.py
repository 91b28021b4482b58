"""Create the audit log's future day partitions and drop those past retention (spec 003 manage_audit_partitions)."""

from __future__ import annotations

from typing import Any

from agentx_memory import AsyncAgentMemory

from . import DEFAULT_OPTIONS, JobOptions, whole_run_only


async def run(memory: AsyncAgentMemory, options: JobOptions = DEFAULT_OPTIONS) -> dict[str, Any]:
    """Partitions for ``audit.partitions_ahead_days`` ahead, none older than ``retention.audit_days``:
    ``{"created": n, "dropped": m}``."""
    whole_run_only("audit_partitions", options)
    return await memory.maintain_audit_partitions()
