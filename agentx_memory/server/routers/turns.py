"""Turns, conversations, their summaries and the timeline (episodic memory)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import Query

from ...errors import NotFoundError
from ...models import EpisodicSummary, Turn
from ..auth import Caller, KeyScopeError, Reader, Writer
from ..schemas import TurnIn, TurnsIn
from . import api_router

__all__ = ["router", "turn_of"]

router = api_router("turns")


def turn_of(caller: Caller, body: TurnIn) -> Turn:
    """The turn a request body describes, as the key's user's, in a channel the key may write."""
    return caller.owned(Turn, body, body.channel)


@router.post("/turns", status_code=201, response_model=Turn, summary="Store one turn")
async def store_turn(body: TurnIn, caller: Writer) -> Turn:
    """Store one conversation turn: durable log, graph, working memory, timeline, audit."""
    return await caller.memory.store_turn(turn_of(caller, body))


@router.post("/turns/batch", status_code=201, response_model=list[Turn], summary="Store many turns")
async def store_turns(body: TurnsIn, caller: Writer) -> list[Turn]:
    """Store many turns with one embedding batch and one transaction per store (all or nothing)."""
    return await caller.memory.store_turns([turn_of(caller, t) for t in body.turns])


@router.get("/turns/recent", response_model=list[Turn], summary="Recent turns")
async def recent_turns(caller: Reader, channels: Annotated[list[str] | None, Query()] = None,
                       hours: float = 24, limit: int = 50) -> list[Turn]:
    """The user's turns of the last ``hours`` in ``channels`` (always with ``_global``), newest first."""
    turns = await caller.memory.get_recent_turns(caller.user_id, caller.read_channels(channels), hours, limit)
    return caller.only_visible(turns)


@router.get("/conversations/{conversation_id}", response_model=list[Turn], summary="A conversation's turns")
async def get_conversation(conversation_id: str, caller: Reader) -> list[Turn]:
    """Every turn of one of the user's conversations, in order; 404 when the user has none in it."""
    turns = caller.only_visible(await caller.memory.get_conversation(conversation_id, caller.user_id))
    if not turns:
        raise NotFoundError("conversation", conversation_id)
    return turns


@router.get("/conversations/{conversation_id}/summary", response_model=EpisodicSummary,
            summary="A conversation's stored summary")
async def get_summary(conversation_id: str, caller: Reader) -> EpisodicSummary:
    """The stored summary of one conversation; 404 when it was not summarized."""
    found = await caller.memory.get_conversation_summary(conversation_id, caller.user_id)
    return caller.shown(found, "conversation summary", conversation_id)


@router.post("/conversations/{conversation_id}/summary", response_model=EpisodicSummary,
             summary="Summarize a conversation")
async def summarize(conversation_id: str, caller: Writer) -> EpisodicSummary:
    """Summarize one conversation (LLM when configured, extractive otherwise) and store the summary. The summary is
    made of every turn, so a key limited to channels needs to see every turn of it (404 when it sees none, 403 when
    some are in other channels)."""
    if caller.key.channels:
        turns = await caller.memory.get_conversation(conversation_id, caller.user_id)
        visible = caller.only_visible(turns)
        if not visible:
            raise NotFoundError("conversation", conversation_id)
        if len(visible) < len(turns):
            raise KeyScopeError(caller.key.key_id, f"conversation {conversation_id!r} has turns in channels this key "
                                                   "does not cover; its summary would tell what they say")
    return await caller.memory.summarize_conversation(conversation_id, caller.user_id)


@router.get("/timeline", response_model=list[dict[str, Any]], summary="The memory timeline")
async def timeline(caller: Reader, since: datetime | None = None, until: datetime | None = None,
                   memory_types: Annotated[list[str] | None, Query()] = None,
                   channels: Annotated[list[str] | None, Query()] = None, include_archived: bool = False,
                   limit: int = 100) -> list[dict[str, Any]]:
    """The user's memories in time order, newest first (turns, facts, entities, goals)."""
    return await caller.memory.timeline(caller.user_id, since=since, until=until, memory_types=memory_types,
                                        channels=caller.read_channels(channels), include_archived=include_archived,
                                        limit=limit)
