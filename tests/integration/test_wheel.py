"""The package as users get it: ``python -m build`` makes a wheel and an sdist, the wheel installs into a fresh
virtual environment, and its own ``agentx-memory demo`` runs there (not the source tree's) on each graph backend.

The fresh environment takes the wheel with ``--no-deps`` and borrows the test environment's installed dependencies
through a ``.pth`` file: what is proved is the wheel's own content (modules, schema files, data, entry point,
metadata), without downloading every dependency again on each run.
"""

from __future__ import annotations

import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import pytest

from tests.conftest import cli_env

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    """The wheel and sdist built from this tree by ``python -m build`` (an isolated build, as a release does)."""
    out = tmp_path_factory.mktemp("dist")
    result = subprocess.run([sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)],
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return out


@pytest.fixture(scope="module")
def wheel_venv(dist, tmp_path_factory) -> Path:
    """A fresh virtual environment holding only the wheel; dependencies come from the test environment."""
    venv = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    wheel = next(dist.glob("agentx_memory-*.whl"))
    python = venv / "bin" / "python"
    result = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps",
                             "--no-index", "--quiet", str(wheel)], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    (Path(site) / "_borrowed_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return venv


def test_the_wheel_carries_the_package_its_schema_its_data_and_its_metadata(dist):
    wheel = next(dist.glob("agentx_memory-*.whl"))
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        metadata = archive.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert "agentx_memory/py.typed" in names
    assert any(n.startswith("agentx_memory/_schema/postgres/0001_") for n in names)
    assert "agentx_memory/data/demo_conversation.jsonl" in names
    for static in ("index.html", "explorer.css", "explorer.js"):  # the explorer page is package data
        assert f"agentx_memory/explorer/static/{static}" in names
    assert "workers/scheduler.py" in names
    assert not any(n.startswith("tests/") for n in names)
    assert "License-Expression: Apache-2.0" in metadata
    assert "Project-URL: Source," in metadata and "Project-URL: Documentation," in metadata
    assert "Classifier: Programming Language :: Python :: 3.11" in metadata
    for extra in ("server", "mcp", "langgraph", "otel", "fast", "openai", "anthropic"):
        assert f"Provides-Extra: {extra}" in metadata, extra
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)

    sdist = next(dist.glob("agentx_memory-*.tar.gz"))
    with tarfile.open(sdist) as archive:
        members = {m.split("/", 1)[1] for m in archive.getnames() if "/" in m}
    assert {"LICENSE", "README.md", "pyproject.toml", "schema/postgres/0001_initial.sql"} <= members
    assert not any("node_modules" in m for m in members)


def test_the_installed_wheel_runs_the_demo_from_its_own_files(wheel_venv, settings, tmp_path):
    python = wheel_venv / "bin" / "python"
    where = subprocess.run([str(python), "-c", "import agentx_memory, workers; print(agentx_memory.__file__); "
                            "print(workers.__file__)"], capture_output=True, text=True, cwd=tmp_path, check=True)
    for path in where.stdout.split():
        assert Path(path).is_relative_to(wheel_venv), path  # the wheel's copy, not the source tree

    env = cli_env(settings(), COLUMNS="200")
    result = subprocess.run([str(wheel_venv / "bin" / "agentx-memory"), "demo", "--brief"], env=env, cwd=tmp_path,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "Traceback" not in result.stdout + result.stderr
    assert "stored " in result.stdout and "[Episodic Memory -- Relevant Past Conversations]" in result.stdout
