"""The scale benchmark's report as Markdown: corpus, embedding, ingest vs floor, latency vs floors, resources,
growth and the bar. It reads only the report dict (``scale.json``), so it renders reports of earlier runs too."""

from __future__ import annotations

from typing import Any

from .config import (
    BACKEND_NAMES,
    BARS,
    EMBEDDED_STORE_NAMES,
    FULL,
    FULL_MEDIAN,
    GRAPH_VECTOR_FLOOR,
    LEGACY_GRAPH_VECTOR_FLOOR,
    RATIO_FLOORS,
)
from .statements import OWN_GRAPH_PER_NAME

__all__ = ["markdown_report"]


def _mib(value: int | None) -> str:
    return "-" if value is None else f"{value / 1024 / 1024:,.0f} MiB"


def _k(n: int) -> str:
    if n >= 1_000_000 and n % 1_000_000 == 0:
        return f"{n // 1_000_000}M"
    return f"{n // 1000}k" if n >= 1000 and n % 1000 == 0 else str(n)


def markdown_report(report: dict[str, Any]) -> str:
    """The results as Markdown: corpus, embedding, ingest vs floor, latency vs floors, resources, growth, the bar."""
    lines = _header(report) + _corpus(report) + _embedding(report) + _ingest(report) + _latency(report)
    lines += _resources(report) + _growth(report) + _bar(report)
    lines += ["", "Phases (s): " + ", ".join(f"{k} {v}" for k, v in report["phases_seconds"].items())]
    return "\n".join(lines) + "\n"


def _graph_name(report: dict[str, Any]) -> str:
    backend = report["settings"]["graph_backend"]
    return BACKEND_NAMES.get(backend, backend)


def _header(report: dict[str, Any]) -> list[str]:
    machine, settings = report["machine"], report["settings"]
    return [
        f"# Scale benchmark — {', '.join(_k(int(s)) for s in report['sizes'])} turns",
        "",
        f"{report['date']}, commit `{report['commit']}`, {machine['cpus']} CPUs ({machine['platform']}, Python "
        f"{machine['python']}), load average before/after {machine['load_average_before'][0]} / "
        f"{machine['load_average_after'][0]}; graph `{settings['graph_backend']}`{_where(settings)}, "
        f"embedding `{settings['embedding_model']}`, "
        f"audit level `{settings['audit_level']}`. Whole run: {report['run_seconds'] / 60:.1f} min.",
    ]


def _where(settings: dict[str, Any]) -> str:
    # Which stores ran on the embedded servers; a report from before "embedded_stores" only knew whether any did.
    stores = settings.get("embedded_stores")
    if stores is None:
        return " (embedded)" if settings["embedded"] else ""
    graph = " (embedded)" if "graph" in stores else " (a server of its own)"
    others = [EMBEDDED_STORE_NAMES[s] for s in stores if s != "graph"]
    return graph + (f"; {' and '.join(others)} embedded" if others else "")


def _corpus(report: dict[str, Any]) -> list[str]:
    lines = ["", "## Corpus", "",
             "| turns | entities | relationships | facts | users | conversations | words/turn (mean, p95) "
             "| turns of the busiest / median user |",
             "|---|---|---|---|---|---|---|---|"]
    for step in report["sizes"].values():
        c = step["corpus"]
        lines.append(f"| {c['turns']:,} | {c['entities']:,} | {c['relationships']:,} | {c['facts']:,} | "
                     f"{c['users']} | {c['conversations']:,} | {c['words_per_turn']['mean']}, "
                     f"{c['words_per_turn']['p95']} | {c['turns_per_user']['max']:,} / "
                     f"{c['turns_per_user']['median']:,} |")
    return lines


