"""The agentx-memory error tree.

Every error the library raises on purpose derives from :class:`AgentXMemoryError`. Driver errors (neo4j,
falkordb/redis, psycopg) are wrapped at the adapter boundary with ``raise StorageUnavailableError(...) from exc``
so callers never have to import a driver to catch a failure::

    AgentXMemoryError
     ├── ConfigurationError          a setting is missing, out of range or inconsistent with stored data
     │    ├── EmbeddingDimensionMismatchError  the store was created with another embedding model/dimension
     │    └── EncryptionKeyError     an encrypted value cannot be read with the configured keys (missing or wrong key)
     ├── ValidationError             bad input: names the field and the limit (also a ValueError)
     │    └── WorkingMemoryFullError  a conversation's working memory would pass its size cap (413): nothing written
     ├── NotFoundError               an id that does not exist for this user (also a KeyError)
     ├── ConflictError               a write that collides with stored state (unique key, concurrent update)
     │    └── StaleVersionError      a versioned write (a shared pool) was based on an older version: nothing written
     ├── PermissionDeniedError       an agent asked for an access its grants do not give (also a PermissionError)
     │    └── AdminKeyError          a system-scope write without the right admin key (names the field)
     ├── ClosedError                 a call on a memory after its close() (also a RuntimeError)
     ├── RateLimitedError            a user (or agent) passed a configured call rate (429); retry_after seconds
     ├── StorageError                a database refused or failed an operation
     │    └── StorageUnavailableError  a server is down, unreachable, or its binary is missing
     │         └── CallTimeoutError  a synchronous call passed its deadline and was cancelled (also a TimeoutError)
     ├── RuntimeServerError          the embedded runtime could not start, stop or find a server
     │    └── WaitTimeoutError       (polling.py) a polled condition did not hold in time; also a TimeoutError
     └── LLMError                    an LLM call failed; names the provider and model, never the API key
          ├── LLMUnavailableError    the provider did not answer usably after the retries (5xx, 429, network)
          │    └── LLMTimeoutError   ... because every attempt timed out (also a TimeoutError)
          ├── LLMOutputError         the answer is not the JSON asked for (malformed, off-schema, truncated)
          ├── LLMRefusalError        the model refused to answer
          ├── LLMBudgetExceededError a per-call or per-run token budget would be exceeded: nothing was called
          └── PaidCallRefusedError   llm.allow_paid_calls is off and the endpoint is not a local server
"""

from __future__ import annotations

__all__ = [
    "AdminKeyError",
    "AgentXMemoryError",
    "CallTimeoutError",
    "ClosedError",
    "ConfigurationError",
    "ConflictError",
    "EmbeddingDimensionMismatchError",
    "EncryptionKeyError",
    "LLMBudgetExceededError",
    "LLMError",
    "LLMOutputError",
    "LLMRefusalError",
    "LLMTimeoutError",
    "LLMUnavailableError",
    "NotFoundError",
    "PaidCallRefusedError",
    "PermissionDeniedError",
    "RateLimitedError",
    "RuntimeServerError",
    "StaleVersionError",
    "StorageError",
    "StorageUnavailableError",
    "ValidationError",
    "WorkingMemoryFullError",
    "public_message",
]


class AgentXMemoryError(Exception):
    """Base of every error raised by agentx-memory."""


class ConfigurationError(AgentXMemoryError):
    """A setting is missing, out of its allowed range, or disagrees with what the store recorded."""


class EmbeddingDimensionMismatchError(ConfigurationError):
    """The store was created with a different embedding model or dimension than the one configured now."""


class EncryptionKeyError(ConfigurationError):
    """An encrypted column value cannot be decrypted: its key id is not among ``security.encryption_keys``, or the key
    under that id is not the one it was encrypted with (or the value was altered). ``key_id`` names the key; the key
    itself is never in the message."""

    def __init__(self, key_id: str, message: str):
        self.key_id = key_id
        self.field = "security.encryption_keys"
        super().__init__(f"security.encryption_keys[{key_id!r}]: {message}")


