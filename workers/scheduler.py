"""The consolidation worker's scheduler (APScheduler 3, asyncio).

Jobs and their intervals come from settings (``worker.*_minutes``): ``reconcile`` (graph projection of the durable
log), ``audit_partitions``, ``consolidate`` (extraction of quiet conversations), ``promote`` (project facts to
``_global``), ``decay``, ``cleanup`` (archiving past retention, faded entities), ``dedup`` (duplicate entities),
``patterns`` (strategies from conversations that used tools), ``short_term`` (the short-term tier: promote entries
read often, drop expired ones), ``context_rot`` (archive stale facts and entities, daily) and ``compact_indexes``
(rebuild vector indexes full of dead vectors, hourly).

``run_worker`` runs every job once at start, then on its interval, until stopped: SIGTERM or SIGINT (or the ``stop``
event) stops scheduling and lets the jobs in flight finish before the memory closes, so a run is never cut between
its writes and its record. ``run_job`` runs one job now (``agentx-memory worker run JOB``).
"""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Awaitable, Callable
from typing import Any

from apscheduler.schedulers.asyncio import AsyncIOScheduler

from agentx_memory import AsyncAgentMemory, Settings, ValidationError

from .jobs import (
    DEFAULT_OPTIONS,
    JobOptions,
    audit_partitions,
    cleanup,
    compact_indexes,
    consolidate,
    context_rot,
    decay,
    dedup,
    patterns,
    promote,
    reconcile,
    short_term,
)

__all__ = ["JOBS", "Job", "JobOptions", "run_job", "run_once", "run_worker"]

log = logging.getLogger("agentx_memory.worker")

#: A job: runs once on an open memory with its options, returns a summary for the log.
Job = Callable[[AsyncAgentMemory, JobOptions], Awaitable[dict[str, Any]]]

#: name → (job, interval setting under ``worker.``)
JOBS: dict[str, tuple[Job, str]] = {
    "reconcile": (reconcile.run, "reconcile_minutes"),
    "audit_partitions": (audit_partitions.run, "audit_partitions_minutes"),
    "consolidate": (consolidate.run, "consolidate_minutes"),
    "promote": (promote.run, "promote_minutes"),
    "decay": (decay.run, "decay_minutes"),
    "cleanup": (cleanup.run, "cleanup_minutes"),
    "dedup": (dedup.run, "dedup_minutes"),
    "patterns": (patterns.run, "patterns_minutes"),
    "short_term": (short_term.run, "short_term_minutes"),
    "context_rot": (context_rot.run, "context_rot_minutes"),
    "compact_indexes": (compact_indexes.run, "compact_indexes_minutes"),
}



async def run_job(name: str, memory: AsyncAgentMemory, options: JobOptions = DEFAULT_OPTIONS) -> dict[str, Any]:
    """Run the job ``name`` once now and return its summary; a failure raises (an unknown job is a
    :class:`ValidationError` naming the jobs there are)."""
    if name not in JOBS:
        raise ValidationError("job", f"unknown job {name!r}; jobs: {', '.join(JOBS)}")
    job, _ = JOBS[name]
    return await job(memory, options)


async def _run_logged(name: str, memory: AsyncAgentMemory) -> dict[str, Any]:
    try:
        summary = await run_job(name, memory)
        log.info("job %s: %s", name, summary, extra={"job": name, "outcome": "ok", "summary": summary})
        return summary
    except Exception:  # one failing job must not stop the worker
        log.exception("job %s failed", name, extra={"job": name, "outcome": "failed"})
        return {"error": True}


async def run_once(settings: Settings) -> dict[str, dict[str, Any]]:
    """Run every implemented job once (``agentx-memory worker --once``)."""
    async with await AsyncAgentMemory.open(settings) as memory:
        return {name: await _run_logged(name, memory) for name in JOBS}


async def run_worker(settings: Settings, stop: asyncio.Event | None = None) -> None:
    """Run the scheduler until ``stop`` is set, or until SIGTERM/SIGINT when no ``stop`` is given; the jobs in flight
    finish first."""
    stop = stop or _stop_on_signals()
    in_flight: set[asyncio.Task[dict[str, Any]]] = set()

    async def tracked(name: str) -> dict[str, Any]:
        task = asyncio.ensure_future(_run_logged(name, memory))
        in_flight.add(task)
        task.add_done_callback(in_flight.discard)
        return await asyncio.shield(task)  # a cancelled caller leaves the run itself to finish

    memory = await AsyncAgentMemory.open(settings)
    scheduler = AsyncIOScheduler(timezone="UTC")
    for name, (_, interval) in JOBS.items():
        scheduler.add_job(tracked, "interval", minutes=getattr(settings.worker, interval), args=[name],
                          id=name, max_instances=1, coalesce=True)
    scheduler.start()
    starting = asyncio.ensure_future(_each_once(tracked))
    try:
        await stop.wait()
        log.info("stopping: %d job(s) in flight finish first", len(in_flight))
    finally:
        scheduler.shutdown(wait=False)
        starting.cancel()  # the start-up pass stops between jobs; the job it is in finishes below
        await asyncio.gather(starting, *in_flight, return_exceptions=True)
        await memory.close()


async def _each_once(tracked: Callable[[str], Awaitable[dict[str, Any]]]) -> None:
    for name in JOBS:
        await tracked(name)


def _stop_on_signals() -> asyncio.Event:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    return stop
