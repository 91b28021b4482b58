"""cleanup_old_memories: conversations past retention are archived (``AsyncAgentMemory.archive_conversations``,
undoable), unused facts expire (``AsyncAgentMemory.expire_facts``, undoable), then faded, unused entities are deleted
with their edges, each deletion audited (``AsyncAgentMemory.cleanup``), and so are expired memory pools
(``AsyncAgentMemory.expire_pools``) and namespaced items whose TTL ran out (``AsyncAgentMemory.expire_items``)."""

from __future__ import annotations

from typing import Any

from agentx_memory import AsyncAgentMemory

from . import DEFAULT_OPTIONS, JobOptions


async def run(memory: AsyncAgentMemory, options: JobOptions = DEFAULT_OPTIONS) -> dict[str, Any]:
    """One cleanup run: ``{"archive": conversations and turns archived, "facts": facts expired, "entities": examined
    and deleted, "pools": expired pools deleted, "items": expired items deleted}``, each with its run id."""
    archived = await memory.archive_conversations(dry_run=options.dry_run, user_id=options.user_id)
    expired = await memory.expire_facts(dry_run=options.dry_run, user_id=options.user_id)
    deleted = await memory.cleanup(dry_run=options.dry_run, user_id=options.user_id)
    pools = await memory.expire_pools(dry_run=options.dry_run, user_id=options.user_id)
    items = await memory.expire_items(dry_run=options.dry_run, user_id=options.user_id)
    return {"archive": archived.summary(), "facts": expired.summary(), "entities": deleted.summary(),
            "pools": pools.summary(), "items": items.summary()}
