"""The Model Context Protocol server of agentx-memory (``agentx-memory mcp``, extra ``[mcp]``).

One server is bound to one user (and optionally one agent of the user and a default channel), given on the command
line: an MCP client (Claude Desktop, Cursor, an IDE agent) gets tools to remember, store turns, learn facts, look at
an entity's neighbourhood, manage goals and forget, and resources for the user's profile and active goals. Every
call goes through the public API of :class:`~agentx_memory.memory.AsyncAgentMemory`; the client never names a user,
so it cannot reach another user's memory. See ``docs/mcp.md``.

Importing this package imports the ``mcp`` SDK: the command line imports it only when ``agentx-memory mcp`` runs.
"""

from .binding import McpBinding
from .reference import tool_reference
from .server import build_server, serve

__all__ = ["McpBinding", "build_server", "serve", "tool_reference"]
