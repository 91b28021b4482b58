"""Forgetting a user in PostgreSQL: every row of theirs goes, and the audit log keeps only that things happened.

One transaction: the user's rows of ``conversation_logs``, ``memory_timeline``, ``tool_invocations``,
``user_profiles``, ``episodic_summaries``, ``worker_runs`` and ``short_term_memory`` are deleted; their entries in
the change records of runs over every user are cut out; and their audit entries lose every content field (query
text, metadata, error message), keeping operation, memory type, time and counts. Returns the rows touched per table.
"""

from __future__ import annotations

from typing import Final, LiteralString

from .errors import pg_errors
from .postgres import PostgresStore

__all__ = ["UserRows"]

#: table → the statement deleting one user's rows.
DELETES: Final[dict[str, LiteralString]] = {
    "conversation_logs": "DELETE FROM conversation_logs WHERE user_id = %(user_id)s",
    "memory_timeline": "DELETE FROM memory_timeline WHERE user_id = %(user_id)s",
    "tool_invocations": "DELETE FROM tool_invocations WHERE user_id = %(user_id)s",
    "user_profiles": "DELETE FROM user_profiles WHERE user_id = %(user_id)s",
    "episodic_summaries": "DELETE FROM episodic_summaries WHERE user_id = %(user_id)s",
    "worker_runs": "DELETE FROM worker_runs WHERE user_id = %(user_id)s",
    "short_term_memory": "DELETE FROM short_term_memory WHERE user_id = %(user_id)s",
}

#: The user's entries cut out of the change records of runs over every user (an entry names its user directly, or
#: through the entity it deleted).
SCRUB_RUN_CHANGES: Final[LiteralString] = (
    "UPDATE worker_runs SET changes = coalesce((SELECT jsonb_agg(c) FROM jsonb_array_elements(changes) AS c"
    "   WHERE coalesce(c->>'user_id', c->'entity'->>'user_id', '') <> %(user_id)s), '[]'::jsonb)"
    " WHERE user_id IS NULL AND jsonb_path_exists(changes, '$[*] ? (@.user_id == $u || @.entity.user_id == $u)',"
    " jsonb_build_object('u', %(user_id)s::text))")

SCRUB_AUDIT: Final[LiteralString] = (
    "UPDATE memory_audit_log SET query_text = NULL, error_message = NULL, config_snapshot = '{}'::jsonb,"
    " metadata = jsonb_build_object('forgotten', true) WHERE user_id = %(user_id)s AND operation <> 'forget'"
    " AND NOT (metadata = jsonb_build_object('forgotten', true))")


class UserRows:
    """Deletes and scrubs one user's rows in every table (see the module docstring)."""

    def __init__(self, store: PostgresStore):
        self.store = store

    async def forget(self, user_id: str) -> dict[str, int]:
        """Remove the user's rows in one transaction; return the rows touched per table (``worker_runs.changes``
        and ``memory_audit_log`` count the rows scrubbed)."""
        params = {"user_id": user_id}
        counts: dict[str, int] = {}
        async with pg_errors("forgetting a user"), self.store.connection() as conn, conn.transaction():
            for table, statement in DELETES.items():
                counts[table] = (await conn.execute(statement, params)).rowcount
            counts["worker_runs.changes"] = (await conn.execute(SCRUB_RUN_CHANGES, params)).rowcount
            counts["memory_audit_log"] = (await conn.execute(SCRUB_AUDIT, params)).rowcount
        return counts
