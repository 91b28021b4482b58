"""consolidate_episodic_to_semantic: extract every conversation that has gone quiet into entities, facts and
relationships (``AsyncAgentMemory.consolidate``; docs/extraction.md)."""

from __future__ import annotations

from typing import Any

from agentx_memory import AsyncAgentMemory

from . import DEFAULT_OPTIONS, JobOptions


async def run(memory: AsyncAgentMemory, options: JobOptions = DEFAULT_OPTIONS) -> dict[str, Any]:
    """One consolidation run: how many conversations were due, consolidated, skipped as locked by another worker or
    stopped early, the facts and entities written, the largest lag and the LLM usage."""
    return (await memory.consolidate(dry_run=options.dry_run, user_id=options.user_id)).summary()
