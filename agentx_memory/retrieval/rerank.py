"""Rerank: the pure stages between fused candidates and the returned lists (no I/O; plain rows and scores in).

Turns go through these stages, in this order (the retriever runs them; each is a function or small class here):

1. **signals** — :class:`TurnSignals` scores every candidate row (:class:`TurnDraft`): its fused legs (``bm25``,
   ``vector``), the question's word pairs it says in order (``phrase``), the best relevance of its neighbours
   (``neighbour``), of its conversation (``session``), the one participant the question names (``speaker``), the
   question's time phrase (``time``), a standing instruction or preference of the user when the question asks for
   help (``standing``); then :func:`lend_fact_scores`
   (``fact``: a fact that matches the question lifts the turn it was derived from by its match),
   :func:`add_recency` and :func:`outrank_replaced` (``replaces``: newest wins — the turn of a fact that replaced
   another ranks just above the turns of the replaced fact);
2. **order** — :func:`best_first` (score, then id) and :func:`unique_by_content` (exact duplicates of content out);
3. **diversity** — :func:`mmr`: maximal marginal relevance over the candidates' embeddings with
   ``retrieval.mmr_lambda`` (1 = off);
4. **cap** — :func:`cap_per_conversation`: at most ``retrieval.max_per_conversation`` turns per conversation while
   other conversations can fill the list.

Facts (:func:`finish_facts`: temporal tag, recency, one per claim), entities (:class:`GraphExpansion`: the graph
around the best entities) and strategies (:func:`rank_strategies`) get their signals here too. Every signal is added
with ``item.add(name, value, weight, detail)``, so a score is always the sum of its explained contributions.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, Final, Protocol

import numpy as np

from ..models import Entity, Fact, Relationship
from ..procedural import SIMILARITY_SHARE, StrategyMatch
from ..rows import same_text
from ..settings import RecallSettings, RetrievalSettings
from .bundle import ScoredEntity, ScoredFact, ScoredStrategy
from .standing import standing_kind
from .timeparse import TimeRange

__all__ = [
    "MIN_MMR_LAMBDA",
    "GraphExpansion",
    "SignalSink",
    "TurnDraft",
    "TurnSignals",
    "add_recency",
    "add_rrf_signals",
    "add_salience",
    "best_first",
    "best_matching_facts",
    "cap_per_conversation",
    "fact_sources",
    "finish_facts",
    "in_window",
    "lend_fact_scores",
    "mmr",
    "one_per_claim",
    "outrank_replaced",
    "rank_strategies",
    "recency",
    "unique_by_content",
]

#: The smallest lambda MMR uses: 0 would ignore relevance entirely (and make the explained penalty infinite).
MIN_MMR_LAMBDA: Final = 1e-3

_LEXICAL_SIGNAL: Final = ("bm25", "BM25 of the turn's words (and, less, its neighbours'), relative to the best")
_VECTOR_SIGNAL: Final = ("vector", "cosine above the candidate floor, relative to the best")

#: ``retrieval.temporal_boost_*`` setting of a fact's temporal tag.
_TEMPORAL_TAG: Final = {"current": "temporal_boost_current", "past": "temporal_boost_past"}


class SignalSink(Protocol):
    """Anything that collects named signals into a score (:class:`TurnDraft`, the ``Scored*`` models)."""

    @property
    def score(self) -> float:
        """The sum of the contributions so far."""
        ...

    def add(self, name: str, value: float, weight: float, detail: str = "") -> None:
        """Add (or replace) a signal contributing ``value * weight``."""
        ...


class TurnDraft:
    """A turn candidate being scored: its row and its signals as plain tuples (cheap for hundreds of candidates)."""

    __slots__ = ("row", "score", "signals")

    def __init__(self, row: Mapping[str, Any]):
        self.row = row
        self.signals: dict[str, tuple[float, float, str]] = {}
        self.score = 0.0

    @property
    def id(self) -> str:
        """The turn's id."""
        return str(self.row["turn_id"])

    def add(self, name: str, value: float, weight: float, detail: str = "") -> None:
        """Add (or replace) a signal; the score stays the sum of ``value * weight``."""
        old = self.signals.get(name)
        if old is not None:
            self.score -= old[0] * old[1]
        self.signals[name] = (value, weight, detail)
        self.score += value * weight


