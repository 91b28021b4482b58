"""detect_patterns: strategies learned from conversations that used tools and went quiet: tool sequence, task type,
outcome (``AsyncAgentMemory.detect_patterns``)."""

from __future__ import annotations

from typing import Any

from agentx_memory import AsyncAgentMemory

from . import DEFAULT_OPTIONS, JobOptions


async def run(memory: AsyncAgentMemory, options: JobOptions = DEFAULT_OPTIONS) -> dict[str, Any]:
    """One pattern run: conversations examined, without an outcome, strategies learned or reinforced."""
    return (await memory.detect_patterns(dry_run=options.dry_run, user_id=options.user_id)).summary()
