"""Recall (``remember``), the key's own description and the user's profile."""

from __future__ import annotations

from ...retrieval.bundle import MemoryBundle
from ..auth import Reader
from ..schemas import KeyInfo, RememberIn
from . import api_router

__all__ = ["router"]

router = api_router("recall")


@router.post("/remember", response_model=MemoryBundle, summary="Recall memories for a query")
async def remember(body: RememberIn, caller: Reader) -> MemoryBundle:
    """Scored turns, facts, entities, strategies and rules relevant to ``query`` from the active channel and
    ``_global``, plus active goals and the user's profile; each item with its score breakdown."""
    return await caller.memory.remember(
        body.query, caller.user_id, caller.read_channel(body.channel), body.top_k, body.time_window_hours,
        body.include_episodic, body.include_semantic, body.include_procedural, body.reference_time, body.recall,
        body.memory_types, session_id=body.session_id)


@router.get("/me", response_model=KeyInfo, summary="The key this request came with")
async def me(caller: Reader) -> KeyInfo:
    """The user, agent and channels the API key acts for (never the token)."""
    key = caller.key
    return KeyInfo(key_id=key.key_id, user_id=key.user_id, agent_id=key.agent_id, channels=key.channels,
                   name=key.name)
