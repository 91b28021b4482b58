"""Fact deduplication: the same claim learned twice becomes one fact, reversibly.

**When two facts are duplicates.** Both are the same user's and in the same channel, active (not superseded,
rejected or under review), with compatible ``temporal`` labels (equal, or one unset), and they say the same thing:
their claims have the **same content words** (case-folded, stop-words out, but negations kept, so "Sam likes tea"
and "Sam does not like tea" differ, and so do "lives in Porto" and "lives in Lisbon") **and** their vectors' cosine
is at least ``dedup.similarity``. Paraphrases with other words are left alone: merging facts that merely sound alike
would lose what tells them apart.

**The merge.** The survivor has the higher confidence (then more accesses, then it is the older). The duplicate is
kept but hidden like a superseded fact: ``status = "duplicate"``, ``superseded_by`` the survivor, ``SUPERSEDES``
from it, and valid (for ``facts_as_of``) until the survivor was said. The survivor gains the duplicate's source
turns (``DERIVED_FROM``) and entities (``ABOUT``), the higher confidence and the summed access count.

**Undo** removes the edges the run added to the survivor and puts the duplicate back as it was (while it is still
that survivor's duplicate). The survivor gives back what the merge added (:mod:`~agentx_memory.dedup.revert`): the
duplicate's access count, and its confidence and last access while the survivor still holds them; a recall or a
decay of the survivor since the merge stays.
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any, Final

from ..graph import cypher
from ..semantic import SemanticMemory
from ..stopwords import STOP_WORDS
from ..timeutil import now_ms
from .clusters import unit_rows
from .driver import DedupKind
from .report import DedupReport
from .revert import reverted_values

__all__ = ["FACTS", "content_words", "undo_fact_merge"]

#: Words that turn a claim around: never left out when comparing claims.
NEGATIONS: Final = frozenset({"no", "nor", "not", "t", "don", "never", "none", "nothing"})

_WORD = re.compile(r"\w+")


def content_words(claim: str) -> frozenset[str]:
    """The words that say what a claim says: case-folded, stop-words out, negations kept."""
    return frozenset(w for w in _WORD.findall(claim.casefold()) if w not in STOP_WORDS or w in NEGATIONS)


def _standing(f: dict[str, Any]) -> tuple[Any, ...]:
    return (-float(f["confidence"] or 0), -int(f["accesses"] or 0), f["created_at"] or 0, f["id"])


def _pairs(facts: list[dict[str, Any]], threshold: float) -> tuple[list[tuple[float, int, int]], int]:
    groups: dict[tuple[str, str, frozenset[str]], list[int]] = defaultdict(list)
    for i, f in enumerate(facts):
        words = content_words(f["claim"])
        if words:  # a merge hides the loser from its readers: only facts with the same readers pair
            groups[(f["channel"], f["private_to"], words)].append(i)
    vectors = unit_rows(facts)
    found, compared = [], 0
    for members in groups.values():
        for x, i in enumerate(members):
            for j in members[x + 1:]:
                a, b = facts[i], facts[j]
                if a["temporal"] and b["temporal"] and a["temporal"] != b["temporal"]:
                    continue
                compared += 1
                cosine = float(vectors[i] @ vectors[j])
                if cosine >= threshold:
                    found.append((cosine, i, j))
    return found, compared


async def _merge(semantic: SemanticMemory, report: DedupReport, change: dict[str, Any]) -> bool:
    graph = semantic.ctx.graph
    params = {"survivor_id": change["survivor_id"], "loser_id": change["loser_id"], "user_id": change["user_id"],
              "run_id": report.run_id}
    state = (await graph.read(cypher.FACT_MERGE_STATE, params))[0]
    # recorded before the first write: a merge cut short is undone like a whole one
    report.changes.append({**change, "survivor_before": state["survivor"], "loser_before": state["loser"],
                           "loser_values": state["loser_values"]})
    await report.save()
    await graph.write(cypher.COPY_FACT_SOURCES, params)
    await graph.write(cypher.COPY_FACT_ABOUT, params)
    await graph.write(cypher.MERGE_FACT, {**params, "now": now_ms()})
    await semantic.ctx.audit.log_write(
        "merge", "semantic", None, [change["survivor_id"], change["loser_id"]],
        {"kind": "fact", "survivor": change["survivor_id"], "merged": change["claims"][1],
         "similarity": change["similarity"]}, user_id=change["user_id"])
    return True


#: Facts in a dedup pass (:mod:`agentx_memory.dedup.driver`).
FACTS = DedupKind(
    name="fact", read=cypher.DEDUP_FACTS, pairs=_pairs, standing=_standing,
    describe=lambda survivor, loser: {"claims": [survivor["claim"], loser["claim"]]}, merge=_merge)


async def undo_fact_merge(semantic: SemanticMemory, run_id: str, change: dict[str, Any]) -> bool:
    """Undo one fact merge of the run ``run_id`` (see the module docstring); False when neither fact is left to
    restore (both forgotten since)."""
    graph = semantic.ctx.graph
    user, survivor_id, loser_id = change["user_id"], change["survivor_id"], change["loser_id"]
    params = {"survivor_id": survivor_id, "loser_id": loser_id, "user_id": user}
    now = (await graph.read(cypher.FACT_UNDO_STATE, params))[0]
    if now["survivor"] is not None:
        await graph.write(cypher.REMOVE_MERGED_FACT_EDGES, {"id": survivor_id, "user_id": user, "run_id": run_id})
        before = change["survivor_before"]
        loser = change.get("loser_values")  # runs recorded before it existed put the survivor's values back whole
        values = before if loser is None else reverted_values(before, _merged(before, loser), now["survivor"],
                                                              counts=("access_count",))
        await graph.write(cypher.UNDO_FACT_SURVIVOR, {"id": survivor_id, "user_id": user, "values": values})
    if now["loser"] is not None:
        await graph.write(cypher.UNDO_FACT_LOSER, {"id": loser_id, "user_id": user, "survivor_id": survivor_id,
                                                   "values": change["loser_before"]})
    return now["survivor"] is not None or now["loser"] is not None


def _merged(survivor: dict[str, Any], loser: dict[str, Any]) -> dict[str, Any]:
    """The survivor's values as ``MERGE_FACT`` wrote them from both facts' values before the merge (the same rule
    as that statement's; keep the two in step)."""
    s_conf, l_conf = survivor.get("confidence"), loser.get("confidence")
    s_last, l_last = survivor.get("last_accessed"), loser.get("last_accessed")
    return {"confidence": l_conf if s_conf is not None and l_conf is not None and l_conf > s_conf else s_conf,
            "access_count": int(survivor.get("access_count") or 0) + int(loser.get("access_count") or 0),
            "last_accessed": l_last if (l_last or 0) > (s_last or 0) else s_last}
