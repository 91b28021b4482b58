"""Lookup keys that nodes written by an earlier version lack, given to them once per graph when it is opened.

Each backfill fills the nodes without their key page by page, then records on an ``AgentxMeta`` node that it finished,
so every later open reads one node. Running two at once (two processes opening the graph) writes the same keys twice.
On FalkorDB every node written re-indexes its vector (about 0.7 ms a node): a one-time cost per node.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from .fact_slots import slot_key
from .graph import cypher
from .graph.port import GraphStore
from .timeutil import now_ms

__all__ = ["backfill_keys", "backfill_name_keys", "backfill_slot_keys"]

_log = logging.getLogger(__name__)


async def backfill_keys(graph: GraphStore) -> dict[str, int]:
    """Every backfill below; returns the nodes each updated."""
    return {"fact slot keys": await backfill_slot_keys(graph), "entity name keys": await backfill_name_keys(graph)}


async def backfill_slot_keys(graph: GraphStore, *, page: int = 2000) -> int:
    """Give every fact stored without a slot key (``fact_slots.slot_key``) its key; returns the facts updated."""
    async def fill() -> int:
        updated, after = 0, ""
        while rows := await graph.read(cypher.FACTS_WITHOUT_SLOT_KEY, {"after": after, "limit": page}):
            after = rows[-1]["id"]
            keyed = [{"id": r["id"], "claim": r["claim"], "slot_key": key} for r in rows
                     if (key := slot_key(r["user_id"], str(r["claim"] or ""))) is not None]
            if keyed:
                updated += (await graph.write(cypher.SET_SLOT_KEYS, {"rows": keyed}))[0]["updated"]
        return updated

    return await _once(graph, "fact_slot_keys", "facts", "slot keys", fill)


async def backfill_name_keys(graph: GraphStore, *, page: int = 2000) -> int:
    """Give every entity stored without name keys its keys (the statement computes them); returns the entities
    updated."""
    async def fill() -> int:
        updated = 0
        while filled := (await graph.write(cypher.FILL_NAME_KEYS, {"limit": page}))[0]["updated"]:
            updated += filled
        return updated

    return await _once(graph, "entity_name_keys", "entities", "name keys", fill)


async def _once(graph: GraphStore, key: str, nodes: str, keys: str, fill: Callable[[], Awaitable[int]]) -> int:
    """Run ``fill`` unless the backfill ``key`` finished on this graph before, then record that it did."""
    if (await graph.read(cypher.BACKFILL_DONE, {"key": key}))[:1] == [{"done": True}]:
        return 0
    updated = await fill()
    await graph.write(cypher.MARK_BACKFILL_DONE, {"key": key, "now": now_ms()})
    if updated:
        _log.info("gave %d %s stored by an earlier version their %s (once)", updated, nodes, keys)
    return updated
