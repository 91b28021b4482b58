"""Lookup keys that nodes written by an earlier version lack, given to them once per graph when it is opened.

Each backfill fills the nodes without their key page by page, then records on an ``AgentxMeta`` node that it finished,
so every later open reads one node. Running two at once (two processes opening the graph) writes the same keys twice.
On FalkorDB every node written re-indexes its vector (about 0.7 ms a node): a one-time cost per node.
"""

from __future__ import annotations

import logging

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
    if await _done(graph, "fact_slot_keys"):
        return 0
    updated, after = 0, ""
    while rows := await graph.read(cypher.FACTS_WITHOUT_SLOT_KEY, {"after": after, "limit": page}):
        after = rows[-1]["id"]
        keyed = [{"id": r["id"], "claim": r["claim"], "slot_key": key} for r in rows
                 if (key := slot_key(r["user_id"], str(r["claim"] or ""))) is not None]
        if keyed:
            updated += (await graph.write(cypher.SET_SLOT_KEYS, {"rows": keyed}))[0]["updated"]
    await graph.write(cypher.MARK_BACKFILL_DONE, {"key": "fact_slot_keys", "now": now_ms()})
    if updated:
        _log.info("gave %d facts stored by an earlier version their slot keys (once)", updated)
    return updated


async def backfill_name_keys(graph: GraphStore, *, page: int = 2000) -> int:
    """Give every entity stored without name keys its keys (the statement computes them); returns the entities
    updated."""
    if await _done(graph, "entity_name_keys"):
        return 0
    updated = 0
    while filled := (await graph.write(cypher.FILL_NAME_KEYS, {"limit": page}))[0]["updated"]:
        updated += filled
    await graph.write(cypher.MARK_BACKFILL_DONE, {"key": "entity_name_keys", "now": now_ms()})
    if updated:
        _log.info("gave %d entities stored by an earlier version their name keys (once)", updated)
    return updated


async def _done(graph: GraphStore, key: str) -> bool:
    return (await graph.read(cypher.BACKFILL_DONE, {"key": key}))[:1] == [{"done": True}]
