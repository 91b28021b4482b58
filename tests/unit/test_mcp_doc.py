"""The MCP server without a database: docs/mcp.md's reference is the server's own tool list, ``mcp --help`` stays
light, and a server is bound to a valid user, agent and channel before any store is touched."""

from __future__ import annotations

import asyncio
import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

from agentx_memory.errors import ValidationError
from agentx_memory.mcp import McpBinding, build_server
from agentx_memory.settings import LimitsSettings
from tests.unit.test_lazy_imports import HEAVY, RUN_CLI, loaded_after

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "mcp.md"
SCRIPT = REPO / "scripts" / "gen_mcp_doc.py"


@pytest.fixture(scope="module")
def gen():
    spec = importlib.util.spec_from_file_location("gen_mcp_doc", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def tools(limits: LimitsSettings | None = None):
    def no_memory():
        raise AssertionError("listing tools must not touch the memory")

    return asyncio.run(build_server(McpBinding("alice"), no_memory, limits=limits).list_tools())


def test_the_doc_reference_is_up_to_date(gen):
    text = DOC.read_text(encoding="utf-8")
    assert gen.update(text) == text, "docs/mcp.md is out of date: run `python scripts/gen_mcp_doc.py`"
    assert gen.main(["--check"]) == 0


def test_the_doc_has_a_section_and_a_row_per_tool_and_every_parameter():
    text = DOC.read_text(encoding="utf-8")
    for tool in tools():
        assert f"### `{tool.name}`" in text and f"| [`{tool.name}`](#{tool.name}) |" in text
        section = text.split(f"### `{tool.name}`", 1)[1].split("### ", 1)[0]
        for name in tool.input_schema["properties"]:
            assert re.search(rf"^\| `{name}` \|", section, flags=re.M), f"{tool.name}.{name} is not documented"
    assert "`memory://profile`" in text and "`memory://goals/active`" in text


def test_the_schemas_publish_the_configured_text_limits():
    listed = {t.name: t for t in tools(LimitsSettings(max_text_bytes=500, max_turn_bytes=2000))}
    assert listed["remember"].input_schema["properties"]["query"]["maxLength"] == 500
    assert listed["store_turn"].input_schema["properties"]["content"]["maxLength"] == 2000


@pytest.mark.parametrize(("binding", "field"), [
    ({"user_id": ""}, "user"), ({"user_id": " alice"}, "user"), ({"user_id": "alice", "agent_id": "a\nb"}, "agent"),
    ({"user_id": "alice", "channel": "Not A Channel"}, "channel"),
])
def test_a_binding_is_checked(binding, field):
    with pytest.raises(ValidationError) as caught:
        McpBinding(**binding)
    assert caught.value.field == field


def test_a_bad_user_on_the_command_line_is_refused_before_any_store_is_touched(tmp_path):
    done = subprocess.run([sys.executable, "-m", "agentx_memory.cli", "mcp", "--user", " alice "],
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO), "AGENTX_HOME": str(tmp_path / "h"),
                               "COLUMNS": "200"},
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode == 2, done.stderr
    assert "user: must not start or end with whitespace" in done.stdout
    assert not (tmp_path / "h").exists()  # no embedded server was started


def test_mcp_help_loads_neither_the_engine_nor_the_sdk():
    assert loaded_after(RUN_CLI.format(argv=["mcp", "--help"]), (*HEAVY, "mcp", "agentx_memory.mcp")) == []


def test_a_crash_reaches_the_client_without_its_message_or_traceback():
    """Anything but our errors (here: the memory itself failing) is ``Error executing tool <name>`` for the client;
    the exception stays in the server's log."""
    from mcp import Client, MCPError

    def broken_memory():
        raise RuntimeError("connection to /var/run/secret.sock refused")

    async def scenario():
        async with Client(build_server(McpBinding("alice"), broken_memory)) as client:
            result = await client.call_tool("remember", {"query": "anything"})
            with pytest.raises(MCPError) as read:
                await client.read_resource("memory://profile")
        return result, read.value

    result, read_error = asyncio.run(scenario())
    assert result.is_error and [block.text for block in result.content] == ["Error executing tool remember"]
    assert "secret" not in str(read_error) and "Traceback" not in str(read_error)
