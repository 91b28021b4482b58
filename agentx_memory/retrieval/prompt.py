"""Render a :class:`~agentx_memory.retrieval.bundle.MemoryBundle` as a system-message block (spec 000 style)::

    [Control Memory -- Rules to Follow]
    - (high) Never use range() for unknown-length pagination [guards against: pagination_incomplete]
    [Episodic Memory -- Relevant Past Conversations]
    - (similarity: 0.87) 2023-05-08 user: Previously filed Rule 37 exception for Mitchell Ranch 2H...
    [Semantic Memory -- Known Facts]
    - (confidence: 0.95) Alice lives in Lisbon [current]
    [Entities]
    - Lisbon (place): capital of Portugal
    [Procedural Memory -- Strategies That Worked]
    - (success rate: 0.83) Search the docs first, then ask -- tools: search, read
    [Active Goals]
    - (priority 2) Ship the Rust port by June
    [User Profile]
    - preferences: {"tone": "brief"}

The block never exceeds ``max_tokens`` (counted with :func:`agentx_memory.tokens.count_tokens`): rules (control
memories, seed 001) are taken first, then items best-score first across all kinds until the first one that does not
fit, so the lowest-scored items are the ones
dropped (a better-scored item is never left out for a worse one that happens to be shorter); goals and the profile
come after the scored memories and are dropped first when space runs out. Each line is clipped to 600
characters so one long turn cannot crowd out the rest.

This module knows nothing of :class:`~agentx_memory.retrieval.bundle.MemoryBundle` (the bundle calls
:func:`render_prompt` with its items), so the two import in one direction only.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Iterable, Sequence
from typing import Any, Protocol

from ..models import Goal, UserProfile
from ..tokens import count_tokens

__all__ = ["SECTION_TITLES", "PromptItem", "compose_prompt", "render_prompt"]


class PromptItem(Protocol):
    """A scored memory as the prompt shows it (the ``Scored*`` models of the bundle)."""

    @property
    def item(self) -> Any:
        """The stored memory (a turn, fact, entity or strategy)."""
        ...

    @property
    def score(self) -> float:
        """Its score."""
        ...

    @property
    def cosine(self) -> float | None:
        """Its cosine similarity to the query, when known."""
        ...


SECTION_TITLES = {
    "control": "[Control Memory -- Rules to Follow]",
    "turn": "[Episodic Memory -- Relevant Past Conversations]",
    "fact": "[Semantic Memory -- Known Facts]",
    "entity": "[Entities]",
    "strategy": "[Procedural Memory -- Strategies That Worked]",
    "goal": "[Active Goals]",
    "profile": "[User Profile]",
}
_ORDER = ["control", "turn", "fact", "entity", "strategy", "goal", "profile"]
_MAX_LINE_CHARS = 600


def _clip(text: str, limit: int = _MAX_LINE_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _line(kind: str, scored: PromptItem) -> str:
    item = scored.item
    if kind == "turn":
        similarity = scored.cosine if scored.cosine is not None else scored.score
        return f"- (similarity: {similarity:.2f}) {item.timestamp:%Y-%m-%d} {item.role}: {_clip(item.content)}"
    if kind == "fact":
        tag = f" [{item.temporal}]" if item.temporal else ""
        return f"- (confidence: {item.confidence:.2f}) {_clip(item.claim)}{tag}"
    if kind == "entity":
        desc = f": {_clip(item.description, 200)}" if item.description else ""
        aliases = f" (also: {', '.join(item.aliases[:5])})" if item.aliases else ""
        return f"- {item.name} ({item.type}){aliases}{desc}"
    if kind == "control":
        pattern = f" [guards against: {_clip(item.error_pattern, 100)}]" if item.error_pattern else ""
        return f"- ({item.severity}) {_clip(item.content)}{pattern}"
    tools = f" -- tools: {', '.join(item.tool_sequence)}" if item.tool_sequence else ""
    steps = f" -- steps: {_clip('; '.join(item.steps), 300)}" if item.steps else ""
    return f"- (success rate: {item.success_rate:.2f}) {_clip(item.description)}{tools}{steps}"


def _profile_lines(profile: UserProfile | None) -> list[tuple[str, str, str]]:
    if profile is None:
        return []
    lines = []
    for name in ("preferences", "expertise_areas", "communication_style"):
        value = getattr(profile, name)
        if value:
            text = _clip(json.dumps(value, ensure_ascii=False), 300)
            digest = hashlib.sha256(text.encode()).hexdigest()[:16]  # a changed value is new: shown again
            lines.append(("profile", f"- {name.replace('_', ' ')}: {text}", f"profile:{name}:{digest}"))
    return lines


def render_prompt(scored: Iterable[tuple[str, PromptItem]], goals: Sequence[Goal], profile: UserProfile | None,
                  max_tokens: int) -> str:
    """The memories as text of at most ``max_tokens`` tokens (empty string if nothing fits).

    ``scored`` are ``(kind, item)`` pairs, in the order to take them (kind: ``control``, ``turn``, ``fact``,
    ``entity`` or ``strategy``).
    """
    return compose_prompt(scored, goals, profile, max_tokens)[0]


def compose_prompt(scored: Iterable[tuple[str, PromptItem]], goals: Sequence[Goal], profile: UserProfile | None,
                   max_tokens: int, skip: Collection[str] = frozenset()) -> tuple[str, list[str]]:
    """:func:`render_prompt` leaving out the items whose key is in ``skip``, and the keys of the items it shows:
    ``kind:id`` for memories and goals (``fact:<id>``), ``profile:<field>:<digest of its value>`` for profile lines
    (the injection ledger's item keys)."""
    if max_tokens <= 0:
        return "", []
    candidates: list[tuple[str, str, str]] = [(kind, _line(kind, item), f"{kind}:{item.item.id}")
                                              for kind, item in scored]
    candidates += [("goal", f"- (priority {g.priority}) {_clip(g.description)}", f"goal:{g.id}") for g in goals]
    candidates += _profile_lines(profile)
    candidates = [c for c in candidates if c[2] not in skip]

    chosen: dict[str, list[str]] = {}
    shown: list[str] = []

    def render(sections: dict[str, list[str]]) -> str:
        parts = []
        for kind in _ORDER:
            if sections.get(kind):
                parts.append(SECTION_TITLES[kind])
                parts.extend(sections[kind])
        return "\n".join(parts)

    # Strictly in priority order: the first line that does not fit ends the block, so a lower-scored item is never
    # shown while a better-scored one is left out (and goals/profile only when every scored memory fits).
    for kind, line, key in candidates:
        trial = {k: list(v) for k, v in chosen.items()}
        trial.setdefault(kind, []).append(line)
        if count_tokens(render(trial)) > max_tokens:
            break
        chosen = trial
        shown.append(key)
    return render(chosen), shown
