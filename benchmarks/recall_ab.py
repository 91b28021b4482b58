"""Two commits' recall latency on one kept `bench scale` build, interleaved and paired question by question.

    agentx-memory bench scale --sizes 100000 --queries 200 --keep --cache <dir>     # once: the build to replay on
    python benchmarks/recall_ab.py <base-ref> [<head-ref>] [--rounds 3] [--user busiest|median] [--size 100000]

On a shared machine a whole `bench scale` run cannot see a 2 ms change: the same code's busiest-user p50 moved from 35
to 46 ms over minutes (docs/benchmarks.md, issue 17). This script asks the bench's own questions (the same corpus,
user and seed as `bench scale`) against the kept namespace ``bench_scale`` from each commit in turn: every round
starts one process per commit, in alternating order, each importing the package from a worktree of its commit
(``PYTHONPATH``), warming up on 50 questions of the bench's warm-up seed and timing every question (wall time minus
``metrics.embed_ms``, as the bench does, with the background writes drained after each). It prints each round's p50
per commit (the drift the interleaving cancels) and, over each question's median across rounds, both commits' p50 /
p95 and the paired difference (median, mean, share of questions slower at the head). The timed loop is
``time_remember``'s, written here because that function returns percentiles only, and an older commit's copy of it
could not be changed to return each question's time. ``<head-ref>`` defaults to the working tree.

The servers are those of the environment (``AGENTX_HOME``, or ``AGENTX_GRAPH__URI`` for Neo4j), as for the bench.
Both commits must read the build's schema and share the bench's corpus and question generators.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WARMUP = 50


def replay(size: int, queries: int, which: str) -> list[float]:
    """Time the bench's questions once, in this process (the package its ``PYTHONPATH`` gives); ms per question."""
    import asyncio
    import time
    from collections import Counter

    from agentx_memory.bench.scale.corpus import generate_corpus, make_queries
    from agentx_memory.bench.scale.latency import prepare_queries
    from agentx_memory.bench.scale.run import _warmup_queries
    from agentx_memory.cli import _bench_settings
    from agentx_memory.memory import AsyncAgentMemory
    from agentx_memory.settings import Settings

    async def run() -> list[float]:
        corpus = generate_corpus(size, users=50, seed=7, checkpoints=[size])
        turns = Counter(t.user_id for t in corpus.turns)
        ranked = sorted(turns, key=lambda u: (-turns[u], u))
        user = ranked[0] if which == "busiest" else ranked[len(ranked) // 2]
        asked = make_queries(corpus, user, size, queries, 7)
        memory = await AsyncAgentMemory.open(_bench_settings(Settings(), "bench_scale"))
        try:
            await prepare_queries(memory, [q for q, _ in asked], corpus.end_time)
            # the bench's own warm-up: questions of another seed, so the timed ones are not read before
            for question, channel in await _warmup_queries(memory, corpus, user, size, WARMUP, 7, corpus.end_time):
                await memory.remember(question, user_id=user, channel=channel, top_k=10,
                                      reference_time=corpus.end_time)
            await memory.drain()
            times = []
            for question, channel in asked:
                started = time.perf_counter()
                bundle = await memory.remember(question, user_id=user, channel=channel, top_k=10,
                                               reference_time=corpus.end_time)
                times.append((time.perf_counter() - started) * 1000 - bundle.metrics.embed_ms)
                await memory.drain()
            return times
        finally:
            await memory.close()

    return asyncio.run(run())


def percentile(values: Sequence[float], share: float) -> float:
    """The nearest-rank percentile ``share`` (0-1) of ``values``."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(share * len(ordered)) - 1))]


def paired(base: Sequence[Sequence[float]], head: Sequence[Sequence[float]]) -> dict[str, float]:
    """Each commit's p50 / p95 over each question's median across rounds (``base[r][q]``: round r, question q),
    and the head-minus-base difference per question: its median, mean and the share of questions slower."""
    base_q = [statistics.median(r[q] for r in base) for q in range(len(base[0]))]
    head_q = [statistics.median(r[q] for r in head) for q in range(len(head[0]))]
    diffs = [h - b for b, h in zip(base_q, head_q, strict=True)]
    return {"base_p50": statistics.median(base_q), "base_p95": percentile(base_q, 0.95),
            "head_p50": statistics.median(head_q), "head_p95": percentile(head_q, 0.95),
            "diff_median": statistics.median(diffs), "diff_mean": statistics.fmean(diffs),
            "slower_share": sum(d > 0 for d in diffs) / len(diffs)}


def _worktree(side: str, ref: str, parent: Path) -> Path:
    path = parent / side
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(path), ref], check=True,
                   capture_output=True)
    return path


def _run_once(tree: Path, args: argparse.Namespace) -> list[float]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--replay", "--size", str(args.size),
                          "--queries", str(args.queries), "--user", args.user],
                         env=env, cwd=tree, check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: Sequence[str] | None = None) -> None:
    """Parse the arguments; replay once (``--replay``, the child) or compare two commits (the parent)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("base", nargs="?")
    parser.add_argument("head", nargs="?", help="a commit (default: the working tree)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--size", type=int, default=100_000, help="the kept build's turns")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--user", choices=("busiest", "median"), default="busiest")
    parser.add_argument("--replay", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.replay:
        print(json.dumps(replay(args.size, args.queries, args.user)))
        return
    if not args.base:
        parser.error("give the base commit")
    with tempfile.TemporaryDirectory(prefix="recall-ab-") as scratch:
        trees = {"base": _worktree("base", args.base, Path(scratch)),
                 "head": _worktree("head", args.head, Path(scratch)) if args.head else ROOT}
        try:
            times: dict[str, list[list[float]]] = {"base": [], "head": []}
            for rnd in range(args.rounds):
                for side in (("base", "head") if rnd % 2 == 0 else ("head", "base")):
                    times[side].append(_run_once(trees[side], args))
                print(f"round {rnd + 1}: p50 base {statistics.median(times['base'][-1]):.1f} ms, "
                      f"head {statistics.median(times['head'][-1]):.1f} ms", flush=True)
        finally:
            for tree in trees.values():
                if tree != ROOT:
                    subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)],
                                   check=False, capture_output=True)
    r = paired(times["base"], times["head"])
    print(f"{args.user} user, {args.queries} questions x {args.rounds} rounds, each question's median:")
    print(f"  base {args.base}: p50 {r['base_p50']:.2f} ms, p95 {r['base_p95']:.2f} ms")
    print(f"  head {args.head or 'working tree'}: p50 {r['head_p50']:.2f} ms, p95 {r['head_p95']:.2f} ms")
    print(f"  head - base per question: median {r['diff_median']:+.2f} ms, mean {r['diff_mean']:+.2f} ms, "
          f"slower on {r['slower_share']:.0%} of the questions")


if __name__ == "__main__":
    main()
