"""Forgetting in PostgreSQL: a user's rows, or chosen memories of theirs; the audit log keeps only that things happened.

**A user** (:meth:`UserRows.forget`):

One transaction: the user's rows of ``conversation_logs``, ``memory_timeline``, ``tool_invocations``,
``user_profiles``, ``episodic_summaries``, ``worker_runs``, ``memory_pools``, ``short_term_memory``,
``working_memory_saves`` and ``store_items`` are deleted;
their entries in the change records of runs over every user are cut out; and their audit entries lose every content
field (query text, metadata, error message), keeping operation, memory type, time and counts. Returns the rows
touched per table.

**Chosen memories** (:meth:`UserRows.forget_memories`), also one transaction: their log rows (turns by id), timeline
rows and tool-log rows go, the summaries of the conversations that lost a turn go (a summary is made of its turns),
and every run change record and audit entry of the user that names one of them loses its content the same way.
Saved working memories (``working_memory_saves``) lose the cached turns with those ids and the ledger entries naming
them, as Redis does. Copies shared into the user's pools (``memory:<id>`` keys of their data) are cut out, each such
pool's version going up by one (a writer holding the old version must read again).
:meth:`UserRows.matching_turns` finds the logged turns a filter reaches (the log is the source of truth: a turn not
yet projected into the graph is still found).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Any, Final, LiteralString

from .conversation_log import SEEN_BY_AGENT
from .errors import pg_errors
from .pools import SHARED_KEY_PREFIX
from .postgres import PostgresStore
from .working_saves import scrub_memories

__all__ = ["UserRows"]

#: table → the statement deleting one user's rows.
DELETES: Final[dict[str, LiteralString]] = {
    "conversation_logs": "DELETE FROM conversation_logs WHERE user_id = %(user_id)s",
    "memory_timeline": "DELETE FROM memory_timeline WHERE user_id = %(user_id)s",
    "tool_invocations": "DELETE FROM tool_invocations WHERE user_id = %(user_id)s",
    "user_profiles": "DELETE FROM user_profiles WHERE user_id = %(user_id)s",
    "episodic_summaries": "DELETE FROM episodic_summaries WHERE user_id = %(user_id)s",
    "worker_runs": "DELETE FROM worker_runs WHERE user_id = %(user_id)s",
    "memory_pools": "DELETE FROM memory_pools WHERE user_id = %(user_id)s",
    "short_term_memory": "DELETE FROM short_term_memory WHERE user_id = %(user_id)s",
    "working_memory_saves": "DELETE FROM working_memory_saves WHERE user_id = %(user_id)s",
    "store_items": "DELETE FROM store_items WHERE user_id = %(user_id)s",
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


#: table → the statement deleting chosen memories of one user.
MEMORY_DELETES: Final[dict[str, LiteralString]] = {
    "conversation_logs": "DELETE FROM conversation_logs WHERE user_id = %(user_id)s AND turn_id = ANY(%(turn_ids)s)",
    "memory_timeline": "DELETE FROM memory_timeline WHERE user_id = %(user_id)s AND neo4j_node_id = ANY(%(ids)s)",
    "tool_invocations":
        "DELETE FROM tool_invocations WHERE user_id = %(user_id)s AND invocation_id = ANY(%(ids)s)",
    "episodic_summaries":
        "DELETE FROM episodic_summaries WHERE user_id = %(user_id)s AND conversation_id = ANY(%(conversation_ids)s)",
}

#: A JSON path that holds when any string anywhere in the document is one of ``$ids``.
_NAMES_ANY: Final[LiteralString] = "'$.** ? (@ == $ids[*])', jsonb_build_object('ids', %(ids_json)s::jsonb)"

SCRUB_POOL_COPIES: Final[LiteralString] = (
    "UPDATE memory_pools SET data = data - %(pool_keys)s::text[], version = version + 1, updated_at = NOW()"
    " WHERE user_id = %(user_id)s AND data ?| %(pool_keys)s::text[]")

SCRUB_MEMORY_RUN_CHANGES: Final[LiteralString] = (
    "UPDATE worker_runs SET changes = coalesce((SELECT jsonb_agg(c) FROM jsonb_array_elements(changes) AS c"
    "   WHERE NOT jsonb_path_exists(c, " + _NAMES_ANY + ")), '[]'::jsonb)"
    " WHERE (user_id = %(user_id)s OR user_id IS NULL) AND jsonb_path_exists(changes, " + _NAMES_ANY + ")")

SCRUB_MEMORY_AUDIT: Final[LiteralString] = (
    "UPDATE memory_audit_log SET query_text = NULL, error_message = NULL, config_snapshot = '{}'::jsonb,"
    " metadata = jsonb_build_object('forgotten', true) WHERE user_id = %(user_id)s AND operation <> 'forget'"
    " AND jsonb_path_exists(metadata, " + _NAMES_ANY + ")")

MATCHING_TURNS: Final[LiteralString] = (
    "SELECT turn_id, conversation_id, channel FROM conversation_logs WHERE user_id = %(user_id)s"
    " AND (%(conversation_id)s::text IS NULL OR conversation_id = %(conversation_id)s)"
    " AND (%(channel)s::text IS NULL OR channel = %(channel)s)"
    " AND (%(before)s::timestamptz IS NULL OR timestamp < %(before)s)"
    " AND (%(after)s::timestamptz IS NULL OR timestamp >= %(after)s)")

TURNS_NAMED: Final[LiteralString] = (
    "SELECT turn_id, conversation_id, channel FROM conversation_logs WHERE user_id = %(user_id)s"
    " AND (turn_id = ANY(%(ids)s) OR conversation_id = ANY(%(ids)s)) AND " + SEEN_BY_AGENT)


class UserRows:
    """Deletes and scrubs one user's rows in every table (see the module docstring)."""

    def __init__(self, store: PostgresStore, changed: Callable[[Iterable[str]], None] | None = None):
        self.store = store
        self.changed = changed or (lambda users: None)  # told the users whose turns were deleted

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
        self.changed([user_id])
        return counts

    async def forget_memories(self, user_id: str, ids: Sequence[str], *, turn_ids: Sequence[str],
                              conversation_ids: Sequence[str]) -> dict[str, int]:
        """Remove the chosen memories' rows in one transaction (see the module docstring); return the rows touched
        per table (``worker_runs.changes`` and ``memory_audit_log`` count the rows scrubbed)."""
        params: dict[str, Any] = {"user_id": user_id, "ids": list(ids), "turn_ids": list(turn_ids),
                                  "conversation_ids": list(conversation_ids), "ids_json": json.dumps(list(ids)),
                                  "pool_keys": [SHARED_KEY_PREFIX + i for i in ids]}
        counts: dict[str, int] = {}
        async with pg_errors("forgetting memories"), self.store.connection() as conn, conn.transaction():
            for table, statement in MEMORY_DELETES.items():
                counts[table] = (await conn.execute(statement, params)).rowcount
            counts["memory_pools.data"] = (await conn.execute(SCRUB_POOL_COPIES, params)).rowcount
            counts["working_memory_saves.entries"] = await scrub_memories(conn, user_id, ids)
            counts["worker_runs.changes"] = (await conn.execute(SCRUB_MEMORY_RUN_CHANGES, params)).rowcount
            counts["memory_audit_log"] = (await conn.execute(SCRUB_MEMORY_AUDIT, params)).rowcount
        self.changed([user_id])
        return counts

    async def matching_turns(self, user_id: str, *, conversation_id: str | None, channel: str | None,
                             before: datetime | None, after: datetime | None) -> list[dict[str, Any]]:
        """The user's logged turns that the filter reaches (a None criterion matches all): turn id, conversation and
        channel of each."""
        params = {"user_id": user_id, "conversation_id": conversation_id, "channel": channel, "before": before,
                  "after": after}
        return await self.store.fetch(MATCHING_TURNS, params, what="finding turns to forget")

    async def turns_named(self, user_id: str, ids: Sequence[str], agent_id: str | None = None
                          ) -> list[dict[str, Any]]:
        """The user's logged turns whose id, or whose conversation's id, is one of ``ids`` and that the agent may
        read (None: every turn): turn id, conversation and channel of each."""
        return await self.store.fetch(TURNS_NAMED, {"user_id": user_id, "ids": list(ids), "agent_id": agent_id},
                                      what="finding turns to forget")
