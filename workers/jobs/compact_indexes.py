"""Rebuild the vector indexes that have filled with dead vectors (FalkorDB keeps the vectors of updated nodes)."""

from __future__ import annotations

from typing import Any

from agentx_memory import AsyncAgentMemory, ValidationError

from . import DEFAULT_OPTIONS, JobOptions


async def run(memory: AsyncAgentMemory, options: JobOptions = DEFAULT_OPTIONS) -> dict[str, Any]:
    """Per vector label: ``live`` and ``entries``, ``dead_share``, ``building`` and ``rebuilt``
    (:meth:`~agentx_memory.AsyncAgentMemory.compact_vector_indexes`). A dry run reports what it would rebuild; the
    indexes are every user's, so a one-user run is refused."""
    if options.user_id is not None:
        raise ValidationError("user_id", "job 'compact_indexes' runs for every user; it cannot be limited to one")
    return await memory.compact_vector_indexes(dry_run=options.dry_run)
