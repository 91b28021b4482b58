"""apply_memory_decay: idle entities' salience and inferred facts' confidence fade with time since their last
access (``AsyncAgentMemory.apply_decay``; undoable)."""

from __future__ import annotations

from typing import Any

from agentx_memory import AsyncAgentMemory

from . import DEFAULT_OPTIONS, JobOptions


async def run(memory: AsyncAgentMemory, options: JobOptions = DEFAULT_OPTIONS) -> dict[str, Any]:
    """One decay run: entities and facts examined and changed."""
    return (await memory.apply_decay(dry_run=options.dry_run, user_id=options.user_id)).summary()
