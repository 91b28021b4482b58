"""Working memory of one conversation (Redis) and its injection ledger (spec 000)."""

from __future__ import annotations

from typing import Any

from ...errors import NotFoundError
from ...working import WorkingMemory
from ..auth import Caller, Reader, Writer
from ..schemas import Deleted, Injected, InjectIn, LedgerMarkIn, ScratchpadIn, ThoughtIn, ValueIn, WorkingGoalIn
from . import api_router

__all__ = ["router"]

router = api_router("working memory")


def _reading(caller: Caller, conversation_id: str, channel: str | None) -> WorkingMemory:
    return caller.memory.working(caller.user_id, conversation_id, caller.read_channel(channel))


def _writing(caller: Caller, conversation_id: str, channel: str | None) -> WorkingMemory:
    return caller.memory.working(caller.user_id, conversation_id, caller.write_channel(channel))


@router.get("/working/{conversation_id}", response_model=dict[str, Any], summary="A session's working memory")
async def get_context(conversation_id: str, caller: Reader, channel: str | None = None) -> dict[str, Any]:
    """Everything in the session: context values, recent turns, active goal and recent thoughts."""
    return await _reading(caller, conversation_id, channel).get_context()


@router.delete("/working/{conversation_id}", response_model=Deleted, summary="Clear a session")
async def clear_session(conversation_id: str, caller: Writer, channel: str | None = None) -> Deleted:
    """Delete every key of the session (the ledger too); ``deleted``: how many existed."""
    return Deleted(deleted=await _writing(caller, conversation_id, channel).clear_session())


@router.put("/working/{conversation_id}/values/{key}", response_model=Deleted, summary="Set a context value",
            responses={200: {"description": "`deleted` is always 0"}})
async def set_value(conversation_id: str, key: str, body: ValueIn, caller: Writer,
                    channel: str | None = None) -> Deleted:
    """Set a context value (any JSON), expiring after ``ttl_seconds`` (default: working.ttl_seconds)."""
    await _writing(caller, conversation_id, channel).set(key, body.value, body.ttl_seconds)
    return Deleted(deleted=0)


@router.get("/working/{conversation_id}/values/{key}", response_model=ValueIn, summary="Read a context value")
async def get_value(conversation_id: str, key: str, caller: Reader, channel: str | None = None) -> ValueIn:
    """A context value; 404 when it is not set, expired, or null."""
    value = await _reading(caller, conversation_id, channel).get(key)
    if value is None:
        raise NotFoundError("working-memory value", key)
    return ValueIn(value=value)


@router.delete("/working/{conversation_id}/values/{key}", response_model=Deleted, summary="Delete a context value")
async def delete_value(conversation_id: str, key: str, caller: Writer, channel: str | None = None) -> Deleted:
    """Delete a context value; ``deleted``: 1 when it was set."""
    return Deleted(deleted=int(await _writing(caller, conversation_id, channel).delete(key)))


@router.post("/working/{conversation_id}/thoughts", status_code=201, response_model=Deleted,
             summary="Push a thought")
async def push_thought(conversation_id: str, body: ThoughtIn, caller: Writer, channel: str | None = None) -> Deleted:
    """Push a reasoning step onto the session's thought stack (``deleted`` is 0)."""
    await _writing(caller, conversation_id, channel).push_thought(body.thought)
    return Deleted(deleted=0)


@router.get("/working/{conversation_id}/thoughts", response_model=list[dict[str, Any]], summary="Recent thoughts")
async def get_thoughts(conversation_id: str, caller: Reader, channel: str | None = None,
                       limit: int = 10) -> list[dict[str, Any]]:
    """The most recent thoughts, oldest first."""
    return await _reading(caller, conversation_id, channel).get_thoughts(limit)


@router.put("/working/{conversation_id}/goal", response_model=Deleted, summary="Set the active goal")
async def set_goal(conversation_id: str, body: WorkingGoalIn, caller: Writer, channel: str | None = None) -> Deleted:
    """Set the session's active goal (``deleted`` is 0)."""
    await _writing(caller, conversation_id, channel).set_active_goal(body.goal_id, body.goal_description)
    return Deleted(deleted=0)


@router.get("/working/{conversation_id}/goal", response_model=dict[str, Any], summary="The active goal")
async def get_goal(conversation_id: str, caller: Reader, channel: str | None = None) -> dict[str, Any]:
    """The session's active goal; 404 when none is set."""
    goal = await _reading(caller, conversation_id, channel).get_active_goal()
    if goal is None:
        raise NotFoundError("active goal of conversation", conversation_id)
    return goal


@router.put("/working/{conversation_id}/scratchpad", response_model=Deleted, summary="Set the scratchpad")
async def set_scratchpad(conversation_id: str, body: ScratchpadIn, caller: Writer,
                         channel: str | None = None) -> Deleted:
    """Replace the session's scratchpad text (``deleted`` is 0)."""
    await _writing(caller, conversation_id, channel).set_scratchpad(body.content)
    return Deleted(deleted=0)


@router.get("/working/{conversation_id}/scratchpad", response_model=ScratchpadIn, summary="The scratchpad")
async def get_scratchpad(conversation_id: str, caller: Reader, channel: str | None = None) -> ScratchpadIn:
    """The session's scratchpad; 404 when it is empty."""
    content = await _reading(caller, conversation_id, channel).get_scratchpad()
    if content is None:
        raise NotFoundError("scratchpad of conversation", conversation_id)
    return ScratchpadIn(content=content)


@router.get("/working/{conversation_id}/ledger", response_model=dict[str, str], summary="The injection ledger")
async def ledger_get(conversation_id: str, caller: Reader, channel: str | None = None) -> dict[str, str]:
    """Every item injected in this conversation: item key → marker."""
    return await _reading(caller, conversation_id, channel).ledger_get()


@router.post("/working/{conversation_id}/ledger", response_model=Deleted, summary="Mark items as injected")
async def ledger_mark(conversation_id: str, body: LedgerMarkIn, caller: Writer, channel: str | None = None) -> Deleted:
    """Record that the items were injected (``deleted`` is 0)."""
    await _writing(caller, conversation_id, channel).ledger_mark_many(body.item_keys)
    return Deleted(deleted=0)


@router.delete("/working/{conversation_id}/ledger/{item_key}", response_model=Deleted, summary="Evict a ledger item")
async def ledger_evict(conversation_id: str, item_key: str, caller: Writer, channel: str | None = None) -> Deleted:
    """Forget that an item was injected (it may be injected again); ``deleted``: 1 when it was there."""
    return Deleted(deleted=int(await _writing(caller, conversation_id, channel).ledger_evict(item_key)))


@router.post("/working/{conversation_id}/inject", response_model=Injected, summary="Recall and inject once")
async def inject(conversation_id: str, body: InjectIn, caller: Reader, channel: str | None = None) -> Injected:
    """Recall for ``query`` and return the prompt block of what this conversation was not shown yet; the items
    shown are marked in the ledger (counted as a read)."""
    active = caller.read_channel(channel)
    bundle = await caller.memory.remember(body.query, caller.user_id, active, body.top_k,
                                          session_id=conversation_id)
    session = caller.memory.working(caller.user_id, conversation_id, active)
    return Injected(prompt=await session.inject(bundle, body.max_tokens, include_working=body.include_working))
