"""Rich rendering of recall results for the command line.

Stored text, queries and error messages are data, never rich markup: every one goes through :func:`escape` (a stored
"[/x]" crashed the command, and "[bold]" vanished from what it showed).
"""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table

from .retrieval.bundle import MemoryBundle

__all__ = ["print_bundle"]


def _item_text(scored) -> str:
    item = scored.item
    for attr in ("content", "claim", "description"):
        value = getattr(item, attr, None)
        if value:
            return value if attr != "description" or not hasattr(item, "name") else f"{item.name}: {value}"
    return getattr(item, "name", item.id)


def print_bundle(console: Console, bundle: MemoryBundle, *, explain: bool = False, prompt_tokens: int = 0) -> None:
    """A table of every scored item (kind, score, channel, when, text), optionally with its signal breakdown."""
    table = Table(title=escape(f"remember: {bundle.query!r} — user {bundle.user_id}, "
                               f"channels {', '.join(bundle.channels)}"), show_lines=explain)
    for column in ("kind", "score", "channel", "when", "memory"):
        table.add_column(column, overflow="fold")
    if explain:
        table.add_column("signals (value × weight = contribution)", overflow="fold")
    kinds = {id(s): k for k, items in (("turn", bundle.turns), ("fact", bundle.facts), ("entity", bundle.entities),
                                        ("strategy", bundle.strategies)) for s in items}
    for scored in bundle.all_scored():
        item = scored.item
        when = (
            getattr(item, "timestamp", None) or getattr(item, "created_at", None) or getattr(item, "first_seen", None)
        )
        row = [kinds[id(scored)], f"{scored.score:.3f}", escape(scored.channel), f"{when:%Y-%m-%d}" if when else "",
               escape(_item_text(scored)[:300])]
        if explain:
            row.append(escape("\n".join(f"{name}: {s.value:.2f} × {s.weight:.3f} = {s.contribution:.3f}"
                                        for name, s in scored.signals.items())))
        table.add_row(*row)
    console.print(table)
    if bundle.goals:
        console.print("active goals: " + "; ".join(g.description for g in bundle.goals), markup=False)
    timing = ", ".join(f"{name} {m.latency_ms:.1f} ms ({m.results})" + (f" skipped: {m.skipped}" if m.skipped else "")
                       for name, m in bundle.metrics.techniques.items())
    console.print(
        f"[dim]{bundle.metrics.total_ms:.1f} ms total (embedding {bundle.metrics.embed_ms:.1f} ms); "
        f"{escape(timing)}[/dim]"
    )
    for part, reason in bundle.metrics.skipped.items():
        console.print(f"[yellow]skipped[/yellow] {escape(part)}: {escape(reason)}")
    if bundle.filters.get("time_ranges"):
        console.print(f"[dim]time phrases: {escape(str(bundle.filters['time_ranges']))}[/dim]")
    if prompt_tokens:
        console.print(Panel(escape(bundle.to_prompt(prompt_tokens)), title=f"to_prompt(max_tokens={prompt_tokens})"))
