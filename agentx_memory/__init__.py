"""agentx-memory: a graph-centric cognitive memory engine for AI agents.

Open a memory and store what happened, what is known, how to do things and what the user is after::

    from agentx_memory import AgentMemory, Turn

    with AgentMemory(user_id="alice") as memory:
        memory.store_turn(Turn(conversation_id="c1", user_id="alice", content="I moved to Lisbon in May."))
"""

from .errors import (
    AgentXMemoryError,
    ConfigurationError,
    ConflictError,
    EmbeddingDimensionMismatchError,
    NotFoundError,
    RuntimeServerError,
    StorageError,
    StorageUnavailableError,
    ValidationError,
)
from .memory import AgentMemory, AsyncAgentMemory
from .models import (
    GLOBAL_CHANNEL,
    RELATIONSHIP_TYPES,
    Entity,
    Fact,
    Goal,
    Relationship,
    Strategy,
    ToolInvocation,
    Turn,
    UserProfile,
)
from .procedural import StrategyMatch
from .providers.embeddings import Embedder, make_embedder
from .semantic import EntityGraph
from .settings import Settings, load_settings
from .working import WorkingMemory

__version__ = "0.1.0"

__all__ = [
    "AgentMemory",
    "AgentXMemoryError",
    "AsyncAgentMemory",
    "ConfigurationError",
    "ConflictError",
    "Embedder",
    "EmbeddingDimensionMismatchError",
    "Entity",
    "EntityGraph",
    "Fact",
    "GLOBAL_CHANNEL",
    "Goal",
    "NotFoundError",
    "RELATIONSHIP_TYPES",
    "Relationship",
    "RuntimeServerError",
    "StrategyMatch",
    "Settings",
    "StorageError",
    "StorageUnavailableError",
    "Strategy",
    "ToolInvocation",
    "Turn",
    "UserProfile",
    "ValidationError",
    "WorkingMemory",
    "load_settings",
    "make_embedder",
]
