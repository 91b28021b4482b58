"""apply_memory_decay: idle entities' salience and inferred facts' confidence fade with time since their last
access (``AsyncAgentMemory.apply_decay``)."""

from __future__ import annotations

from typing import Any

from agentx_memory import AsyncAgentMemory


async def run(memory: AsyncAgentMemory) -> dict[str, Any]:
    """One decay run: entities and facts examined and updated."""
    return (await memory.apply_decay()).summary()
