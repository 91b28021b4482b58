"""Entity deduplication: two entities that are the same thing become one, reversibly.

**When two entities are duplicates.** Both are the same user's, in the same channel, of compatible types (equal, or
one of them a generic type such as ``concept``), and there is **name evidence** — the normalized names are equal,
one's name is an alias of the other, or one name's words are all words of the other ("Sam" and "Sam Lee") — **and**
their vectors' cosine is at least ``dedup.similarity`` (0.92). Never across users or channels. Candidate pairs are
found by blocking on name words, so only entities that share a word are compared.

**The merge.** The survivor is the more used (access count, then salience, then the older). It takes the loser's
name and aliases as aliases, the higher salience, the summed access count, the earlier first sighting and the later
access, and the loser's description and properties where it has none of its own. Every edge of the loser —
relationships, facts ``ABOUT`` it, conversations that ``MENTIONS`` it — is copied to the survivor (an edge the
survivor has already is kept as it is; an edge between the two is dropped). An ``EntityRedirect`` keeps the loser's
key, so upserting the loser's name and type again lands on the survivor instead of recreating the duplicate. Then
the loser, its timeline row and its edges are deleted, and the merge is audited (operation ``merge``).

**Undo.** The run's ``changes`` hold, per merge, the loser as it was (properties, vector, every edge) and the
survivor's values before; :func:`undo_entity_merge` recreates the loser with its edges and timeline row, removes
what the run added to the survivor (edges marked with the run, the redirect) and takes back what the merge gave the
survivor (:mod:`~agentx_memory.dedup.revert`): the loser's access count, its name and aliases, and the salience,
description, properties, first sighting and last access it took while the survivor still holds them; what changed on
the survivor since the merge (a recall, a decay, a new description or alias) stays. Merges are undone newest first, so
a chain of merges unwinds in order.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from datetime import UTC, datetime
from typing import Any, Final

from ..graph import cypher
from ..semantic import SemanticMemory, normalize_name
from ..sql.timeline import TimelineEntry
from ..timeutil import from_ms
from .clusters import unit_rows
from .driver import DedupKind
from .report import DedupReport
from .revert import reverted_values

__all__ = ["ENTITIES", "name_evidence", "undo_entity_merge"]

#: Entity types that say nothing about what the entity is: they are compatible with any type.
GENERIC_TYPES: Final = frozenset({"", "concept", "entity", "thing", "other", "unknown"})

_WORD = re.compile(r"\w+")

#: Values the survivor takes from the merge, saved before it so undo can put them back.
_SURVIVOR_FIELDS: Final = ("aliases", "description", "salience", "salience_base", "access_count", "first_seen",
                           "last_accessed", "properties", "merged_from")


def _words(name: str) -> frozenset[str]:
    return frozenset(_WORD.findall(normalize_name(name)))


def name_evidence(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether two entities' names say they may be the same thing (see the module docstring)."""
    name_a, name_b = normalize_name(a["name"]), normalize_name(b["name"])
    if name_a == name_b:
        return True
    if name_a in {normalize_name(x) for x in b.get("aliases") or []}:
        return True
    if name_b in {normalize_name(x) for x in a.get("aliases") or []}:
        return True
    words_a, words_b = _words(name_a), _words(name_b)
    return bool(words_a and words_b) and (words_a <= words_b or words_b <= words_a)


def _compatible_types(a: str, b: str) -> bool:
    a, b = a.strip().casefold(), b.strip().casefold()
    return a == b or a in GENERIC_TYPES or b in GENERIC_TYPES