# --- signals -------------------------------------------------------------------------------------------------------

def recency(moment: datetime, reference: datetime, half_life_days: float) -> float:
    """``0.5 ** (age / half-life)``: 1 at the reference time, 0.5 one half-life before it (never above 1)."""
    age_days = max(0.0, (reference - moment).total_seconds() / 86400)
    return 0.5 ** (age_days / half_life_days)


def add_recency(item: SignalSink, relevance: float, type_weight: float, moment: datetime, reference: datetime,
                settings: RetrievalSettings) -> None:
    """Recency lifts an item by up to ``recency_weight`` of its own relevance (a nudge, never a ranking of its own)."""
    item.add("recency", relevance * recency(moment, reference, settings.recency_half_life_days),
             settings.recency_weight * type_weight, f"relevance x 0.5^(age / {settings.recency_half_life_days} days)")


def add_rrf_signals(item: SignalSink, parts: Mapping[str, float], weight: float) -> None:
    """One signal per fused leg (see :func:`~agentx_memory.retrieval.fusion.fuse`)."""
    for leg, value in parts.items():
        item.add(leg, value, weight, f"reciprocal-rank fusion, {leg} leg")


class TurnSignals:
    """Scores turn rows from their fused legs and their surroundings (neighbours, conversation, speaker, time).

    ``rows`` are candidate rows by turn id (``conversation_id``, ``turn_index``, ``timestamp``, ``speaker``);
    ``relevance`` their fused legs (:func:`~agentx_memory.retrieval.fusion.turn_relevance`); ``named`` the
    casefolded names in the question that are participants; ``speaker_role`` the role the question's pronouns name
    ("user" for "I"/"my"), which counts as the named speaker when the question names no participant; ``standing``
    whether the question asks for help, so the user's standing instructions and preferences on its topic are lifted
    (``recall.standing_weight``); every signal is weighted by ``episodic_weight``.
    """

    def __init__(self, rows: Mapping[str, Mapping[str, Any]], relevance: Mapping[str, Mapping[str, float]],
                 recall: RecallSettings, episodic_weight: float, named: Sequence[str] = (),
                 time_ranges: Sequence[TimeRange] = (), speaker_role: str | None = None, *, standing: bool = False):
        self.rows = rows
        self.relevance = relevance
        self.recall = recall
        self.w = episodic_weight
        self.named = list(named)
        self.time_ranges = list(time_ranges)
        self.speaker_role = speaker_role
        self.standing = standing
        self.base = {i: sum(legs.values()) for i, legs in relevance.items()}
        self.by_position = {(r["conversation_id"], r["turn_index"]): i for i, r in rows.items()}
        self.best_in_conversation: dict[str, float] = {}
        for turn_id, row in rows.items():
            conversation = row["conversation_id"]
            self.best_in_conversation[conversation] = max(self.best_in_conversation.get(conversation, 0.0),
                                                          self.base[turn_id])

    def drafts(self) -> dict[str, TurnDraft]:
        """Every row scored, by turn id (in the order of ``rows``)."""
        return {turn_id: self.draft(turn_id) for turn_id in self.rows}

    def draft(self, turn_id: str) -> TurnDraft:
        """One row scored: legs, phrase, neighbour, session, speaker, time and standing signals, in that order."""
        draft = TurnDraft(self.rows[turn_id])
        self._legs(draft, self.relevance[turn_id])
        self._phrase(draft)
        self._neighbour(draft)
        self._session(draft)
        self._speaker(draft)
        self._time(draft)
        self._standing(draft)
        return draft

    def _legs(self, draft: TurnDraft, legs: Mapping[str, float]) -> None:
        for leg, value in legs.items():
            lexical = leg == "lexical"
            weight = self.recall.lexical_weight if lexical else self.recall.vector_weight
            name, detail = _LEXICAL_SIGNAL if lexical else _VECTOR_SIGNAL
            draft.add(name, value / weight if weight else 0.0, self.w * weight, detail)

    def _phrase(self, draft: TurnDraft) -> None:
        phrase = draft.row.get("phrase")
        if self.recall.hybrid and self.recall.phrase_weight and phrase:
            draft.add("phrase", float(phrase), self.w * self.recall.phrase_weight,
                      "share of the question's word pairs it says in the question's order")

    def _neighbour(self, draft: TurnDraft) -> None:
        n = self.recall.neighbours
        if not (n and self.recall.neighbour_weight):
            return
        conversation, index = draft.row["conversation_id"], draft.row["turn_index"]
        near = [self.base[self.by_position[(conversation, index + d)]]
                for d in range(-n, n + 1) if d and (conversation, index + d) in self.by_position]
        if near and max(near) > 0:
            draft.add("neighbour", max(near), self.w * self.recall.neighbour_weight,
                      "best relevance of the turns next to it")

    def _session(self, draft: TurnDraft) -> None:
        best = self.best_in_conversation[draft.row["conversation_id"]]
        if self.recall.session_weight and best > 0:
            draft.add("session", best, self.w * self.recall.session_weight, "best relevance in its conversation")

    def _speaker(self, draft: TurnDraft) -> None:
        if self.named:
            speaker = str(draft.row.get("speaker") or "").casefold()
            if len(self.named) == 1 and speaker == self.named[0]:
                draft.add("speaker", 1.0, self.w * self.recall.speaker_weight,
                          "spoken by the one participant the question names")
        elif self.speaker_role and draft.row.get("role") == self.speaker_role:
            pronoun = "I/my" if self.speaker_role == "user" else "you/your"
            draft.add("speaker", 1.0, self.w * self.recall.speaker_weight,
                      f"spoken by the {self.speaker_role}, whom the question's '{pronoun}' names")

    def _time(self, draft: TurnDraft) -> None:
        """Inside a time phrase of the question: a calendar date it names weighs ``date_weight``, a phrase read from
        the reference time ``time_weight``; inside several, the heaviest counts once."""
        inside = [r for r in self.time_ranges if r.contains(draft.row["timestamp"])]
        if inside:
            weight, phrase = max((self.recall.date_weight if r.calendar else self.recall.time_weight, r.phrase)
                                 for r in inside)
            draft.add("time", 1.0, self.w * weight, f"inside the question's time phrase '{phrase}'")

    def _standing(self, draft: TurnDraft) -> None:
        if not (self.standing and self.recall.standing_weight) or draft.row.get("role") != "user":
            return
        relevance = self.base[draft.id]
        kind = standing_kind(str(draft.row.get("content") or "")) if relevance > 0 else None
        if kind:
            draft.add("standing", relevance, self.w * self.recall.standing_weight,
                      f"the user states a standing {kind}: its relevance again, for a request")


