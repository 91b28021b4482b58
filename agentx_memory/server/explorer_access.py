"""Who may open the memory explorer page (docs/explorer.md) on the REST service, and through which memory.

Two kinds of key open it:

- the installation's **admin key** (``security.admin_key``): the operator's view, every user, the user picker lists
  them all;
- an **API key of a whole user or of one agent** (``agentx-memory keys create``): that user's pages only, read
  through the agent's view for an agent key; listing users and other users' pages are refused (403). A key limited
  to channels is refused too, because the explorer shows every channel of a user.

Explorer reads count against the key's ``server.read_rate_limit`` like every other read.
"""

from __future__ import annotations

import hmac

from fastapi import Request
from starlette.exceptions import HTTPException

from ..memory import AsyncAgentMemory
from .auth import caller_for_token, memory_of, settings_of

__all__ = ["explorer_memory"]


def _token(request: Request) -> str | None:
    header = request.headers.get("authorization", "")
    scheme, _, credentials = header.partition(" ")
    if scheme.lower() == "bearer" and credentials.strip():
        return credentials.strip()
    return request.headers.get("x-api-key") or None


def _is_admin_key(request: Request, token: str) -> bool:
    admin = settings_of(request).security.admin_key
    return admin is not None and hmac.compare_digest(token.encode("utf-8", "surrogatepass"),
                                                     admin.get_secret_value().encode("utf-8", "surrogatepass"))


async def explorer_memory(request: Request, user_id: str | None) -> AsyncAgentMemory:
    """The memory an explorer request reads ``user_id`` through (None: the user list), after checking its key
    (see the module docstring); refuses with 401 (no or unknown key) or 403 (a key that does not cover it)."""
    token = _token(request)
    if token is None:
        raise HTTPException(401, "send an API key or the admin key: Authorization: Bearer <key>",
                            headers={"WWW-Authenticate": "Bearer"})
    if _is_admin_key(request, token):
        return memory_of(request)
    caller = await caller_for_token(request, token, "read")
    if caller.key.channels:
        raise HTTPException(403, "the explorer shows every channel of a user: use a key without --channel, or the "
                                 "admin key")
    if user_id is None:
        raise HTTPException(403, "listing users needs the installation's admin key (security.admin_key)")
    if user_id != caller.user_id:
        raise HTTPException(403, f"this key reads user {caller.user_id!r} only")
    return caller.memory
