"""Run ``agentx-memory mcp`` as a real subprocess and connect to it with the MCP SDK's own client, over stdio (the
client spawns the server) or streamable HTTP (the server listens on a free loopback port)."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, closing
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters, stdio_client
from mcp.types import CallToolResult

TRANSPORTS = ("stdio", "http")


def cli_command() -> list[str]:
    """The ``agentx-memory`` console script next to this interpreter (else ``python -m agentx_memory.cli``)."""
    script = Path(sys.executable).with_name("agentx-memory")
    return [str(script)] if script.exists() else [sys.executable, "-m", "agentx_memory.cli"]


def mcp_args(user: str, agent: str | None = None, channel: str | None = None) -> list[str]:
    """The ``mcp`` subcommand's arguments binding a server to ``user`` (and ``agent``, ``channel``)."""
    return ["mcp", "--user", user, *(["--agent", agent] if agent else []), *(["--channel", channel] if channel else [])]


def free_port() -> int:
    """A TCP port nobody listens on right now, on loopback."""
    with closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_listening(process: subprocess.Popen, port: int, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"the MCP server exited with {process.returncode}: {process.stderr.read()}")  # type: ignore[union-attr]
        with closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise AssertionError(f"the MCP server did not listen on port {port} within {timeout} s")


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


@asynccontextmanager
async def mcp_client(transport: str, env: dict[str, str], user: str, *, agent: str | None = None,
                     channel: str | None = None) -> AsyncIterator[Client]:
    """An SDK client connected to an ``agentx-memory mcp`` server of ``user`` in the namespace of ``env``."""
    command = cli_command()
    if transport == "stdio":
        params = StdioServerParameters(command=command[0], args=[*command[1:], *mcp_args(user, agent, channel)],
                                       env=env)
        with tempfile.TemporaryFile("w+") as errlog:  # the server's stderr: its log
            async with Client(stdio_client(params, errlog=errlog), read_timeout_seconds=120) as client:
                yield client
        return
    port = free_port()
    process = subprocess.Popen([*command, *mcp_args(user, agent, channel), "--transport", "http", "--port",
                                str(port)], env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    try:
        _wait_listening(process, port)
        async with Client(f"http://127.0.0.1:{port}/mcp", read_timeout_seconds=120) as client:
            yield client
    finally:
        _stop(process)


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    """Call a tool that must succeed; its structured result."""
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, f"{tool} failed: {text_of(result)}"
    assert result.structured_content is not None
    assert json.loads(text_of(result)) == result.structured_content  # the text block says the same
    return result.structured_content


async def call_error(client: Client, tool: str, **arguments: Any) -> str:
    """Call a tool that must fail with a tool error; the error's text."""
    result = await client.call_tool(tool, arguments)
    assert result.is_error, f"{tool} should have failed, returned {result.structured_content}"
    return text_of(result)


def text_of(result: CallToolResult) -> str:
    """The text of a tool result's content blocks."""
    return "\n".join(block.text for block in result.content if getattr(block, "type", None) == "text")


async def read_json(client: Client, uri: str) -> Any:
    """A resource's JSON document."""
    result = await client.read_resource(uri)
    assert len(result.contents) == 1
    return json.loads(result.contents[0].text)  # type: ignore[union-attr]