def fact_sources(facts: Iterable[ScoredFact], match: Mapping[str, float], top_k: int
                 ) -> dict[str, tuple[str, float]]:
    """The turns the ``top_k`` facts that best match the question (``match``, by fact id) were derived from: turn id
    → (fact id, its match); a turn two of them came from keeps the better match."""
    out: dict[str, tuple[str, float]] = {}
    for fact in best_matching_facts(facts, match, top_k):
        out.setdefault(str(fact.item.source_turn_id), (fact.id, match[fact.id]))
    return out


def best_matching_facts(facts: Iterable[ScoredFact], match: Mapping[str, float], top_k: int) -> list[ScoredFact]:
    """The ``top_k`` facts with a source turn that match the question best (``match``, by fact id), best first."""
    ranked = sorted((f for f in facts if match.get(f.id, 0.0) > 0 and f.item.source_turn_id),
                    key=lambda f: (-match[f.id], f.id))
    return ranked[:top_k]


def lend_fact_scores(drafts: Mapping[str, SignalSink], sources: Mapping[str, tuple[str, float]], share: float,
                     full_match: float, episodic_weight: float) -> None:
    """A fact lifts the turn it was derived from (when that turn is a candidate) by ``share`` of a perfect turn match
    (``full_match``: the turn legs' weights) times the fact's own match of the question: a fact that matches one
    word of the question lends little, whatever else (its entity, its tag) ranks it among the facts."""
    for turn_id, (fact_id, match) in sources.items():
        if turn_id in drafts:
            drafts[turn_id].add("fact", share * full_match * match, episodic_weight,
                                f"source of fact {fact_id} (its match {match:.2f})")