def _embedding(report: dict[str, Any]) -> list[str]:
    emb = report["embedding"]
    lines = ["", "## Embedding (separate from the engine figures)", "",
             "| preset | docs/s (cold, no cache) | query embedding p50 ms | model load s |", "|---|---|---|---|"]
    for name, p in emb["presets"].items():
        if "error" in p:
            lines.append(f"| `{name}` | not available: {p['error']} | | |")
        else:
            lines.append(f"| `{name}` | {p['docs_per_second']} ({p['texts']} texts) | "
                         f"{p['query_ms'].get('p50', '-')} | {p['load_seconds']} |")
    ce = emb["corpus"]
    lines += ["", f"Corpus vectors (`local:minilm`, turns by their own text, {ce['workers']} worker threads): "
                  f"{ce['distinct_texts']:,} distinct texts, {ce['computed']:,} embedded in this run"
                  + (f" ({ce['computed_per_second']} texts/s)" if ce["computed_per_second"] else "")
                  + f", {ce['from_cache']:,} from the disk cache; {ce['seconds']} s."]
    return lines


def _floor_note(report: dict[str, Any]) -> str:
    """What the floor's graph side was on this backend (empty for a scratch graph of its own)."""
    backend, graph_name = report["settings"]["graph_backend"], _graph_name(report)
    if any("skipped" in step["floor"] for step in report["sizes"].values()):  # reports of earlier runs on Neo4j
        return f" The floor's graph statements are FalkorDB Cypher: on {graph_name} it is not measured."
    if OWN_GRAPH_PER_NAME.get(backend, False):
        return ""
    return (f" On {graph_name} (one database) the floor's graph rows go into the benchmark's database beside the "
            "engine's, under prefixed ids deleted afterwards, so its indexes also hold the engine's rows.")


def _ingest(report: dict[str, Any]) -> list[str]:
    lines = ["", "## Ingest: engine vs database floor (the same rows, in the same run)", "",
             "Engine: `store_turns` batches and the batch APIs `upsert_entities` / `create_relationships` / "
             "`learn_facts` with precomputed vectors — durable log, graph projection, timeline, audit, working "
             "memory. Floor: binary `COPY` into a scratch `conversation_logs` (same indexes) + batched "
             "`UNWIND … MERGE` into a scratch graph (same indexes), nothing else." + _floor_note(report), "",
             "| step | kind | rows | engine /s | floor /s | engine / floor (time) | engine rate, % of floor |",
             "|---|---|---|---|---|---|---|"]
    for size, step in report["sizes"].items():
        for kind in ("turns", "entities", "relationships", "facts"):
            e = step["ingest"][kind]
            floor_rate = step["floor"].get(kind, {}).get("per_second")
            ratio = step.get("ingest_ratio", {}).get(kind)
            share = f"{100 * e['per_second'] / floor_rate:.0f} %" if floor_rate and e["per_second"] else "-"
            lines.append(f"| →{_k(int(size))} | {kind} | {e['count']:,} | {e['per_second']:,} | "
                         f"{'-' if floor_rate is None else f'{floor_rate:,}'} | "
                         f"{'-' if ratio is None else f'{ratio}×'} | {share} |")
        floor = step["floor"]
        if "not_measured" in floor:
            lines.append(f"| →{_k(int(size))} | (floor) | | | not measured: {floor['not_measured']} | | |")
        if "postgres_copy" in floor:
            lines.append(f"| →{_k(int(size))} | (floor split) | | | COPY {floor['postgres_copy']['per_second']:,}/s, "
                         f"graph MERGE {floor['graph_turns']['per_second']:,}/s | | |")
    return lines


