"""What every memory subsystem shares: settings, the stores, the SQL repositories, the embedder and the audit logger."""

from __future__ import annotations

from dataclasses import dataclass, field

from .audit import MemoryAuditLogger
from .graph.health import GraphHealth
from .graph.port import GraphStore
from .providers.embeddings import Embedder
from .settings import Settings
from .sql import Repositories
from .sql.postgres import PostgresStore
from .working import WorkingStore

__all__ = ["MemoryContext"]


@dataclass
class MemoryContext:
    """The open resources of one memory instance, handed to each subsystem.

    ``sql`` holds the PostgreSQL repositories (conversation log, timeline, tool invocations, profiles), built on
    ``postgres``; subsystems go through them, never through ``postgres`` itself. ``graph_health`` says whether the
    graph answered lately (the callers that can do without it skip it while it is down).
    """

    settings: Settings
    graph: GraphStore
    postgres: PostgresStore
    working: WorkingStore
    embedder: Embedder
    audit: MemoryAuditLogger
    sql: Repositories = field(init=False)
    graph_health: GraphHealth = field(init=False)

    def __post_init__(self) -> None:
        self.sql = Repositories.on(self.postgres)
        self.working.saves = self.sql.working_saves  # WorkingMemory.persist / load save sessions there
        self.graph_health = GraphHealth(self.settings.graph.unavailable_cooldown_seconds)
