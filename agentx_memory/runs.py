"""Run records of the maintenance jobs (issue 14): every run is recorded, and a run that changed meaning can be undone.

:func:`recorded` wraps one run of a job: it records the start in ``worker_runs``, lets the job fill its report, and
records the end with the report's summary (plus the duration) and its ``changes``: one JSON value per changed item,
holding what the item was before, which is what the job's undo function needs. A job that fails part-way is
recorded ``failed`` with the changes it made so far, so it can be undone as well. While the job runs, its changes so
far are checkpointed into the record every few seconds, and whenever the job calls :meth:`JobReport.save` (before a
write that only its change record could undo, such as deleting a merged entity): a worker that dies mid-run leaves
them behind. A running record not checkpointed for ``worker.stale_run_minutes`` is marked ``failed`` (interrupted)
by the next recorded run or undo, and can then be undone. A dry run writes nothing and is not
recorded. Each run also leaves an audit entry (operation ``worker_run``) with its summary. A run can be undone for
``worker.undo_days``; after that its changes are dropped (status ``expired``), and its record goes after
``retention.audit_days``.

:func:`undo` reverses a run once: the run is claimed (``ok``/``failed`` → ``undoing``), the job's undo function
restores each item, and the run is marked ``undone`` with what the undo did. An item changed again since the run
(by a later run or by use) is left as it is and counted as ``skipped``: an undo never overwrites newer work.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Final, TypeVar

from .audit import MemoryAuditLogger
from .errors import AgentXMemoryError, ConflictError, NotFoundError, ValidationError
from .models import new_id
from .sql.worker_runs import WorkerRuns

__all__ = ["CHECKPOINT_SECONDS", "JobReport", "RunKeeping", "UndoFunction", "recorded", "undo"]

#: How often a running run's changes are checkpointed into its record (its heartbeat), at most.
CHECKPOINT_SECONDS: Final = 5.0

log = logging.getLogger(__name__)


@dataclass
class JobReport:
    """What every job's report has: its run id (``None`` for a dry run), whether it was a dry run, and the changes
    it made (what each changed item was before; the job's undo function reads them)."""

    run_id: str | None = None
    dry_run: bool = False
    changes: list[dict[str, Any]] = field(default_factory=list)
    #: Writes the changes not yet in the run's record (set by :func:`recorded`; none for a dry run).
    saver: Callable[[], Awaitable[None]] | None = field(default=None, repr=False, compare=False)

    async def save(self) -> None:
        """Write the changes recorded so far into the run's record now: a job calls it before a write that only
        those records could undo, so a worker that dies right after still leaves them (nothing for a dry run)."""
        if self.saver is not None:
            await self.saver()

    def counts(self) -> dict[str, Any]:
        """The job's own figures (examined, changed, ...); each report overrides this."""
        return {}

    def summary(self) -> dict[str, Any]:
        """Plain values for the worker's log, ``worker run`` and the run record."""
        out = {**self.counts(), "dry_run": self.dry_run}
        if self.run_id:
            out["run_id"] = self.run_id
        return out


R = TypeVar("R", bound=JobReport)

#: A job's undo: the run's changes in, what it did out (``restored``, ``skipped`` counts at least).
UndoFunction = Callable[[list[dict[str, Any]]], Awaitable[dict[str, int]]]


@dataclass(frozen=True)
class RunKeeping:
    """How long run records keep what undo needs (``undo_days``) and how long they are kept at all
    (``keep_days``)."""

    undo_days: float
    keep_days: float
    #: A running record not checkpointed for this long belongs to a worker that died (``worker.stale_run_minutes``).
    stale_after: timedelta = timedelta(minutes=10)


async def recorded(runs: WorkerRuns, audit: MemoryAuditLogger, job: str, report: R,
                   work: Callable[[R], Awaitable[Any]], *, keeping: RunKeeping, user_id: str | None = None) -> R:
    """Run ``work(report)`` as one recorded run of ``job`` (see the module docstring); return the filled report.
    A dry run is run without a record. Each finished run expires the job's older records (``keeping``)."""
    if report.dry_run:
        await work(report)
        return report
    report.run_id = new_id()
    started = datetime.now(UTC)
    await runs.fail_stale(stale_before=started - keeping.stale_after, now=started)
    await runs.start(report.run_id, job, user_id, started)
    checkpoints = _Checkpoints(runs, report)
    report.saver = checkpoints.save
    beat = asyncio.create_task(checkpoints.every(min(CHECKPOINT_SECONDS, keeping.stale_after.total_seconds() / 4)))
    try:
        await work(report)
    except BaseException as exc:
        await checkpoints.stop(beat)
        summary = {**report.summary(), "error": f"{type(exc).__name__}: {exc}"}
        await _finish(runs, audit, job, report, started, "failed", summary, user_id)
        raise
    await checkpoints.stop(beat)
    await _finish(runs, audit, job, report, started, "ok", report.summary(), user_id)
    await runs.expire(job, undo_before=started - timedelta(days=keeping.undo_days),
                      keep_after=started - timedelta(days=keeping.keep_days))
    return report


class _Checkpoints:
    """Writes a running run's new changes into its record, on request and on a timer (its heartbeat)."""

    def __init__(self, runs: WorkerRuns, report: JobReport):
        self.runs, self.report = runs, report
        self.saved = 0
        self._lock = asyncio.Lock()

    async def save(self) -> None:
        """Checkpoint the changes made since the last checkpoint (an empty one still stamps the time)."""
        async with self._lock:
            assert self.report.run_id is not None
            new = self.report.changes[self.saved:]
            await self.runs.checkpoint(self.report.run_id, new, datetime.now(UTC))
            self.saved += len(new)

    async def every(self, seconds: float) -> None:
        """Checkpoint every ``seconds`` until cancelled; a failed checkpoint is retried at the next beat (the run's
        own writes are what matters, and the end of the run writes every change)."""
        while True:
            await asyncio.sleep(seconds)
            try:
                await self.save()
            except AgentXMemoryError as exc:
                log.warning("checkpointing worker run %s failed: %s", self.report.run_id, exc)

    async def stop(self, beat: asyncio.Task[None]) -> None:
        """End the timer (the run's end writes its changes whole)."""
        self.report.saver = None
        beat.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await beat


async def _finish(runs: WorkerRuns, audit: MemoryAuditLogger, job: str, report: JobReport, started: datetime,
                  status: str, summary: dict[str, Any], user_id: str | None) -> None:
    finished = datetime.now(UTC)
    summary = {**summary, "duration_seconds": round((finished - started).total_seconds(), 3)}
    assert report.run_id is not None
    await runs.finish(report.run_id, status=status, finished_at=finished, summary=summary, changes=report.changes)
    await audit.log_write("worker_run", "worker", None, [report.run_id], {"job": job, "status": status, **summary},
                          user_id=user_id, success=status == "ok")


async def undo(runs: WorkerRuns, audit: MemoryAuditLogger, run_id: str,
               undoers: Mapping[str, UndoFunction], *, stale_after: timedelta = timedelta(minutes=10)
               ) -> dict[str, Any]:
    """Reverse the recorded run ``run_id`` (see the module docstring); return what the undo did. A run whose worker
    died (not checkpointed for ``stale_after``) is marked ``failed`` first, and undone with the changes it saved.

    Raises :class:`NotFoundError` for an unknown run, :class:`ValidationError` (field ``run_id``) for a job without
    undo, and :class:`ConflictError` for a run that is still running, already undone or being undone."""
    now = datetime.now(UTC)
    await runs.fail_stale(stale_before=now - stale_after, now=now)
    record = await runs.get(run_id)
    if record is None:
        raise NotFoundError("worker run", run_id)
    job = record["job"]
    if job not in undoers:
        raise ValidationError("run_id", f"run {run_id} of job {job!r} cannot be undone; jobs with undo: "
                                        f"{', '.join(sorted(undoers))}")
    if not await runs.claim_undo(run_id):
        raise ConflictError(f"run {run_id} of job {job!r} is {record['status']}: only a finished run (ok or failed) "
                            "that was not undone and is within worker.undo_days can be undone")
    try:
        done = await undoers[job](list(record["changes"]))
    except BaseException:
        await runs.release_undo(run_id)
        raise
    summary = {"job": job, **done}
    await runs.mark_undone(run_id, at=datetime.now(UTC), summary=summary)
    await audit.log_write("worker_undo", "worker", None, [run_id], summary, user_id=record["user_id"])
    return {"run_id": run_id, **summary}
