"""The command line's exit codes and messages when something goes wrong, in subprocesses on the real embedded
servers: a failed worker job is a non-zero exit, and ``bench locomo`` without a usable ``--data`` file says so and exits
2 (the exit status of every error of ours) instead of a traceback."""

from __future__ import annotations

import json
import os
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


def _no_stores_env(home: Path) -> dict[str, str]:
    """An environment whose data directory is empty: a command that got as far as opening a store would fail."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTX_")}
    env["AGENTX_HOME"] = str(home)
    return env


@pytest.mark.parametrize(("argv", "option"), [
    (["bench", "scale", "--sizes", "abc"], "--sizes"),
    (["bench", "scale", "--sizes", "1000,0"], "--sizes"),
    (["bench", "scale", "--max", "0"], "--max"),
    (["bench", "scale", "--batch", "0"], "--batch"),
    (["bench", "scale", "--queries", "-5"], "--queries"),
    (["bench", "locomo", "--samples", "-1"], "--samples"),
    (["bench", "locomo", "--questions", "0"], "--questions"),
    (["ingest", "turns.jsonl", "--batch", "0"], "--batch"),
])
def test_bad_numeric_options_are_usage_errors(tmp_path, argv, option):
    """A count of 0 or less (or not a number) is refused by the parser (exit 2, the option named), not a traceback
    or a silently truncated run (``--samples -1`` used to drop the last sample)."""
    result = agentx(*argv, env=_no_stores_env(tmp_path / "home"), cwd=tmp_path, timeout=60)
    assert result.returncode == 2, result.stdout + result.stderr
    assert f"argument {option}" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "home").exists()  # nothing was started


def test_ingest_of_a_missing_file_names_it(tmp_path):
    missing = tmp_path / "nope.jsonl"
    result = agentx("ingest", str(missing), env=_no_stores_env(tmp_path / "home"), cwd=tmp_path, timeout=60)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "file" in result.stdout and str(missing) in result.stdout.replace("\n", "")
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "home").exists()  # checked before any server is started
