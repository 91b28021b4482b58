"""The Python examples of the README and the docs pages run against the embedded servers, so the docs cannot lie."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import cli_env

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "docs" / name for name in (
    "api.md", "extraction.md", "typed-memories.md", "working-memory.md", "context-window.md", "retention.md",
    "forget.md", "snapshots.md", "pools.md", "short-term.md", "agents.md", "reembed.md",
    "goals.md", "langgraph.md", "security.md", "context-rot.md", "explorer.md", "server.md",
    "batch-writes.md",
)] + [ROOT / "README.md"]


def _python_blocks() -> list[tuple[Path, str]]:
    return [(doc, block) for doc in DOCS for block in re.findall(r"```python\n(.*?)```", doc.read_text(), flags=re.S)]


def test_docs_have_examples():
    assert {doc for doc, _ in _python_blocks()} == set(DOCS), "every doc of DOCS should hold runnable examples"


@pytest.mark.parametrize(
    ("doc", "block"), _python_blocks(), ids=lambda v: v.name if isinstance(v, Path) else v.splitlines()[0][:40]
)
def test_doc_example_runs(doc, block, settings, embedded_home, monkeypatch):
    s = settings()
    # The example opens AgentMemory() with default settings: point the defaults at this test's namespace.
    for name, value in cli_env(s).items():
        if name.startswith("AGENTX_"):
            monkeypatch.setenv(name, value)
    exec(compile(block, str(doc), "exec"), {"__name__": "docs_example"})