class ValidationError(AgentXMemoryError, ValueError):
    """Input was rejected before anything was written; the message names the field and the limit."""

    def __init__(self, field: str, message: str):
        self.field = field
        #: The message without the field (a batch re-raises it under the item's field, ``facts[3].claim``).
        self.detail = message
        super().__init__(f"{field}: {message}")


class WorkingMemoryFullError(ValidationError):
    """A write would take a conversation's working memory past its size cap (spec 000: 64 KB); nothing of the write
    was stored. ``size`` is what it would have held, ``cap`` the limit (bytes); ``status`` is HTTP's 413."""

    status = 413

    def __init__(self, field: str, *, conversation_id: str, size: int, cap: int):
        self.conversation_id = conversation_id
        self.size = size
        self.cap = cap
        super().__init__(field, f"the working memory of conversation {conversation_id!r} would hold {size:,} bytes; "
                                f"the cap is {cap:,} bytes per conversation (413 Payload Too Large); nothing was "
                                "written")


class NotFoundError(AgentXMemoryError, KeyError):
    """The requested id does not exist (for this user)."""

    def __init__(self, kind: str, ident: str, *, field: str | None = None):
        self.kind = kind
        self.ident = ident
        #: The input field that named the id, when a batch says which item (``facts[3].entity_ids``).
        self.field = field
        super().__init__(f"{kind} {ident!r} not found" + (f" ({field})" if field else ""))

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0])


class ConflictError(AgentXMemoryError):
    """A write collided with stored state (a unique key, or a concurrent update that could not be retried)."""


class StaleVersionError(ConflictError):
    """A versioned write named a version older than the stored one (optimistic concurrency): nothing was written.
    ``expected`` is the version the writer read, ``current`` the stored one; ``status`` is HTTP's 409."""

    status = 409

    def __init__(self, kind: str, ident: str, *, expected: int, current: int):
        self.kind = kind
        self.ident = ident
        self.expected = expected
        self.current = current
        super().__init__(f"{kind} {ident!r} is at version {current}, the write was based on version {expected}; "
                         "nothing was written (read it again and retry)")


class PermissionDeniedError(AgentXMemoryError, PermissionError):
    """An agent asked for an access (``read``, ``write`` or ``admin``) to a resource its grants do not give; the
    denial is audited. ``status`` is HTTP's 403."""

    status = 403

    def __init__(self, agent_id: str, action: str, kind: str, ident: str):
        self.agent_id = agent_id
        self.action = action
        self.kind = kind
        self.ident = ident
        super().__init__(f"agent {agent_id!r} may not {action} {kind} {ident!r}")


class AdminKeyError(PermissionDeniedError):
    """A write of the ``system`` scope (rules for every user of the installation) without the admin key, with a
    wrong one, or with none configured. ``field`` names what is missing or wrong (``admin_key``: the key presented;
    ``security.admin_key``: the setting); the keys themselves are never in the message."""

    def __init__(self, field: str, message: str):
        self.field = field
        self.agent_id = None  # type: ignore[assignment]  # no agent: the admin key, not a grant, decides
        self.action = "write"
        self.kind = "system scope"
        self.ident = field
        AgentXMemoryError.__init__(self, f"{field}: {message}")


class ClosedError(AgentXMemoryError, RuntimeError):
    """A method was called on an ``AgentMemory``/``AsyncAgentMemory`` (or a working memory of it) after ``close()``;
    open a new memory instead."""