def _pairs(entities: list[dict[str, Any]], threshold: float) -> tuple[list[tuple[float, int, int]], int]:
    """Candidate pairs (cosine, i, j) of one user's entities, best first, and how many pairs were compared."""
    by_word: dict[tuple[str, str], list[int]] = defaultdict(list)
    for i, e in enumerate(entities):
        for word in _words(e["name"]):
            by_word[(e["channel"], word)].append(i)
    candidates: set[tuple[int, int]] = set()
    for members in by_word.values():
        for x, i in enumerate(members):
            for j in members[x + 1:]:
                candidates.add((min(i, j), max(i, j)))
    vectors = unit_rows(entities)
    found, compared = [], 0
    for i, j in sorted(candidates):
        a, b = entities[i], entities[j]
        if not (_compatible_types(a["type"], b["type"]) and name_evidence(a, b)):
            continue
        compared += 1
        cosine = float(vectors[i] @ vectors[j])
        if cosine >= threshold:
            found.append((cosine, i, j))
    return found, compared


def _standing(e: dict[str, Any]) -> tuple[Any, ...]:
    return (-int(e["accesses"] or 0), -float(e["salience"] or 0), e["first_seen"] or 0, e["id"])


async def _snapshot(semantic: SemanticMemory, entity_id: str, user_id: str) -> dict[str, Any]:
    rows = await semantic.ctx.graph.read(cypher.ENTITY_SNAPSHOT, {"id": entity_id, "user_id": user_id})
    row = rows[0]
    embedding = row["embedding"]
    return {"node": row["node"], "embedding": [float(x) for x in embedding] if embedding is not None else None,
            "edges": [e for e in row["edges"] if e]}


def _merged_values(survivor: dict[str, Any], loser: dict[str, Any]) -> dict[str, Any]:
    taken = {normalize_name(survivor["name"])} | {normalize_name(a) for a in survivor.get("aliases") or []}
    aliases = list(survivor.get("aliases") or [])
    for alias in [loser["name"], *(loser.get("aliases") or [])]:
        if normalize_name(alias) not in taken:
            taken.add(normalize_name(alias))
            aliases.append(alias)
    properties = {**json.loads(loser.get("properties") or "{}"), **json.loads(survivor.get("properties") or "{}")}
    accessed = [t for t in (survivor.get("last_accessed"), loser.get("last_accessed")) if t is not None]
    seen = [t for t in (survivor.get("first_seen"), loser.get("first_seen")) if t is not None]
    bases = [survivor.get("salience_base") or survivor.get("salience") or 0.0,
             loser.get("salience_base") or loser.get("salience") or 0.0]
    return {
        "aliases": aliases,
        "description": survivor.get("description") or loser.get("description") or "",
        "salience": max(survivor.get("salience") or 0.0, loser.get("salience") or 0.0),
        "salience_base": max(bases),
        "access_count": int(survivor.get("access_count") or 0) + int(loser.get("access_count") or 0),
        "first_seen": min(seen) if seen else None,
        "last_accessed": max(accessed) if accessed else None,
        "properties": json.dumps(properties, sort_keys=True, ensure_ascii=False),
        "merged_from": [*(survivor.get("merged_from") or []), loser["id"]],
    }


