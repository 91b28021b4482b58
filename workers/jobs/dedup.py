"""dedup: entities that are the same thing (same user and channel, name or alias evidence, vectors at cosine >=
``dedup.similarity``) are merged, keeping every alias and edge (``AsyncAgentMemory.dedup``; undoable)."""

from __future__ import annotations

from typing import Any

from agentx_memory import AsyncAgentMemory

from . import DEFAULT_OPTIONS, JobOptions


async def run(memory: AsyncAgentMemory, options: JobOptions = DEFAULT_OPTIONS) -> dict[str, Any]:
    """One dedup run: entities examined, pairs compared, merges made and pairs skipped."""
    return (await memory.dedup(dry_run=options.dry_run, user_id=options.user_id)).summary()
