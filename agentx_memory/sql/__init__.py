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
``working_saves``     ``working_memory_saves``: a session's working memory saved to the database and read back
``items``             ``store_items``: namespaced JSON documents per user, searched by filter and by vector
``browse``            read-only listings for browsing one user's memory (users, conversations, audit trail)
``stats``             live-row counters of every table (memory size, for ``memory_stats`` and the metrics)
``api_keys``          ``api_keys``: the REST service's keys, as hashes, with the user (agent, channels) each acts for

Repositories take and return plain Python values and models; no psycopg type or exception leaves this package.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # at run time ``__getattr__`` below loads each name on first use
    from .api_keys import ApiKeyRows
    from .audit_log import AuditLog
    from .browse import BrowseRows
    from .conversation_log import ConversationLog
    from .forget import UserRows
    from .items import ItemRows
    from .pools import PoolRows
    from .postgres import PostgresStore, migrate, schema_dir
    from .profiles import ProfileRows
    from .reembed import ReembedRows
    from .search import TurnSearch
    from .short_term import ShortTermRows
    from .snapshots import SnapshotRows
    from .stats import TableStats
    from .summaries import SummaryRows
    from .timeline import Timeline, TimelineEntry
    from .tool_invocations import StoredPayload, ToolInvocationLog
    from .worker_runs import WorkerRuns
    from .working_saves import WorkingSaves

#: Each name → its module. Loaded on first access, so ``from agentx_memory.sql.postgres import PostgresStore`` (the
#: CLI's ``status``) does not import every repository and, through them, numpy and the models.
_EXPORTS: dict[str, str] = {
    "ApiKeyRows": ".api_keys",
    "AuditLog": ".audit_log",
    "BrowseRows": ".browse",
    "ConversationLog": ".conversation_log",
    "UserRows": ".forget",
    "ItemRows": ".items",
    "PoolRows": ".pools",
    "PostgresStore": ".postgres",
    "migrate": ".postgres",
    "schema_dir": ".postgres",
    "ProfileRows": ".profiles",
    "ReembedRows": ".reembed",
    "TurnSearch": ".search",
    "ShortTermRows": ".short_term",
    "SnapshotRows": ".snapshots",
    "TableStats": ".stats",
    "SummaryRows": ".summaries",
    "Timeline": ".timeline",
    "TimelineEntry": ".timeline",
    "StoredPayload": ".tool_invocations",
    "ToolInvocationLog": ".tool_invocations",
    "WorkerRuns": ".worker_runs",
    "WorkingSaves": ".working_saves",
}

__all__ = [
    "ApiKeyRows",
    "AuditLog",
    "BrowseRows",
    "ConversationLog",
    "ItemRows",
    "PoolRows",
    "PostgresStore",
    "ProfileRows",
    "ReembedRows",
    "Repositories",
    "ShortTermRows",
    "SnapshotRows",
    "StoredPayload",
    "SummaryRows",
    "TableStats",
    "Timeline",
    "TimelineEntry",
    "ToolInvocationLog",
    "TurnSearch",
    "UserRows",
    "WorkerRuns",
    "WorkingSaves",
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
    working_saves: WorkingSaves
    items: ItemRows
    browse: BrowseRows
    stats: TableStats

    @classmethod
    def on(cls, store: PostgresStore) -> Repositories:
        """Every repository on ``store``."""
        from .browse import BrowseRows
        from .conversation_log import ConversationLog
        from .forget import UserRows
        from .items import ItemRows
        from .pools import PoolRows
        from .profiles import ProfileRows
        from .reembed import ReembedRows
        from .search import TurnSearch, TurnStatsCache
        from .short_term import ShortTermRows
        from .snapshots import SnapshotRows
        from .stats import TableStats
        from .summaries import SummaryRows
        from .timeline import Timeline
        from .tool_invocations import ToolInvocationLog
        from .worker_runs import WorkerRuns
        from .working_saves import WorkingSaves

        stats = TurnStatsCache()  # the search keeps it; the repositories that change turns drop a user's part
        return cls(conversations=ConversationLog(store, stats.changed), timeline=Timeline(store),
                   tools=ToolInvocationLog(store), profiles=ProfileRows(store), search=TurnSearch(store, stats),
                   runs=WorkerRuns(store), summaries=SummaryRows(store), users=UserRows(store, stats.changed),
                   snapshots=SnapshotRows(store),
                   pools=PoolRows(store), short_term=ShortTermRows(store), reembed=ReembedRows(store),
                   working_saves=WorkingSaves(store), items=ItemRows(store),
                   browse=BrowseRows(store), stats=TableStats(store))


if not TYPE_CHECKING:  # hidden from mypy, which would otherwise accept any name as an attribute

    def __getattr__(name: str) -> object:
        """Load a name from its module on first access (PEP 562) and keep it, so the next access is direct."""
        module = _EXPORTS.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, __name__), name)
        globals()[name] = value
        return value


def __dir__() -> list[str]:
    """The module's attributes, the names not loaded yet included."""
    return sorted(set(globals()) | set(__all__))
