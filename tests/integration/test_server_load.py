"""The REST service's load test (``agentx-memory bench serve``) at a tiny size through the real CLI, on both graph
backends, so it cannot rot. No timing assertions: the figures in docs/benchmarks.md come from running it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import cli_env


def test_bench_serve_smoke(settings, backend, tmp_path):
    s = settings()
    out = tmp_path / "results"
    script = Path(sys.executable).with_name("agentx-memory")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "agentx_memory.cli"]
    result = subprocess.run(
        [*command, "bench", "serve", "--requests", "12", "--concurrency", "3", "--out", str(out),
         *(["--wipe-neo4j"] if backend == "neo4j" else [])],
        env=cli_env(s), capture_output=True, text=True, timeout=600, cwd=Path(__file__).resolve().parents[2])
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    report = json.loads((out / "serve.json").read_text())
    assert report["graph"] == backend and set(report["operations"]) == {"store_turn", "remember"}
    assert set(report["library"]) == {"store_turn", "remember"}
    for figures in [*report["operations"].values(), *report["library"].values()]:
        assert figures["requests"] == 12 and figures["errors"] == 0 and figures["requests_per_second"] > 0
        assert 0 < figures["p50_ms"] <= figures["p95_ms"] <= figures["p99_ms"]
    markdown = (out / "serve.md").read_text()
    assert "| `store_turn` over HTTP |" in markdown and "| `remember` on the library directly |" in markdown
