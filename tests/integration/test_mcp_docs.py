"""docs/mcp.md's Python example runs: the SDK's client starts ``agentx-memory mcp`` over stdio on this test's
namespace (on both backends), and its assertions hold."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

# Imported now, not by the example: stdio_client binds sys.stderr as its errlog default when its module is imported,
# and inside a test that is the test's capture stream, closed with the test.
import mcp.client.stdio  # noqa: F401
import pytest

from tests.conftest import cli_env

DOC = Path(__file__).resolve().parents[2] / "docs" / "mcp.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)


def test_the_page_has_a_python_example():
    assert BLOCKS and all("Client(" in block for block in BLOCKS)


@pytest.mark.parametrize("block", BLOCKS, ids=lambda b: b.splitlines()[0][:40])
def test_the_example_runs(block, settings, monkeypatch, capfd):
    # The example passes its environment to the server: point it at this test's namespace, and find the
    # agentx-memory script of this interpreter first on the PATH.
    for name, value in cli_env(settings()).items():
        if name.startswith("AGENTX_"):
            monkeypatch.setenv(name, value)
    monkeypatch.setenv("PATH", os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
    exec(compile(block, str(DOC), "exec"), {"__name__": "docs_example"})
    out = capfd.readouterr().out
    assert "Alice lives in Lisbon" in out and "Find a flat in Alfama" in out