def _latency(report: dict[str, Any]) -> list[str]:
    graph_name = _graph_name(report)
    lines = ["", "## `remember()` latency, excluding query embedding (ms)", "",
             "Query vectors are embedded once up front (the embedder's cache answers); figures are wall time of "
             "`remember()` minus `metrics.embed_ms` (wall time with it in brackets), top_k = 10, one user among "
             f"{report['parameters']['users']}, reference_time = the corpus end. Background reinforcement/audit "
             "writes are drained between queries, outside the clock.", "",
             "| turns | configuration | user's turns | p50 | p95 | p99 | wall p50 [p95] | embed_ms mean "
             "| turns returned |",
             "|---|---|---|---|---|---|---|---|---|"]
    for size, step in report["sizes"].items():
        for name, v in step["latency"].items():
            user = step["users"]["median" if name == FULL_MEDIAN else "main"]
            lines.append(f"| {_k(int(size))} | {name} | {user['turns']:,} | **{v['ms']['p50']}** | "
                         f"{v['ms']['p95']} | {v['ms']['p99']} | {v['wall_ms']['p50']} [{v['wall_ms']['p95']}] | "
                         f"{v['embed_ms']['mean']} | {v['turns_returned_mean']} |")
    short = [f"{_k(int(size))} {name}: {q['question']!r} ({q['channel']}, {q['turns']} turns)"
             for size, step in report["sizes"].items() for name, v in step["latency"].items()
             for q in v.get("short_questions", [])]
    if short:
        lines += ["", "Questions answered with fewer than 10 turns: " + "; ".join(short) + "."]
    lines += ["", "Floors on the same store and the same query vectors (ms):", "",
              "| turns | floor | vectors | p50 | p95 | p99 |", "|---|---|---|---|---|---|"]
    for size, step in report["sizes"].items():
        floors = step["read_floors"]
        for name, v in floors.items():
            if name.startswith("_"):
                continue
            n = floors["_vectors"]["user" if "the user" in name else "all"]
            label = f"{name}, {graph_name}" if name == GRAPH_VECTOR_FLOOR else name
            lines.append(f"| {_k(int(size))} | {label} | {n:,} | {v['p50']} | {v['p95']} | {v['p99']} |")
    lines += ["", "Ratios of p50 latencies (remember / floor):", "",
              f"| turns | configuration | / pgvector HNSW | / {graph_name} vector index | / numpy exact (all) | "
              "/ numpy exact (user) |",
              "|---|---|---|---|---|---|"]
    for size, step in report["sizes"].items():
        for name, r in step["ratios"].items():
            cells = [r.get(f"/ {f}", r.get(f"/ {LEGACY_GRAPH_VECTOR_FLOOR}", "-") if f == GRAPH_VECTOR_FLOOR else "-")
                     for f in RATIO_FLOORS]
            lines.append(f"| {_k(int(size))} | {name} | "
                         + " | ".join(f"{c}×" if c != "-" else c for c in cells) + " |")
    lines += ["", "Where the time of the full configuration goes (mean ms per technique; they overlap, as searches "
                  "run concurrently):", ""]
    for size, step in report["sizes"].items():
        techniques = step["latency"][FULL]["techniques_mean_ms"]
        lines.append(f"- {_k(int(size))}: " + ", ".join(f"{k} {v}" for k, v in techniques.items()))
    return lines + _vector_routes(report)


#: What each of ``GraphStore.vector_routes`` means, in the report's words.
_ROUTES = {"index": "the label's vector index", "fallback": "the index kept too few of the user's nodes, then the scan",
           "scan": "a scan of the user's nodes", "search": "Neo4j's tenant-filtered SEARCH"}


def _vector_routes(report: dict[str, Any]) -> list[str]:
    """How the full configuration's graph vector searches were answered (reports from before keep no counts)."""
    counted = {size: step["latency"][FULL].get("vector_routes") for size, step in report["sizes"].items()}
    if not any(routes is not None for routes in counted.values()):
        return []
    lines = ["", "How the full configuration's graph vector searches (facts, entities, ...) were answered: "
                 + "; ".join(f"{name}: {what}" for name, what in _ROUTES.items()) + ".", ""]
    for size, routes in counted.items():
        if routes is not None:
            lines.append(f"- {_k(int(size))}: " + (", ".join(f"{k} {v:,}" for k, v in routes.items()) or "none"))
    return lines


