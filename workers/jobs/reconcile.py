"""Re-project durable-log turns that the graph is missing (after a graph outage)."""

from __future__ import annotations

from agentx_memory import AsyncAgentMemory


async def run(memory: AsyncAgentMemory) -> dict:
    """Project every unprojected conversation_logs row; idempotent."""
    return {"projected": await memory.reconcile()}