def outrank_replaced(drafts: Mapping[str, TurnDraft], said_by: Mapping[str, str],
                     replaced: Mapping[str, Sequence[str]], reference: datetime, margin: float = 1e-3) -> None:
    """Newest wins: the turn a matching fact was said in (``said_by``: fact id → source turn id) is lifted just above
    the best-scored turn that said a fact it replaced (``replaced``: fact id → the replaced facts' source turns), when
    that turn scores higher and the newer turn was said by the ``reference`` time (as of an earlier time, the older
    statement still held). Call it on final scores; it only reorders the turns of one slot."""
    for fact_id, turn_id in said_by.items():
        newer = drafts.get(turn_id)
        older = [drafts[t] for t in replaced.get(fact_id, ()) if t in drafts and t != turn_id]
        if newer is None or not older or newer.row["timestamp"] > reference:
            continue
        best = max(older, key=lambda d: d.score)
        if best.score < newer.score:
            continue
        lifted = newer.signals.get("replaces")  # two facts of one turn: the higher lift counts, once
        base = newer.score - (lifted[0] * lifted[1] if lifted else 0.0)
        newer.add("replaces", best.score + margin - base, 1.0,
                  f"said fact {fact_id}, which replaced what turn {best.id} said")


# --- order, diversity, cap -----------------------------------------------------------------------------------------

def best_first(drafts: Iterable[TurnDraft]) -> list[TurnDraft]:
    """Highest score first; equal scores by turn id, so the order never depends on storage order."""
    return sorted(drafts, key=lambda d: (-d.score, d.id))


def unique_by_content(drafts: Iterable[TurnDraft]) -> list[TurnDraft]:
    """The first of every group of turns with the same text (:func:`~agentx_memory.rows.same_text`)."""
    seen: set[str] = set()
    out = []
    for draft in drafts:
        key = same_text(str(draft.row["content"]))
        if key not in seen:
            seen.add(key)
            out.append(draft)
    return out


