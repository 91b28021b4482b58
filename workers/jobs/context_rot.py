"""Context rot detection (seed 002, daily): facts and entities whose staleness reaches ``context_rot.threshold``
leave recall, reversibly (``AsyncAgentMemory.archive_stale``; undoable)."""

from __future__ import annotations

from typing import Any

from agentx_memory import AsyncAgentMemory

from . import DEFAULT_OPTIONS, JobOptions


async def run(memory: AsyncAgentMemory, options: JobOptions = DEFAULT_OPTIONS) -> dict[str, Any]:
    """One context-rot run: candidates examined, facts and entities archived."""
    return (await memory.archive_stale(dry_run=options.dry_run, user_id=options.user_id)).summary()
