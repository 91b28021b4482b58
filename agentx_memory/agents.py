"""Agents of a user and the scope of what they write (seeds 001 and 002, issue 16).

A user may run several agents. Every memory can name the agent that wrote it (``agent_id``) and a scope:

* ``agent``: private to that agent: only it reads it;
* ``global``: shared by every agent of the user.

Seed 001's defaults, when a write does not say: a conversation turn an agent writes is private to it (episodic memory
is its own interaction trace); facts, strategies and control memories are global (knowledge, procedures and rules
are the user's). Entities and goals are always the user's (global). A write without an agent is the user's own and
global; ``scope="agent"`` without an agent is refused.

A read as an agent (``memory.for_agent("planner")``) sees global memories and its own private ones, never another
agent's private ones, through every read path. A read without an agent is the user's view: everything of the user.
"""

from __future__ import annotations

from typing import Final, Literal

from .errors import ValidationError
from .validation import check_id

__all__ = ["DEFAULT_SCOPES", "Scope", "check_agent", "resolve_scope"]

Scope = Literal["agent", "global"]

#: The scope of a write that does not give one, by memory kind (seed 001).
DEFAULT_SCOPES: Final[dict[str, Scope]] = {
    "episodic": "agent", "semantic": "global", "procedural": "global", "control": "global"}


def check_agent(agent_id: str | None) -> str | None:
    """An agent id checked like every id (None: no agent)."""
    return None if agent_id is None else check_id(agent_id, "agent_id")


def resolve_scope(kind: str, agent_id: str | None, scope: str | None) -> tuple[str | None, Scope]:
    """The agent and scope a write of this memory kind is stored with (see the module docstring)."""
    agent = check_agent(agent_id)
    if scope not in (None, "agent", "global"):
        raise ValidationError("scope", f"must be 'agent' or 'global', got {scope!r}")
    if agent is None:
        if scope == "agent":
            raise ValidationError("scope", "an agent-private memory needs its agent_id")
        return None, "global"
    return agent, scope or DEFAULT_SCOPES[kind]  # type: ignore[return-value]
