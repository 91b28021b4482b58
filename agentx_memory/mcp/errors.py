"""Our errors as MCP tool errors: the model reads the message (the field and the limit); nothing else leaks.

An :class:`~agentx_memory.errors.AgentXMemoryError` raised by a tool becomes a ``ToolError`` carrying its message
when the error is about the request (a :class:`~agentx_memory.errors.ValidationError` names the field and the
limit), and the REST service's one line when it is the server's (a store or the language model's provider
unavailable, a database's own words: :func:`~agentx_memory.errors.public_message`), whose message goes to the
server's log instead; a pydantic validation error of a model the tool builds becomes one naming each field. Anything
else is left to the SDK, which answers ``Error executing tool <name>`` and keeps the exception and its traceback in
the server's log.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable
from typing import ParamSpec, TypeVar

from mcp.server.mcpserver.exceptions import ToolError
from pydantic import ValidationError as PydanticValidationError

from ..errors import AgentXMemoryError, public_message

__all__ = ["argument_error", "tool_errors"]

log = logging.getLogger(__name__)

P = ParamSpec("P")
R = TypeVar("R")


def _pydantic_message(exc: PydanticValidationError) -> str:
    """``field: what is wrong`` per error (the value given only when it is short: it is the caller's own data)."""
    parts = []
    for err in exc.errors(include_url=False):
        field = ".".join(str(part) for part in err["loc"]) or "arguments"
        given = err.get("input")
        shown = f" (got {given!r})" if err["type"] != "missing" and len(repr(given)) <= 40 else ""
        parts.append(f"{field}: {err['msg']}{shown}")
    return "; ".join(parts)


def tool_errors(fn: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
    """Wrap a tool so our errors reach the client as tool errors with their message (signature kept, so the SDK
    still derives the tool's schema from it)."""

    @functools.wraps(fn)
    async def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return await fn(*args, **kwargs)
        except AgentXMemoryError as exc:
            shown = public_message(exc)
            if shown != str(exc):  # the server's failure: what it says stays in the log
                log.error("tool %s failed: %s", fn.__name__, exc, exc_info=exc)
            raise ToolError(shown) from None
        except PydanticValidationError as exc:
            raise ToolError(_pydantic_message(exc)) from None

    return wrapper


def argument_error(tool: str, exc: PydanticValidationError) -> ToolError:
    """A tool's arguments that broke its schema, as a tool error naming each field and the limit it broke."""
    return ToolError(f"Error executing tool {tool}: {_pydantic_message(exc)}")
