"""agentx-memory: a graph-centric cognitive memory engine for AI agents.

Open a memory and store what happened, what is known, how to do things and what the user is after::

    from agentx_memory import AgentMemory, Turn

    with AgentMemory(user_id="alice") as memory:
        memory.store_turn(Turn(conversation_id="c1", user_id="alice", content="I moved to Lisbon in May."))
"""

from .context_window import ContextMessage, ContextWindow, PruneStrategy
from .episodic import QuarantinedTurn, ReconcileResult
from .errors import (
    AgentXMemoryError,
    CallTimeoutError,
    ClosedError,
    ConfigurationError,
    ConflictError,
    EmbeddingDimensionMismatchError,
    NotFoundError,
    PermissionDeniedError,
    RuntimeServerError,
    StaleVersionError,
    StorageError,
    StorageUnavailableError,
    ValidationError,
    WorkingMemoryFullError,
)
from .memory import AgentMemory, AsyncAgentMemory, SyncContextWindow, SyncMemoryRouter, SyncWorkingMemory
from .models import (
    GLOBAL_CHANNEL,
    RELATIONSHIP_TYPES,
    SHORT_TERM_TYPES,
    ControlMemory,
    Entity,
    Fact,
    Goal,
    Relationship,
    ShortTermEntry,
    Strategy,
    ToolInvocation,
    Turn,
    UserProfile,
)
from .pools import Pool, PoolStatistics
from .procedural import StrategyMatch
from .providers.embeddings import Embedder, make_embedder
from .reembed import ReembedProgress, ReembedReport, reembed_status
from .retrieval.bundle import MemoryBundle, RecallMetrics, ScoredEntity, ScoredFact, ScoredStrategy, ScoredTurn, Signal
from .router import TIERS, MemoryRouter
from .semantic import EntityGraph
from .settings import RecallSettings, RetrievalSettings, Settings, load_settings
from .short_term import ShortTermStore
from .short_term_consolidation import ShortTermReport
from .working import WorkingMemory

__version__ = "0.1.0"

__all__ = [
    "GLOBAL_CHANNEL",
    "RELATIONSHIP_TYPES",
    "SHORT_TERM_TYPES",
    "TIERS",
    "AgentMemory",
    "AgentXMemoryError",
    "AsyncAgentMemory",
    "CallTimeoutError",
    "ClosedError",
    "ConfigurationError",
    "ConflictError",
    "ContextMessage",
    "ContextWindow",
    "ControlMemory",
    "Embedder",
    "EmbeddingDimensionMismatchError",
    "Entity",
    "EntityGraph",
    "Fact",
    "Goal",
    "MemoryBundle",
    "MemoryRouter",
    "NotFoundError",
    "PermissionDeniedError",
    "Pool",
    "PoolStatistics",
    "PruneStrategy",
    "QuarantinedTurn",
    "RecallMetrics",
    "RecallSettings",
    "ReconcileResult",
    "ReembedProgress",
    "ReembedReport",
    "Relationship",
    "RetrievalSettings",
    "RuntimeServerError",
    "ScoredEntity",
    "ScoredFact",
    "ScoredStrategy",
    "ScoredTurn",
    "Settings",
    "ShortTermEntry",
    "ShortTermReport",
    "ShortTermStore",
    "Signal",
    "StaleVersionError",
    "StorageError",
    "StorageUnavailableError",
    "Strategy",
    "StrategyMatch",
    "SyncContextWindow",
    "SyncMemoryRouter",
    "SyncWorkingMemory",
    "ToolInvocation",
    "Turn",
    "UserProfile",
    "ValidationError",
    "WorkingMemory",
    "WorkingMemoryFullError",
    "load_settings",
    "make_embedder",
    "reembed_status",
]
