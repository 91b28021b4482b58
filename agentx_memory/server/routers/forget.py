"""Forgetting: chosen memories, or the whole user (keys of the whole user only)."""

from __future__ import annotations

from ...forget import ForgetReceipt
from ..auth import Writer
from ..schemas import ForgetIn, ForgetReceiptOut, ForgetUserIn
from . import api_router

__all__ = ["router"]

router = api_router("forget")


def _out(receipt: ForgetReceipt) -> ForgetReceiptOut:
    return ForgetReceiptOut(**receipt.as_dict())


@router.post("/forget", response_model=ForgetReceiptOut, summary="Forget chosen memories")
async def forget(body: ForgetIn, caller: Writer) -> ForgetReceiptOut:
    """Remove memories of the key's user from every store, by ids or by a filter, with what derives from them;
    ids of another user's memories are reported in ``not_found`` and left alone."""
    caller.require_whole_user("forgetting")
    return _out(await caller.memory.forget(
        body.ids, caller.user_id, conversation_id=body.conversation_id, channel=body.channel, before=body.before,
        after=body.after, memory_types=body.memory_types, cascade=body.cascade,
        requested_by=f"api key {caller.key.key_id}"))


@router.post("/forget/user", response_model=ForgetReceiptOut, summary="Forget the whole user")
async def forget_user(body: ForgetUserIn, caller: Writer) -> ForgetReceiptOut:
    """Remove everything of the key's user from every store (the key itself stays until revoked)."""
    caller.require_whole_user("forgetting the user")
    return _out(await caller.memory.forget_user(caller.user_id, requested_by=f"api key {caller.key.key_id}"))
