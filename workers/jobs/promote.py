"""promote_prominent_facts: project facts that proved themselves (confidence, accesses, conversations) are copied to
``_global`` with ``PROMOTED_FROM`` (``AsyncAgentMemory.promote_prominent_facts``; undoable)."""

from __future__ import annotations

from typing import Any

from agentx_memory import AsyncAgentMemory

from . import DEFAULT_OPTIONS, JobOptions


async def run(memory: AsyncAgentMemory, options: JobOptions = DEFAULT_OPTIONS) -> dict[str, Any]:
    """One promotion run: candidates found and facts promoted."""
    return (await memory.promote_prominent_facts(dry_run=options.dry_run, user_id=options.user_id)).summary()
