"""What tracing costs per call: ``python benchmarks/otel_overhead.py [--calls N]`` (needs the ``otel`` extra).

Opens two memories on the same stores (the embedded ones unless ``AGENTX_*`` says otherwise; ``AGENTX_HOME`` picks
the data directory), one with ``observability.enabled`` and one without, and times the same calls on both,
alternating rounds so drift hits both alike: a PostgreSQL read (``get_preference``), a Redis read (a session's
``working().get``) and the bare wrapper around a coroutine that does nothing. Spans go to an SDK tracer provider
with a batch processor and an exporter that drops them, metrics to an SDK meter provider with an in-memory reader:
the work an application with exporters pays in process. Prints the median microseconds per call of each.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from agentx_memory import AsyncAgentMemory, load_settings
from agentx_memory.observability import configure
from agentx_memory.observability.spans import call_describer, traced


class _Drop(SpanExporter):
    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS


async def _per_call_us(call: Callable[[], Awaitable[Any]], calls: int) -> tuple[float, float]:
    """Wall-clock and CPU (this thread's: the event loop's) microseconds per call."""
    started, cpu = time.perf_counter(), time.thread_time()
    for _ in range(calls):
        await call()
    return (time.perf_counter() - started) / calls * 1e6, (time.thread_time() - cpu) / calls * 1e6


class _Bare:
    default_user_id, agent_id = "bench", None

    async def nothing(self, user_id: str | None = None) -> None:
        return None


async def main(calls: int, rounds: int) -> None:
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(BatchSpanProcessor(_Drop()))
    configure(tracer_provider, MeterProvider(metric_readers=[InMemoryMetricReader()]))
    off = await AsyncAgentMemory.open(load_settings(), user_id="bench")
    on = await AsyncAgentMemory.open(load_settings(observability={"enabled": True}), user_id="bench")
    bare = _Bare()
    traced_nothing = traced("nothing", _Bare.nothing, call_describer(_Bare.nothing))
    try:
        await off.set_preference("tone", "brief")
        await off.working(None, "bench").set("city", "Lisbon")
        cases: dict[str, tuple[Callable[[], Awaitable[Any]], Callable[[], Awaitable[Any]]]] = {
            "get_preference (PostgreSQL)": (lambda: off.get_preference("tone"), lambda: on.get_preference("tone")),
            "working().get (Redis)": (lambda: off.working(None, "bench").get("city"),
                                      lambda: on.working(None, "bench").get("city")),
            "bare wrapper (no I/O)": (lambda: bare.nothing(), lambda: traced_nothing(bare)),
        }
        for name, (plain, with_spans) in cases.items():
            for call in (plain, with_spans):  # warm up both
                await _per_call_us(call, max(10, calls // 10))
            plain_us, traced_us = [], []
            for _ in range(rounds):
                plain_us.append(await _per_call_us(plain, calls))
                traced_us.append(await _per_call_us(with_spans, calls))
            for i, what in ((0, "wall"), (1, "cpu ")):
                a = statistics.median(t[i] for t in plain_us)
                b = statistics.median(t[i] for t in traced_us)
                print(f"{name:28s} {what} off {a:8.1f} us/call  on {b:8.1f} us/call  overhead {b - a:7.1f} us")
    finally:
        await on.close()
        await off.close()
        tracer_provider.shutdown()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=500, help="calls per round")
    parser.add_argument("--rounds", type=int, default=7, help="rounds per case (the median is printed)")
    args = parser.parse_args()
    asyncio.run(main(args.calls, args.rounds))