def _resources(report: dict[str, Any]) -> list[str]:
    graph_name = _graph_name(report)
    falkordb = report["settings"]["graph_backend"] == "falkordb"
    lines = ["", "## Resources", ""]
    if falkordb:
        lines += ["| turns | FalkorDB RSS | PostgreSQL RSS (PSS) | client RSS | FalkorDB data dir | "
                  "PostgreSQL data dir | namespace: graph / PostgreSQL |", "|---|---|---|---|---|---|---|"]
    else:
        lines += [f"{graph_name}: the server process found listening on the Bolt port, its data directory, and as the "
                  "graph namespace the database's store and transaction-log files (the benchmark owns the whole "
                  "database; store files do not shrink after deletes and transaction logs are retained, so on a "
                  "server that held data before these are upper bounds). The embedded FalkorDB still runs as the "
                  "Redis of working memory.", "",
                  f"| turns | {graph_name} RSS | PostgreSQL RSS (PSS) | Redis (embedded FalkorDB) RSS | client RSS | "
                  f"{graph_name} data dir | PostgreSQL data dir | namespace: graph / PostgreSQL |",
                  "|---|---|---|---|---|---|---|---|"]
    notes = []
    for size, step in report["sizes"].items():
        r = step["resources"]
        fk, pg = r.get("falkordb", {}), r.get("postgres", {})
        postgres_rss = f"{_mib(pg.get('rss_bytes'))} ({_mib(pg.get('pss_bytes'))})"
        namespaces = f"{_mib(r.get('namespace_graph_bytes'))} / {_mib(r.get('namespace_postgres_bytes'))}"
        if falkordb:
            lines.append(f"| {_k(int(size))} | {_mib(fk.get('rss_bytes'))} | {postgres_rss} | "
                         f"{_mib(r['client_rss_bytes'])} | {_mib(fk.get('data_size_bytes'))} | "
                         f"{_mib(pg.get('data_size_bytes'))} | {namespaces} |")
        else:
            gs = r.get("graph_server", {})
            if gs.get("note"):
                notes.append(f"- {_k(int(size))}: {gs['note']}")
            if "store_bytes" in gs:
                notes.append(f"- {_k(int(size))}: {graph_name} database = store {_mib(gs['store_bytes'])} + "
                             f"transaction logs {_mib(gs['transaction_log_bytes'])}")
            lines.append(f"| {_k(int(size))} | {_mib(gs.get('rss_bytes'))} | {postgres_rss} | "
                         f"{_mib(fk.get('rss_bytes'))} | {_mib(r['client_rss_bytes'])} | "
                         f"{_mib(gs.get('data_size_bytes'))} | {_mib(pg.get('data_size_bytes'))} | {namespaces} |")
    if notes:
        lines += ["", *notes]
    return lines


def _growth(report: dict[str, Any]) -> list[str]:
    growth = report["growth_per_10x"]
    if not growth:
        return []
    lines = ["", "## Growth: latency ratio per 10× of data", "", "| series | " + " | ".join(growth) + " |",
             "|---" * (len(growth) + 1) + "|"]
    lines += [f"| {key} | " + " | ".join(f"{g.get(key)}×" for g in growth.values()) + " |"
              for key in next(iter(growth.values()))]
    return lines


def _bar(report: dict[str, Any]) -> list[str]:
    bar = report["bar"]
    lines = ["", f"## The bar at {_k(bar['size'])} turns: busiest user p50 ≤ {bar['target']['p50_ms']:g} ms, p95 ≤ "
                 f"{bar['target']['p95_ms']:g} ms; median user p50 ≤ {BARS[FULL_MEDIAN]['p50_ms']:g} ms (full "
                 f"configuration, excluding query embedding)", ""]
    for name in (FULL, FULL_MEDIAN):
        if name in bar:
            b = bar[name]
            target = ", ".join(f"{key.removesuffix('_ms')} ≤ {limit:g} ms" for key, limit in b["target"].items())
            lines.append(f"- {name}{' (busiest user)' if name == FULL else ''}: p50 {b['p50_ms']} ms, "
                         f"p95 {b['p95_ms']} ms (target {target}) — **{'met' if b['met'] else 'missed'}**")
    overlap = bar.get("exact_overlap")
    if overlap:
        how = "approximate (HNSW) turn search" if overlap["approximate_search"] else "exact turn search already"
        lines.append(f"- top {overlap['k']} of the full configuration against the exact ranking (busiest user, "
                     f"{overlap['queries']} queries, {how}): overlap mean {overlap['mean']}, lowest {overlap['min']} "
                     f"(≥ {overlap['target']:g}) — **{'met' if overlap['met'] else 'missed'}**")
    return lines
