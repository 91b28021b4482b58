"""What a search runs with (:class:`SearchPlan`) and what it finds (:class:`Candidates`): plain data shared by the
search legs (:mod:`~agentx_memory.retrieval.legs`), the retriever and the RecallLayer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Final

import numpy as np

from ..settings import RecallSettings
from ..sql.search import SearchScope
from ..validation import first_bytes
from .timeparse import TimeRange

__all__ = ["LEXICAL_TEXT_BYTES", "Candidates", "SearchPlan", "combined_vector", "utc", "window_from_hours"]

#: The lexical legs read a question's first 32 KB (UTF-8), the default ``limits.max_text_bytes``. PostgreSQL matches
#: an OR of the question's words by recursing once per word: past some 20,000 distinct words (a question
#: ``limits.max_text_bytes`` was raised for) a search failed with "stack depth limit exceeded".
LEXICAL_TEXT_BYTES: Final = 32 * 1024


@dataclass
class SearchPlan:
    """What to search with. Built by the RecallLayer; plain data."""

    query: str
    user_id: str
    channels: list[str]
    top_k: int
    lexical_texts: list[str]
    vectors: list[tuple[str, np.ndarray]]  # (name, unit vector)
    reference_time: datetime
    window: tuple[datetime | None, datetime | None] = (None, None)
    time_ranges: list[TimeRange] = field(default_factory=list)
    entity_names: list[str] = field(default_factory=list)
    # the entities entity_names resolved to, when resolved before the search (None: the entities:resolved leg reads)
    resolved_entities: list[dict[str, Any]] | None = None
    # their names and aliases the question does not say, which the turns' lexical match searches too
    other_names: list[str] = field(default_factory=list)
    speaker_role: str | None = None  # "user" / "assistant" when the question's pronouns name one side only
    newest_wins: bool = False  # lift the turns of facts that replaced others (rerank.outrank_replaced)
    standing: bool = False  # lift the user's standing instructions and preferences (rerank.TurnSignals)
    include_episodic: bool = True
    include_semantic: bool = True
    include_procedural: bool = True
    recall: RecallSettings | None = None
    archive_horizon: datetime | None = None  # turns older than this may be archived (retention.conversation_days)
    agent_id: str | None = None  # an agent's recall: global memories and its own private ones (agentx_memory.agents)

    def __post_init__(self) -> None:
        self.lexical_texts = [first_bytes(text, LEXICAL_TEXT_BYTES) for text in self.lexical_texts]

    def scope(self) -> SearchScope:
        """Whose turns the plan reads: its user, channels and time window. Archived conversations count when the
        recall settings include them, or when the question is about their time: its window or one of its time
        phrases starts before the archive horizon ("last year" still finds last year's archived turns)."""
        start, end = self.window
        return SearchScope(self.user_id, self.channels, start, end, include_archived=self.reaches_archive(),
                           agent_id=self.agent_id)

    def reaches_archive(self) -> bool:
        """Whether the search includes archived turns (see :meth:`scope`)."""
        if self.recall and self.recall.include_archived:
            return True
        if self.archive_horizon is None:
            return False
        starts = [self.window[0], *(r.start for r in self.time_ranges)]
        return any(start is not None and start < self.archive_horizon for start in starts)

    def turn_text(self) -> str:
        """What the turns' lexical match searches: the question's keywords and :attr:`other_names` ("Maya" also
        matches "Maya Costa"). The facts' and entities' full text reads the question's own words: the resolved
        entities' facts come through the graph."""
        return first_bytes(" ".join([self.lexical_texts[0], *self.other_names]), LEXICAL_TEXT_BYTES)

    def query_vector(self) -> np.ndarray:
        """The one vector the turn legs search with (see :func:`combined_vector`)."""
        return combined_vector(self.vectors)


@dataclass
class Candidates:
    """Raw results of the per-type searches, before fusion."""

    turn_rows: dict[str, dict[str, Any]] = field(default_factory=dict)  # turn id → row with lexical and cosine
    cosine_floor: float = 0.0  # cosine of the last dense candidate: D is measured above it
    term_weights: dict[str, float] = field(default_factory=dict)  # lexeme → its idf in the turns' lexical leg
    average_length: float = 0.0  # of the searched turns, in distinct words (BM25's avgdl)
    fact_rows: dict[str, dict[str, Any]] = field(default_factory=dict)  # fact id → {"fact": …, "entity_ids": […]}
    fact_legs: dict[str, list[str]] = field(default_factory=dict)
    fact_cosine: dict[str, float] = field(default_factory=dict)
    fact_lexical: dict[str, float] = field(default_factory=dict)  # fact id → ts_rank of its words in the question
    entity_rows: dict[str, dict[str, Any]] = field(default_factory=dict)
    entity_legs: dict[str, list[str]] = field(default_factory=dict)
    entity_cosine: dict[str, float] = field(default_factory=dict)
    strategies: list[Any] = field(default_factory=list)

    def unloaded(self) -> tuple[list[str], list[str]]:
        """The fact and entity ids only the lexical leg found (it returns ids): their rows are still to be read."""
        facts = [i for i in self.fact_legs.get("lexical", []) if i not in self.fact_rows]
        entities = [i for i in self.entity_legs.get("lexical", []) if i not in self.entity_rows]
        return facts, entities

    def drop_unloaded(self) -> None:
        """Take every id without a row (not found, or in a channel not searched) out of the legs."""
        self.fact_legs = {k: [i for i in v if i in self.fact_rows] for k, v in self.fact_legs.items()}
        self.entity_legs = {k: [i for i in v if i in self.entity_rows] for k, v in self.entity_legs.items()}


def combined_vector(vectors: Sequence[tuple[str, np.ndarray]]) -> np.ndarray:
    """One query vector from the question's variants (question, statement, HyDE): their normalized mean."""
    total = np.sum([v for _, v in vectors], axis=0)
    norm = np.linalg.norm(total)
    return total / norm if norm else total


def utc(moment: datetime | None) -> datetime:
    """An aware UTC datetime (naive input is taken as UTC; None is now)."""
    if moment is None:
        return datetime.now(UTC)
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def window_from_hours(hours: float | None, reference: datetime) -> tuple[datetime | None, datetime | None]:
    """The ``time_window_hours`` filter as a [start, end) range ending at the reference time."""
    if hours is None:
        return None, None
    return reference - timedelta(hours=hours), reference + timedelta(microseconds=1)
