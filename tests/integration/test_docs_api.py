"""The Python examples of the README and docs/api.md run against the embedded servers, so the docs cannot lie."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "docs" / "api.md", ROOT / "README.md"]


def _python_blocks() -> list[tuple[Path, str]]:
    return [(doc, block) for doc in DOCS for block in re.findall(r"```python\n(.*?)```", doc.read_text(), flags=re.S)]


def test_docs_have_examples():
    assert {doc for doc, _ in _python_blocks()} == set(DOCS), "README.md and docs/api.md should hold runnable examples"


@pytest.mark.parametrize(("doc", "block"), _python_blocks(), ids=lambda v: v.name if isinstance(v, Path) else v.splitlines()[0][:40])
def test_doc_example_runs(doc, block, settings, embedded_home, monkeypatch):
    s = settings()
    # The example opens AgentMemory() with default settings: point the defaults at this test's namespace.
    for name, value in {
        "AGENTX_HOME": str(embedded_home), "AGENTX_GRAPH__NAME": s.graph.name,
        "AGENTX_POSTGRES__DB_SCHEMA": s.postgres.db_schema, "AGENTX_REDIS__KEY_PREFIX": s.redis.key_prefix,
        "AGENTX_EMBEDDING__MODEL": s.embedding.model, "AGENTX_EMBEDDING__DIMENSION": str(s.embedding.dimension),
    }.items():
        monkeypatch.setenv(name, value)
    exec(compile(block, str(doc), "exec"), {"__name__": "docs_example"})
