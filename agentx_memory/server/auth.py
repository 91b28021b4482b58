"""Who a request acts for: its API key, resolved to a :class:`Caller`, and the key's rate limits.

The user always comes from the key, never from the request: every route passes ``caller.user_id`` to the memory,
so whatever ids a request sends, it reads and writes only that user's memory (the memory's own tenancy then refuses
ids of other users: not found, or a conflict for a write). A key of one agent works through the memory's view of
that agent (:meth:`~agentx_memory.AsyncAgentMemory.for_agent`). A key limited to channels may write only to those,
and read those and ``_global``.

Reads (GET, remember, searches) and writes count against ``server.read_rate_limit`` and
``server.write_rate_limit`` per key per ``server.rate_window_seconds``, in Redis, so every server process shares the
count; past it the request is refused with 429 and ``Retry-After`` before anything is done.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Final, Literal, TypeVar

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel
from starlette.exceptions import HTTPException

from ..api_keys import ApiKey
from ..errors import NotFoundError, PermissionDeniedError
from ..memory import AsyncAgentMemory
from ..models import GLOBAL_CHANNEL
from ..settings import Settings

__all__ = ["Caller", "KeyScopeError", "Reader", "Writer", "caller_for_token", "memory_of", "settings_of"]

_BEARER: Final = HTTPBearer(auto_error=False, description="an API key made by `agentx-memory keys create`",
                            scheme_name="ApiKey")


class KeyScopeError(PermissionDeniedError):
    """A request asked for something its API key does not cover (a channel, or an operation kept for keys of the
    whole user); reported as ``PermissionDeniedError``."""

    def __init__(self, key_id: str, message: str):
        self.agent_id = key_id  # the caller refused: here a key, not an agent
        self.action = "use"
        self.kind = "api key"
        self.ident = key_id
        Exception.__init__(self, f"api key {key_id}: {message}")


#: A stored model a request body describes (a turn, entity, fact, goal, rule).
Stored = TypeVar("Stored", bound=BaseModel)


@dataclass(frozen=True)
class Caller:
    """The key a request came with and the memory it acts through."""

    key: ApiKey
    memory: AsyncAgentMemory

    @property
    def user_id(self) -> str:
        """The user the request acts for (from the key)."""
        return self.key.user_id

    @property
    def agent_id(self) -> str | None:
        """The agent the key acts as (None: the user)."""
        return self.key.agent_id

    def write_channel(self, requested: str | None) -> str:
        """The channel a write goes to: the one asked for (default: ``_global``, or the key's first channel for a
        key limited to channels), refused when the key does not cover it."""
        allowed = self.key.channels
        if requested is None:
            return allowed[0] if allowed else GLOBAL_CHANNEL
        if allowed and requested not in allowed:
            raise KeyScopeError(self.key.key_id, f"may not write channel {requested!r} (it may write "
                                                 f"{', '.join(allowed)})")
        return requested

    def owned(self, model: type[Stored], body: BaseModel, channel: str | None) -> Stored:
        """``model`` built from a request body's fields (all but ``channel``), as the key's user's, in ``channel``
        when the key may write it (:meth:`write_channel`)."""
        fields = body.model_dump(exclude_none=True, exclude={"channel"})
        return model(**fields, user_id=self.user_id, channel=self.write_channel(channel))

    def read_channel(self, requested: str | None) -> str:
        """The active channel of a read (``_global`` always comes with it): the one asked for (default: ``_global``,
        or the key's first channel), refused when the key does not cover it."""
        allowed = self.key.channels
        if requested is None:
            return allowed[0] if allowed else GLOBAL_CHANNEL
        if allowed and requested not in allowed and requested != GLOBAL_CHANNEL:
            raise KeyScopeError(self.key.key_id, f"may not read channel {requested!r}")
        return requested

    def read_channels(self, requested: Sequence[str] | None) -> list[str] | None:
        """The channels a listing reads: those asked for, checked (None: every channel the key covers; None again
        for a key of every channel)."""
        if not requested:
            return [*self.key.channels, GLOBAL_CHANNEL] if self.key.channels else None
        return [self.read_channel(c) for c in requested]

    def visible(self, channel: str) -> bool:
        """Whether the key may see a memory stored in ``channel``."""
        return not self.key.channels or channel == GLOBAL_CHANNEL or channel in self.key.channels

    def shown(self, item: Any, kind: str, ident: str) -> Any:
        """``item`` when the key may see its channel, else :class:`NotFoundError` (as if it were not there)."""
        if not self.visible(getattr(item, "channel", GLOBAL_CHANNEL)):
            raise NotFoundError(kind, ident)
        return item

    def only_visible(self, items: Iterable[Any]) -> list[Any]:
        """The items whose channel the key may see."""
        return [i for i in items if self.visible(getattr(i, "channel", GLOBAL_CHANNEL))]

    def require_whole_user(self, what: str) -> None:
        """Refuse ``what`` to a key of one agent or limited to channels (forgetting, the audit trail)."""
        if self.key.agent_id is not None or self.key.channels:
            raise KeyScopeError(self.key.key_id, f"{what} needs a key of the whole user (no --agent, no --channel)")


def memory_of(request: Request) -> AsyncAgentMemory:
    """The application's memory (opened by its lifespan)."""
    memory: AsyncAgentMemory = request.app.state.memory
    return memory


def settings_of(request: Request) -> Settings:
    """The application's settings."""
    settings: Settings = request.app.state.settings
    return settings


def _unauthorized(detail: str) -> HTTPException:
    return HTTPException(401, detail, headers={"WWW-Authenticate": "Bearer"})


async def _caller(request: Request, credentials: HTTPAuthorizationCredentials | None,
                  kind: Literal["read", "write"]) -> Caller:
    token = credentials.credentials if credentials is not None else request.headers.get("x-api-key")
    if not token:
        raise _unauthorized("send an API key: Authorization: Bearer <key> (agentx-memory keys create)")
    return await caller_for_token(request, token, kind)


async def caller_for_token(request: Request, token: str, kind: Literal["read", "write"]) -> Caller:
    """The caller of an API key, its request counted against the key's ``kind`` rate limit; 401 for a key that is
    malformed, unknown or revoked."""
    memory = memory_of(request)
    key = await memory.resolve_api_key(token)
    if key is None:
        raise _unauthorized("the API key is malformed, unknown or revoked")
    acting = memory if key.agent_id is None else memory.for_agent(key.agent_id)
    server = settings_of(request).server
    limit = server.read_rate_limit if kind == "read" else server.write_rate_limit
    if limit is not None:
        await acting.hit_rate_limit(f"api_{kind}", caller=key.key_id, limit=limit,
                                    window_seconds=server.rate_window_seconds, user_id=key.user_id)
    return Caller(key=key, memory=acting)


async def _reader(request: Request,
                  credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_BEARER)]) -> Caller:
    return await _caller(request, credentials, "read")


async def _writer(request: Request,
                  credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_BEARER)]) -> Caller:
    return await _caller(request, credentials, "write")


#: A route parameter: the caller of a retrieval request (counted against ``server.read_rate_limit``).
Reader = Annotated[Caller, Depends(_reader)]
#: A route parameter: the caller of a write request (counted against ``server.write_rate_limit``).
Writer = Annotated[Caller, Depends(_writer)]
