"""Render a :class:`~agentx_memory.retrieval.bundle.MemoryBundle` as a system-message block (spec 000 style)::

    [Control Memory -- Rules to Follow]
    - (high) Never use range() for unknown-length pagination [guards against: pagination_incomplete]
    [Working Memory -- Current Conversation]
    - scratchpad: Rule 37 exception drafted; waiting for the survey plat
    - entity: Mitchell Ranch 2H (well; id 42-317-01234)
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

The block never exceeds ``max_tokens`` (counted with :func:`agentx_memory.tokens.count_tokens`). Lines are taken in
this order until the first one that does not fit:

1. rules (control memories, seed 001);
2. the conversation's working-memory state when one is given (:class:`WorkingState`, seed 000's context assembly):
   its scratchpad, then its entities in their stored order;
3. the recalled items, best-score first across all kinds, so the lowest-scored items are the ones dropped (a
   better-scored item is never left out for a worse one that happens to be shorter);
4. goals, then the profile: dropped first when space runs out.

Each line is clipped to 600 characters (the scratchpad to 2,000) so one long item cannot crowd out the rest.

This module knows nothing of :class:`~agentx_memory.retrieval.bundle.MemoryBundle` (the bundle calls
:func:`render_prompt` with its items), so the two import in one direction only.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Iterable, Sequence
from typing import Any, Protocol

from pydantic import BaseModel, Field

from ..models import Goal, UserProfile
from ..tokens import count_tokens

__all__ = ["SECTION_TITLES", "PromptItem", "WorkingState", "compose_prompt", "render_prompt"]


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


class WorkingState(BaseModel):
    """A conversation's working-memory state as the prompt shows it (spec 000's hash fields): the ``scratchpad``
    (free-form notes) and the ``entities`` (dicts with ``type``, ``id``, ``name``). Read it with
    :meth:`~agentx_memory.working.WorkingMemory.working_state`."""

    scratchpad: str | None = None
    entities: list[dict[str, Any]] = Field(default_factory=list)


SECTION_TITLES = {
    "control": "[Control Memory -- Rules to Follow]",
    "working": "[Working Memory -- Current Conversation]",
    "turn": "[Episodic Memory -- Relevant Past Conversations]",
    "fact": "[Semantic Memory -- Known Facts]",
    "entity": "[Entities]",
    "strategy": "[Procedural Memory -- Strategies That Worked]",
    "goal": "[Active Goals]",
    "profile": "[User Profile]",
}
_ORDER = ["control", "working", "turn", "fact", "entity", "strategy", "goal", "profile"]
_MAX_LINE_CHARS = 600
_MAX_SCRATCHPAD_CHARS = 2000


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


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _working_lines(state: WorkingState | None) -> list[tuple[str, str, str]]:
    # key: working:<part>:<digest of the line>, so a changed scratchpad or entity is new to the injection ledger
    if state is None:
        return []
    lines = []
    if state.scratchpad and state.scratchpad.strip():
        line = f"- scratchpad: {_clip(state.scratchpad, _MAX_SCRATCHPAD_CHARS)}"
        lines.append(("working", line, f"working:scratchpad:{_digest(line)}"))
    for entity in state.entities:
        name = entity.get("name") or entity.get("id")
        if name is None:
            continue
        details = [str(entity["type"])] if entity.get("type") else []
        if entity.get("id") is not None and entity.get("id") != name:
            details.append(f"id {entity['id']}")
        suffix = f" ({_clip('; '.join(details), 200)})" if details else ""
        line = f"- entity: {_clip(str(name), 200)}{suffix}"
        lines.append(("working", line, f"working:entity:{_digest(line)}"))
    return lines


def render_prompt(scored: Iterable[tuple[str, PromptItem]], goals: Sequence[Goal], profile: UserProfile | None,
                  max_tokens: int, working: WorkingState | None = None) -> str:
    """The memories as text of at most ``max_tokens`` tokens (empty string if nothing fits).

    ``scored`` are ``(kind, item)`` pairs, in the order to take them (kind: ``control``, ``turn``, ``fact``,
    ``entity`` or ``strategy``); ``working`` is the conversation's working-memory state, taken right after the rules.
    """
    return compose_prompt(scored, goals, profile, max_tokens, working=working)[0]


def compose_prompt(scored: Iterable[tuple[str, PromptItem]], goals: Sequence[Goal], profile: UserProfile | None,
                   max_tokens: int, skip: Collection[str] = frozenset(),
                   working: WorkingState | None = None) -> tuple[str, list[str]]:
    """:func:`render_prompt` leaving out the items whose key is in ``skip``, and the keys of the items it shows:
    ``kind:id`` for memories and goals (``fact:<id>``), ``profile:<field>:<digest of its value>`` for profile lines,
    ``working:scratchpad:<digest>`` / ``working:entity:<digest>`` for working-memory lines (the injection ledger's
    item keys: a changed scratchpad is shown again)."""
    if max_tokens <= 0:
        return "", []
    pairs = list(scored)
    rules = [(kind, _line(kind, item), f"{kind}:{item.item.id}") for kind, item in pairs if kind == "control"]
    candidates: list[tuple[str, str, str]] = [*rules, *_working_lines(working)]
    candidates += [(kind, _line(kind, item), f"{kind}:{item.item.id}") for kind, item in pairs if kind != "control"]
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
