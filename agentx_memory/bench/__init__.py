"""Benchmarks shipped with the package (``agentx-memory bench ...``): LoCoMo evidence recall and scale."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["RETRIEVAL_PREFIX", "git_commit", "pyplot", "split_variant"]

#: The prefix of a benchmark variant's keys that name retrieval settings (the others are recall overrides).
RETRIEVAL_PREFIX = "retrieval."


def split_variant(override: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A benchmark variant's overrides as ``(recall, retrieval)``: keys ``retrieval.<setting>`` (prefix dropped) go to
    the second, every other key to the first."""
    recall = {k: v for k, v in override.items() if not k.startswith(RETRIEVAL_PREFIX)}
    retrieval = {k.removeprefix(RETRIEVAL_PREFIX): v for k, v in override.items() if k.startswith(RETRIEVAL_PREFIX)}
    return recall, retrieval


def git_commit() -> str:
    """The short commit of the source checkout the benchmark runs from ("unknown" outside a git checkout)."""
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True,
                              cwd=Path(__file__).resolve().parent).stdout.strip()
    except Exception:
        return "unknown"


def pyplot():
    """``matplotlib.pyplot`` on the Agg backend, or None when matplotlib (the ``bench`` extra) is not installed."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt
