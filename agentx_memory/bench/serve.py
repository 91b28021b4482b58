"""``agentx-memory bench serve``: a bounded load test of the REST service on loopback.

The service runs as ``agentx-memory serve`` runs it (uvicorn, one process, in a thread of this one) on the
benchmark's own namespace; an async httpx client sends ``requests`` calls of ``POST /v1/turns`` (store_turn), then
of ``POST /v1/remember``, each with ``concurrency`` in flight, through one API key whose rate limits are set out of
reach (their Redis counter still runs on every request). It reports, per operation: requests/s, p50/p95/p99 latency
and the error count (any status but 2xx, or a transport error). Client and server share the machine's cores, so the
figures are a floor for one process, not a capacity plan. The same calls made directly on an
:class:`~agentx_memory.AsyncAgentMemory` (``library`` in the report, same concurrency, another user) show what the
HTTP layer adds.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from ..memory import AsyncAgentMemory
from ..models import Turn
from ..settings import Settings
from . import git_commit
from .common import machine

__all__ = ["markdown_report", "run_serve_bench"]

_WORDS = ("Lisbon", "Porto", "tram", "flat", "balcony", "sister", "Clara", "June", "market", "river", "trip",
          "train", "museum", "coffee", "bakery", "garden", "office", "project", "meeting", "deadline")


def _text(n: int) -> str:
    words = [_WORDS[(n * 7 + i * 3) % len(_WORDS)] for i in range(12)]
    return f"Turn {n}: I talked about the " + " ".join(words) + "."


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _summary(latencies: list[float], errors: int, seconds: float, concurrency: int) -> dict[str, Any]:
    ms = np.array(latencies) if latencies else np.array([0.0])
    return {"requests": len(latencies), "concurrency": concurrency, "seconds": round(seconds, 3),
            "requests_per_second": round(len(latencies) / seconds, 1) if seconds > 0 else 0.0,
            "p50_ms": round(float(np.percentile(ms, 50)), 2), "p95_ms": round(float(np.percentile(ms, 95)), 2),
            "p99_ms": round(float(np.percentile(ms, 99)), 2), "errors": errors}


async def _load(send: Callable[[int], Awaitable[int]], requests: int, concurrency: int) -> dict[str, Any]:
    """Send ``requests`` calls, ``concurrency`` at a time; time each."""
    latencies: list[float] = []
    errors = 0
    queue = iter(range(requests))

    async def worker() -> None:
        nonlocal errors
        for n in queue:
            started = time.perf_counter()
            try:
                status = await send(n)
            except Exception:  # a transport error counts as an error, like a 5xx
                status = 0
            latencies.append((time.perf_counter() - started) * 1000)
            errors += not 200 <= status < 300

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return _summary(latencies, errors, time.perf_counter() - started, concurrency)


async def run_serve_bench(settings: Settings, *, requests: int = 500, concurrency: int = 8,
                          out_dir: Path | None = None, progress: Callable[[str], None] = print) -> dict[str, Any]:
    """Run the load test on ``settings``' namespace (which the caller resets) and return the report; with
    ``out_dir``, also write ``serve.json`` and ``serve.md`` there."""
    import httpx
    import uvicorn

    from ..server import create_app

    settings = settings.model_copy(update={"server": settings.server.model_copy(
        update={"read_rate_limit": 1_000_000, "write_rate_limit": 1_000_000})})
    report: dict[str, Any] = {
        "benchmark": "serve", "date": datetime.now(UTC).isoformat(timespec="seconds"), "commit": git_commit(),
        "machine": machine(), "embedding_model": settings.embedding.model, "graph": settings.graph.backend,
        "requests": requests, "concurrency": concurrency, "operations": {}, "library": {},
    }
    async with await AsyncAgentMemory.open(settings) as memory:
        token = (await memory.create_api_key("bench-user", name="bench serve")).token

        async def lib_store(n: int) -> int:
            await memory.store_turn(Turn(user_id="bench-library", conversation_id=f"lib-{n % 20}", content=_text(n)))
            return 200

        async def lib_remember(n: int) -> int:
            await memory.remember(f"What did I say about the {_WORDS[n % len(_WORDS)]}?", "bench-library", top_k=10)
            return 200

        for name, call in (("store_turn", lib_store), ("remember", lib_remember)):
            progress(f"bench serve: {requests} × {name} on the library directly, {concurrency} in flight")
            report["library"][name] = await _load(call, requests, concurrency)
    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(settings), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, name="agentx-bench-serve", daemon=True)
    thread.start()
    while not server.started:
        if not thread.is_alive():
            raise RuntimeError("the REST service did not start")
        await asyncio.sleep(0.05)
    try:
        limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", limits=limits, timeout=120,
                                     headers={"Authorization": f"Bearer {token}"}) as client:
            async def store_turn(n: int) -> int:
                body = {"conversation_id": f"bench-{n % 20}", "content": _text(n)}
                return (await client.post("/v1/turns", json=body)).status_code

            async def remember(n: int) -> int:
                body = {"query": f"What did I say about the {_WORDS[n % len(_WORDS)]}?", "top_k": 10}
                return (await client.post("/v1/remember", json=body)).status_code

            for name, send in (("store_turn", store_turn), ("remember", remember)):
                progress(f"bench serve: {requests} × {name}, {concurrency} in flight")
                report["operations"][name] = await _load(send, requests, concurrency)
    finally:
        server.should_exit = True
        await asyncio.to_thread(thread.join, 60)
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / "serve.json").write_text(json.dumps(report, indent=2))
        (out_dir / "serve.md").write_text(markdown_report(report))
    return report


def markdown_report(report: dict[str, Any]) -> str:
    """The report as a Markdown table."""
    lines = [f"REST service on loopback: {report['requests']} requests per operation, {report['concurrency']} in "
             f"flight, {report['graph']}, embedding {report['embedding_model']}, commit {report['commit']}", "",
             "| operation | requests/s | p50 ms | p95 ms | p99 ms | errors |", "|---|---|---|---|---|---|"]
    rows = [(f"`{name}` over HTTP", m) for name, m in report["operations"].items()]
    rows += [(f"`{name}` on the library directly", m) for name, m in report.get("library", {}).items()]
    for label, m in rows:
        lines.append(f"| {label} | {m['requests_per_second']} | {m['p50_ms']} | {m['p95_ms']} | {m['p99_ms']} "
                     f"| {m['errors']} |")
    return "\n".join(lines) + "\n"
