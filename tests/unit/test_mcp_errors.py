"""What an MCP client reads of a tool's failure: the message of an error about its request, and one line for the
server's own failures (a store or the language model's provider unavailable, a database's own words), which stay in
the server's log, as on the REST service."""

from __future__ import annotations

import asyncio
import logging

import pytest
from mcp.server.mcpserver.exceptions import ToolError

from agentx_memory.errors import (
    ConflictError,
    LLMOutputError,
    LLMUnavailableError,
    NotFoundError,
    StorageUnavailableError,
    ValidationError,
)
from agentx_memory.mcp.errors import tool_errors


def _shown(exc: Exception) -> str:
    @tool_errors
    async def tool() -> None:
        raise exc

    with pytest.raises(ToolError) as raised:
        asyncio.run(tool())
    return str(raised.value)


def test_an_error_about_the_request_is_shown_as_it_is():
    assert _shown(ValidationError("top_k", "must be at most 50")) == str(ValidationError("top_k", "must be at most 50"))
    assert "fact 'f1'" in _shown(NotFoundError("fact", "f1"))


def test_the_servers_own_failures_are_one_line_and_their_message_is_logged(caplog):
    cause = ConflictError("duplicate key value violates unique constraint \"conversation_logs_turn_id_key\"")
    cause.__cause__ = RuntimeError("psycopg")
    with caplog.at_level(logging.ERROR, logger="agentx_memory.mcp.errors"):
        shown = {
            "store": _shown(StorageUnavailableError("Redis unreachable at /srv/agentx/run/falkordb.sock")),
            "provider": _shown(LLMUnavailableError("openai:gpt-4o-mini at https://llm.internal: 503")),
            "answer": _shown(LLMOutputError("openai:gpt-4o-mini: not JSON")),
            "database": _shown(cause),
        }
    assert shown == {
        "store": "a store of the memory is unavailable; retry later",
        "provider": "the language model's provider did not answer; retry later",
        "answer": "the language model's answer could not be used; the error is in the server's log",
        "database": "the write conflicts with stored state",
    }
    assert "falkordb.sock" in caplog.text and "llm.internal" in caplog.text
