"""The PostgreSQL port: the only package that speaks SQL or imports psycopg.

``postgres``          the connection pool (:class:`PostgresStore`) and the migrations runner
``errors``            the one seam where psycopg exceptions become agentx errors (:func:`pg_errors`)
``conversation_log``  ``conversation_logs``: appending turns (index assignment under a lock), reading them back
``timeline``          ``memory_timeline``: the one writer, with a conflict policy per memory type
``tool_invocations``  ``tool_invocations``: the tool-call log and per-tool statistics
``profiles``          ``user_profiles``: read and merge
``audit_log``         ``memory_audit_log``: entries and day-partition upkeep
``search``            retrieval queries (full text and pgvector) over turns and the timeline
``worker_runs``       ``worker_runs``: records of maintenance runs, with what undo restores
``summaries``         ``episodic_summaries``: one summary per conversation, searched by vector
``pools``             ``memory_pools``: shared pools, their versioned data and access lists
``short_term``        ``short_term_memory``: per-session entries with a TTL and an access count, and their sweep
``forget``            one user's rows out of every table, their audit entries stripped of content
``snapshots``         a user's rows of every memory table out as JSON and back in
``reembed``           re-embedding: staging slots, the progress record, the atomic switch to the new vectors

Repositories take and return plain Python values and models; no psycopg type or exception leaves this package.
"""

from __future__ import annotations

from dataclasses import dataclass

from .audit_log import AuditLog
from .conversation_log import ConversationLog
from .forget import UserRows
from .pools import PoolRows
from .postgres import PostgresStore, migrate, schema_dir
from .profiles import ProfileRows
from .reembed import ReembedRows
from .search import TurnSearch
from .short_term import ShortTermRows
from .snapshots import SnapshotRows
from .summaries import SummaryRows
from .timeline import Timeline, TimelineEntry
from .tool_invocations import ToolInvocationLog
from .worker_runs import WorkerRuns

__all__ = [
    "AuditLog",
    "ConversationLog",
    "PoolRows",
    "PostgresStore",
    "ProfileRows",
    "ReembedRows",
    "Repositories",
    "ShortTermRows",
    "SnapshotRows",
    "SummaryRows",
    "Timeline",
    "TimelineEntry",
    "ToolInvocationLog",
    "TurnSearch",
    "UserRows",
    "WorkerRuns",
    "migrate",
    "schema_dir",
]


@dataclass(frozen=True)
class Repositories:
    """The repositories the memory subsystems use, all on one :class:`PostgresStore`."""

    conversations: ConversationLog
    timeline: Timeline
    tools: ToolInvocationLog
    profiles: ProfileRows
    search: TurnSearch
    runs: WorkerRuns
    summaries: SummaryRows
    users: UserRows
    snapshots: SnapshotRows
    pools: PoolRows
    short_term: ShortTermRows
    reembed: ReembedRows

    @classmethod
    def on(cls, store: PostgresStore) -> Repositories:
        """Every repository on ``store``."""
        return cls(conversations=ConversationLog(store), timeline=Timeline(store), tools=ToolInvocationLog(store),
                   profiles=ProfileRows(store), search=TurnSearch(store), runs=WorkerRuns(store),
                   summaries=SummaryRows(store), users=UserRows(store), snapshots=SnapshotRows(store),
                   pools=PoolRows(store), short_term=ShortTermRows(store), reembed=ReembedRows(store))
