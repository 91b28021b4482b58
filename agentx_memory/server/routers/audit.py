"""The user's audit trail (docs/audit-queries.md), for keys of the whole user."""

from __future__ import annotations

from datetime import datetime

from ..auth import Reader
from ..schemas import AuditEntry
from . import api_router

__all__ = ["router"]

router = api_router("audit")


@router.get("/audit", response_model=list[AuditEntry], summary="The audit trail")
async def audit(caller: Reader, since: datetime | None = None, until: datetime | None = None,
                operation: str | None = None, memory_type: str | None = None, session_id: str | None = None,
                conversation_id: str | None = None, reads: bool | None = None, limit: int = 100) -> list[AuditEntry]:
    """The key's user's audit entries, newest first; ``reads`` true keeps only reads, false only writes."""
    caller.require_whole_user("the audit trail")
    rows = await caller.memory.audit_entries(caller.user_id, since=since, until=until, operation=operation,
                                             memory_type=memory_type, session_id=session_id,
                                             conversation_id=conversation_id, reads=reads, limit=limit)
    return [AuditEntry(**row) for row in rows]
