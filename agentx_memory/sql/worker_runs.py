"""The ``worker_runs`` repository: one record per maintenance run, with what ``worker undo`` needs to reverse it.

A run is started (status ``running``), then finished (``ok`` or ``failed``) with its summary and its changes: a list
of plain JSON values, one per changed item, each holding what the item was before the run. While it runs, its changes
so far are checkpointed into the record with the time (``summary.checkpoint_at``), so a worker that dies mid-run
leaves them behind; a running record not checkpointed for a while is marked ``failed`` (interrupted) and can be
undone like any failed run. Undoing a run sets it
``undone`` with what the undo did; a run is undone at most once (the status update is the guard). Past the undo
window a run's changes are dropped (``expired``), and past the retention its record goes.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Final, LiteralString

from psycopg.types.json import Jsonb

from .postgres import PostgresStore

__all__ = ["WorkerRuns"]

_COLUMNS: Final[LiteralString] = (
    "run_id, job, user_id, started_at, finished_at, status, summary, undone_at, undo_summary")

START: Final[LiteralString] = (
    "INSERT INTO worker_runs (run_id, job, user_id, started_at, status) VALUES (%s, %s, %s, %s, 'running')")

FINISH: Final[LiteralString] = (
    "UPDATE worker_runs SET finished_at = %s, status = %s, summary = %s, changes = %s WHERE run_id = %s")

#: Appends a running run's latest changes to its record and stamps the checkpoint (a finished run is left alone).
CHECKPOINT: Final[LiteralString] = (
    "UPDATE worker_runs SET changes = changes || %s, summary = summary || jsonb_build_object('checkpoint_at', %s::text)"
    " WHERE run_id = %s AND status = 'running'")

#: Running runs whose last checkpoint (or start) is older than a time: their worker died; they become ``failed``.
FAIL_STALE: Final[LiteralString] = (
    "UPDATE worker_runs SET status = 'failed', finished_at = %s,"
    " summary = summary || jsonb_build_object('error', %s::text)"
    " WHERE status = 'running' AND coalesce((summary->>'checkpoint_at')::timestamptz, started_at) < %s"
    " RETURNING run_id")

GET: Final[LiteralString] = "SELECT " + _COLUMNS + ", changes FROM worker_runs WHERE run_id = %s"

#: Claims a finished run for undo: only one caller gets the row back. The status it had is kept in
#: ``undo_summary`` so a failed undo can give it back.
CLAIM_UNDO: Final[LiteralString] = (
    "UPDATE worker_runs SET status = 'undoing', undo_summary = jsonb_build_object('status_before', status)"
    " WHERE run_id = %s AND status IN ('ok', 'failed') RETURNING run_id")

UNDONE: Final[LiteralString] = (
    "UPDATE worker_runs SET status = 'undone', undone_at = %s, undo_summary = %s WHERE run_id = %s")

RELEASE_UNDO: Final[LiteralString] = (
    "UPDATE worker_runs SET status = undo_summary->>'status_before', undo_summary = NULL"
    " WHERE run_id = %s AND status = 'undoing'")

#: Runs of a job started before a time lose their change records: ``ok``/``failed`` ones become ``expired``
#: (no longer undoable); undone ones stay ``undone``.
EXPIRE: Final[LiteralString] = (
    "UPDATE worker_runs SET changes = '[]'::jsonb,"
    " status = CASE WHEN status IN ('ok', 'failed') THEN 'expired' ELSE status END"
    " WHERE job = %s AND started_at < %s AND status IN ('ok', 'failed', 'undone') AND changes <> '[]'::jsonb")

FORGET: Final[LiteralString] = "DELETE FROM worker_runs WHERE job = %s AND started_at < %s"

#: The latest run of each job (``worker status``), through the (job, started_at) index.
LATEST_PER_JOB: Final[LiteralString] = (
    "SELECT DISTINCT ON (job) " + _COLUMNS + " FROM worker_runs ORDER BY job, started_at DESC")

RECENT: Final[LiteralString] = "SELECT " + _COLUMNS + " FROM worker_runs ORDER BY started_at DESC LIMIT %s"


class WorkerRuns:
    """Starts, finishes, reads and marks undone the records of maintenance runs."""

    def __init__(self, store: PostgresStore):
        self.store = store

    async def start(self, run_id: str, job: str, user_id: str | None, started_at: datetime) -> None:
        """Record that ``job`` started (for ``user_id`` only, or every user when ``None``)."""
        await self.store.execute(START, (run_id, job, user_id, started_at), what="recording a worker run")

    async def finish(self, run_id: str, *, status: str, finished_at: datetime, summary: dict[str, Any],
                     changes: Sequence[Any]) -> None:
        """Record how the run ended (``ok`` or ``failed``), its summary and its changes."""
        await self.store.execute(FINISH, (finished_at, status, Jsonb(summary), Jsonb(list(changes)), run_id),
                                 what="recording a worker run")

    async def checkpoint(self, run_id: str, changes: Sequence[Any], at: datetime) -> None:
        """Add ``changes`` (those made since the last checkpoint) to the running run's record, stamped ``at``."""
        await self.store.execute(CHECKPOINT, (Jsonb(list(changes)), at.isoformat(), run_id),
                                 what="checkpointing a worker run")

    async def fail_stale(self, *, stale_before: datetime, now: datetime) -> list[str]:
        """Mark ``failed`` every running run not checkpointed since ``stale_before`` (its worker died: the changes
        it checkpointed stay, and it can be undone); returns their ids."""
        rows = await self.store.fetch(
            FAIL_STALE, (now, f"interrupted: no checkpoint since {stale_before.isoformat()} (the worker died?)",
                         stale_before), what="closing interrupted worker runs")
        return [r["run_id"] for r in rows]

    async def get(self, run_id: str) -> dict[str, Any] | None:
        """The run's record with its ``changes``, or ``None``."""
        rows = await self.store.fetch(GET, (run_id,), what="reading a worker run")
        return rows[0] if rows else None

    async def claim_undo(self, run_id: str) -> bool:
        """Take a finished (``ok`` or ``failed``) run for undo; ``False`` when it is running, undone or being undone."""
        return bool(await self.store.fetch(CLAIM_UNDO, (run_id,), what="claiming a worker run for undo"))

    async def release_undo(self, run_id: str) -> None:
        """Give back a run whose undo failed (it stays undoable)."""
        await self.store.execute(RELEASE_UNDO, (run_id,), what="releasing a worker run")

    async def mark_undone(self, run_id: str, *, at: datetime, summary: dict[str, Any]) -> None:
        """Record that the run was undone, and what the undo did."""
        await self.store.execute(UNDONE, (at, Jsonb(summary), run_id), what="recording an undo")

    async def expire(self, job: str, *, undo_before: datetime, keep_after: datetime) -> None:
        """Drop the change records of ``job``'s runs started before ``undo_before`` (they can no longer be undone)
        and the records of those started before ``keep_after``."""
        await self.store.execute(EXPIRE, (job, undo_before), what="expiring worker runs")
        await self.store.execute(FORGET, (job, keep_after), what="deleting old worker runs")

    async def latest_per_job(self) -> list[dict[str, Any]]:
        """The latest run of every job that ever ran (without changes)."""
        return await self.store.fetch(LATEST_PER_JOB, what="reading worker runs")

    async def recent(self, limit: int) -> list[dict[str, Any]]:
        """The ``limit`` latest runs, newest first (without changes)."""
        return await self.store.fetch(RECENT, (limit,), what="reading worker runs")
