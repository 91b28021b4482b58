"""Re-project durable-log turns and tool invocations that the graph is missing (after a graph outage)."""

from __future__ import annotations

from typing import Any

from agentx_memory import AsyncAgentMemory

from . import DEFAULT_OPTIONS, JobOptions, whole_run_only


async def run(memory: AsyncAgentMemory, options: JobOptions = DEFAULT_OPTIONS) -> dict[str, Any]:
    """Project every unprojected conversation_logs row; idempotent: ``{"projected": n}``, plus ``"quarantined"``
    (rows this run could not project and set aside) and ``"quarantined_total"`` when there are any, and
    ``"invocations_projected"`` when tool invocations were projected."""
    whole_run_only("reconcile", options)
    result = await memory.reconcile()
    summary: dict[str, Any] = {"projected": result.projected}
    if result.invocations_projected:
        summary["invocations_projected"] = result.invocations_projected
    if result.quarantined_total:
        summary["quarantined"] = len(result.quarantined)
        summary["quarantined_total"] = result.quarantined_total
    return summary
