"""promote_prominent_facts: project facts that proved themselves (confidence, accesses, conversations) are copied to
``_global`` with ``PROMOTED_FROM`` (``AsyncAgentMemory.promote_prominent_facts``)."""

from __future__ import annotations

from typing import Any

from agentx_memory import AsyncAgentMemory


async def run(memory: AsyncAgentMemory) -> dict[str, Any]:
    """One promotion run: ``{"promoted": n}``."""
    return {"promoted": len(await memory.promote_prominent_facts())}