def mmr(drafts: Sequence[TurnDraft], vectors: Mapping[str, Sequence[float]], lam: float, pool: int
        ) -> list[TurnDraft]:
    """Maximal marginal relevance (Carbonell & Goldstein 1998) over the first ``pool`` drafts (best first).

    Repeatedly picks the draft maximizing ``lam * score / best - (1 - lam) * max cosine to the drafts picked before``
    (``best``: the pool's best score; cosine over ``vectors``, by turn id; a draft without a vector is similar to
    nothing). A picked draft that resembles an earlier one gets a ``diversity`` signal of ``-(1 - lam) / lam * best``
    per unit of that cosine, so its score is ``best / lam`` times its MMR value and the pool stays sorted by score.
    Drafts past the pool follow unchanged. ``lam >= 1`` returns the drafts as they are; ``lam`` below
    :data:`MIN_MMR_LAMBDA` is read as it.
    """
    if lam >= 1 or len(drafts) < 2:
        return list(drafts)
    lam = max(lam, MIN_MMR_LAMBDA)
    head, tail = list(drafts[:pool]), list(drafts[pool:])
    best = max(d.score for d in head)
    scale = best if best > 0 else 1.0
    relevance = np.array([d.score / scale for d in head])
    unit = _unit_matrix([vectors.get(d.id) for d in head])
    nearest = np.zeros(len(head))  # per draft: the highest cosine to a picked draft (never below 0)
    free = np.ones(len(head), dtype=bool)
    order = []
    for _ in range(len(head)):
        value = np.where(free, lam * relevance - (1 - lam) * nearest, -np.inf)
        pick = int(np.argmax(value))  # the first of equal values: the better-ranked draft
        free[pick] = False
        order.append(head[pick])
        if nearest[pick] > 0:
            head[pick].add("diversity", float(nearest[pick]), -(1 - lam) / lam * scale,
                           f"cosine to a better turn (MMR, lambda {lam:g})")
        nearest = np.maximum(nearest, unit @ unit[pick])
    return order + tail


def _unit_matrix(vectors: Sequence[Sequence[float] | None]) -> np.ndarray:
    """The vectors as unit rows; a missing or zero vector is a zero row (cosine 0 to everything)."""
    dimension = max((len(v) for v in vectors if v is not None), default=1)
    matrix = np.zeros((len(vectors), dimension), dtype=np.float64)
    for i, vector in enumerate(vectors):
        if vector is not None:
            matrix[i] = vector
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)


def cap_per_conversation(drafts: Iterable[TurnDraft], cap: int, top_k: int,
                         group: Callable[[TurnDraft], str] = lambda d: str(d.row["conversation_id"])
                         ) -> list[TurnDraft]:
    """The first ``top_k`` drafts with at most ``cap`` per conversation (0: no cap); drafts over the cap fill the
    list (in order) only when too few others are left: the cap diversifies, it never leaves the list short."""
    if cap <= 0:
        return list(itertools.islice(drafts, top_k))
    chosen: list[TurnDraft] = []
    overflow: list[TurnDraft] = []
    per_group: dict[str, int] = {}
    for draft in drafts:
        key = group(draft)
        count = per_group.get(key, 0)
        if count >= cap:
            overflow.append(draft)
            continue
        per_group[key] = count + 1
        chosen.append(draft)
        if len(chosen) == top_k:
            break
    if len(chosen) < top_k:
        chosen += overflow[: top_k - len(chosen)]
    return chosen


# --- facts, entities, strategies -----------------------------------------------------------------------------------

def in_window(moment: datetime, window: tuple[datetime | None, datetime | None]) -> bool:
    """Whether ``moment`` lies in the ``[start, end)`` window (an open side does not bound)."""
    start, end = window
    return not ((start and moment < start) or (end and moment >= end))


def finish_facts(items: Iterable[ScoredFact], settings: RetrievalSettings, reference: datetime) -> list[ScoredFact]:
    """Temporal-tag and recency signals on fused facts, then one fact per claim (a promoted copy and its original
    count once), best first."""
    items = list(items)
    for item in items:
        relevance = item.score / settings.facts_weight if settings.facts_weight else 0.0
        _add_temporal_tag(item, relevance, settings)
        add_recency(item, relevance, settings.facts_weight, item.item.created_at, reference, settings)
    return one_per_claim(items)


def _add_temporal_tag(item: ScoredFact, relevance: float, settings: RetrievalSettings) -> None:
    tag = item.item.temporal
    boost = getattr(settings, _TEMPORAL_TAG[tag]) if tag in _TEMPORAL_TAG else 1.0
    if boost != 1.0:
        item.add("temporal_tag", relevance, settings.facts_weight * (boost - 1.0), f"fact tagged {tag}: x{boost}")


