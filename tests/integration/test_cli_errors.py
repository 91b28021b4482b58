"""The command line's exit codes and messages when something goes wrong, in subprocesses on the real embedded
servers: a failed worker job is a non-zero exit, and ``bench locomo`` without a usable ``--data`` file says so and exits
2 (the exit status of every error of ours) instead of a traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agentx_memory import AgentMemory
from tests.conftest import cli_env


def agentx(*args: str, env: dict[str, str], cwd: Path | None = None,
           timeout: float = 300) -> subprocess.CompletedProcess:
    """Run ``python -m agentx_memory.cli ARGS`` (the console script's entry point) and capture its output."""
    return subprocess.run([sys.executable, "-m", "agentx_memory.cli", *args], env=env, capture_output=True, text=True,
                          timeout=timeout, cwd=cwd or Path(__file__).resolve().parents[2])


def test_worker_once_exits_non_zero_when_a_job_fails(settings):
    s = settings()
    env = cli_env(s, COLUMNS="200")
    ok = agentx("worker", "--once", env=env)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    with AgentMemory(s) as memory:  # the audit partition job now fails: its SQL function is gone
        memory._portal.run(memory.core.ctx.postgres.execute("DROP FUNCTION drop_old_audit_partitions"))
    failed = agentx("worker", "--once", env=env)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "reconcile:" in failed.stdout  # the other job still ran
    assert "audit_partitions" in failed.stdout and "failed" in failed.stdout
    assert "Traceback" in failed.stderr  # the log has the job's exception


def _wipe(backend: str) -> list[str]:
    """On Neo4j, pass the benchmark's guard so that ``--data`` is what gets checked (nothing is touched after it)."""
    return ["--wipe-neo4j"] if backend == "neo4j" else []


def test_bench_locomo_without_data_names_the_option(settings, backend, tmp_path):
    env = cli_env(settings())
    # run where the default ../shared/data/locomo/locomo-dev.json does not exist
    result = agentx("bench", "locomo", "--out", str(tmp_path / "out"), *_wipe(backend), env=env, cwd=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "--data" in result.stdout and "Traceback" not in result.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("kind", ["missing", "directory", "not json", "not locomo"])
def test_bench_locomo_with_an_unusable_data_file_names_the_option(settings, backend, tmp_path, kind):
    env = cli_env(settings())
    data = tmp_path / "locomo.json"
    if kind == "directory":
        data.mkdir()
    elif kind == "not json":
        data.write_text("{not json")
    elif kind == "not locomo":
        data.write_text(json.dumps({"hello": "world"}))
    result = agentx("bench", "locomo", "--data", str(data), "--out", str(tmp_path / "out"), "--samples", "1",
                    "--cache", str(tmp_path / "cache"), *_wipe(backend), env=env, cwd=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "--data" in result.stdout and str(data) in result.stdout.replace("\n", "")
    assert "Traceback" not in result.stderr