class RateLimitedError(AgentXMemoryError):
    """A call was refused because its caller (a user, or one agent of a user) passed the configured number of calls
    per window (``limits.remember_rate_limit`` per ``limits.remember_rate_window_seconds``); nothing was done.
    ``retry_after`` is how many seconds until the window lets a call through again (always > 0); ``operation`` the
    limited call, ``limit`` and ``window_seconds`` the setting; ``status`` is HTTP's 429."""

    status = 429

    def __init__(self, operation: str, *, user_id: str, agent_id: str | None, limit: int, window_seconds: float,
                 retry_after: float):
        self.operation = operation
        self.user_id = user_id
        self.agent_id = agent_id
        self.limit = limit
        self.window_seconds = window_seconds
        self.retry_after = retry_after
        who = f"user {user_id!r}" + (f" as agent {agent_id!r}" if agent_id is not None else "")
        super().__init__(f"{operation}: {who} made {limit} calls in the last {window_seconds:g} s, the limit "
                         f"(429 Too Many Requests); retry after {retry_after:.3f} s")


class StorageError(AgentXMemoryError):
    """A database failed or refused an operation."""


class StorageUnavailableError(StorageError):
    """A database server is down, unreachable, or its binary is missing."""


class CallTimeoutError(StorageUnavailableError, TimeoutError):
    """A synchronous call passed its deadline (setting ``limits.call_timeout_seconds``) and was cancelled: a store
    did not answer in time. What a cancelled write leaves is what its outage leaves (docs/reliability.md)."""


class RuntimeServerError(AgentXMemoryError):
    """The embedded runtime could not start, stop or locate one of its servers."""


class LLMError(AgentXMemoryError):
    """An LLM call failed. The message names the provider and model (``provider:model``) and what went wrong; it never
    holds the API key."""


class LLMUnavailableError(LLMError):
    """The provider did not answer usably within ``llm.max_retries`` retries: server errors, rate limits, network
    failures. ``status`` is the last HTTP status (None without a response)."""

    def __init__(self, message: str, status: int | None = None):
        self.status = status
        super().__init__(message)


class LLMTimeoutError(LLMUnavailableError, TimeoutError):
    """Every attempt passed ``llm.timeout_seconds``."""


class LLMOutputError(LLMError):
    """The answer is not what was asked for: malformed JSON, a value that breaks the schema (``field`` names where),
    or an answer cut at the output-token limit (``truncated``)."""

    def __init__(self, message: str, *, field: str | None = None, truncated: bool = False):
        self.field = field
        self.truncated = truncated
        super().__init__(message)


class LLMRefusalError(LLMError):
    """The model declined to answer (a refusal stop reason or refusal message)."""


class LLMBudgetExceededError(LLMError):
    """A call would pass a token budget (``llm.max_tokens_per_call`` or the run's budget); it was not made, so the
    operation stops before writing anything from it."""


class PaidCallRefusedError(LLMError):
    """``llm.allow_paid_calls`` is off and the call would go to a provider's public (paid) endpoint rather than a
    server on this machine or the local network."""


#: Errors about the request (its input, what it names, who asks, how often): a remote caller reads their message.
_ABOUT_THE_REQUEST: tuple[type[AgentXMemoryError], ...] = (
    ValidationError, NotFoundError, ConflictError, PermissionDeniedError, RateLimitedError)


def public_message(exc: AgentXMemoryError) -> str:
    """What a remote caller (the REST service, an MCP client) is told of ``exc``: its message when it is about the
    request, one line saying what kind of failure when it is the server's (a store, the language model's provider,
    the configuration), whose message names stores, providers or files and stays in the server's log. A conflict in
    a database's own words is not shown either (no table or constraint names)."""
    if isinstance(exc, ClosedError):
        return "the memory is closing; retry later"
    if isinstance(exc, StorageUnavailableError):
        return "a store of the memory is unavailable; retry later"
    if isinstance(exc, LLMUnavailableError):
        return "the language model's provider did not answer; retry later"
    if isinstance(exc, (LLMOutputError, LLMRefusalError)):
        return "the language model's answer could not be used; the error is in the server's log"
    if isinstance(exc, ConflictError) and exc.__cause__ is not None and not isinstance(
            exc.__cause__, AgentXMemoryError):
        return "the write conflicts with stored state"
    if not isinstance(exc, _ABOUT_THE_REQUEST):
        return "the server failed; the error is in its log"
    return str(exc)
