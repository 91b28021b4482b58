"""Benchmarks shipped with the package (``agentx-memory bench ...``), and the light pieces they share: variant keys,
the commit, the plot backend, R@K over returned ids and LoCoMo's categories (no engine import here)."""

from __future__ import annotations

import subprocess
from collections.abc import Hashable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["LOCOMO_CATEGORIES", "RETRIEVAL_PREFIX", "git_commit", "pyplot", "recall_at", "split_variant"]

#: LoCoMo's question categories with evidence (category 5 has none), by number.
LOCOMO_CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}

#: The prefix of a benchmark variant's keys that name retrieval settings (the others are recall overrides).
RETRIEVAL_PREFIX = "retrieval."


def split_variant(override: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A benchmark variant's overrides as ``(recall, retrieval)``: keys ``retrieval.<setting>`` (prefix dropped) go to
    the second, every other key to the first."""
    recall = {k: v for k, v in override.items() if not k.startswith(RETRIEVAL_PREFIX)}
    retrieval = {k.removeprefix(RETRIEVAL_PREFIX): v for k, v in override.items() if k.startswith(RETRIEVAL_PREFIX)}
    return recall, retrieval


def recall_at(evidence: Iterable[Hashable], returned: Sequence[Hashable], k: int) -> float:
    """Share of the evidence ids among the first ``k`` distinct returned ids (an id returned twice, say a message as
    two of its passages, counts once).

    >>> recall_at(["a", "b"], ["a", "a", "c", "b"], 2)
    0.5
    """
    wanted = set(evidence)
    first = list(dict.fromkeys(returned))[:k]
    return len(wanted & set(first)) / len(wanted)


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
