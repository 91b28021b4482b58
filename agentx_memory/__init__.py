"""agentx-memory: a graph-centric cognitive memory engine for AI agents.

Open a memory and store what happened, what is known, how to do things and what the user is after::

    from agentx_memory import AgentMemory, Turn

    with AgentMemory(user_id="alice") as memory:
        memory.store_turn(Turn(conversation_id="c1", user_id="alice", content="I moved to Lisbon in May."))
"""

import importlib as _importlib
import typing as _typing

if _typing.TYPE_CHECKING:  # what mypy and IDEs see; at run time ``__getattr__`` below loads each name on first use
    from .api_keys import ApiKey, NewApiKey
    from .browse import ConversationInfo, FactRecord
    from .context_window import ContextMessage, ContextWindow, PruneStrategy
    from .episodic import QuarantinedTurn, ReconcileResult
    from .errors import (
        AdminKeyError,
        AgentXMemoryError,
        CallTimeoutError,
        ClosedError,
        ConfigurationError,
        ConflictError,
        EmbeddingDimensionMismatchError,
        EncryptionKeyError,
        NotFoundError,
        PermissionDeniedError,
        RateLimitedError,
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
        StoredItem,
        Strategy,
        ToolInvocation,
        Turn,
        UserProfile,
    )
    from .pools import Pool, PoolStatistics
    from .procedural import StrategyMatch
    from .providers.embeddings import Embedder, make_embedder
    from .reembed import ReembedProgress, ReembedReport, reembed_status
    from .retrieval.bundle import (
        MemoryBundle,
        RecallMetrics,
        ScoredEntity,
        ScoredFact,
        ScoredStrategy,
        ScoredTurn,
        Signal,
        WorkingState,
    )
    from .router import TIERS, MemoryRouter
    from .semantic import EntityGraph
    from .settings import RecallSettings, RetrievalSettings, Settings, load_settings
    from .short_term import ShortTermStore
    from .short_term_consolidation import ShortTermReport
    from .stats import MemoryStats
    from .tool_payloads import ReencryptReport
    from .working import WorkingMemory

__version__ = "0.1.0"

#: Each public name → the module that defines it. Importing the package loads none of them (the engine pulls in
#: numpy, pydantic and the database drivers, ~0.35 s): ``__getattr__`` imports a name's module on first access.
_EXPORTS: dict[str, str] = {
    "ConversationInfo": ".browse",
    "FactRecord": ".browse",
    "ContextMessage": ".context_window",
    "ContextWindow": ".context_window",
    "PruneStrategy": ".context_window",
    "QuarantinedTurn": ".episodic",
    "ReconcileResult": ".episodic",
    "AdminKeyError": ".errors",
    "AgentXMemoryError": ".errors",
    "CallTimeoutError": ".errors",
    "ClosedError": ".errors",
    "ConfigurationError": ".errors",
    "ConflictError": ".errors",
    "EmbeddingDimensionMismatchError": ".errors",
    "EncryptionKeyError": ".errors",
    "NotFoundError": ".errors",
    "PermissionDeniedError": ".errors",
    "RateLimitedError": ".errors",
    "RuntimeServerError": ".errors",
    "StaleVersionError": ".errors",
    "StorageError": ".errors",
    "StorageUnavailableError": ".errors",
    "ValidationError": ".errors",
    "WorkingMemoryFullError": ".errors",
    "AgentMemory": ".memory",
    "AsyncAgentMemory": ".memory",
    "SyncContextWindow": ".memory",
    "SyncMemoryRouter": ".memory",
    "SyncWorkingMemory": ".memory",
    "ControlMemory": ".models",
    "Entity": ".models",
    "Fact": ".models",
    "GLOBAL_CHANNEL": ".models",
    "Goal": ".models",
    "RELATIONSHIP_TYPES": ".models",
    "Relationship": ".models",
    "SHORT_TERM_TYPES": ".models",
    "ShortTermEntry": ".models",
    "StoredItem": ".models",
    "Strategy": ".models",
    "ToolInvocation": ".models",
    "Turn": ".models",
    "UserProfile": ".models",
    "Pool": ".pools",
    "ApiKey": ".api_keys",
    "NewApiKey": ".api_keys",
    "PoolStatistics": ".pools",
    "StrategyMatch": ".procedural",
    "Embedder": ".providers.embeddings",
    "make_embedder": ".providers.embeddings",
    "ReembedProgress": ".reembed",
    "ReembedReport": ".reembed",
    "reembed_status": ".reembed",
    "MemoryBundle": ".retrieval.bundle",
    "RecallMetrics": ".retrieval.bundle",
    "ScoredEntity": ".retrieval.bundle",
    "ScoredFact": ".retrieval.bundle",
    "ScoredStrategy": ".retrieval.bundle",
    "ScoredTurn": ".retrieval.bundle",
    "Signal": ".retrieval.bundle",
    "WorkingState": ".retrieval.bundle",
    "MemoryRouter": ".router",
    "TIERS": ".router",
    "EntityGraph": ".semantic",
    "RecallSettings": ".settings",
    "RetrievalSettings": ".settings",
    "Settings": ".settings",
    "load_settings": ".settings",
    "ShortTermStore": ".short_term",
    "ShortTermReport": ".short_term_consolidation",
    "ReencryptReport": ".tool_payloads",
    "MemoryStats": ".stats",
    "WorkingMemory": ".working",
}

__all__ = [
    "GLOBAL_CHANNEL",
    "RELATIONSHIP_TYPES",
    "SHORT_TERM_TYPES",
    "TIERS",
    "AdminKeyError",
    "AgentMemory",
    "AgentXMemoryError",
    "ApiKey",
    "AsyncAgentMemory",
    "CallTimeoutError",
    "ClosedError",
    "ConfigurationError",
    "ConflictError",
    "ContextMessage",
    "ContextWindow",
    "ControlMemory",
    "ConversationInfo",
    "Embedder",
    "EmbeddingDimensionMismatchError",
    "EncryptionKeyError",
    "Entity",
    "EntityGraph",
    "Fact",
    "FactRecord",
    "Goal",
    "MemoryBundle",
    "MemoryRouter",
    "MemoryStats",
    "NewApiKey",
    "NotFoundError",
    "PermissionDeniedError",
    "Pool",
    "PoolStatistics",
    "PruneStrategy",
    "QuarantinedTurn",
    "RateLimitedError",
    "RecallMetrics",
    "RecallSettings",
    "ReconcileResult",
    "ReembedProgress",
    "ReembedReport",
    "ReencryptReport",
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
    "StoredItem",
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
    "WorkingState",
    "load_settings",
    "make_embedder",
    "reembed_status",
]


if not _typing.TYPE_CHECKING:  # hidden from mypy, which would otherwise accept any name as an attribute

    def __getattr__(name: str) -> object:
        """Load a public name from its module on first access (PEP 562) and keep it, so the next access is direct."""
        module = _EXPORTS.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(_importlib.import_module(module, __name__), name)
        globals()[name] = value
        return value


def __dir__() -> list[str]:
    """The module's attributes, the public names not loaded yet included."""
    return sorted(set(globals()) | set(__all__))
