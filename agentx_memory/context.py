"""What every memory subsystem shares: settings, the three stores, the embedder and the audit logger."""

from __future__ import annotations

from dataclasses import dataclass

from .audit import MemoryAuditLogger
from .graph.port import GraphStore
from .providers.embeddings import Embedder
from .settings import Settings
from .sql.postgres import PostgresStore
from .working import WorkingStore

__all__ = ["MemoryContext"]


@dataclass
class MemoryContext:
    """The open resources of one memory instance, handed to each subsystem."""

    settings: Settings
    graph: GraphStore
    postgres: PostgresStore
    working: WorkingStore
    embedder: Embedder
    audit: MemoryAuditLogger