def one_per_claim(items: Iterable[ScoredFact]) -> list[ScoredFact]:
    """The best-scored fact of each claim (whitespace and case ignored), best first."""
    best: dict[str, ScoredFact] = {}
    for item in sorted(items, key=lambda f: (-f.score, f.id)):
        best.setdefault(" ".join(item.item.claim.casefold().split()), item)
    return sorted(best.values(), key=lambda f: (-f.score, f.id))


class GraphExpansion:
    """Signals from the graph around the best-matched entities (the seeds, by their score).

    A neighbour of a better seed gets a ``graph`` signal (also when it is a seed itself: which of two near-tied
    entities makes the seeds must not decide whether the edge between them counts); a fact about a seed gets the
    seed's score as relevance, a fact about a seed's neighbour half of it.
    """

    def __init__(self, seed_score: Mapping[str, float], relationships: Iterable[Relationship]):
        self.seed_score = dict(seed_score)
        self.neighbours: dict[str, set[str]] = {}
        for rel in relationships:
            self.neighbours.setdefault(rel.source_id, set()).add(rel.target_id)
            self.neighbours.setdefault(rel.target_id, set()).add(rel.source_id)

    def entity(self, entity: Entity, scored: ScoredEntity | None, depth: int) -> ScoredEntity:
        """The entity scored (``scored`` if it was a candidate already), with its links and any ``graph`` signal."""
        linked = self.neighbours.get(entity.id, set())
        own = self.seed_score.get(entity.id, 0.0)
        parent = max((self.seed_score[i] for i in linked if self.seed_score.get(i, 0.0) > own), default=0.0)
        item = scored or ScoredEntity(item=entity)
        item.related = sorted(linked)
        if parent > 0:
            item.add("graph", parent, 0.5, f"{depth}-hop neighbour of a matched entity")
        return item

    def fact_relevance(self, fact: Fact) -> float:
        """The best seed score among the entities the fact is about, else half the best among their neighbours."""
        about = [self.seed_score[e] for e in fact.entity_ids if e in self.seed_score]
        if about:
            return max(about)
        near = [self.seed_score[n] for e in fact.entity_ids for n in self.neighbours.get(e, ()) if n in self.seed_score]
        return 0.5 * max(near, default=0.0)

    def facts(self, facts: Iterable[Fact], entities_weight: float) -> dict[str, tuple[Fact, float]]:
        """The facts with a positive relevance, by id, with that relevance per unit of ``entities_weight``."""
        out = {}
        for fact in facts:
            relevance = self.fact_relevance(fact)
            if relevance > 0:
                out[fact.id] = (fact, relevance / max(entities_weight, 1e-9))
        return out


def add_salience(item: ScoredEntity, settings: RetrievalSettings) -> None:
    """An entity's salience (which the decay job lowers while it is not used) lifts it by up to
    ``retrieval.salience_weight`` of its own relevance."""
    relevance = item.score / settings.entities_weight if settings.entities_weight else 0.0
    if relevance > 0 and settings.salience_weight:
        item.add("salience", relevance * item.item.salience, settings.entities_weight * settings.salience_weight,
                 f"relevance x salience {item.item.salience:.3g}")


def rank_strategies(matches: Iterable[StrategyMatch], procedural_weight: float) -> list[ScoredStrategy]:
    """Strategies (``StrategyMatch``: a strategy with its ``similarity``) scored ``0.7 * similarity + 0.3 * success
    rate``, times ``procedural_weight``; best first."""
    out = []
    for match in matches:
        scored = ScoredStrategy(item=match, cosine=match.similarity)
        scored.add("vector", match.similarity, procedural_weight * SIMILARITY_SHARE, "cosine similarity to the task")
        scored.add("success_rate", match.success_rate, procedural_weight * (1 - SIMILARITY_SHARE),
                   "Laplace-smoothed success rate")
        out.append(scored)
    return sorted(out, key=lambda x: (-x.score, x.id))
