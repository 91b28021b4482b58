"""The examples in docs/api.md run against the embedded servers, so the docs cannot lie."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "api.md"


def _python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)


def test_api_doc_has_examples():
    assert _python_blocks(), "docs/api.md should hold at least one runnable example"


@pytest.mark.parametrize("block", _python_blocks(), ids=lambda b: b.splitlines()[0][:40])
def test_api_doc_example_runs(block, settings, embedded_home, monkeypatch):
    s = settings()
    # The example opens AgentMemory() with default settings: point the defaults at this test's namespace.
    for name, value in {
        "AGENTX_HOME": str(embedded_home), "AGENTX_GRAPH__NAME": s.graph.name,
        "AGENTX_POSTGRES__DB_SCHEMA": s.postgres.db_schema, "AGENTX_REDIS__KEY_PREFIX": s.redis.key_prefix,
        "AGENTX_EMBEDDING__MODEL": s.embedding.model, "AGENTX_EMBEDDING__DIMENSION": str(s.embedding.dimension),
    }.items():
        monkeypatch.setenv(name, value)
    exec(compile(block, str(DOC), "exec"), {"__name__": "docs_api_example"})
