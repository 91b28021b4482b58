"""The MCP resources: the user's profile (``memory://profile``) and active goals (``memory://goals/active``), as
JSON documents."""

from __future__ import annotations

import functools
import json
from collections.abc import Awaitable, Callable
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError

from ..errors import AgentXMemoryError
from ..memory import AsyncAgentMemory
from .binding import McpBinding
from .results import GoalOut

__all__ = ["GOALS_URI", "PROFILE_URI", "register_resources"]

PROFILE_URI = "memory://profile"
GOALS_URI = "memory://goals/active"


def _json_resource(fn: Callable[[], Awaitable[Any]]) -> Callable[[], Awaitable[str]]:
    """A resource reader giving JSON text; our errors become resource errors with their message."""

    @functools.wraps(fn)
    async def read() -> str:
        try:
            return json.dumps(await fn(), indent=2, ensure_ascii=False, default=str)
        except AgentXMemoryError as exc:
            raise ResourceError(str(exc)) from None

    return read


def register_resources(server: MCPServer, memory: Callable[[], AsyncAgentMemory], binding: McpBinding) -> None:
    """Add the profile and active-goals resources to ``server``."""

    @server.resource(PROFILE_URI, name="profile", title="User profile", mime_type="application/json",
                     description="The user's profile: preferences, expertise areas, communication style")
    @_json_resource
    async def profile() -> dict[str, Any]:
        return (await memory().get_profile()).model_dump(mode="json")

    @server.resource(GOALS_URI, name="active_goals", title="Active goals", mime_type="application/json",
                     description="The user's active goals in the server's channel and _global, highest priority "
                                 "first")
    @_json_resource
    async def active_goals() -> list[dict[str, Any]]:
        goals = await memory().list_goals(status="active", channels=[binding.channel])
        return [GoalOut.of(g).model_dump(mode="json") for g in goals]
