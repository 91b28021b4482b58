"""Benchmarks shipped with the package (``agentx-memory bench ...``): LoCoMo evidence recall and scale."""

from __future__ import annotations

import subprocess
from pathlib import Path

__all__ = ["git_commit", "pyplot"]


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
