"""short_term: the short-term tier's consolidation — entries read often become long-term facts, expired entries read
less are dropped (``AsyncAgentMemory.consolidate_short_term``; undoable)."""

from __future__ import annotations

from typing import Any

from agentx_memory import AsyncAgentMemory

from . import DEFAULT_OPTIONS, JobOptions


async def run(memory: AsyncAgentMemory, options: JobOptions = DEFAULT_OPTIONS) -> dict[str, Any]:
    """One short-term consolidation run: entries promoted and dropped, with the run id."""
    return (await memory.consolidate_short_term(dry_run=options.dry_run, user_id=options.user_id)).summary()
