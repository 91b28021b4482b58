"""Re-project durable-log turns that the graph is missing (after a graph outage)."""

from __future__ import annotations

from typing import Any

from agentx_memory import AsyncAgentMemory


async def run(memory: AsyncAgentMemory) -> dict[str, Any]:
    """Project every unprojected conversation_logs row; idempotent: ``{"projected": n}``."""
    return {"projected": await memory.reconcile()}
