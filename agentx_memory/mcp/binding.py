"""Whose memory an MCP server serves: the user, optionally one agent of the user, and the default channel."""

from __future__ import annotations

from dataclasses import dataclass

from ..models import GLOBAL_CHANNEL
from ..validation import check_channel, check_id

__all__ = ["McpBinding"]


@dataclass(frozen=True)
class McpBinding:
    """The scope of every tool call of one server. The client never passes a user id: the server reads and writes
    only ``user_id``'s memory (as ``agent_id``, when set), in ``channel`` unless a call names another channel."""

    user_id: str
    agent_id: str | None = None
    channel: str = GLOBAL_CHANNEL

    def __post_init__(self) -> None:
        check_id(self.user_id, "user")
        if self.agent_id is not None:
            check_id(self.agent_id, "agent")
        check_channel(self.channel, "channel")
