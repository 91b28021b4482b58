"""cleanup_old_memories: faded, unused entities are deleted with their edges, each deletion audited
(``AsyncAgentMemory.cleanup``; archiving old conversations is not built yet)."""

from __future__ import annotations

from typing import Any

from agentx_memory import AsyncAgentMemory


async def run(memory: AsyncAgentMemory) -> dict[str, Any]:
    """One cleanup run: entities examined and deleted."""
    return (await memory.cleanup()).summary()