async def _merge(semantic: SemanticMemory, report: DedupReport, change: dict[str, Any]) -> bool:
    graph, run_id = semantic.ctx.graph, report.run_id
    user, survivor_id, loser_id = change["user_id"], change["survivor_id"], change["loser_id"]
    cosine = change["similarity"]
    loser = await _snapshot(semantic, loser_id, user)
    survivor = (await graph.read(cypher.SURVIVOR_STATE, {"id": survivor_id, "user_id": user}))[0]["node"]
    kinds = {(d, t) for d, t, _ in cypher.ENTITY_LINKS}
    unknown = sorted({e["type"] for e in loser["edges"] if (e["direction"], e["type"]) not in kinds})
    if unknown:  # an edge this job does not know how to move: leave the pair alone rather than lose it
        return False
    # recorded before the first write: a merge cut short is undone like a whole one
    report.changes.append({**change, "loser": loser,
                           "survivor_before": {k: survivor.get(k) for k in _SURVIVOR_FIELDS}})
    await report.save()  # the loser is deleted below: its record is what undo recreates it from
    params = {"loser_id": loser_id, "survivor_id": survivor_id, "user_id": user, "run_id": run_id}
    for kind in sorted({(e["direction"], e["type"]) for e in loser["edges"]}):
        await graph.write(cypher.MOVE_EDGES[kind], params)
    if loser_id not in (survivor.get("merged_from") or []):  # a merge cut short and run again counts once
        await graph.write(cypher.UPDATE_SURVIVOR, {"id": survivor_id, "user_id": user,
                                                    "values": _merged_values(survivor, loser["node"])})
    await graph.write(cypher.ADD_REDIRECT, {**params, "key": loser["node"]["key"]})
    await graph.write(cypher.DELETE_MERGED, {"id": loser_id, "user_id": user})
    await semantic.ctx.sql.timeline.delete("entity", [loser_id])
    await semantic.ctx.audit.log_write(
        "merge", "semantic", loser["node"].get("channel"), [survivor_id, loser_id],
        {"kind": "entity", "survivor": survivor_id, "merged": loser["node"]["name"], "similarity": cosine,
         "edges_moved": len(loser["edges"])}, user_id=user)
    return True


#: Entities in a dedup pass (:mod:`agentx_memory.dedup.driver`).
ENTITIES = DedupKind(
    name="entity", read=cypher.DEDUP_ENTITIES, pairs=_pairs, standing=_standing,
    describe=lambda survivor, loser: {"names": [survivor["name"], loser["name"]]}, merge=_merge)


async def undo_entity_merge(semantic: SemanticMemory, run_id: str, change: dict[str, Any]) -> None:
    """Undo one entity merge of the run ``run_id``: the merged entity back with its edges and timeline row, what the
    merge added to the survivor removed, the survivor's merged values as they were before."""
    graph = semantic.ctx.graph
    user, survivor_id, loser = change["user_id"], change["survivor_id"], change["loser"]
    node = {k: v for k, v in loser["node"].items() if v is not None}
    exists = (await graph.read(cypher.ENTITY_EXISTS, {"id": node["id"]}))[0]["n"]
    if not exists:  # a merge cut short before the delete left it in place
        await graph.write(cypher.RECREATE_ENTITY, {"node": node, "embedding": loser["embedding"]})
    await graph.write(cypher.REMOVE_MERGED_EDGES, {"id": survivor_id, "user_id": user, "run_id": run_id})
    await graph.write(cypher.REMOVE_REDIRECT, {"key": node["key"], "run_id": run_id})
    by_kind: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for edge in loser["edges"]:
        by_kind[(edge["direction"], edge["type"])].append({"other": edge["other"], "props": edge["props"]})
    for kind, edges in by_kind.items():
        await graph.write(cypher.RESTORE_EDGES[kind], {"id": node["id"], "user_id": user, "edges": edges})
    rows = await graph.read(cypher.SURVIVOR_STATE, {"id": survivor_id, "user_id": user})
    if rows:  # still there (not forgotten since): it gives back what the merge added, and keeps what changed since
        before, current = change["survivor_before"], rows[0]["node"]
        merged = _merged_values({**before, "id": survivor_id, "name": current["name"]}, loser["node"])
        values = reverted_values(before, merged, current, counts=("access_count",),
                                 lists=("aliases", "merged_from"))
        await graph.write(cypher.UPDATE_SURVIVOR, {"id": survivor_id, "user_id": user, "values": values})
    await semantic.ctx.sql.timeline.write([TimelineEntry(
        memory_type="entity", node_id=node["id"], user_id=user, channel=node["channel"],
        event_time=from_ms(node["first_seen"]) if node.get("first_seen") else datetime.now(UTC),
        summary=node["name"] + (f": {node['description']}" if node.get("description") else ""),
        importance=float(node.get("salience") or 0.0))])
