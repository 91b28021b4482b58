"""The scale benchmark's orchestration: one corpus, then per size ingest, recall latency, read and write floors,
resources; the report written as ``scale.json``, ``scale.md`` and ``scale.png`` (see the package docstring)."""

from __future__ import annotations

import json
import os
import platform
import random
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ...graph import cypher
from .. import git_commit
from .config import CONFIGS, FULL, FULL_MEDIAN, OVERLAP_QUERIES, RATIO_FLOORS, embedded_stores
from .corpus import USER_ZIPF, Corpus, generate_corpus, make_queries
from .embedding import embed_corpus, preset_throughput
from .floors_ingest import FloorStore
from .floors_read import read_floors
from .ingest import Slice, Vectors, ingest_engine
from .latency import exact_overlap, prepare_queries, profile_full, time_remember
from .plot import plot
from .report import markdown_report
from .resources import resources
from .summary import bar, growth

__all__ = ["run_scale", "scale_sizes"]


def scale_sizes(maximum: int) -> list[int]:
    """The benchmark steps up to ``maximum``: 10k, 100k and 1M below it, then ``maximum`` itself."""
    return [s for s in (10_000, 100_000, 1_000_000) if s < maximum] + [maximum]


async def _stored_counts(memory) -> dict[str, int]:
    rows = await memory.ctx.postgres.fetch("SELECT count(*) AS n FROM conversation_logs")
    out = {"conversation_logs": rows[0]["n"]}
    for label, statement in (("Turn", cypher.COUNT_TURNS), ("Entity", cypher.COUNT_ENTITIES),
                             ("Fact", cypher.COUNT_FACTS)):
        out[f"graph {label}"] = (await memory.ctx.graph.read(statement))[0]["n"]
    return out


async def _write_floor(settings, dsn: str, socket: str | None, corpus: Corpus, part: Slice, vectors: Vectors, *,
                       batch: int) -> dict[str, Any]:
    """The write floor of one step, in a scratch namespace opened and dropped around it."""
    floor = await FloorStore.open(settings, dsn, socket)
    try:
        if part.lo[0]:
            # The earlier steps' rows, untimed, so the floor writes into indexes as full as the engine's were; a
            # graph shared with the engine holds them already (the engine's copy), so then PostgreSQL only.
            await floor.write(corpus, Slice((0, 0, 0, 0), part.lo), vectors, batch=batch,
                              label="floor reload (untimed)", graph=floor.own_graph)
        return await floor.write(corpus, part, vectors, batch=batch)
    finally:
        await floor.drop()
        await floor.close()


async def _warmup_queries(memory, corpus: Corpus, user: str, n_turns: int, count: int, seed: int,
                          reference: datetime) -> list[tuple[str, str]]:
    """``count`` warm-up questions for ``user``, embedded: questions of their own (another seed), so the warm-up does
    not pre-read the timed ones."""
    warm = make_queries(corpus, user, n_turns, count, seed + 1)
    if warm:
        await prepare_queries(memory, [q for q, _ in warm], reference)
    return warm


