"""Contradictions and corrections between a newly extracted fact and the user's stored facts.

Candidates: the user's active facts in the fact's channel of the same slot (the same first three words: a
lookup of :func:`~agentx_memory.fact_slots.slot_key` in its index, at any age, whatever entities the claims name —
the offline rules' "the user lives in …" names none), and for a correction also those ABOUT one of its entities or of
the last ``extraction.contradiction_window_days``. Two facts **contradict** when they
state the same single-valued thing with different values (:func:`same_slot`: the same first three words or more,
articles not counted, then a short, different remainder — "Sam lives in Porto." / "Sam lives in Lisbon."), and
neither is an event (tagged past or future: events accumulate, they do not replace each other). A new fact extracted
from a **correction** ("actually…", "no, I meant…"; the extractor fills ``corrects``) replaces the candidate it
corrects whatever the policy.

Resolution (``extraction.contradiction_policy``), by when each fact was said (``created_at``), not by write order:

* ``prefer_new``: the older fact is superseded by the newer (``(newer)-[:SUPERSEDES]->(older)``, status
  ``superseded``): hidden from recall, still read by id;
* ``prefer_old``: the newer fact is kept but rejected (status ``rejected``, superseded by the older): hidden;
* ``flag_review``: both stay visible with status ``review`` and are listed by ``facts_for_review``.

Every resolution is audited (operation ``resolve_contradiction``). The check is structural: it finds contradictions
between claims of the same shape (which the offline rules always produce and LLM answers often do), not between
paraphrases; docs/extraction.md says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from itertools import pairwise
from typing import Any, Final

from ..fact_slots import SLOT_WORDS, claim_words, slot_key
from ..graph import cypher
from ..models import Fact
from ..semantic import SemanticMemory
from ..timeutil import now_ms, to_ms

__all__ = ["Resolution", "resolve_contradictions", "same_slot"]

#: Verbs of liking, wanting or needing: what they take adds up ("Sam prefers using YOLOv5." / "… using TensorRT."),
#: however many words the two claims share.
_ATTITUDES: Final = frozenset({"like", "likes", "love", "loves", "enjoy", "enjoys", "prefer", "prefers", "hate",
                               "hates", "dislike", "dislikes", "want", "wants", "need", "needs"})
#: After "is"/"are", a word that describes rather than names a value ("… code is efficient." / "… is maintainable.",
#: "… app is deployed." / "… is running on port 3000."): descriptions add up; names, numbers and plain words
#: ("… manager is Maya Costa.", "… port 8000.", "… theme is dark.") are values.
_COPULAS: Final = frozenset({"is", "are", "was", "were"})
_DESCRIBING_ENDINGS: Final = ("ed", "ing", "able", "ible", "ive", "ous", "ful", "ent", "ant", "less", "ly")
_DESCRIBING: Final = frozenset({"secure", "correct", "ready", "done", "good", "fine", "robust", "stable", "safe",
                                "fast", "slow", "clean", "complete", "accurate", "optimal", "valid", "broken", "set"})
#: The longest remainder after the slot words that is still "a value".
VALUE_WORDS: Final = 6


@dataclass(frozen=True)
class Resolution:
    """One contradiction resolved: the kept and the replaced fact (``kept`` is None under flag_review)."""

    policy: str
    fact_ids: tuple[str, str]
    kept: str | None
    reason: str


def same_slot(a: str, b: str) -> bool:
    """Whether claims ``a`` and ``b`` give different values to one thing: at least :data:`SLOT_WORDS` leading words
    alike, none of them a verb of liking or wanting, then remainders of 1 to :data:`VALUE_WORDS` words that differ,
    are not both purposes ("… goal is to ship by May." / "… goal is to keep latency low.": goals add up) and, after
    "is", do not describe ("… code is efficient." / "… code is maintainable.").

    >>> same_slot("Sam lives in Porto.", "Sam lives in Lisbon.")
    True
    >>> same_slot("Sam loves hiking.", "Sam loves cooking.")
    False
    >>> same_slot("the user loves hiking.", "the user loves cooking.")
    False
    """
    wa, wb = claim_words(a), claim_words(b)
    common = 0
    while common < min(len(wa), len(wb)) and wa[common] == wb[common]:
        common += 1
    rest_a, rest_b = wa[common:], wb[common:]
    if _ATTITUDES.intersection(wa[:common]) or (_purpose(wa) and _purpose(wb)):
        return False
    if _COPULAS.intersection(wa[:common]) and (_describes(rest_a) or _describes(rest_b)):
        return False
    return (common >= SLOT_WORDS and 0 < len(rest_a) <= VALUE_WORDS and 0 < len(rest_b) <= VALUE_WORDS
            and rest_a != rest_b)


def _describes(rest: list[str]) -> bool:
    """Whether a remainder after "is" opens with a describing word (an adverb before it skipped)."""
    words = [w for w in rest if not (w.endswith("ly") and len(w) > 4)][:1] or rest[:1]
    return bool(words) and not any(c.isdigit() for c in words[0]) and (
        words[0] in _DESCRIBING or (len(words[0]) > 4 and words[0].endswith(_DESCRIBING_ENDINGS)))


def _purpose(words: list[str]) -> bool:
    """Whether the claim says what something is for ("… goal is to …", "… plan was to …")."""
    return any(w in _COPULAS and nxt == "to" for w, nxt in pairwise(words))


def _overlap(a: str, b: str) -> float:
    sa, sb = set(claim_words(a)), set(claim_words(b))
    return len(sa & sb) / max(1, len(sa | sb))


async def resolve_contradictions(semantic: SemanticMemory, facts: list[Fact], policy: str, window_days: float
                                 ) -> list[Resolution]:
    """Check each of ``facts`` (just written, one user and channel) against the stored candidates and resolve what
    contradicts it (see the module docstring); return the resolutions."""
    out: list[Resolution] = []
    hidden: set[str] = set()  # replaced during this call: no longer a candidate, no longer checked
    for fact in facts:
        if fact.status in ("superseded", "rejected", "duplicate", "expired") or fact.id in hidden:
            continue
        rows = await _candidates(semantic, fact, window_days)
        corrects = str(fact.metadata.get("corrects") or "")
        for row in rows:
            other = row["fact"]
            if other["id"] in hidden or fact.id in hidden:
                continue
            reason = _conflict(fact, other, corrects)
            if reason is None:
                continue
            resolution = await _apply(semantic, fact, other, "prefer_new" if reason == "correction" else policy,
                                      reason)
            out.append(resolution)
            if resolution.kept is not None:
                hidden.update(set(resolution.fact_ids) - {resolution.kept})
    return out


async def _candidates(semantic: SemanticMemory, fact: Fact, window_days: float) -> list[dict[str, Any]]:
    """The stored facts ``fact`` may replace: those of its slot, read by the slot key's index (none when no claim can
    be of the same slot as it: too short, a verb of liking or wanting among the slot words, or an event that corrects
    nothing); for a correction also those about its entities or of the last ``window_days``."""
    corrects = bool(fact.metadata.get("corrects"))
    key = slot_key(fact.user_id, fact.claim)
    scope = {"user_id": fact.user_id, "channels": [fact.channel], "exclude": [fact.id], "k": 200,
             # only facts with the same readers: a resolution hides one of the two from whoever read it
             "private_to": (fact.agent_id or "") if fact.scope == "agent" else ""}
    rows: list[dict[str, Any]] = []
    if key is not None and (corrects or fact.temporal not in ("past", "future")) and not _ATTITUDES.intersection(
            claim_words(fact.claim)[:SLOT_WORDS]):
        rows = await semantic.ctx.graph.read(cypher.SLOT_CANDIDATES, {**scope, "slot_key": key})
    if corrects:
        seen = {row["fact"]["id"] for row in rows}
        rows += [row for row in await semantic.ctx.graph.read(cypher.CORRECTION_CANDIDATES, {
            **scope, "entity_ids": fact.entity_ids, "since": to_ms(fact.created_at - timedelta(days=window_days))})
            if row["fact"]["id"] not in seen]
    return rows


def _conflict(fact: Fact, other: dict[str, Any], corrects: str) -> str | None:
    """Why ``fact`` replaces or contradicts ``other`` ("correction", "same slot, another value"), or None."""
    if corrects and (same_slot(fact.claim, other["claim"]) or _overlap(corrects, other["claim"]) >= 0.6):
        return "correction"
    if fact.temporal in ("past", "future") or other.get("temporal") in ("past", "future"):
        return None  # events accumulate, they do not replace each other
    return "same slot, another value" if same_slot(fact.claim, other["claim"]) else None


async def _apply(semantic: SemanticMemory, fact: Fact, other: dict[str, Any], policy: str, reason: str
                 ) -> Resolution:
    user = fact.user_id
    if policy == "flag_review":
        await semantic.ctx.graph.write(cypher.FLAG_CONFLICT, {"new_id": fact.id, "old_id": other["id"],
                                                               "user_id": user})
        kept = None
    else:
        newer_is_fact = to_ms(fact.created_at) >= (other.get("created_at") or 0)
        newer, older = (fact.id, other["id"]) if newer_is_fact else (other["id"], fact.id)
        if reason == "correction":
            newer, older = fact.id, other["id"]  # the correction wins, whenever the corrected fact was said
        keep, drop = (newer, older) if policy == "prefer_new" else (older, newer)
        status = "superseded" if policy == "prefer_new" else "rejected"
        await semantic.ctx.graph.write(cypher.SUPERSEDE_FACT, {"new_id": keep, "old_id": drop, "user_id": user,
                                                                "status": status, "now": now_ms()})
        kept = keep
    resolution = Resolution(policy, (fact.id, other["id"]), kept, reason)
    await semantic.ctx.audit.log_write(
        "resolve_contradiction", "semantic", fact.channel, [fact.id, other["id"]],
        {"policy": policy, "reason": reason, "kept": kept, "claims": [fact.claim, other["claim"]]}, user_id=user,
        conversation_id=fact.conversation_id)
    return resolution
