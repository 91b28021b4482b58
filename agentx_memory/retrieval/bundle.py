"""What recall returns: scored items with their explanation, and the :class:`MemoryBundle` that holds them.

Every scored item carries ``signals``: the contributions that make up its score (vector, lexical, graph, neighbour,
time, recency …), each with its raw value, weight and contribution; ``score`` is exactly the sum of the
contributions, so an explanation always adds up.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from ..models import ControlMemory, Entity, Fact, Goal, Strategy, Turn, UserProfile
from .prompt import WorkingState, compose_prompt

__all__ = [
    "MemoryBundle",
    "RecallMetrics",
    "Scored",
    "ScoredControl",
    "ScoredEntity",
    "ScoredFact",
    "ScoredStrategy",
    "ScoredTurn",
    "Signal",
    "TechniqueMetric",
    "WorkingState",
]

T = TypeVar("T", Turn, Fact, Entity, Strategy, ControlMemory)


class Signal(BaseModel):
    """One reason an item scored: ``contribution = value * weight``."""

    value: float
    weight: float
    contribution: float
    detail: str = ""


class Scored(BaseModel, Generic[T]):
    """A stored memory with its score and the signals that made it."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    item: T
    score: float = 0.0
    cosine: float | None = Field(None, description="cosine similarity to the query, when the vector leg saw it")
    signals: dict[str, Signal] = Field(default_factory=dict)

    @property
    def id(self) -> str:
        """The stored item's id."""
        return self.item.id

    @property
    def channel(self) -> str:
        """The channel the item was stored in."""
        return self.item.channel

    def add(self, name: str, value: float, weight: float, detail: str = "") -> None:
        """Add (or replace) a signal and recompute the score as the sum of contributions."""
        self.signals[name] = Signal(value=value, weight=weight, contribution=value * weight, detail=detail)
        self.score = sum(s.contribution for s in self.signals.values())

    def explain(self) -> dict[str, Any]:
        """``{"score": …, "signals": {name: {value, weight, contribution, detail}}}``."""
        return {"score": self.score, "signals": {k: v.model_dump() for k, v in self.signals.items()}}


class ScoredTurn(Scored[Turn]):
    """A recalled conversation turn."""


class ScoredFact(Scored[Fact]):
    """A recalled fact."""


class ScoredEntity(Scored[Entity]):
    """A recalled entity, with the ids of the entities linked to it."""
    related: list[str] = Field(default_factory=list, description="ids of entities linked to this one")


class ScoredStrategy(Scored[Strategy]):
    """A recalled strategy."""


class ScoredControl(Scored[ControlMemory]):
    """A recalled rule (control memory)."""


class TechniqueMetric(BaseModel):
    """How one retrieval technique ran: latency, candidates found, and why it was skipped if it was."""

    latency_ms: float = 0.0
    results: int = 0
    skipped: str | None = None
    detail: dict[str, Any] = Field(default_factory=dict)


class RecallMetrics(BaseModel):
    """Per-technique latency and result counts of one ``remember()`` call."""

    total_ms: float = 0.0
    embed_ms: float = 0.0
    techniques: dict[str, TechniqueMetric] = Field(default_factory=dict)
    skipped: dict[str, str] = Field(
        default_factory=dict,
        description="parts of recall left out because their store was unreachable (part → why); empty when every "
        "store answered",
    )


class MemoryBundle(BaseModel):
    """Everything recalled for a query: scored turns, facts, entities and strategies; active goals; the profile."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    query: str
    user_id: str
    channels: list[str]
    turns: list[ScoredTurn] = Field(default_factory=list)
    facts: list[ScoredFact] = Field(default_factory=list)
    entities: list[ScoredEntity] = Field(default_factory=list)
    strategies: list[ScoredStrategy] = Field(default_factory=list)
    controls: list[ScoredControl] = Field(default_factory=list, description="rules to follow, shown first")
    goals: list[Goal] = Field(default_factory=list)
    user_context: UserProfile | None = None
    metrics: RecallMetrics = Field(default_factory=RecallMetrics)
    filters: dict[str, Any] = Field(default_factory=dict, description="what self-query read from the question")

    @property
    def complete(self) -> bool:
        """False when a store was unreachable and recall answered without it (see ``metrics.skipped``)."""
        return not self.metrics.skipped

    def explain(self) -> dict[str, dict[str, Any]]:
        """For every item: its kind, score and signals, by id."""
        out: dict[str, dict[str, Any]] = {}
        for kind, items in self._kinds():
            for scored in items:
                out[scored.id] = {"kind": kind, **scored.explain()}
        return out

    def _kinds(self) -> list[tuple[str, list[Any]]]:
        return [("control", self.controls), ("turn", self.turns), ("fact", self.facts), ("entity", self.entities),
                ("strategy", self.strategies)]

    def all_scored(self) -> list[Scored]:
        """Every scored item of every kind, best first."""
        items: list[Scored] = [*self.controls, *self.turns, *self.facts, *self.entities, *self.strategies]
        return sorted(items, key=lambda s: (-s.score, s.id))

    def to_prompt(self, max_tokens: int = 1500, *, working: WorkingState | None = None) -> str:
        """A system-message block of the memories that fits ``max_tokens`` (lowest-scored items dropped first).

        ``working`` adds the conversation's working-memory state (its scratchpad and entities, seed 000's context
        assembly; read it with :meth:`WorkingMemory.working_state`) in its own section, taken right after the rules
        and before the recalled items (the order is in :mod:`agentx_memory.retrieval.prompt`)."""
        return self.prompt_block(max_tokens, working=working)[0]

    def prompt_block(self, max_tokens: int = 1500, *, skip: Collection[str] = frozenset(),
                     working: WorkingState | None = None) -> tuple[str, list[str]]:
        """:meth:`to_prompt` without the items whose key is in ``skip``, and the keys of the items it shows
        (``fact:<id>``, ``turn:<id>``, ``goal:<id>``, ``working:scratchpad:<digest>``, ...: the injection ledger's
        item keys; :meth:`WorkingMemory.inject` uses both)."""
        kinds = {id(s): kind for kind, items in self._kinds() for s in items}
        ordered = sorted(self.all_scored(), key=lambda s: kinds[id(s)] != "control")  # rules first, then by score
        return compose_prompt([(kinds[id(s)], s) for s in ordered], self.goals, self.user_context, max_tokens, skip,
                              working=working)
