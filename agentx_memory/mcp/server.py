"""Build the MCP server of one user's memory and run it over stdio or streamable HTTP."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.types import CallToolResult, InputRequiredResult
from pydantic import ValidationError as PydanticValidationError

from .. import __version__
from ..errors import ClosedError
from ..memory import AsyncAgentMemory
from ..settings import LimitsSettings, Settings
from .binding import McpBinding
from .errors import argument_error
from .resources import register_resources
from .tools import register_tools

__all__ = ["INSTRUCTIONS", "MemoryMCPServer", "build_server", "serve"]

Transport = Literal["stdio", "http"]

INSTRUCTIONS = (
    "Long-term memory of one user. Call remember before answering to recall what is relevant (turns, facts, "
    "entities, goals, with a prompt block); store_turn to keep what was said; learn_fact for a lasting fact about "
    "named entities; get_entity_graph to see what is known around an entity; add_goal, list_goals and update_goal "
    "for what the user is after; forget to remove memories (by ids or a filter) for good."
)


class MemoryMCPServer(MCPServer[Any]):
    """The SDK's server, with arguments that break a tool's schema reported as ``field: what is wrong``, like the
    engine's own errors (the SDK's message is pydantic's multi-line report with a link)."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
                        ) -> CallToolResult | InputRequiredResult:
        """Call a tool by name (see :meth:`MCPServer.call_tool`)."""
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, PydanticValidationError) and not isinstance(exc, UnexpectedToolError):
                raise argument_error(name, cause) from cause
            raise


def build_server(binding: McpBinding, memory: Callable[[], AsyncAgentMemory], *,
                 limits: LimitsSettings | None = None) -> MCPServer:
    """The MCP server of ``binding``'s memory: its tools and resources act on ``memory()``, the opened memory (a
    callable, so the server can be built — its tools listed — before a memory is open). ``limits`` (default: the
    settings' defaults) sets the length limits the tools' schemas publish."""
    server = MemoryMCPServer(
        name="agentx-memory", title="agentx-memory", version=__version__, instructions=INSTRUCTIONS,
        log_level="WARNING",
    )
    register_tools(server, memory, binding, limits or LimitsSettings())
    register_resources(server, memory, binding)
    return server


async def serve(settings: Settings, binding: McpBinding, *, transport: Transport = "stdio",
                host: str = "127.0.0.1", port: int = 8078) -> None:
    """Open the memory of ``binding`` and serve it until the client disconnects (stdio) or the process is stopped
    (http: streamable HTTP at ``http://host:port/mcp``); the memory is closed on the way out."""
    memory = await AsyncAgentMemory.open(settings, user_id=binding.user_id, agent_id=binding.agent_id)

    def opened() -> AsyncAgentMemory:
        if memory.closed:
            raise ClosedError("the server's memory is closed (the server is shutting down)")
        return memory

    server = build_server(binding, opened, limits=settings.limits)
    try:
        if transport == "stdio":
            await server.run_stdio_async()
        else:
            await server.run_streamable_http_async(host=host, port=port)
    finally:
        await memory.close()
