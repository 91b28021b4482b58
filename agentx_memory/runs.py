"""Run records of the maintenance jobs (issue 14): every run is recorded, and a run that changed meaning can be undone.

:func:`recorded` wraps one run of a job: it records the start in ``worker_runs``, lets the job fill its report, and
records the end with the report's summary (plus the duration) and its ``changes``: one JSON value per changed item,
holding what the item was before, which is what the job's undo function needs. A job that fails part-way is
recorded ``failed`` with the changes it made so far, so it can be undone as well. A dry run writes nothing and is not
recorded. Each run also leaves an audit entry (operation ``worker_run``) with its summary. A run can be undone for
``worker.undo_days``; after that its changes are dropped (status ``expired``), and its record goes after
``retention.audit_days``.

:func:`undo` reverses a run once: the run is claimed (``ok``/``failed`` → ``undoing``), the job's undo function
restores each item, and the run is marked ``undone`` with what the undo did. An item changed again since the run
(by a later run or by use) is left as it is and counted as ``skipped``: an undo never overwrites newer work.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from .audit import MemoryAuditLogger
from .errors import ConflictError, NotFoundError, ValidationError
from .models import new_id
from .sql.worker_runs import WorkerRuns

__all__ = ["JobReport", "RunKeeping", "UndoFunction", "recorded", "undo"]


@dataclass
class JobReport:
    """What every job's report has: its run id (``None`` for a dry run), whether it was a dry run, and the changes
    it made (what each changed item was before; the job's undo function reads them)."""

    run_id: str | None = None
    dry_run: bool = False
    changes: list[dict[str, Any]] = field(default_factory=list)

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


async def recorded(runs: WorkerRuns, audit: MemoryAuditLogger, job: str, report: R,
                   work: Callable[[R], Awaitable[Any]], *, keeping: RunKeeping, user_id: str | None = None) -> R:
    """Run ``work(report)`` as one recorded run of ``job`` (see the module docstring); return the filled report.
    A dry run is run without a record. Each finished run expires the job's older records (``keeping``)."""
    if report.dry_run:
        await work(report)
        return report
    report.run_id = new_id()
    started = datetime.now(UTC)
    await runs.start(report.run_id, job, user_id, started)
    try:
        await work(report)
    except BaseException as exc:
        summary = {**report.summary(), "error": f"{type(exc).__name__}: {exc}"}
        await _finish(runs, audit, job, report, started, "failed", summary, user_id)
        raise
    await _finish(runs, audit, job, report, started, "ok", report.summary(), user_id)
    await runs.expire(job, undo_before=started - timedelta(days=keeping.undo_days),
                      keep_after=started - timedelta(days=keeping.keep_days))
    return report


async def _finish(runs: WorkerRuns, audit: MemoryAuditLogger, job: str, report: JobReport, started: datetime,
                  status: str, summary: dict[str, Any], user_id: str | None) -> None:
    finished = datetime.now(UTC)
    summary = {**summary, "duration_seconds": round((finished - started).total_seconds(), 3)}
    assert report.run_id is not None
    await runs.finish(report.run_id, status=status, finished_at=finished, summary=summary, changes=report.changes)
    await audit.log_write("worker_run", "worker", None, [report.run_id], {"job": job, "status": status, **summary},
                          user_id=user_id, success=status == "ok")


async def undo(runs: WorkerRuns, audit: MemoryAuditLogger, run_id: str,
               undoers: Mapping[str, UndoFunction]) -> dict[str, Any]:
    """Reverse the recorded run ``run_id`` (see the module docstring); return what the undo did.

    Raises :class:`NotFoundError` for an unknown run, :class:`ValidationError` (field ``run_id``) for a job without
    undo, and :class:`ConflictError` for a run that is still running, already undone or being undone."""
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
