"""The consolidation worker's scheduler (APScheduler 3, asyncio).

Jobs and their intervals come from settings (``worker.*_minutes``). Implemented so far: ``reconcile`` (graph
projection of the durable log), ``audit_partitions``, ``consolidate`` (extraction of quiet conversations) and
``promote`` (project facts to ``_global``), ``decay`` and ``cleanup`` (faded entities). Pattern detection, dedup and
the archiving of old conversations are not built yet; the worker says so at start rather than pretending.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from apscheduler.schedulers.asyncio import AsyncIOScheduler

from agentx_memory import AsyncAgentMemory, Settings

from .jobs import audit_partitions, cleanup, consolidate, decay, promote, reconcile

__all__ = ["JOBS", "Job", "run_once", "run_worker"]

log = logging.getLogger("agentx_memory.worker")

#: A job: runs once on an open memory, returns a summary for the log.
Job = Callable[[AsyncAgentMemory], Awaitable[dict[str, Any]]]

#: name → (job, interval setting under ``worker.``)
JOBS: dict[str, tuple[Job, str]] = {
    "reconcile": (reconcile.run, "reconcile_minutes"),
    "audit_partitions": (audit_partitions.run, "audit_partitions_minutes"),
    "consolidate": (consolidate.run, "consolidate_minutes"),
    "promote": (promote.run, "promote_minutes"),
    "decay": (decay.run, "decay_minutes"),
    "cleanup": (cleanup.run, "cleanup_minutes"),
}

NOT_BUILT = ("patterns", "dedup", "archiving of old conversations")


async def _run_job(name: str, memory: AsyncAgentMemory) -> dict[str, Any]:
    job, _ = JOBS[name]
    try:
        summary = await job(memory)
        log.info("job %s: %s", name, summary)
        return summary
    except Exception:  # one failing job must not stop the worker
        log.exception("job %s failed", name)
        return {"error": True}


async def run_once(settings: Settings) -> dict[str, dict[str, Any]]:
    """Run every implemented job once (``agentx-memory worker --once``)."""
    memory = await AsyncAgentMemory.open(settings)
    try:
        return {name: await _run_job(name, memory) for name in JOBS}
    finally:
        await memory.close()


async def run_worker(settings: Settings, stop: asyncio.Event | None = None) -> None:
    """Run the scheduler until ``stop`` is set (or forever)."""
    memory = await AsyncAgentMemory.open(settings)
    scheduler = AsyncIOScheduler(timezone="UTC")
    for name, (_, interval) in JOBS.items():
        scheduler.add_job(_run_job, "interval", minutes=getattr(settings.worker, interval), args=[name, memory],
                          id=name, max_instances=1, coalesce=True)
    log.warning("jobs not built yet (spec 003): %s", ", ".join(NOT_BUILT))
    scheduler.start()
    for name in JOBS:  # run each once at start
        await _run_job(name, memory)
    try:
        await (stop or asyncio.Event()).wait()
    finally:
        scheduler.shutdown(wait=False)
        await memory.close()
