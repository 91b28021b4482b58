"""The scale benchmark's plot: ``remember()`` latency and the read floors against store size, log-log."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .. import pyplot
from .config import BACKEND_NAMES, BAR, FULL

__all__ = ["plot"]


def plot(report: dict[str, Any], path: Path) -> None:
    """Draw the report's latencies (p50 of every configuration, p95 of the full one) and floors into ``path``
    (PNG); nothing without matplotlib (the ``bench`` extra)."""
    plt = pyplot()
    if plt is None:  # the bench extra is optional
        return
    sizes = [int(s) for s in report["sizes"]]
    fig, ax = plt.subplots(figsize=(8, 5))
    colors = iter(plt.cm.tab10.colors + plt.cm.Dark2.colors)
    first = report["sizes"][str(sizes[0])]
    for name in first["latency"]:
        ax.plot(sizes, [report["sizes"][str(s)]["latency"][name]["ms"]["p50"] for s in sizes], marker="o",
                color=next(colors), label=f"remember {name} p50")
    ax.plot(sizes, [report["sizes"][str(s)]["latency"][FULL]["ms"]["p95"] for s in sizes], marker="o",
            linestyle=":", color=next(colors), label=f"remember {FULL} p95")
    for name in first["read_floors"]:
        if name.startswith("_"):
            continue
        values = [report["sizes"][str(s)]["read_floors"][name]["p50"] for s in sizes]
        if all(v > 0 for v in values):
            ax.plot(sizes, values, marker="s", linestyle="--", color=next(colors), label=f"floor: {name} p50")
    ax.axhline(BAR["p50_ms"], color="grey", linewidth=0.8)
    ax.axhline(BAR["p95_ms"], color="grey", linewidth=0.8, linestyle=":")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("turns in the store (50 users)")
    ax.set_ylabel("latency, ms (log)")
    backend = report["settings"]["graph_backend"]
    ax.set_title(f"remember() latency vs store size, with floors (graph: {BACKEND_NAMES.get(backend, backend)})")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=6.5, loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