async def run_scale(settings, *, sizes: Sequence[int], out_dir: Path, queries: int = 500, users: int = 50,
                    seed: int = 7, batch: int = 500, embed_sample: int = 200, profile: bool = False,
                    warmup: int = 300, write_floor_max: int | None = None,
                    progress: Callable[[str], None] = print) -> dict[str, Any]:
    """Run the whole benchmark (see the package docstring) on ``settings``' stores; write scale.json/.md/.png.
    Each latency configuration is timed after ``warmup`` untimed recalls of other questions of the same user; the
    write floor is measured for the steps of at most ``write_floor_max`` turns (every step when None)."""
    from ...memory import AsyncAgentMemory

    run_started = time.perf_counter()
    load_before = os.getloadavg()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    sizes = sorted({int(s) for s in sizes})
    phases: dict[str, float] = {}

    started = time.perf_counter()
    corpus = generate_corpus(sizes[-1], users=users, seed=seed, checkpoints=sizes)
    phases["generate corpus"] = time.perf_counter() - started
    progress(f"corpus: {len(corpus.turns)} turns, {len(corpus.entities)} entities, {len(corpus.relationships)} "
             f"relationships, {len(corpus.facts)} facts over {users} users")

    started = time.perf_counter()
    turn_vectors, entity_vectors, fact_vectors, corpus_embedding = await embed_corpus(
        corpus, settings.embedding.cache_path)
    vectors = (turn_vectors, entity_vectors, fact_vectors)
    phases["embed corpus"] = time.perf_counter() - started
    progress(f"corpus vectors: {corpus_embedding['computed']} embedded, {corpus_embedding['from_cache']} from the "
             f"cache, {corpus_embedding['seconds']} s")

    started = time.perf_counter()
    rnd = random.Random(f"{seed}:sample")
    distinct = list(dict.fromkeys(t.content for t in corpus.turns))
    sample = rnd.sample(distinct, min(embed_sample, len(distinct)))
    sample_questions = [f.question for f in rnd.sample(corpus.facts, min(20, len(corpus.facts)))]
    presets = await preset_throughput(sample, sample_questions)
    phases["preset throughput"] = time.perf_counter() - started

    per_user: dict[str, int] = defaultdict(int)
    for t in corpus.turns:
        per_user[t.user_id] += 1
    ranked = sorted(per_user, key=lambda u: (-per_user[u], u))
    # The busiest user, and the median user among those with facts at every size (all 50 at realistic sizes).
    with_facts = {f.user_id for f in corpus.facts[:corpus.prefix(sizes[0])[3]]}
    candidates = [u for u in ranked if u in with_facts] or ranked
    main_user, median_user = ranked[0], candidates[len(candidates) // 2]
    reference = corpus.end_time

    memory = await AsyncAgentMemory.open(settings)
    socket = None
    if settings.uses_embedded:
        from ...runtime import EmbeddedStack

        socket = str(EmbeddedStack(settings.embedded).endpoints().falkordb_socket)
    results: dict[str, Any] = {}
    try:
        previous = (0, 0, 0, 0)
        for size in sizes:
            hi = corpus.prefix(size)
            part = Slice(previous, hi)
            step: dict[str, Any] = {"corpus": corpus.stats(size)}
            progress(f"--- {hi[0]} turns: ingest {hi[0] - previous[0]} turns, {hi[1] - previous[1]} entities, "
                     f"{hi[3] - previous[3]} facts")
            started = time.perf_counter()
            step["ingest"] = await ingest_engine(memory, corpus, part, vectors, batch=batch)
            phases[f"{size}: engine ingest"] = time.perf_counter() - started
            started = time.perf_counter()
            # the reconcile queue too: every turn went through it, and recall probes it per candidate
            for table in ("conversation_logs", "turn_projection_queue", "memory_timeline"):
                await memory.ctx.postgres.execute(f"VACUUM ANALYZE {table}")
            phases[f"{size}: vacuum analyze"] = time.perf_counter() - started
            # What the worker's hourly compact_indexes job does for a deployment (FalkorDB keeps the vector of every
            # node updated during ingest, such as an entity merged with a new mention, until the index is rebuilt).
            started = time.perf_counter()
            step["index_compaction"] = await memory.compact_vector_indexes(wait_seconds=3600)
            phases[f"{size}: compact vector indexes"] = time.perf_counter() - started
            step["stored"] = await _stored_counts(memory)
            step["resources"] = await resources(memory, settings)

            started = time.perf_counter()
            latency: dict[str, Any] = {}
            questions = make_queries(corpus, main_user, hi[0], queries, seed)
            qvecs, step["query_embedding"] = await prepare_queries(memory, [q for q, _ in questions], reference)
            warm = await _warmup_queries(memory, corpus, main_user, hi[0], warmup, seed, reference)
            for name, kwargs in CONFIGS.items():
                latency[name] = await time_remember(memory, questions, main_user, reference, kwargs, f"{size}: {name}",
                                                    warmup=warm)
            median_questions = make_queries(corpus, median_user, hi[0], queries, seed)
            if median_questions:
                await prepare_queries(memory, [q for q, _ in median_questions], reference)
                warm = await _warmup_queries(memory, corpus, median_user, hi[0], warmup, seed, reference)
                latency[FULL_MEDIAN] = await time_remember(memory, median_questions, median_user, reference, {},
                                                           f"{size}: {FULL_MEDIAN}", warmup=warm)
            step["latency"] = latency
            step["exact_overlap"] = await exact_overlap(memory, questions[:OVERLAP_QUERIES], main_user, reference)
            step["users"] = {
                "main": {"id": main_user, "turns": sum(1 for t in corpus.turns[:hi[0]] if t.user_id == main_user),
                         "queries": len(questions)},
                "median": {"id": median_user,
                           "turns": sum(1 for t in corpus.turns[:hi[0]] if t.user_id == median_user),
                           "queries": len(median_questions)}}
            phases[f"{size}: remember"] = time.perf_counter() - started
            started = time.perf_counter()
            step["read_floors"] = await read_floors(memory, corpus, hi[0], main_user, questions, qvecs, turn_vectors)
            phases[f"{size}: read floors"] = time.perf_counter() - started
            floors = step["read_floors"]
            step["ratios"] = {
                name: {f"/ {floor}": round(latency[name]["ms"]["p50"] / floors[floor]["p50"], 2)
                       for floor in RATIO_FLOORS if floors[floor].get("p50")}
                for name in latency}
            if profile and size == sizes[-1]:
                try:
                    await profile_full(memory, questions[:100], main_user, reference, out_dir / "scale_profile.txt")
                except Exception as exc:  # the profile is an extra: never lose the measurements to it
                    progress(f"profile failed: {exc}")

            if write_floor_max is None or hi[0] <= write_floor_max:
                started = time.perf_counter()
                step["floor"] = await _write_floor(settings, memory.ctx.postgres.dsn, socket, corpus, part, vectors,
                                                   batch=batch)
                phases[f"{size}: write floor"] = time.perf_counter() - started
                step["ingest_ratio"] = {
                    kind: round(step["floor"][kind]["per_second"] / step["ingest"][kind]["per_second"], 2)
                    for kind in ("turns", "entities", "relationships", "facts")
                    if step["ingest"][kind]["per_second"] and step["floor"][kind]["per_second"]}
            else:
                step["floor"] = {"not_measured": f"the write floor is measured up to {write_floor_max:,} turns "
                                                 "(--write-floor-max)"}
            results[str(hi[0])] = step
            previous = hi
            progress(f"{hi[0]} turns: full recall p50 {latency[FULL]['ms']['p50']} ms, "
                     f"p95 {latency[FULL]['ms']['p95']} ms (excluding query embedding)")
        await memory.drain()
    finally:
        await memory.close()

    report = {
        "benchmark": "scale",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "commit": git_commit(),
        "machine": {"python": platform.python_version(), "platform": platform.platform(), "cpus": os.cpu_count(),
                    "load_average_before": [round(x, 2) for x in load_before],
                    "load_average_after": [round(x, 2) for x in os.getloadavg()]},
        "settings": {"embedding_model": settings.embedding.model, "graph_backend": settings.graph.backend,
                     "embedded": settings.uses_embedded,
                     "embedded_stores": embedded_stores(settings), "retrieval": settings.retrieval.model_dump(),
                     "recall": settings.recall.model_dump(), "audit_level": settings.audit.level},
        "parameters": {"sizes": [int(s) for s in results], "queries": queries, "warmup": warmup, "users": users,
                       "write_floor_max": write_floor_max,
                       "seed": seed, "batch": batch, "embed_sample": embed_sample, "user_zipf": USER_ZIPF},
        "embedding": {"presets": presets, "corpus": corpus_embedding},
        "sizes": results,
        "growth_per_10x": growth(results),
        "bar": bar(results),
        "phases_seconds": {k: round(v, 1) for k, v in phases.items()},
        "run_seconds": round(time.perf_counter() - run_started, 1),
    }
    (out_dir / "scale.json").write_text(json.dumps(report, indent=2, default=str))
    (out_dir / "scale.md").write_text(markdown_report(report))
    plot(report, out_dir / "scale.png")
    return report
