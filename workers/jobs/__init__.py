"""One module per job. Each job is ``async def run(memory: AsyncAgentMemory, options: JobOptions) -> dict[str, Any]``
(a summary for the log) and uses the public API of :class:`~agentx_memory.AsyncAgentMemory` only: no ``memory.ctx``,
no subsystem, no SQL or Cypher of its own. What a job needs that the API lacks becomes a documented method of the API
first."""

from __future__ import annotations

from dataclasses import dataclass

from agentx_memory import ValidationError

__all__ = ["DEFAULT_OPTIONS", "JobOptions", "whole_run_only"]


@dataclass(frozen=True)
class JobOptions:
    """How a job runs: ``dry_run`` reports what it would change and changes nothing; ``user_id`` limits it to one
    user (``None``: every user)."""

    dry_run: bool = False
    user_id: str | None = None


#: A real run for every user.
DEFAULT_OPTIONS = JobOptions()


def whole_run_only(job: str, options: JobOptions) -> None:
    """Refuse a dry run or a one-user run of a job that has neither (its work is not per user, or has no preview)."""
    if options.dry_run:
        raise ValidationError("dry_run", f"job {job!r} has no dry run")
    if options.user_id is not None:
        raise ValidationError("user_id", f"job {job!r} runs for every user; it cannot be limited to one")
