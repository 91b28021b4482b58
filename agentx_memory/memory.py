"""The public facades: :class:`AsyncAgentMemory` (the async core) and :class:`AgentMemory` (its sync twin).

``AgentMemory`` holds no logic of its own: every public coroutine method of ``AsyncAgentMemory`` has an explicit,
typed blocking twin that runs the coroutine on a private event loop in a background thread (a "portal"). That also
makes it usable from code that already runs an event loop, such as a notebook. :class:`SyncWorkingMemory` is the
blocking twin of :class:`~agentx_memory.working.WorkingMemory` that ``AgentMemory.working`` returns, and
:class:`SyncMemoryRouter` that of :class:`~agentx_memory.router.MemoryRouter` (``AgentMemory.tiers``).

The twins are generated, not written: ``python scripts/gen_sync_facade.py`` reads ``AsyncAgentMemory``,
``WorkingMemory``, ``ContextWindow`` and ``MemoryRouter`` (their ``async def`` methods: parameters, defaults,
annotations, docstrings) and rewrites the
regions between the ``BEGIN GENERATED`` and ``END GENERATED`` markers below. Change the async method, then rerun
the script; ``tests/unit/test_sync_facade.py`` fails (in CI too) when a region is stale or a signature differs.

Every method scoped to a user takes ``user_id``; a memory opened with ``user_id=`` uses it as the default.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import functools
import inspect
import threading
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import pydantic
from pydantic import SecretStr

from .admin import SYSTEM_SCOPE, SYSTEM_USER_ID, check_admin_key
from .agents import check_agent
from .api_keys import ApiKey, ApiKeyStore, NewApiKey
from .archive import ArchiveReport, archive_old_conversations, restore_archived
from .audit import MemoryAuditLogger
from .backends import Backends, open_backends
from .browse import ConversationInfo, FactRecord, MemoryBrowser
from .cleanup import CleanupReport, delete_idle_entities
from .context import MemoryContext
from .context_rot import ContextRotReport, archive_stale, restore_stale
from .context_rot import unarchive as unarchive_memories
from .context_window import ContextMessage, ContextWindow, PruneStrategy
from .control import ControlMatch, ControlStore
from .crypto import ColumnCipher
from .decay import DecayReport, apply_decay, undo_decay
from .dedup import DedupReport, dedup, undo_dedup
from .episodic import EpisodicMemory, ReconcileResult
from .errors import (
    CallTimeoutError,
    ClosedError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitedError,
    ValidationError,
)
from .extraction import ConversationExtractor, ExtractionReport, choose_extractor
from .extraction.consolidation import ConsolidationReport, consolidate_due
from .fact_retention import FactExpiryReport, expire_old_facts, restore_expired
from .forget import ForgetFilter, ForgetReceipt, forget_memories, forget_user, forget_where
from .goals import GoalMemory
from .index_compaction import check_wait_seconds, compact_vector_indexes, wait_for_vector_indexes
from .items import ItemStore, ItemSweepReport
from .models import (
    GLOBAL_CHANNEL,
    ControlMemory,
    Entity,
    EpisodicSummary,
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
from .patterns import PatternReport, detect_patterns
from .pools import Pool, PoolStatistics, PoolStore, PoolSweepReport
from .procedural import ProceduralMemory, StrategyMatch
from .profiles import ProfileStore
from .promotion import PromotionReport, promote_prominent, unpromote
from .providers.embeddings import Embedder, make_embedder
from .reembed import ReembedReport, target_embedder
from .reembed import reembed as reembed_stores
from .retrieval.bundle import MemoryBundle, WorkingState
from .retrieval.recall import RecallLayer
from .router import MemoryRouter
from .runs import JobReport, RunKeeping, UndoFunction, recorded, undo
from .semantic import EntityGraph, SemanticMemory
from .semantic_batch import SemanticBatch
from .serving import audit_entries, hit_rate_limit, store_health
from .settings import RecallSettings, Settings, load_settings
from .short_term import ShortTermStore
from .short_term_consolidation import ShortTermReport, consolidate_short_term, undo_short_term
from .snapshots import (
    Progress,
    SnapshotInfo,
    create_snapshot,
    list_snapshots,
    load_snapshot,
    restore_snapshot,
    write_snapshot,
)
from .sql.timeline import CONFLICT_POLICY
from .stats import MemoryStats, gather_stats
from .summaries import similar_conversations, summarize_conversation
from .tool_payloads import ReencryptReport, reencrypt
from .validation import check_channel, check_datetime, check_id, check_ids, check_int, check_text
from .working import WorkingMemory

__all__ = ["AgentMemory", "AsyncAgentMemory", "SyncContextWindow", "SyncMemoryRouter", "SyncWorkingMemory"]

T = TypeVar("T")
C = TypeVar("C", bound=type)
R = TypeVar("R", bound=JobReport)
M = TypeVar("M", bound=pydantic.BaseModel)

def _no_progress(stage: str, done: int) -> None:
    """A progress callback that says nothing."""


_CLOSED_MESSAGE = "this memory is closed (close() was called); open a new AgentMemory / AsyncAgentMemory"


def _from_pydantic(exc: pydantic.ValidationError, arguments: Mapping[str, str] | None = None) -> ValidationError:
    """Our :class:`~agentx_memory.errors.ValidationError` for pydantic's, naming the field of its first error
    (``latency_ms``, ``tool_input.key``); ``arguments`` renames a model field to the argument that filled it."""
    errors = exc.errors(include_url=False)
    if not errors:
        return ValidationError(exc.title, str(exc))
    loc = [str(part) for part in errors[0]["loc"]]
    if loc and arguments and loc[0] in arguments:
        loc[0] = arguments[loc[0]]
    return ValidationError(".".join(loc) or exc.title, errors[0]["msg"])


def _guarded(method: Callable[..., Any]) -> Callable[..., Any]:
    """``method`` refusing to run on a closed memory (ClosedError), with pydantic's errors converted to ours."""
    if inspect.iscoroutinefunction(method):
        @functools.wraps(method)
        async def call_async(self: AsyncAgentMemory, *args: Any, **kwargs: Any) -> Any:
            if self.closed:
                raise ClosedError(_CLOSED_MESSAGE)
            try:
                return await method(self, *args, **kwargs)
            except pydantic.ValidationError as exc:
                raise _from_pydantic(exc) from exc
        return call_async

    @functools.wraps(method)
    def call(self: AsyncAgentMemory, *args: Any, **kwargs: Any) -> Any:
        if self.closed:
            raise ClosedError(_CLOSED_MESSAGE)
        try:
            return method(self, *args, **kwargs)
        except pydantic.ValidationError as exc:
            raise _from_pydantic(exc) from exc
    return call


def _api_boundary(cls: C) -> C:
    """The one boundary of the public API: every public method of ``cls`` (but ``open``/``close``) raises
    :class:`~agentx_memory.errors.ClosedError` after ``close()``, and no pydantic ``ValidationError`` (a model built
    from the caller's arguments, e.g. ``record_invocation(latency_ms=1.5)``) gets past it: it becomes our
    :class:`~agentx_memory.errors.ValidationError` naming the field. The sync twins call these methods, so they
    inherit both; their portal raises ClosedError itself once the memory is closed."""
    for name, member in list(vars(cls).items()):
        if name.startswith("_") or name in {"open", "close"} or not inspect.isfunction(member):
            continue
        setattr(cls, name, _guarded(member))
    return cls


@_api_boundary
class AsyncAgentMemory:
    """The memory engine's async API. Open with ``await AsyncAgentMemory.open()`` or ``async with``.

    >>> async with await AsyncAgentMemory.open(user_id="alice") as memory:   # doctest: +SKIP
    ...     await memory.store_turn(Turn(conversation_id="c1", user_id="alice", content="I live in Lisbon"))
    """

    def __init__(self, backends: Backends, settings: Settings, embedder: Embedder, *, user_id: str | None = None,
                 agent_id: str | None = None):
        self.settings = settings
        self.backends = backends
        self.default_user_id = user_id
        #: The agent this memory acts as (None: the user): what it writes is its own, what it reads is what that
        #: agent may read (:mod:`agentx_memory.agents`).
        self.agent_id = check_agent(agent_id)
        self._closed = False
        self._parent: AsyncAgentMemory | None = None  # set on a view made by for_agent
        self._admin_key: SecretStr | None = None  # set on a view made by as_admin
        self.ctx = MemoryContext(
            settings=settings, graph=backends.graph, postgres=backends.postgres, working=backends.working,
            embedder=embedder, audit=MemoryAuditLogger(backends.postgres, settings),
        )
        self.episodic = EpisodicMemory(self.ctx)
        self.semantic = SemanticMemory(self.ctx)
        self.semantic_batch = SemanticBatch(self.ctx, self.semantic)
        self.procedural = ProceduralMemory(self.ctx)
        self.goals = GoalMemory(self.ctx)
        self.profiles = ProfileStore(self.ctx)
        self.controls = ControlStore(self.ctx)
        self.pools = PoolStore(self.ctx, self.semantic, self.procedural, self.goals, self.controls)
        self.short_term = ShortTermStore(self.ctx)
        self.items = ItemStore(self.ctx)
        self.recall = RecallLayer(self.ctx, self.semantic, self.procedural, self.goals, self.profiles, self.controls)
        self.browser = MemoryBrowser(self.ctx)
        if settings.observability.enabled:  # spans and metrics (issue 18); OpenTelemetry is imported only then
            from .observability import instrument
            instrument(self)

    @classmethod
    async def open(cls, settings: Settings | None = None, *, user_id: str | None = None,
                   embedder: Embedder | None = None, agent_id: str | None = None) -> AsyncAgentMemory:
        """Connect to the configured stores (starting the embedded servers when no URI is set) and migrate;
        ``agent_id`` makes the memory act as that agent of the user (see :meth:`for_agent`)."""
        settings = settings or load_settings()
        embedder = embedder or make_embedder(settings.embedding)
        backends = await open_backends(settings)
        return cls(backends, settings, embedder, user_id=user_id, agent_id=agent_id)

    def for_agent(self, agent_id: str) -> AsyncAgentMemory:
        """This memory acting as one agent of the user, on the same connections (seeds 001, 002).

        What the view writes is the agent's: a turn is private to it unless it says ``scope="global"``; facts and
        control memories are global unless they say ``scope="agent"``. What it reads — recall, conversations,
        recent turns, facts, entity graphs, control memories — is the user's global memory and the agent's own
        private memory, never another agent's private memory. Closing the view closes only the view.
        """
        view = copy.copy(self)
        view.agent_id = check_id(agent_id, "agent_id")
        view._closed = False
        view._parent = self
        return view

    @property
    def closed(self) -> bool:
        """True once :meth:`close` was called (on this memory, or on the memory a view was made from): every other
        method then raises :class:`~agentx_memory.errors.ClosedError`."""
        return self._closed or (self._parent is not None and self._parent.closed)

    async def close(self) -> None:
        """Close connections (embedded servers keep running for other processes; ``agentx-memory down`` stops them).
        Idempotent; any later call raises :class:`~agentx_memory.errors.ClosedError`. On a view of
        :meth:`for_agent`, only the view closes."""
        if self._closed:
            return
        self._closed = True
        if self._parent is not None:
            return
        await self.recall.drain()
        await self.backends.close()

    def _acting(self, agent_id: str | None, field: str) -> str:
        """The agent a call acts as: the one given, else this view's; a view acting as another agent is refused."""
        if agent_id is None:
            if self.agent_id is None:
                raise ValidationError(field, "is required: pass it, or call through for_agent(agent_id)")
            return self.agent_id
        if self.agent_id is not None and agent_id != self.agent_id:
            raise ValidationError(field, f"is {agent_id!r}; this memory acts as agent {self.agent_id!r}")
        return agent_id

    def _whole_user(self, action: str, kind: str, user_id: str | None) -> None:
        """Refuse ``action`` on an agent's view: what it reaches holds every agent's memory (forgetting, the audit
        trail). The user's memory does it."""
        if self.agent_id is not None:
            raise PermissionDeniedError(self.agent_id, action, kind, self._user(user_id))

    def _writer(self, agent_id: str | None) -> str | None:
        """The agent a write is recorded with: the one given (checked), else this view's (None: the user's)."""
        return None if agent_id is None and self.agent_id is None else self._acting(agent_id, "agent_id")

    def _own(self, memory: M, field: str) -> M:
        """A memory being written through an agent's view, as that agent's (another agent's id is refused)."""
        if self.agent_id is None:
            return memory
        written_by = getattr(memory, "agent_id", None)
        if written_by is None:
            return memory.model_copy(update={"agent_id": self.agent_id})
        if written_by != self.agent_id:
            raise ValidationError(f"{field}.agent_id", f"is {written_by!r}; this memory acts as agent "
                                                       f"{self.agent_id!r} and writes only as it")
        return memory

    async def __aenter__(self) -> AsyncAgentMemory:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def _user(self, user_id: str | None) -> str:
        user = self.default_user_id if user_id is None else user_id
        if not user:
            raise ValidationError("user_id", "is required: pass user_id, or open the memory with a default user_id")
        return check_id(user, "user_id")

    # --- episodic -----------------------------------------------------------------------------------------------

    async def store_turn(self, turn: Turn, channel: str | None = None) -> Turn:
        """Store one conversation turn: durable log, graph, working memory, timeline, audit. Returns it as stored."""
        return await self.episodic.store_turn(self._own(turn, "turn"), channel)

    async def store_turns(self, turns: Sequence[Turn], channel: str | None = None) -> list[Turn]:
        """Store many turns with one embedding batch and one transaction per store."""
        if self.agent_id is not None and not isinstance(turns, (str, bytes, Mapping, Turn)) and isinstance(
                turns, Iterable):  # any iterable (a generator too) is read once here; anything else validate refuses
            turns = [self._own(t, "turns") if isinstance(t, Turn) else t for t in turns]
        return await self.episodic.store_turns(turns, channel)

    async def get_conversation(self, conversation_id: str, user_id: str | None = None) -> list[Turn]:
        """Every turn of one of the user's conversations, in order."""
        return await self.episodic.get_conversation(conversation_id, self._user(user_id), agent_id=self.agent_id)

    async def get_recent_turns(self, user_id: str | None = None, channels: Sequence[str] | str | None = None,
                               hours: float = 24, limit: int = 50) -> list[Turn]:
        """The user's turns of the last ``hours`` in ``channels`` (always with ``_global``), newest first."""
        return await self.episodic.get_recent_turns(self._user(user_id), channels, hours, limit,
                                                    agent_id=self.agent_id)

    async def reconcile(self, *, full: bool = False) -> ReconcileResult:
        """Project every durable-log turn that the graph (or the timeline) is missing.

        A turn that cannot be projected is quarantined (why is recorded in its log row; later runs skip it) instead
        of blocking the others. Logged tool invocations the graph is missing are projected after the turns. The
        result says how many turns were projected, which were quarantined by this run, how many are in quarantine
        in all, and how many tool invocations were projected (``int(result)`` is the number of turns projected).

        A run projects what is queued: what a write could not project, and what a restore or the migrations queued.
        ``full`` first compares the whole log with the graph and queues every logged turn and tool invocation
        whose node is missing (after restoring the graph from a backup older than the log); it reads every log
        row, so it takes time in proportion to the log (``requeued`` and ``invocations_requeued`` say what it
        found)."""
        requeued = await self.episodic.requeue_missing() if full else 0
        invocations_requeued = await self.procedural.requeue_missing_invocations() if full else 0
        result = await self.episodic.reconcile()
        return dataclasses.replace(result, invocations_projected=await self.procedural.reconcile_invocations(),
                                   requeued=requeued, invocations_requeued=invocations_requeued)

    # --- semantic -----------------------------------------------------------------------------------------------

    async def upsert_entity(self, entity: Entity, channel: str | None = None) -> Entity:
        """Create or merge an entity (by normalized name + type + user + channel); aliases are merged.

        The graph write is the write: an error means nothing was stored; once it succeeded the entity is returned
        even if PostgreSQL then fails (its timeline row / audit entry is missing and logged at WARNING)."""
        return await self.semantic.upsert_entity(entity, channel)

    async def get_entity(self, entity_id: str, user_id: str | None = None) -> Entity:
        """One of the user's entities."""
        return await self.semantic.get_entity(entity_id, self._user(user_id))

    async def learn_fact(self, fact: Fact, channel: str | None = None) -> Fact:
        """Store a fact, linked DERIVED_FROM its source turn and ABOUT its entities.

        The graph write is the write: an error means nothing was stored; once it succeeded the fact is returned even
        if PostgreSQL then fails (its timeline row / audit entry is missing and logged at WARNING)."""
        return await self.semantic.learn_fact(self._own(fact, "fact"), channel)

    async def store_fact(self, fact: Fact, channel: str | None = None) -> Fact:
        """Same as :meth:`learn_fact` (spec 003's name)."""
        return await self.semantic.learn_fact(self._own(fact, "fact"), channel)

    async def get_fact(self, fact_id: str, user_id: str | None = None) -> Fact:
        """One of the user's facts."""
        return await self.semantic.get_fact(fact_id, self._user(user_id), agent_id=self.agent_id)

    async def create_relationship(self, source_id: str, target_id: str, rel_type: str,
                                  properties: dict[str, Any] | None = None,
                                  user_id: str | None = None) -> Relationship:
        """Link two entities: RELATED_TO, PART_OF, LOCATED_IN, WORKS_FOR, KNOWS, CREATED_BY or REFERENCES."""
        return await self.semantic.create_relationship(source_id, target_id, rel_type, properties,
                                                       user_id=self._user(user_id))

    async def get_entity_graph(self, entity_ids: Sequence[str], depth: int = 2, user_id: str | None = None,
                               limit: int | None = None) -> EntityGraph:
        """Entities within ``depth`` (1-3) hops, the edges among them and facts about them; at most ``limit``
        neighbours and ``limit`` facts (default retrieval.graph_expansion_limit): past it, the newest facts about
        ``entity_ids`` are kept before their neighbours'."""
        return await self.semantic.get_entity_graph(entity_ids, depth, user_id=self._user(user_id), limit=limit,
                                                    agent_id=self.agent_id)

    async def promote_to_global(self, fact_id: str, reason: str, user_id: str | None = None) -> Fact:
        """Promote a project fact to ``_global`` (PROMOTED_FROM link + audit entry); returns the global fact."""
        return await self.semantic.promote_to_global(fact_id, reason, user_id=self._user(user_id))

    async def extract_conversation(self, conversation_id: str, user_id: str | None = None, *,
                                   dry_run: bool = False, force: bool = False) -> ExtractionReport:
        """Turn one conversation into entities, facts and relationships (``extraction.extractor``: the LLM of
        ``llm.extraction_model`` or the offline rules), one extraction call per batch of turns, written through this
        memory idempotently: a batch already extracted (same extractor, prompt and turns) is skipped without a call
        unless ``force``, and a forced re-run adds nothing twice. ``dry_run`` writes nothing and returns what would
        be written in ``report.found``. A token budget or LLM failure stops the run between batches (the report's
        ``stopped`` says why); usage and cost are in the report and the audit log."""
        turns = await self.episodic.get_conversation(conversation_id, self._user(user_id), agent_id=self.agent_id)
        if not turns:
            raise NotFoundError("conversation", conversation_id)
        extractor = ConversationExtractor(self.semantic, choose_extractor(self.settings))
        return await extractor.run(turns, dry_run=dry_run, force=force)

    async def apply_decay(self, *, now: datetime | None = None, dry_run: bool = False,
                          user_id: str | None = None) -> DecayReport:
        """Decay idle entities' salience and inferred facts' confidence as of ``now`` (default: the current time):
        ``base * decay.rate ** days since the last access`` (:mod:`agentx_memory.decay`), for every user or only
        ``user_id``. Idempotent for a given ``now``. The worker's ``decay`` job: a recorded run (``report.run_id``)
        that :meth:`undo_run` reverses; ``dry_run`` computes the values without writing or recording."""
        when = now or datetime.now(UTC)
        return await self._run_job("decay", DecayReport(dry_run=dry_run), user_id, lambda report: apply_decay(
            self.ctx.graph, self.settings.decay, now=when, user_id=user_id, report=report))

    async def cleanup(self, *, now: datetime | None = None, dry_run: bool = False,
                      user_id: str | None = None) -> CleanupReport:
        """Delete the entities (of every user, or only ``user_id``) whose salience fell below
        ``retention.entity_min_salience`` and that were not accessed for ``retention.entity_days``, with their edges
        and timeline rows; each deletion audited with what was deleted (deletions are not undoable). With
        :meth:`archive_conversations`, the worker's ``cleanup`` job; ``dry_run`` lists what would be deleted."""
        when = now or datetime.now(UTC)
        return await self._run_job("cleanup", CleanupReport(dry_run=dry_run), user_id,
                                   lambda report: delete_idle_entities(self.ctx.graph, self.ctx.audit,
                                                                       self.ctx.sql.timeline, self.settings.retention,
                                                                       now=when, user_id=user_id, report=report))

    async def archive_conversations(self, *, now: datetime | None = None, dry_run: bool = False,
                                    user_id: str | None = None) -> ArchiveReport:
        """Archive the conversations (of every user, or only ``user_id``) whose last turn is older than
        ``retention.conversation_days`` as of ``now``: their turns leave default recall (``recall.include_archived``
        brings them back) and stay in the log; nothing is deleted. A recorded run that :meth:`undo_run` reverses;
        ``dry_run`` lists what would be archived (:mod:`agentx_memory.archive`)."""
        when = now or datetime.now(UTC)
        return await self._run_job("archive", ArchiveReport(dry_run=dry_run), user_id, lambda report:
                                   archive_old_conversations(self.ctx.sql.conversations, self.ctx.graph,
                                                             self.ctx.audit, self.settings.retention, now=when,
                                                             user_id=user_id, report=report))

    async def expire_facts(self, *, now: datetime | None = None, dry_run: bool = False,
                           user_id: str | None = None) -> FactExpiryReport:
        """Expire the facts (of every user, or only ``user_id``) neither stated again nor accessed for
        ``retention.fact_days``: they leave recall and stay for as-of reads (:mod:`agentx_memory.fact_retention`).
        Part of the worker's ``cleanup`` job: a recorded run that :meth:`undo_run` reverses; ``dry_run`` lists them."""
        when = now or datetime.now(UTC)
        return await self._run_job("expire_facts", FactExpiryReport(dry_run=dry_run), user_id, lambda report:
                                   expire_old_facts(self.ctx.graph, self.ctx.audit, self.settings.retention,
                                                    now=when, user_id=user_id, report=report))

    async def promote_prominent_facts(self, *, dry_run: bool = False, user_id: str | None = None) -> PromotionReport:
        """Promote the project facts (of every user, or only ``user_id``) that meet ``promotion.*`` (confidence >=
        0.85, accessed >= 5 times, from >= 2 conversations by default) to ``_global``; ``report.promoted`` holds
        the global copies. The worker's ``promote`` job: a recorded run that :meth:`undo_run` reverses; ``dry_run``
        lists the candidates without copying."""
        return await self._run_job("promote", PromotionReport(dry_run=dry_run), user_id,
                                   lambda report: promote_prominent(self.semantic, user_id=user_id, report=report))

    async def consolidate(self, *, now: datetime | None = None, dry_run: bool = False,
                          user_id: str | None = None) -> ConsolidationReport:
        """Extract every conversation that has gone quiet (last turn older than ``worker.consolidate_quiet_minutes``,
        newer than its last consolidation), of every user or only ``user_id``, at most
        ``worker.consolidate_max_conversations`` per call, each under its Redis lock; mark each consolidated and
        report its lag, then summarize it (:meth:`summarize_conversation`). The worker's ``consolidate`` job (a
        recorded run); ``dry_run`` lists the due conversations without extracting. ``now`` (default: the current
        time) decides what is quiet."""
        when = now or datetime.now(UTC)
        return await self._run_job("consolidate", ConsolidationReport(dry_run=dry_run), user_id, lambda report:
                                   consolidate_due(self.episodic, self.semantic, self.ctx.working,
                                                   choose_extractor(self.settings), self.settings.worker, now=when,
                                                   user_id=user_id, report=report,
                                                   summarize=lambda c, u: self.summarize_conversation(c, u)))

    async def dedup(self, *, dry_run: bool = False, user_id: str | None = None) -> DedupReport:
        """Merge duplicate entities and facts (of every user, or only ``user_id``; never across users or channels):
        entities with name or alias evidence, facts with the same content words, each pair with vectors at cosine
        >= ``dedup.similarity`` (:mod:`agentx_memory.dedup`). Every alias, edge and provenance link is kept on the
        survivor. The worker's ``dedup`` job: a recorded run that :meth:`undo_run` reverses; ``dry_run`` lists the
        pairs that would merge."""
        return await self._run_job("dedup", DedupReport(dry_run=dry_run), user_id, lambda report: dedup(
            self.semantic, self.settings.dedup, user_id=user_id, report=report))

    async def detect_patterns(self, *, now: datetime | None = None, dry_run: bool = False,
                              user_id: str | None = None) -> PatternReport:
        """Learn strategies from the conversations (of every user, or only ``user_id``) that used tools and went
        quiet as of ``now``: the tool sequence, the task type and the outcome of the last call that reported one
        (:mod:`agentx_memory.patterns`). Each conversation is learned from once. The worker's ``patterns`` job (a
        recorded run); ``dry_run`` lists what would be learned."""
        when = now or datetime.now(UTC)
        return await self._run_job("patterns", PatternReport(dry_run=dry_run), user_id, lambda report:
                                   detect_patterns(self.episodic, self.procedural, self.ctx.working,
                                                   self.settings.worker, now=when, user_id=user_id, report=report))

    async def undo_run(self, run_id: str) -> dict[str, Any]:
        """Reverse a recorded run of ``decay``, ``promote``, ``archive``, ``expire_facts``, ``dedup``,
        ``short_term`` or ``context_rot`` (see
        :mod:`agentx_memory.runs`):
        what it changed goes back, except values changed again since (``skipped``). Returns what the undo did. A run
        is undone once; an unknown run is :class:`NotFoundError`, a job without undo :class:`ValidationError`."""
        check_id(run_id, "run_id")
        undoers: dict[str, UndoFunction] = {
            "decay": lambda changes: undo_decay(self.ctx.graph, changes),
            "promote": lambda changes: unpromote(self.semantic, changes),
            "archive": lambda changes: restore_archived(self.ctx.sql.conversations, self.ctx.graph, changes),
            "dedup": lambda changes: undo_dedup(self.semantic, run_id, changes),
            "expire_facts": lambda changes: restore_expired(self.ctx.graph, changes),
            "short_term": lambda changes: undo_short_term(self.semantic, changes),
            "context_rot": lambda changes: restore_stale(self.ctx.graph, self.ctx.sql.timeline, changes),
        }
        return await undo(self.ctx.sql.runs, self.ctx.audit, run_id, undoers,
                          stale_after=timedelta(minutes=self.settings.worker.stale_run_minutes))

    async def worker_runs(self, *, limit: int = 20, latest_per_job: bool = False) -> list[dict[str, Any]]:
        """Recorded maintenance runs, newest first (``run_id``, ``job``, ``user_id``, ``started_at``,
        ``finished_at``, ``status``, ``summary``, ``undone_at``, ``undo_summary``): the ``limit`` latest, or the
        latest of each job (``worker status``)."""
        if latest_per_job:
            return await self.ctx.sql.runs.latest_per_job()
        return await self.ctx.sql.runs.recent(check_int(limit, "limit", low=1, high=10_000))

    async def _run_job(self, job: str, report: R, user_id: str | None,
                       work: Callable[[R], Coroutine[Any, Any, Any]]) -> R:
        if user_id is not None:
            check_id(user_id, "user_id")
        keeping = RunKeeping(undo_days=self.settings.worker.undo_days, keep_days=self.settings.retention.audit_days,
                             stale_after=timedelta(minutes=self.settings.worker.stale_run_minutes))
        return await recorded(self.ctx.sql.runs, self.ctx.audit, job, report, work, keeping=keeping, user_id=user_id)

    async def facts_as_of(self, at: datetime, user_id: str | None = None, channel: str = GLOBAL_CHANNEL, *,
                          entity_ids: Sequence[str] = (), limit: int = 100) -> list[Fact]:
        """The user's facts as they stood at ``at``, newest first, in ``channel`` and ``_global``: said by then and
        not yet replaced (a fact superseded since is returned with its ``status``; a rejected one never held).
        ``entity_ids`` keeps those ABOUT one of them."""
        channels = list(dict.fromkeys([check_channel(channel), GLOBAL_CHANNEL]))
        return await self.semantic.facts_as_of(self._user(user_id), at, channels, entity_ids=entity_ids, limit=limit,
                                               agent_id=self.agent_id)

    async def facts_for_review(self, user_id: str | None = None, limit: int = 100) -> list[tuple[Fact, list[str]]]:
        """Facts flagged as contradicting another (``extraction.contradiction_policy = "flag_review"``), oldest
        first, each with the ids of the facts it conflicts with."""
        return await self.semantic.facts_for_review(self._user(user_id), limit)

    # --- batch writes of entities, facts and relationships (issue 17; agentx_memory.semantic_batch) --------------

    async def upsert_entities(self, entities: Sequence[Entity], channel: str | None = None) -> list[Entity]:
        """:meth:`upsert_entity` for many entities in a few round trips; returns them as stored, in item order.

        Every item is checked first: one invalid item (the error names it, ``entities[3].name``) or more than
        ``limits.max_batch_items`` items refuse the whole batch before anything is written. Items that merge into one
        entity (same user, channel, type and normalized name) leave what upserting them in order would, and each gets
        the merged entity. Missing vectors are embedded in one call."""
        return await self.semantic_batch.upsert_entities(entities, channel)

    async def learn_facts(self, facts: Sequence[Fact], channel: str | None = None) -> list[Fact]:
        """:meth:`learn_fact` for many facts in a few round trips; returns them as stored, in item order.

        Every item, and every entity, source turn and stored fact id the items name, is checked first: one invalid
        item (``facts[3].claim``), unknown reference (``facts[3].entity_ids``), another user's id or conversation, a
        fact id stored in another channel, or more than ``limits.max_batch_items`` items refuse the whole batch
        before anything is written. Items with one id leave what learning them in order would. Missing vectors are
        embedded in one call."""
        if self.agent_id is not None and not isinstance(facts, (str, bytes, Mapping, Fact)) and isinstance(
                facts, Iterable):  # any iterable is read once here; anything else the batch refuses
            facts = [self._own(f, f"facts[{i}]") if isinstance(f, Fact) else f for i, f in enumerate(facts)]
        return await self.semantic_batch.learn_facts(facts, channel)

    async def store_facts(self, facts: Sequence[Fact], channel: str | None = None) -> list[Fact]:
        """Same as :meth:`learn_facts` (beside :meth:`store_fact`)."""
        return await self.learn_facts(facts, channel)

    async def create_relationships(self, relationships: Sequence[Relationship | tuple[Any, ...]],
                                   user_id: str | None = None) -> list[Relationship]:
        """:meth:`create_relationship` for many relationships in a few round trips; returns them as stored.

        An item is a :class:`~agentx_memory.models.Relationship` (its ``user_id``, else the call's user) or a
        ``(source_id, target_id, rel_type[, properties])`` tuple (the call's user: ``user_id``, else the memory's
        default user). Every item and both of its entities are checked first: one invalid item
        (``relationships[3].rel_type``), unknown entity (``relationships[3].target_id``) or more than
        ``limits.max_batch_items`` items refuse the whole batch before anything is written."""
        user = self.default_user_id if user_id is None else user_id
        return await self.semantic_batch.create_relationships(relationships, user_id=user)

    # --- procedural ---------------------------------------------------------------------------------------------

    async def record_invocation(self, conversation_id: str, turn_id: str | None, tool_name: str, tool_input: Any,
                                tool_output: Any, success: bool | None, latency_ms: int | None,
                                channel: str = GLOBAL_CHANNEL, *, user_id: str | None = None,
                                task_type: str | None = None, error_message: str | None = None,
                                invocation_id: str | None = None, timestamp: datetime | None = None) -> ToolInvocation:
        """Record a tool call (PostgreSQL tool_invocations + graph Tool/ToolInvocation). Pass ``invocation_id`` to
        make retries of the same call idempotent."""
        extra: dict[str, Any] = {}
        if invocation_id is not None:
            extra["id"] = invocation_id
        if timestamp is not None:
            extra["timestamp"] = timestamp
        try:
            invocation = ToolInvocation(
                user_id=self._user(user_id), conversation_id=conversation_id, turn_id=turn_id, tool_name=tool_name,
                tool_input=tool_input, tool_output=tool_output, success=success, latency_ms=latency_ms,
                channel=channel, task_type=task_type, error_message=error_message, **extra,
            )
        except pydantic.ValidationError as exc:  # name the argument, not the model field it fills
            raise _from_pydantic(exc, {"id": "invocation_id"}) from exc
        return await self.procedural.record_invocation(invocation)

    async def learn_strategy(self, description: str, context_pattern: str = "", tool_sequence: Sequence[str] = (),
                             from_conversation_id: str | None = None, success: bool = True,
                             channel: str = GLOBAL_CHANNEL, user_id: str | None = None, *,
                             steps: Sequence[str] = (), trigger_conditions: Sequence[str] = (),
                             task_type: str | None = None) -> Strategy:
        """Record a strategy (seed 001's procedural memory: optional ordered ``steps`` and ``trigger_conditions``;
        spec 003's ``task_type`` it is for), or reinforce it if the user already has the same one in the channel."""
        return await self.procedural.learn_strategy(description, context_pattern, tool_sequence, from_conversation_id,
                                                    success, channel, user_id=self._user(user_id), steps=steps,
                                                    trigger_conditions=trigger_conditions, task_type=task_type)

    async def find_procedures(self, situation: str, channels: Sequence[str] | str | None = None, top_k: int = 5,
                              user_id: str | None = None, *, task_type: str | None = None) -> list[StrategyMatch]:
        """Procedures whose trigger conditions (and description) match ``situation`` (seed 001's "procedures
        matching a trigger"): :meth:`find_strategies` over vectors that include each strategy's triggers."""
        return await self.procedural.find_strategies(situation, channels, top_k, user_id=self._user(user_id),
                                                     task_type=task_type)

    async def find_strategies(self, task_description: str, channels: Sequence[str] | str | None = None, top_k: int = 5,
                              user_id: str | None = None, *, task_type: str | None = None) -> list[StrategyMatch]:
        """Strategies for a task, ranked by similarity and success rate; ``task_type`` keeps those learned for it."""
        return await self.procedural.find_strategies(task_description, channels, top_k, user_id=self._user(user_id),
                                                     task_type=task_type)

    async def reinforce_strategy(self, strategy_id: str, success: bool, user_id: str | None = None) -> Strategy:
        """Count a success or failure of a strategy."""
        return await self.procedural.reinforce_strategy(strategy_id, success, user_id=self._user(user_id))

    async def get_tool_stats(self, task_type: str | None = None, channel: str | None = None,
                             user_id: str | None = None) -> list[dict[str, Any]]:
        """Per-tool usage, success rate and latency for the user (optionally one task type / channel)."""
        return await self.procedural.get_tool_stats(self._user(user_id), task_type, channel)

    # --- goals --------------------------------------------------------------------------------------------------

    async def add_goal(self, goal: Goal, channel: str | None = None) -> Goal:
        """Store a goal (with optional parent_id → SUBGOAL_OF and blocked_by → BLOCKED_BY).

        The graph write is the write: an error means nothing was stored; once it succeeded the goal is returned even
        if PostgreSQL then fails (its timeline row / audit entry is missing and logged at WARNING)."""
        return await self.goals.add_goal(goal, channel)

    async def get_goal(self, goal_id: str, user_id: str | None = None) -> Goal:
        """A goal with its parent id and blockers."""
        return await self.goals.get_goal(goal_id, self._user(user_id))

    async def complete_goal(self, goal_id: str, status: str = "completed", result: str | None = None,
                            user_id: str | None = None) -> Goal:
        """Finish a goal: sets status, completed_at and result."""
        return await self.goals.complete_goal(goal_id, status, result, user_id=self._user(user_id))

    async def block_goal(self, goal_id: str, blocker_id: str, user_id: str | None = None) -> Goal:
        """Record that a goal is BLOCKED_BY another."""
        return await self.goals.block_goal(goal_id, blocker_id, user_id=self._user(user_id))

    async def list_goals(self, user_id: str | None = None, status: str | None = None,
                         channels: Sequence[str] | str | None = None) -> list[Goal]:
        """The user's goals (optionally of one status) in ``channels`` plus ``_global``."""
        return await self.goals.list_goals(self._user(user_id), status, channels)

    # --- retrieval ----------------------------------------------------------------------------------------------

    async def remember(self, query: str, user_id: str | None = None, channel: str = GLOBAL_CHANNEL, top_k: int = 10,
                       time_window_hours: float | None = None, include_episodic: bool = True,
                       include_semantic: bool = True, include_procedural: bool = True,
                       reference_time: datetime | None = None,
                       recall: RecallSettings | dict[str, Any] | None = None,
                       memory_types: Sequence[str] | None = None, *,
                       session_id: str | None = None) -> MemoryBundle:
        """Recall what is relevant to ``query``: scored turns, facts, entities (with their neighbourhood),
        strategies and the rules (control memories) closest to it, from ``channel`` and ``_global``, plus active
        goals and the user's profile.

        ``reference_time`` is the "now" for time phrases and recency (default: now); ``recall`` overrides RecallLayer
        settings for this call, e.g. ``recall={"hybrid": False}``; ``memory_types`` keeps only some kinds
        (``episodic``, ``semantic``, ``procedural``, ``control``); ``session_id`` (e.g. the conversation asking) is
        recorded in the recall's audit entry. See :class:`MemoryBundle` (``explain()``, ``to_prompt(max_tokens)``:
        rules first).

        With ``limits.remember_rate_limit`` set, each user (each agent of a user, for a memory acting as one) may
        call this that many times per ``limits.remember_rate_window_seconds``; a call past it raises
        :class:`~agentx_memory.errors.RateLimitedError` (429, ``retry_after`` seconds) and recalls nothing.
        """
        user = self._user(user_id)
        if session_id is not None:
            check_id(session_id, "session_id", max_len=200)
        limits = self.settings.limits
        if limits.remember_rate_limit is not None:
            wait = await self.ctx.working.hit_rate("remember", user, self.agent_id, limit=limits.remember_rate_limit,
                                                   window_seconds=limits.remember_rate_window_seconds)
            if wait > 0:
                raise RateLimitedError("remember", user_id=user, agent_id=self.agent_id,
                                       limit=limits.remember_rate_limit,
                                       window_seconds=limits.remember_rate_window_seconds, retry_after=wait)
        return await self.recall.remember(query, user, channel, top_k, time_window_hours,
                                          include_episodic, include_semantic, include_procedural, reference_time,
                                          recall, memory_types, agent_id=self.agent_id, session_id=session_id)

    async def forget_user(self, user_id: str, *, requested_by: str = "api") -> ForgetReceipt:
        """Remove everything of ``user_id`` from every store — graph, conversation log, timeline, tool log,
        profile, summaries, run records, memory pools, working memory — and strip their audit entries of content;
        return the receipt per store (:mod:`agentx_memory.forget`). One audit entry keeps that it happened and
        ``requested_by``. Idempotent. The user's memory does it, not an agent's view
        (:class:`PermissionDeniedError`)."""
        check_id(user_id, "user_id")
        self._whole_user("forget", "every memory of user", user_id)
        check_text(requested_by, "requested_by", max_bytes=200)
        await self.recall.drain()  # a recall's audit entry still being written would land after the scrub
        return await forget_user(self.ctx, user_id, requested_by=requested_by)

    async def forget(self, ids: Sequence[str] = (), user_id: str | None = None, *, conversation_id: str | None = None,
                     channel: str | None = None, before: datetime | None = None, after: datetime | None = None,
                     memory_types: Sequence[str] | None = None, cascade: bool = True,
                     requested_by: str = "api") -> ForgetReceipt:
        """Remove chosen memories of the user from every store and return the receipt per store
        (:mod:`agentx_memory.forget`).

        Either ``ids`` (turn, fact, entity, goal, strategy, control or tool-invocation ids, or conversation ids: all
        their turns) or a filter: ``conversation_id``, ``channel``, ``before`` (exclusive) / ``after`` (inclusive)
        the memory's own time, ``memory_types`` (episodic, semantic, procedural, control, goal); every criterion
        given must hold. With ``cascade`` (default) what is derived goes too: facts whose every source turn goes,
        the summary of a conversation that loses a turn, dedup redirects to a forgotten entity. Cached copies in
        working memory and the content of audit entries and run records naming them go; one audit entry keeps who
        asked (``requested_by``), the ids and the counts. Idempotent. An agent's view forgets by ids only: a filter
        would reach every agent's memories (:class:`PermissionDeniedError`; the user's memory does it); and only
        what it may read (global memories and its own): another agent's private ids come back in ``not_found``.
        """
        user = self._user(user_id)
        if not ids:  # a filter reaches every agent's memories
            self._whole_user("forget by a filter", "memories of user", user)
        check_text(requested_by, "requested_by", max_bytes=200)
        where = ForgetFilter(
            conversation_id=None if conversation_id is None else check_id(conversation_id, "conversation_id"),
            channel=None if channel is None else check_channel(channel),
            before=None if before is None else check_datetime(before, "before"),
            after=None if after is None else check_datetime(after, "after"),
            memory_types=None if memory_types is None else tuple(check_ids(memory_types, "memory_types")))
        if ids:
            if where != ForgetFilter():
                raise ValidationError("ids", "give ids or a filter (conversation_id, channel, before, after, "
                                             "memory_types), not both")
            wanted = check_ids(ids, "ids")
            check_int(len(wanted), "ids", low=1, high=self.settings.limits.max_batch_turns)
            await self.recall.drain()  # a recall's audit entry still being written would land after the scrub
            return await forget_memories(self.ctx, user, wanted, requested_by=requested_by, cascade=cascade,
                                         agent_id=self.agent_id)
        await self.recall.drain()
        return await forget_where(self.ctx, user, where, requested_by=requested_by, cascade=cascade)

    async def create_snapshot(self, user_id: str | None = None) -> SnapshotInfo:
        """Snapshot the user's memory — graph, PostgreSQL memory tables, working memory — at this moment into the
        engine's snapshot directory (``snapshots.dir``); its ``snapshot_id`` restores it (docs/snapshots.md). On an
        agent's view (:meth:`for_agent`), the snapshot holds what that agent wrote: its turns, facts and control
        memories, its timeline and short-term rows."""
        return await create_snapshot(self.ctx, self._user(user_id), agent_id=self.agent_id)

    async def list_snapshots(self, user_id: str | None = None) -> list[SnapshotInfo]:
        """The user's kept snapshots, oldest first (on an agent's view: that agent's)."""
        return list_snapshots(self.ctx, self._user(user_id), agent_id=self.agent_id)

    async def restore_from_snapshot(self, snapshot_id: str, user_id: str | None = None) -> dict[str, int]:
        """Put the memory a kept snapshot holds back as it was: the user's (what they have now is replaced; their
        kept snapshots stay), or for a snapshot of one agent what that agent wrote (the rest of the user's memory
        stays); return the records written per store. An agent's view restores only its own snapshots. Audited."""
        check_id(snapshot_id, "snapshot_id")
        return await restore_snapshot(self.ctx, self._user(user_id), snapshot_id, agent_id=self.agent_id)

    async def export_memory(self, path: str | Path, user_id: str | None = None, *,
                            progress: Progress | None = None) -> SnapshotInfo:
        """Write the user's memory to a portable snapshot file at ``path`` (JSON lines; gzip when it ends in
        ``.gz``), for :meth:`import_memory` here or on another installation. ``progress(stage, count)`` is called
        as it goes."""
        return await write_snapshot(self.ctx, self._user(user_id), Path(path), progress=progress or _no_progress,
                                    agent_id=self.agent_id)

    async def import_memory(self, path: str | Path, user_id: str | None = None, *,
                            progress: Progress | None = None) -> dict[str, int]:
        """Load a snapshot file into ``user_id`` (default: the file's user), who must have no memory yet; return the
        records written per store. Refused before any write for another format, another embedding model, a user
        with memory (``ConflictError``) or ids another user holds; a failed load removes what it wrote."""
        user = None if user_id is None else check_id(user_id, "user_id")
        return await load_snapshot(self.ctx, Path(path), user_id=user, progress=progress or _no_progress)

    async def reembed(self, model: str, dimension: int, *, batch_size: int = 256,
                      progress: Progress | None = None) -> ReembedReport:
        """Re-embed every stored vector with ``model`` / ``dimension`` online, then switch the stores to the new
        vectors (docs/reembed.md); return the counts per label and table. Recall keeps using the old vectors until
        the switch; a rerun after an interruption resumes where it stopped. ``progress(stage, count)`` is called
        after each batch. Afterwards open the memory again with the new model: this one still embeds with the old
        one, which the stores now refuse (EmbeddingDimensionMismatchError)."""
        target = target_embedder(self.settings.embedding, model, dimension)
        return await reembed_stores(self.ctx, target, batch_size=batch_size, progress=progress)

    async def add_control(self, control: ControlMemory, channel: str | None = None) -> ControlMemory:
        """Store a rule, constraint or error pattern (seed 001's control memory; default scope ``_global``), or
        update it when its id is stored; recall puts the closest rules first in ``to_prompt()``. A rule of scope
        ``system`` is every user's: only an admin view (:meth:`as_admin`) stores one (see :meth:`add_system_control`),
        any other memory raises :class:`~agentx_memory.errors.AdminKeyError`."""
        if isinstance(control, ControlMemory) and control.scope == SYSTEM_SCOPE:
            check_admin_key(self.settings.security, self._admin_key)
            return await self.controls.add_system(control)
        return await self.controls.add(self._own(control, "control"), channel)

    async def get_control(self, control_id: str, user_id: str | None = None) -> ControlMemory:
        """One of the user's control memories or a system rule, or :class:`NotFoundError`."""
        return await self.controls.get(control_id, self._user(user_id), agent_id=self.agent_id)

    async def list_controls(self, user_id: str | None = None, channel: str = GLOBAL_CHANNEL, *,
                            error_pattern: str | None = None, limit: int = 100) -> list[ControlMemory]:
        """The user's control memories in ``channel`` and ``_global`` and the system rules, newest first,
        optionally of one error pattern."""
        channels = list(dict.fromkeys([check_channel(channel), GLOBAL_CHANNEL]))
        return await self.controls.list_controls(self._user(user_id), channels, error_pattern=error_pattern,
                                                 limit=limit, agent_id=self.agent_id)

    async def find_controls(self, query: str, user_id: str | None = None, channel: str = GLOBAL_CHANNEL,
                            top_k: int = 5) -> list[ControlMatch]:
        """The rules closest to ``query`` among the user's and the system rules (cosine, most severe first among
        equals), with their similarity."""
        check_text(query, "query", max_bytes=self.settings.limits.max_text_bytes)
        channels = list(dict.fromkeys([check_channel(channel), GLOBAL_CHANNEL]))
        vector = (await self.ctx.embedder.embed([query], is_query=True))[0].tolist()
        return await self.controls.search(self._user(user_id), channels, vector,
                                          check_int(top_k, "top_k", low=1, high=200), agent_id=self.agent_id)

    async def delete_control(self, control_id: str, user_id: str | None = None) -> bool:
        """Delete one of the user's control memories; True when it existed (an agent deletes only what it may
        read; a system rule is deleted only by :meth:`delete_system_control`)."""
        user = self._user(user_id)
        if self.agent_id is not None:
            try:
                await self.controls.get(control_id, user, agent_id=self.agent_id)
            except NotFoundError:
                return False
        return await self.controls.delete(control_id, user)

    # --- shared memory pools (seed 002; agentx_memory.pools) ----------------------------------------------------
    # ``agent_id`` / ``by_agent`` is the agent acting: on a view of for_agent it defaults to the view's agent (and
    # may not name another one); on the user's memory it is required.

    async def create_pool(self, pool_id: str, *, agent_id: str | None = None, pool_type: str = "shared",
                          scope: str = "account", ttl_seconds: int | None = None, public_read: bool = False,
                          data: dict[str, Any] | None = None, user_id: str | None = None) -> Pool:
        """Create a pool of the user owned by ``agent_id`` (read, write, grant), at version 1, holding ``data``;
        ``pool_type``: shared, agent_private, team_shared or task_scoped; ``scope``: global, account, team, agent or
        task; it expires after ``ttl_seconds`` (never when None); ``public_read`` lets every agent of the user read.
        An id in use is a ConflictError (:mod:`agentx_memory.pools`)."""
        return await self.pools.create_pool(self._user(user_id), pool_id, agent_id=self._acting(agent_id, "agent_id"),
                                            pool_type=pool_type, scope=scope, ttl_seconds=ttl_seconds,
                                            public_read=public_read, data=data)

    async def get_pool(self, pool_id: str, *, agent_id: str | None = None, user_id: str | None = None) -> Pool:
        """The pool (without its data) when ``agent_id`` may read it; PermissionDeniedError (audited) when not,
        NotFoundError when the user has no such live pool."""
        return await self.pools.get_pool(self._user(user_id), pool_id, agent_id=self._acting(agent_id, "agent_id"))

    async def list_pools(self, *, agent_id: str | None = None, user_id: str | None = None,
                         limit: int = 1000) -> list[Pool]:
        """The user's live pools ``agent_id`` may read (owned, granted or public_read), by id."""
        return await self.pools.list_pools(self._user(user_id), agent_id=self._acting(agent_id, "agent_id"),
                                           limit=limit)

    async def grant_pool_access(self, pool_id: str, agent_id: str, level: str, *, by_agent: str | None = None,
                                user_id: str | None = None) -> Pool:
        """Set ``agent_id``'s access to ``level`` (``read``, or ``write`` which implies read); only the owner
        ``by_agent`` grants, and an agent_private pool refuses (PermissionDeniedError). Returns the pool after."""
        return await self.pools.grant_access(self._user(user_id), pool_id, agent_id, level,
                                             by_agent=self._acting(by_agent, "by_agent"))

    async def revoke_pool_access(self, pool_id: str, agent_id: str, *, by_agent: str | None = None,
                                 user_id: str | None = None) -> Pool:
        """Take ``agent_id``'s read and write grants away (owner ``by_agent`` only); returns the pool after."""
        return await self.pools.revoke_access(self._user(user_id), pool_id, agent_id,
                                              by_agent=self._acting(by_agent, "by_agent"))

    async def pool_accessible_by(self, pool_id: str, agent_id: str, level: str = "read", *,
                                 user_id: str | None = None) -> bool:
        """Whether ``agent_id`` may ``read`` or ``write`` the pool now (a question, not an access: not audited)."""
        return await self.pools.accessible_by(self._user(user_id), pool_id, agent_id, level)

    async def read_pool_data(self, pool_id: str, *, agent_id: str | None = None,
                             user_id: str | None = None) -> tuple[dict[str, Any], int]:
        """``(data, version)`` of the pool when ``agent_id`` may read it; pass the version to the next write."""
        return await self.pools.read_data(self._user(user_id), pool_id, agent_id=self._acting(agent_id, "agent_id"))

    async def write_pool_data(self, pool_id: str, data: dict[str, Any], *, expected_version: int,
                              agent_id: str | None = None, user_id: str | None = None) -> int:
        """Replace the pool's data (a JSON object of at most ``pools.max_data_bytes``) when ``agent_id`` may write
        and the pool is still at ``expected_version``; returns the new version. A stale version is
        StaleVersionError (409) and nothing is written."""
        return await self.pools.write_data(self._user(user_id), pool_id, data,
                                           agent_id=self._acting(agent_id, "agent_id"),
                                           expected_version=expected_version)

    async def merge_pool_data(self, pool_id: str, patch: dict[str, Any], *, expected_version: int,
                              agent_id: str | None = None, user_id: str | None = None) -> int:
        """Merge ``patch`` into the pool's data key by key (a ``None`` value removes the key), versioned as
        :meth:`write_pool_data`; returns the new version."""
        return await self.pools.merge_data(self._user(user_id), pool_id, patch,
                                           agent_id=self._acting(agent_id, "agent_id"),
                                           expected_version=expected_version)

    async def share_memory(self, pool_id: str, memory_id: str, *, expected_version: int, agent_id: str | None = None,
                           memory_type: str | None = None, user_id: str | None = None,
                           channels: Sequence[str] | None = None) -> int:
        """Copy one of the user's facts, entities, controls, strategies or goals into the pool's data under
        ``"memory:<memory_id>"`` (type, text, source id, channel, who shared it and when), versioned as
        :meth:`write_pool_data`; returns the new version. The agent shares only what it may read (not another
        agent's private fact or rule), and with ``channels`` only a memory of one of them or of ``_global``:
        :class:`NotFoundError` otherwise."""
        return await self.pools.share_memory(
            self._user(user_id), pool_id, memory_id, agent_id=self._acting(agent_id, "agent_id"),
            expected_version=expected_version, memory_type=memory_type,
            channels=None if channels is None else [check_channel(c) for c in channels])

    async def pool_statistics(self, pool_id: str, *, agent_id: str | None = None,
                              user_id: str | None = None) -> PoolStatistics:
        """Entries, bytes, version, reads, writes, last access and grants of the pool, when ``agent_id`` may
        read it."""
        return await self.pools.pool_statistics(self._user(user_id), pool_id,
                                                agent_id=self._acting(agent_id, "agent_id"))

    async def delete_pool(self, pool_id: str, *, by_agent: str | None = None, user_id: str | None = None) -> bool:
        """Delete the pool (its owner ``by_agent`` only); True when it did, False when there is no such live
        pool."""
        return await self.pools.delete_pool(self._user(user_id), pool_id, by_agent=self._acting(by_agent, "by_agent"))

    async def expire_pools(self, *, now: datetime | None = None, dry_run: bool = False,
                           user_id: str | None = None) -> PoolSweepReport:
        """Delete the pools (of every user, or only ``user_id``) past their expiry as of ``now`` (default: the
        database's clock), each audited; part of the worker's ``cleanup`` job (a recorded run, not undoable);
        ``dry_run`` lists them."""
        return await self._run_job("expire_pools", PoolSweepReport(dry_run=dry_run), user_id,
                                   lambda report: self.pools.expire(report, now=now, user_id=user_id))

    async def expire_items(self, *, now: datetime | None = None, dry_run: bool = False,
                           user_id: str | None = None) -> ItemSweepReport:
        """Delete the namespaced items (of every user, or only ``user_id``) whose TTL ran out as of ``now`` (default:
        the current time), each audited; part of the worker's ``cleanup`` job (a recorded run, not undoable: an
        expired item was already gone for readers); ``dry_run`` lists them."""
        if now is not None:
            now = check_datetime(now, "now")
        return await self._run_job("expire_items", ItemSweepReport(dry_run=dry_run), user_id,
                                   lambda report: self.items.expire(report, now=now, user_id=user_id))

    async def drain(self) -> None:
        """Wait for background writes that follow a recall (reinforcement, audit)."""
        await self.recall.drain()

    # --- working memory and profiles ----------------------------------------------------------------------------

    def working(self, user_id: str | None, conversation_id: str, channel: str = GLOBAL_CHANNEL) -> WorkingMemory:
        """The working memory of one session (Redis; keys expire after working.ttl_seconds); its operations are
        audited like the other stores' (docs/working-memory.md)."""
        check_id(conversation_id, "conversation_id", max_len=200)
        return self.ctx.working.session(self._user(user_id), conversation_id, check_channel(channel),
                                        audit=self.ctx.audit, agent_id=self.agent_id)

    async def summarize_conversation(self, conversation_id: str, user_id: str | None = None) -> EpisodicSummary:
        """Summarize one conversation (spec 000's episodic memory): the text, key decisions, entities mentioned and
        tools called — by ``llm.query_model`` when set, extractive otherwise — embedded and stored, replacing an
        earlier summary (:mod:`agentx_memory.summaries`). The consolidation job does this for every conversation it
        consolidates. An agent's view may not summarize a conversation holding another agent's private turns
        (:class:`NotFoundError`)."""
        check_id(conversation_id, "conversation_id", max_len=200)
        return await summarize_conversation(self.episodic, self.semantic, self.recall.llm, conversation_id,
                                            self._user(user_id), agent_id=self.agent_id)

    async def get_conversation_summary(self, conversation_id: str, user_id: str | None = None) -> EpisodicSummary:
        """The stored summary of one conversation; :class:`NotFoundError` when it was not summarized (or, for an
        agent, when the conversation holds another agent's private turns: the summary would tell what they say)."""
        check_id(conversation_id, "conversation_id", max_len=200)
        found = await self.ctx.sql.summaries.get(self._user(user_id), conversation_id, agent_id=self.agent_id)
        if found is None:
            raise NotFoundError("conversation summary", conversation_id)
        return found

    async def similar_conversations(self, query: str, user_id: str | None = None, channel: str = GLOBAL_CHANNEL,
                                    top_k: int = 3, *, exclude: Sequence[str] = ()) -> list[dict[str, Any]]:
        """The ``top_k`` (3) past conversations whose summaries are most similar to ``query``, in ``channel`` and
        ``_global``, best first: ``{"summary": EpisodicSummary, "similarity": float}``; ``exclude`` leaves out
        conversations (the current one)."""
        check_text(query, "query", max_bytes=self.settings.limits.max_text_bytes)
        channels = list(dict.fromkeys([check_channel(channel), GLOBAL_CHANNEL]))
        return await similar_conversations(self.semantic, self._user(user_id), channels, query,
                                           check_int(top_k, "top_k", low=1, high=100),
                                           check_ids(exclude, "exclude", max_len=200), agent_id=self.agent_id)

    # --- the short-term tier and the tier router (seed 002) -------------------------------------------------------

    async def write_short_term(self, session_id: str, key: str, value: Any, *, memory_type: str,
                               ttl_seconds: int | None = None, agent_id: str | None = None,
                               user_id: str | None = None, now: datetime | None = None) -> ShortTermEntry:
        """Store ``value`` (any JSON value, at most ``limits.max_metadata_bytes``) under ``key`` of the user's session
        in the short-term tier, as ``memory_type`` (``task_context``, ``conversation``, ``tool_result``,
        ``reflection``, ``observation``), expiring ``ttl_seconds`` (default ``short_term.default_ttl_seconds``, 1 h)
        after ``now``. Overwriting an entry keeps its access count and starts its expiry again
        (:mod:`agentx_memory.short_term`). Bad input is a :class:`ValidationError` naming the field; nothing is
        written then."""
        return await self.short_term.write(self._user(user_id), session_id, key, value, memory_type=memory_type,
                                           ttl_seconds=ttl_seconds, agent_id=self._writer(agent_id), now=now)

    async def read_short_term(self, session_id: str, key: str, user_id: str | None = None, *,
                              now: datetime | None = None) -> ShortTermEntry | None:
        """The short-term entry, counting the read (access count + 1, last access); ``None`` when absent or
        expired."""
        return await self.short_term.read(self._user(user_id), session_id, key, now=now, reader=self.agent_id)

    async def touch_short_term(self, session_id: str, key: str, user_id: str | None = None, *,
                               now: datetime | None = None) -> int | None:
        """Count one use of a short-term entry without reading it; its access count after that, or ``None`` when
        absent or expired."""
        return await self.short_term.touch(self._user(user_id), session_id, key, now=now, reader=self.agent_id)

    async def refresh_short_term_ttl(self, session_id: str, key: str, ttl_seconds: int | None = None,
                                     user_id: str | None = None, *,
                                     now: datetime | None = None) -> ShortTermEntry | None:
        """Let a live short-term entry expire ``ttl_seconds`` (default: its own TTL) from ``now``; ``None`` when
        absent or already expired."""
        return await self.short_term.refresh_ttl(self._user(user_id), session_id, key, ttl_seconds, now=now,
                                                 reader=self.agent_id)

    async def delete_short_term(self, session_id: str, key: str, user_id: str | None = None, *,
                                now: datetime | None = None) -> bool:
        """Remove a short-term entry; True when a live one was there."""
        return await self.short_term.delete(self._user(user_id), session_id, key, now=now, reader=self.agent_id)

    async def list_short_term(self, session_id: str, user_id: str | None = None, *,
                              now: datetime | None = None) -> list[ShortTermEntry]:
        """The live short-term entries of the user's session, by key (reads are not counted)."""
        return await self.short_term.list_entries(self._user(user_id), session_id, now=now, reader=self.agent_id)

    async def short_term_statistics(self, session_id: str | None = None, user_id: str | None = None, *,
                                    now: datetime | None = None) -> dict[str, Any]:
        """The short-term tier of one session (or all the user's): ``entries`` (live), ``expired`` (waiting for the
        ``short_term`` job), ``by_type``, ``mean_access_count`` and ``bytes``."""
        return await self.short_term.statistics(self._user(user_id), session_id, now=now, reader=self.agent_id)

    async def consolidate_short_term(self, *, now: datetime | None = None, dry_run: bool = False,
                                     user_id: str | None = None) -> ShortTermReport:
        """Consolidate the short-term tier (of every user, or only ``user_id``) as of ``now``: entries read at least
        ``short_term.promote_access_count`` (3) times become long-term facts (recallable by :meth:`remember`) and
        leave the tier; expired entries read less are dropped (:mod:`agentx_memory.short_term_consolidation`).
        The worker's ``short_term`` job: a recorded run that :meth:`undo_run` reverses; ``dry_run`` lists what
        would be promoted and dropped."""
        when = now or datetime.now(UTC)
        return await self._run_job("short_term", ShortTermReport(dry_run=dry_run), user_id, lambda report:
                                   consolidate_short_term(self.semantic, now=when, user_id=user_id, report=report))

    def tiers(self, session_id: str, user_id: str | None = None, *, conversation_id: str | None = None,
              agent_id: str | None = None, channel: str = GLOBAL_CHANNEL) -> MemoryRouter:
        """The tier router of one user's session (:mod:`agentx_memory.router`): ``read(key, tier=None)`` (working
        memory of ``conversation_id`` — default: the session id — then short-term, then long-term),
        ``write(key, value, tier=...)`` and ``stats()`` across the tiers."""
        check_id(session_id, "session_id", max_len=200)
        agent_id = self._writer(agent_id)
        working = self.working(user_id, session_id if conversation_id is None else conversation_id, channel)
        return MemoryRouter(working=working, short_term=self.short_term, semantic=self.semantic,
                            session_id=session_id, agent_id=agent_id)

    def context_window(self, max_tokens: int = 4096, *, strategy: PruneStrategy | str = PruneStrategy.FIFO,
                       keep_recent: int = 10, goal: str | None = None) -> ContextWindow:
        """A context window (spec 004's short-term memory) of ``max_tokens``, pruned with ``strategy`` (``fifo``,
        ``summarize``: by ``llm.query_model`` when set, extractive otherwise; ``semantic``: what is closest to
        ``goal``, with this memory's embedder). It lives in the process (:mod:`agentx_memory.context_window`)."""
        return ContextWindow(max_tokens, strategy=strategy, keep_recent=keep_recent, goal=goal,
                             embedder=self.ctx.embedder, llm=self.recall.llm)

    async def get_profile(self, user_id: str | None = None) -> UserProfile:
        """The user's profile (empty when nothing was stored)."""
        return await self.profiles.get_profile(self._user(user_id))

    async def update_profile(self, user_id: str | None = None, *, preferences: dict[str, Any] | None = None,
                             expertise_areas: list[Any] | None = None,
                             communication_style: dict[str, Any] | None = None,
                             metadata: dict[str, Any] | None = None) -> UserProfile:
        """Merge into the user's profile (dicts key by key, expertise areas as a set)."""
        return await self.profiles.update_profile(self._user(user_id), preferences=preferences,
                                                  expertise_areas=expertise_areas,
                                                  communication_style=communication_style, metadata=metadata)

    async def set_preference(self, key: str, value: Any, user_id: str | None = None) -> None:
        """Set one of the user's preferences (any JSON value; spec 004's PreferenceStore on the profile). Recall
        shows preferences in the prompt block's profile section."""
        await self.profiles.set_preference(self._user(user_id), key, value)

    async def get_preference(self, key: str, user_id: str | None = None) -> Any:
        """One of the user's preferences, or None when it is not set."""
        return await self.profiles.get_preference(self._user(user_id), key)

    async def get_all_preferences(self, user_id: str | None = None) -> dict[str, Any]:
        """Every preference of the user."""
        return await self.profiles.get_all_preferences(self._user(user_id))

    async def delete_preference(self, key: str, user_id: str | None = None) -> bool:
        """Remove one of the user's preferences; True when it was set."""
        return await self.profiles.delete_preference(self._user(user_id), key)

    # --- goals from agent plans, and the timeline (issue 19) ----------------------------------------------------

    async def goals_from_plan(self, plan_steps: Sequence[str | Mapping[str, Any]], *,
                              parent_description: str | None = None, channel: str | None = None,
                              user_id: str | None = None, ordered: bool = True) -> list[Goal]:
        """Store an agent's plan as goals: a parent goal and one sub-goal per step (SUBGOAL_OF it; when ``ordered``,
        each BLOCKED_BY the step before). A step is a description or a mapping with ``description`` and optionally
        ``id``, ``priority``, ``deadline``, ``metadata``. Returns ``[parent, *steps]`` (see ``docs/goals.md``)."""
        return await self.goals.goals_from_plan(plan_steps, user_id=self._user(user_id),
                                                parent_description=parent_description, channel=channel,
                                                ordered=ordered)

    async def complete_goals_from_run(self, goal_ids_or_results: Mapping[str, str | Mapping[str, Any] | None], *,
                                      status: str = "completed", user_id: str | None = None) -> list[Goal]:
        """Set goals from a run's results: goal id → result text (or None), each taking ``status``, or goal id →
        ``{"status": "abandoned" | "blocked" | ..., "result": ...}`` for a step of its own status. A plan goal whose
        steps are then all completed is completed too. Returns the goals set (see ``docs/goals.md``)."""
        return await self.goals.complete_goals_from_run(goal_ids_or_results, user_id=self._user(user_id),
                                                        status=status)

    async def timeline(self, user_id: str | None = None, *, since: datetime | None = None,
                       until: datetime | None = None, memory_types: Sequence[str] | None = None,
                       channels: Sequence[str] | None = None, include_archived: bool = False,
                       limit: int = 100) -> list[dict[str, Any]]:
        """The user's ``memory_timeline``, newest first: every memory (turn, fact, entity, goal) with
        ``since <= event_time < until`` (None: unbounded), at most ``limit`` (1 to 10,000), optionally only some
        memory types (episodic, fact, entity, goal) and channels (None: all). Each entry: ``memory_type``,
        ``node_id``, ``channel``, ``event_time``, ``summary``, ``importance``, ``access_count`` and
        ``last_accessed`` (how often and when recall last returned it), ``archived``, ``has_embedding``,
        ``metadata``, ``agent_id``, ``scope``. Turns of archived conversations are left out unless
        ``include_archived``."""
        if since is not None:
            check_datetime(since, "since")
        if until is not None:
            check_datetime(until, "until")
        if memory_types is not None:
            if isinstance(memory_types, str):
                raise ValidationError("memory_types", "must be a list of memory types, not one string")
            for kind in memory_types:
                if kind not in CONFLICT_POLICY:
                    raise ValidationError("memory_types", f"{kind!r} is not one of {', '.join(CONFLICT_POLICY)}")
        if channels is not None:
            if isinstance(channels, str):
                raise ValidationError("channels", "must be a list of channels, not one string")
            for channel in channels:
                check_channel(channel, "channels")
        check_int(limit, "limit", low=1, high=10_000)
        return await self.ctx.sql.timeline.entries(
            self._user(user_id), since=since, until=until, memory_types=memory_types, channels=channels,
            include_archived=bool(include_archived), limit=limit, agent_id=self.agent_id)

    # --- namespaced items: a document store per user, the LangGraph store's engine (issue 18; agentx_memory.items)
    # An agent's view writes as that agent and reads its own items and the user's, never another agent's.

    async def put_item(self, namespace: Sequence[str], key: str, value: Mapping[str, Any], *,
                       text: str | None = None, ttl_minutes: float | None = None, channel: str | None = None,
                       agent_id: str | None = None, user_id: str | None = None,
                       now: datetime | None = None) -> StoredItem:
        """Store a JSON object under ``key`` of a ``namespace`` path (a tuple of labels, possibly empty) of the
        user, replacing the item there; with ``text``, the engine's embedder makes it searchable by meaning
        (:meth:`search_items`). It expires ``ttl_minutes`` after its last write or refreshing read (None: never);
        ``agent_id`` is the agent it belongs to (default: this view's; None: the user's), ``channel`` what it is
        filed under (default ``_global``). Items are durable rows, not facts: no decay, dedup or retention touches
        them. Overwriting another agent's item raises :class:`~agentx_memory.errors.ConflictError`; bad input a
        :class:`~agentx_memory.errors.ValidationError` naming the field. Returns the item as stored."""
        return await self.items.put(self._user(user_id), namespace, key, value, text=text, ttl_minutes=ttl_minutes,
                                    channel=channel, agent_id=self._writer(agent_id), writer=self.agent_id, now=now)

    async def get_item(self, namespace: Sequence[str], key: str, *, refresh_ttl: bool = True,
                       user_id: str | None = None, now: datetime | None = None) -> StoredItem | None:
        """The user's live item under ``key`` of ``namespace`` (its TTL started again when ``refresh_ttl``), or
        None."""
        return await self.items.get(self._user(user_id), namespace, key, refresh_ttl=refresh_ttl,
                                    reader=self.agent_id, now=now)

    async def delete_item(self, namespace: Sequence[str], key: str, *, user_id: str | None = None,
                          now: datetime | None = None) -> bool:
        """Remove the user's item under ``key`` of ``namespace``; True when a live one was there."""
        return await self.items.delete(self._user(user_id), namespace, key, reader=self.agent_id, now=now)

    async def search_items(self, namespace_prefix: Sequence[str] = (), *, query: str | None = None,
                           filter: Mapping[str, Any] | None = None, limit: int = 10, offset: int = 0,
                           refresh_ttl: bool = True, user_id: str | None = None,
                           now: datetime | None = None) -> list[StoredItem]:
        """One page (``limit`` from ``offset``) of the user's live items whose namespace starts with
        ``namespace_prefix`` and whose value passes ``filter`` (``{"field": value}``, ``{"field": {"$gte": 3}}``
        with ``$eq $ne $gt $gte $lt $lte``, nested objects key by key). With ``query`` they are ranked by meaning
        (cosine similarity of the engine's vectors, in ``score``; items without text come last), else newest
        first. Returned items' TTLs start again when ``refresh_ttl``."""
        return await self.items.search(self._user(user_id), namespace_prefix, query=query, filter=filter,
                                       limit=limit, offset=offset, refresh_ttl=refresh_ttl, reader=self.agent_id,
                                       now=now)

    async def list_item_namespaces(self, prefix: Sequence[str | None] = (), *, max_depth: int | None = None,
                                   limit: int = 100, offset: int = 0, user_id: str | None = None,
                                   now: datetime | None = None) -> list[tuple[str, ...]]:
        """The user's distinct namespaces holding live items that start with ``prefix`` (a None label matches any
        label), cut to ``max_depth`` labels, sorted, ``limit`` of them from ``offset``."""
        return await self.items.namespaces(self._user(user_id), prefix, max_depth=max_depth, limit=limit,
                                           offset=offset, reader=self.agent_id, now=now)

    # --- context-rot archival (issue 19, seed 002; agentx_memory.context_rot) -----------------------------------

    async def archive_stale(self, *, now: datetime | None = None, dry_run: bool = False,
                            user_id: str | None = None) -> ContextRotReport:
        """Archive the facts and entities (of every user, or only ``user_id``) whose staleness as of ``now`` reaches
        ``context_rot.threshold`` (0.9): staleness grows with idle time and fades slower for memories used often
        or salient (:mod:`agentx_memory.context_rot` gives the formula). Archived memories leave recall and stay
        readable; ``timeline(include_archived=True)`` lists them, :meth:`unarchive` or :meth:`undo_run` brings them
        back. The worker's daily ``context_rot`` job (a recorded run); ``dry_run`` lists what would be archived, with
        each one's staleness."""
        when = now or datetime.now(UTC)
        return await self._run_job("context_rot", ContextRotReport(dry_run=dry_run), user_id, lambda report:
                                   archive_stale(self.ctx.graph, self.ctx.sql.timeline, self.ctx.audit,
                                                 self.settings.context_rot, now=when, user_id=user_id,
                                                 report=report))

    async def unarchive(self, ids: Sequence[str], user_id: str | None = None) -> dict[str, int]:
        """Bring archived facts and entities of the user back into recall (archived by :meth:`archive_stale`):
        ``{"restored": n, "skipped": m}``; an id that is not an archived fact or entity of the user is skipped.
        Audited."""
        user = self._user(user_id)
        wanted = list(dict.fromkeys(check_ids(ids, "ids")))
        result = await unarchive_memories(self.ctx.graph, self.ctx.sql.timeline, user, wanted)
        await self.ctx.audit.log_write("unarchive", "semantic", None, wanted, {"restored": result["restored"]},
                                       user_id=user)
        return result

    # --- encryption of tool-call payloads (issue 19; agentx_memory.crypto, agentx_memory.tool_payloads) ---------

    async def get_tool_invocations(self, conversation_id: str, user_id: str | None = None, *,
                                   limit: int = 1000) -> list[ToolInvocation]:
        """The user's recorded tool calls of one conversation, in call order, with input, output and error message
        in plaintext: decrypted when they were stored encrypted (``security.encryption_key_id``), which raises
        :class:`~agentx_memory.errors.EncryptionKeyError` when the row's key is not configured or is another key."""
        return await self.procedural.invocations(self._user(user_id), conversation_id, limit=limit)

    async def reencrypt_tool_invocations(self, *, batch_size: int = 500) -> ReencryptReport:
        """Bring every stored tool-call payload (of every user) to the active key, ``security.encryption_key_id``:
        rows sealed with an older key are sealed again, plaintext rows are sealed; with encryption off, sealed rows
        become plaintext. Run it after a key rotation, then the old key can leave ``security.encryption_keys``
        (docs/encryption.md). Audited."""
        report = await reencrypt(self.ctx.sql.tools, ColumnCipher(self.settings.security),
                                 batch_size=check_int(batch_size, "batch_size", low=1, high=100_000))
        await self.ctx.audit.log_write("reencrypt", "procedural", None, [], {
            "key_id": report.key_id, "resealed": report.resealed, "skipped": report.skipped})
        return report

    # --- the system scope: rules for every user, written with the admin key (issue 19; agentx_memory.admin) -----

    def as_admin(self, admin_key: str | SecretStr) -> AsyncAgentMemory:
        """This memory as the installation's administrator: a view, on the same connections, that may write, change
        and delete system-scope rules (:meth:`add_system_control`, :meth:`delete_system_control`). The key must be
        ``security.admin_key`` (:class:`~agentx_memory.errors.AdminKeyError` otherwise, naming the field); it is
        checked here, in constant time, and again at each system write. Closing the view closes only the view.

        Why a view and not an ``admin_key=`` argument: the key is presented once, where the program obtains it, and
        never travels through the signatures of the write methods, so no call site, traceback or traced argument
        list (OpenTelemetry spans) carries it."""
        key = admin_key if isinstance(admin_key, SecretStr) else SecretStr(admin_key)
        check_admin_key(self.settings.security, key)
        view = copy.copy(self)
        view._admin_key = key
        view._closed = False
        view._parent = self
        return view

    @property
    def is_admin(self) -> bool:
        """True on a view of :meth:`as_admin` (whose key matched when it was made)."""
        return self._admin_key is not None

    async def add_system_control(self, content: str, *, severity: str = "medium", error_pattern: str | None = None,
                                 control_id: str | None = None, metadata: Mapping[str, Any] | None = None,
                                 source_trajectory_id: str | None = None) -> ControlMemory:
        """Store a rule that holds for every user of the installation (scope ``system``), or change it when
        ``control_id`` is stored already; admin views only (:meth:`as_admin`), audited without a user. Every user's
        recall, ``list_controls``, ``find_controls`` and ``get_control`` read it; no user's ``delete_control``,
        ``forget``, ``forget_user``, export or snapshot touches it. Returns it as stored (its ``user_id`` is
        ``agentx_memory.admin.SYSTEM_USER_ID``, which no user id can be)."""
        check_admin_key(self.settings.security, self._admin_key)
        extra: dict[str, Any] = {} if control_id is None else {"id": control_id}
        return await self.controls.add_system(ControlMemory(
            user_id=SYSTEM_USER_ID, content=content, severity=severity, error_pattern=error_pattern,
            metadata=dict(metadata or {}), source_trajectory_id=source_trajectory_id, scope=SYSTEM_SCOPE, **extra))

    async def delete_system_control(self, control_id: str) -> bool:
        """Delete a system rule; True when it existed. Admin views only (:meth:`as_admin`); audited."""
        check_admin_key(self.settings.security, self._admin_key)
        return await self.controls.delete_system(control_id)

    async def list_system_controls(self, *, error_pattern: str | None = None, limit: int = 100) -> list[ControlMemory]:
        """The system rules (they hold for every user), newest first; any memory may read them."""
        return await self.controls.list_system(error_pattern=error_pattern, limit=limit)

    # --- browsing one user's memory, read-only (the memory explorer page; agentx_memory.browse) ---------------------

    async def list_users(self, *, after: str | None = None, limit: int = 100) -> list[str]:
        """Ids of the users that have memory (turns or timeline entries: facts, entities, goals), in order, the
        first ``limit`` (1 to 500) after ``after`` (the last id of the previous page). Every user's: a service
        offers this to an administrator only."""
        return await self.browser.users(after=after, limit=limit)

    async def memory_overview(self, user_id: str | None = None) -> dict[str, int]:
        """How much memory the user has: ``conversations``, ``turns`` (those this memory may read),
        ``tool_invocations``, ``entities``, ``facts``, ``active_facts``, ``goals``, ``strategies``, ``controls``."""
        return await self.browser.overview(self._user(user_id), agent_id=self.agent_id)

    async def list_conversations(self, user_id: str | None = None, *, limit: int = 50,
                                 offset: int = 0) -> list[ConversationInfo]:
        """The user's conversations, the latest first: id, channel, turn count, first and last turn time, archived;
        ``limit`` (1 to 500) of them from ``offset`` (up to 100,000)."""
        return await self.browser.conversations(self._user(user_id), limit=limit, offset=offset,
                                                agent_id=self.agent_id)

    async def conversation_turns(self, conversation_id: str, user_id: str | None = None, *, from_index: int = 0,
                                 limit: int = 50) -> list[Turn]:
        """A page of one of the user's conversations: up to ``limit`` (1 to 500) turns with an index from
        ``from_index`` on, in order (the next page starts after the last turn's ``index``)."""
        return await self.browser.conversation_page(conversation_id, self._user(user_id), from_index=from_index,
                                                    limit=limit, agent_id=self.agent_id)

    async def get_turns(self, turn_ids: Sequence[str], user_id: str | None = None) -> list[Turn]:
        """The user's turns with these ids (at most 500), by conversation and index; unknown ids are left out."""
        return await self.browser.turns(turn_ids, self._user(user_id), agent_id=self.agent_id)

    async def list_entities(self, user_id: str | None = None, *, limit: int = 50, offset: int = 0) -> list[Entity]:
        """A page of the user's entities, the most salient first: ``limit`` (1 to 500) from ``offset``."""
        return await self.browser.entities(self._user(user_id), limit=limit, offset=offset)

    async def entity_map(self, user_id: str | None = None, *, limit: int = 50) -> EntityGraph:
        """The user's ``limit`` (1 to 500) most salient entities and the relationships among them, without facts
        (:meth:`get_entity_graph` gives one entity's neighbourhood with its facts)."""
        return await self.browser.entity_map(self._user(user_id), limit=limit)

    async def list_facts(self, user_id: str | None = None, *, status: str | None = None, limit: int = 50,
                         offset: int = 0) -> list[FactRecord]:
        """A page of the user's facts of every status (superseded, rejected, expired ... too) or of ``status``,
        the newest first, each with its provenance: the turns it was derived from and the facts it superseded."""
        return await self.browser.facts(self._user(user_id), status=status, limit=limit, offset=offset,
                                        agent_id=self.agent_id)

    async def fact_record(self, fact_id: str, user_id: str | None = None) -> FactRecord:
        """One of the user's facts, of any status, with its provenance (see :meth:`list_facts`)."""
        return await self.browser.fact(fact_id, self._user(user_id), agent_id=self.agent_id)

    async def goal_tree(self, user_id: str | None = None, *, limit: int = 500) -> list[Goal]:
        """The user's goals in every channel and of every status, oldest first, at most ``limit`` (1 to 10,000);
        ``parent_id`` and ``blocked_by`` make the tree."""
        return await self.browser.goals(self._user(user_id), limit=limit)

    async def audit_trail(self, user_id: str | None = None, *, operation: str | None = None,
                          before: datetime | None = None, before_id: int | None = None,
                          limit: int = 50) -> list[dict[str, Any]]:
        """The user's audit entries, newest first, optionally only of one ``operation`` (``store``, ``retrieve``,
        ...): ``limit`` (1 to 500) of them older than the entry (``before``, ``before_id``), the last one of the
        previous page. Each: ``id``, ``timestamp``, ``operation``, ``memory_type``, ``session_id``,
        ``conversation_id``, ``source_channel``, ``target_channels``, ``query_text``, ``result_count``,
        ``latency_ms``, ``success``, ``error_message``, ``affected_ids``, ``result_ids``. The user's memory reads it,
        not an agent's view: the entries hold every agent's queries and results (:class:`PermissionDeniedError`)."""
        self._whole_user("read", "the audit trail of user", user_id)
        return await self.browser.audit_trail(self._user(user_id), operation=operation, before=before,
                                              before_id=before_id, limit=limit)

    async def audit_operations(self, user_id: str | None = None, *, days: int = 30) -> list[str]:
        """The operations of the user's audit entries of the last ``days`` days, in order (the user's memory only, as
        :meth:`audit_trail`)."""
        self._whole_user("read", "the audit trail of user", user_id)
        return await self.browser.audit_operations(self._user(user_id), days=days)

    # --- the REST service: API keys, per-caller rate limits, store health, audit reads (issue 18) ----------------

    async def create_api_key(self, user_id: str, *, agent_id: str | None = None, channels: Sequence[str] = (),
                             name: str = "") -> NewApiKey:
        """Make an API key of the REST service for ``user_id``, acting as ``agent_id`` (None: the user) and limited
        to ``channels`` (empty: every channel). Only its hash is stored: the returned ``token`` cannot be shown
        again (:mod:`agentx_memory.api_keys`)."""
        return await ApiKeyStore(self.ctx.postgres).create(user_id, agent_id=agent_id, channels=channels, name=name)

    async def resolve_api_key(self, token: str) -> ApiKey | None:
        """The live API key ``token`` is, or None (malformed, unknown, revoked, wrong secret); compared in constant
        time."""
        return await ApiKeyStore(self.ctx.postgres).resolve(token)

    async def revoke_api_key(self, key_id: str) -> bool:
        """Revoke an API key (requests with it are refused from now on); True when it was live."""
        return await ApiKeyStore(self.ctx.postgres).revoke(key_id)

    async def list_api_keys(self, user_id: str | None = None, *, include_revoked: bool = False,
                            limit: int = 1000) -> list[ApiKey]:
        """The API keys of ``user_id`` (None: of every user), oldest first, without their tokens."""
        return await ApiKeyStore(self.ctx.postgres).list(user_id, include_revoked=include_revoked, limit=limit)

    async def hit_rate_limit(self, operation: str, *, caller: str, limit: int, window_seconds: float,
                             user_id: str | None = None) -> None:
        """Count one ``operation`` call of ``caller`` (an API key id) of the user against ``limit`` calls per
        sliding ``window_seconds``, in Redis across processes; past it raise
        :class:`~agentx_memory.errors.RateLimitedError` (429, ``retry_after`` seconds)."""
        await hit_rate_limit(self.ctx, operation, user_id=self._user(user_id), caller=caller,
                             agent_id=self.agent_id, limit=limit, window_seconds=window_seconds)

    async def store_health(self, *, timeout: float = 2.0) -> dict[str, dict[str, Any]]:
        """Probe graph, PostgreSQL and Redis concurrently: ``{store: {"status": "up" | "down", "latency_ms": ...,
        "error": <class name when down>}}``; a store that does not answer in ``timeout`` seconds is down."""
        return await store_health(self.ctx, timeout=timeout)

    async def audit_entries(self, user_id: str | None = None, *, since: datetime | None = None,
                            until: datetime | None = None, operation: str | None = None,
                            memory_type: str | None = None, session_id: str | None = None,
                            conversation_id: str | None = None, reads: bool | None = None,
                            limit: int = 100) -> list[dict[str, Any]]:
        """The user's audit trail (docs/audit-queries.md), newest first, in ``[since, until)``, optionally of one
        ``operation``, ``memory_type``, ``session_id`` or ``conversation_id``; ``reads`` True keeps only reads (the
        entries with a query), False only writes."""
        return await audit_entries(self.ctx, self._user(user_id), since=since, until=until, operation=operation,
                                   memory_type=memory_type, session_id=session_id, conversation_id=conversation_id,
                                   reads=reads, limit=limit)

    # --- maintenance --------------------------------------------------------------------------------------------

    async def maintain_audit_partitions(self) -> dict[str, int]:
        """Keep the audit log's day partitions in shape: create those for today and the next
        ``audit.partitions_ahead_days`` days, drop those older than ``retention.audit_days``.

        Returns ``{"created": n, "dropped": m}``. Idempotent: the worker runs it every
        ``worker.audit_partitions_minutes`` (``agentx-memory worker``); call it yourself where no worker runs.
        """
        created, dropped = await self.ctx.audit.maintain_partitions(
            ahead_days=self.settings.audit.partitions_ahead_days, retention_days=self.settings.retention.audit_days)
        return {"created": created, "dropped": dropped}

    async def compact_vector_indexes(self, *, dry_run: bool = False, wait_seconds: float = 0.0
                                     ) -> dict[str, dict[str, Any]]:
        """Rebuild the graph's vector indexes whose share of dead vectors (kept by FalkorDB for nodes since updated
        or deleted) has reached ``worker.compact_dead_share`` and that hold ``worker.compact_min_dead`` dead vectors
        or more; ``dry_run`` only reports. Returns, per label, its ``live`` and ``entries`` counts, ``dead_share``,
        ``building`` and ``rebuilt`` (:func:`~agentx_memory.index_compaction.compact_vector_indexes`). The worker
        runs it every ``worker.compact_indexes_minutes``; on Neo4j there is nothing to compact and it returns ``{}``.
        The database rebuilds in the background (searches scan meanwhile); ``wait_seconds`` > 0 returns only once no
        vector index is being built, and raises :class:`~agentx_memory.polling.WaitTimeoutError` after that long."""
        check_wait_seconds(wait_seconds)  # before any rebuild starts
        worker = self.settings.worker
        report = await compact_vector_indexes(self.ctx.graph, min_dead_share=worker.compact_dead_share,
                                              min_dead=worker.compact_min_dead, dry_run=dry_run)
        if wait_seconds:
            await wait_for_vector_indexes(self.ctx.graph, timeout=wait_seconds)
        return report

    # --- observability: the size of the stores and the consolidation backlog (issue 18) -------------------------

    async def memory_stats(self) -> MemoryStats:
        """How big the memory is and how far consolidation lags, for every user (spec 003's monitoring list): graph
        nodes per label and relationships per type, PostgreSQL live rows per table, the Redis server's memory, and
        the conversations not consolidated yet with the last turn of the one that has waited longest
        (``consolidation_lag_seconds``). Cheap: counts come from the databases' own counters, only the
        conversations are scanned (:mod:`agentx_memory.stats`). The ``observability`` metrics publish it as gauges."""
        return await gather_stats(self.ctx)


class _Portal:
    """A private event loop in a daemon thread; runs coroutines for synchronous callers, each within the deadline."""

    def __init__(self) -> None:
        #: Seconds a call may take (``limits.call_timeout_seconds``, set once the memory is open); None: no limit.
        self.deadline: float | None = None
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="agentx-memory-portal", daemon=True)
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the portal's loop and block until it finishes; its result or exception comes back.
        Raises :class:`~agentx_memory.errors.ClosedError` once the memory (and so the portal) is closed."""
        if self.loop.is_closed():
            coro.close()
            raise ClosedError(_CLOSED_MESSAGE)
        if threading.current_thread() is self._thread:
            coro.close()
            raise RuntimeError(
                "a synchronous AgentMemory method was called from its own event loop; use AsyncAgentMemory")
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return future.result(timeout=self.deadline)
        except TimeoutError:
            if future.done():  # the call itself raised a TimeoutError: not the deadline
                raise
            future.cancel()  # the task is cancelled on the loop: its transaction rolls back, its connection returns
            raise CallTimeoutError(
                f"the call did not finish within {self.deadline:g} s (setting limits.call_timeout_seconds) and was "
                "cancelled: a store did not answer in time"
            ) from None

    def stop(self) -> None:
        """Stop the loop, join its thread and close the loop."""
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=5)
        self.loop.close()


class SyncContextWindow:
    """A context window with blocking methods: the twin of :class:`~agentx_memory.context_window.ContextWindow` that
    :meth:`AgentMemory.context_window` returns."""

    def __init__(self, core: ContextWindow, portal: _Portal):
        self._core = core
        self._portal = portal

    @property
    def core(self) -> ContextWindow:
        """The async window this view drives."""
        return self._core

    @property
    def messages(self) -> list[ContextMessage]:
        """The messages, oldest first (a copy)."""
        return self._core.messages

    def set_goal(self, goal: str | None) -> None:
        """The current goal the ``semantic`` strategy keeps messages relevant to."""
        self._core.set_goal(goal)

    def get_context(self, max_tokens: int | None = None) -> list[dict[str, str]]:
        """The newest messages that fit ``max_tokens`` (default: the window's), oldest first."""
        return self._core.get_context(max_tokens)

    def get_token_count(self) -> int:
        """The tokens of every message."""
        return self._core.get_token_count()

    def is_full(self) -> bool:
        """Whether the window holds ``max_tokens`` or more."""
        return self._core.is_full()

    def clear(self) -> None:
        """Drop every message."""
        self._core.clear()

    # BEGIN GENERATED from ContextWindow by scripts/gen_sync_facade.py: do not edit, rerun the script

    def add_message(self, role: str, content: str) -> ContextMessage:
        """Append a message; when the window is then over ``max_tokens``, prune it with its strategy."""
        return self._portal.run(self._core.add_message(role, content))

    def prune(self, strategy: PruneStrategy | str | None = None) -> int:
        """Make the window fit ``max_tokens`` with ``strategy`` (default: the window's); return the tokens freed."""
        return self._portal.run(self._core.prune(strategy))
    # END GENERATED from ContextWindow


class SyncWorkingMemory:
    """One session's working memory with blocking methods: the twin of
    :class:`~agentx_memory.working.WorkingMemory` that :meth:`AgentMemory.working` returns.

    >>> wm = memory.working("alice", "trip-1")   # doctest: +SKIP
    >>> wm.set("topic", "travel"); wm.get("topic")   # doctest: +SKIP
    'travel'
    """

    def __init__(self, core: WorkingMemory, portal: _Portal):
        self._core = core
        self._portal = portal

    @property
    def core(self) -> WorkingMemory:
        """The async working memory this view drives."""
        return self._core

    @property
    def user_id(self) -> str:
        """The session's user."""
        return self._core.user_id

    @property
    def conversation_id(self) -> str:
        """The session's conversation."""
        return self._core.conversation_id

    @property
    def channel(self) -> str:
        """The session's channel."""
        return self._core.channel

    # BEGIN GENERATED from WorkingMemory by scripts/gen_sync_facade.py: do not edit, rerun the script

    def add_turn(self, turn: Turn | Mapping[str, Any]) -> None:
        """Cache a turn (a :class:`~agentx_memory.models.Turn` or a dict) at the head of the recent-turns list."""
        self._portal.run(self._core.add_turn(turn))

    def add_turns(self, turns: Sequence[Turn | Mapping[str, Any]]) -> None:
        """Cache turns in order, the last at the head of the recent-turns list, in one round trip; nothing is cached
        when any of them is refused (not a turn, or over ``working.max_value_bytes``)."""
        self._portal.run(self._core.add_turns(turns))

    def get_recent_turns(self, limit: int = 10) -> list[dict[str, Any]]:
        """The most recent cached turns, oldest first."""
        return self._portal.run(self._core.get_recent_turns(limit))

    def set(self, key: str, value: Any, ttl_seconds: int | None = None) -> None:
        """Set a context value; it expires after ``ttl_seconds`` (default working.ttl_seconds).

        ``ttl_seconds`` is a whole number from 1 to :data:`MAX_TTL_SECONDS`; anything else (0 included) raises
        :class:`~agentx_memory.errors.ValidationError` before anything is written. The value and its expiry are
        written in one MULTI/EXEC transaction.
        """
        self._portal.run(self._core.set(key, value, ttl_seconds))

    def get(self, key: str) -> Any:
        """A context value, or None when absent or expired."""
        return self._portal.run(self._core.get(key))

    def delete(self, key: str) -> bool:
        """Delete a context value; True if it existed."""
        return self._portal.run(self._core.delete(key))

    def set_active_goal(self, goal_id: str, goal_description: str) -> None:
        """Remember the goal the agent is working on in this session."""
        self._portal.run(self._core.set_active_goal(goal_id, goal_description))

    def get_active_goal(self) -> dict[str, Any] | None:
        """The active goal ``{goal_id, description, set_at}``, or None."""
        return self._portal.run(self._core.get_active_goal())

    def push_thought(self, thought: str | dict[str, Any]) -> None:
        """Append a thought (reasoning scratchpad entry)."""
        self._portal.run(self._core.push_thought(thought))

    def get_thoughts(self, limit: int = 10) -> list[dict[str, Any]]:
        """The most recent thoughts, oldest first."""
        return self._portal.run(self._core.get_thoughts(limit))

    def get_context(self) -> dict[str, Any]:
        """Everything in this session: context values, recent turns, active goal and recent thoughts."""
        return self._portal.run(self._core.get_context())

    def clear_session(self) -> int:
        """Delete every key of this session (the conversation hash and the ledger too); return how many existed."""
        return self._portal.run(self._core.clear_session())

    def persist(self) -> dict[str, Any]:
        """Save this session's whole working memory to PostgreSQL (seed 002's ``persist_to_database``): every key
        of it -- the recent turns, the context values with each one's expiry, the active goal, the thoughts, the
        conversation's working memory (spec 000's hash) and the injection ledger -- with the time each had left to
        live. The save replaces the session's previous one (one per user, channel and conversation); Redis is not
        changed. Returns ``{"user_id", "channel", "conversation_id", "saved_at", "keys"}`` (``keys``: the
        suffixes saved, e.g. ``["turns", "context"]``)."""
        return self._portal.run(self._core.persist())

    def load(self) -> dict[str, Any] | None:
        """Restore this session's working memory from its last :meth:`persist` (seed 002's ``load_from_database``),
        replacing what Redis holds for it: every key of the session is deleted and the saved ones written back, in
        one MULTI/EXEC. Each key (and each context value) gets again the time it had left to live when saved,
        counted from now; the turn and thought lists are cut to ``working.max_turns`` / ``working.max_thoughts``.

        A saved conversation hash larger than ``working.conversation_max_bytes`` (a cap lowered since the save)
        raises :class:`~agentx_memory.errors.WorkingMemoryFullError` (413) and nothing is written. Only this user's
        save of this channel and conversation is ever read. Returns None when there is no save (Redis untouched),
        else ``{"user_id", "channel", "conversation_id", "saved_at", "restored"}`` with ``restored`` mapping each
        key restored to the number of items (list entries or hash fields; 1 for the goal)."""
        return self._portal.run(self._core.load())

    def persist_to_database(self) -> dict[str, Any]:
        """Seed 002's name for :meth:`persist`."""
        return self._portal.run(self._core.persist_to_database())

    def load_from_database(self) -> dict[str, Any] | None:
        """Seed 002's name for :meth:`load`."""
        return self._portal.run(self._core.load_from_database())

    def set_fields(self, data: Mapping[str, Any]) -> int:
        """Merge ``data`` (field → any JSON value) into the conversation's working memory, all fields or none;
        return its size in bytes after the write. Field names follow the id rule; existing fields not in ``data``
        stay. A write that would take the hash past ``working.conversation_max_bytes`` (64 KB; field names and
        stored JSON, UTF-8) raises :class:`~agentx_memory.errors.WorkingMemoryFullError` (413) and stores nothing.
        The expiry (``working.conversation_ttl_seconds``) is refreshed."""
        return self._portal.run(self._core.set_fields(data))

    def get_fields(self) -> dict[str, Any]:
        """Every field of the conversation's working memory (empty when none), refreshing its expiry."""
        return self._portal.run(self._core.get_fields())

    def get_field(self, name: str) -> Any:
        """One field of the conversation's working memory, or None; refreshes its expiry."""
        return self._portal.run(self._core.get_field(name))

    def delete_fields(self, names: Sequence[str] | None = None) -> int:
        """Delete these fields of the conversation's working memory, or all of it when ``names`` is None; return how
        many fields (or, for all of it, hashes) went."""
        return self._portal.run(self._core.delete_fields(names))

    def memory_size(self) -> int:
        """The size in bytes of the conversation's working memory, as the cap counts it."""
        return self._portal.run(self._core.memory_size())

    def set_scratchpad(self, content: str) -> int:
        """Set the ``scratchpad`` field: free-form notes and intermediate results (spec 000)."""
        return self._portal.run(self._core.set_scratchpad(content))

    def get_scratchpad(self) -> str | None:
        """The ``scratchpad`` field, or None."""
        return self._portal.run(self._core.get_scratchpad())

    def set_entities(self, entities: Sequence[Mapping[str, Any]]) -> int:
        """Set the ``entities`` field: the entities of the conversation (``type``, ``id``, ``name`` each; spec 000)."""
        return self._portal.run(self._core.set_entities(entities))

    def get_entities(self) -> list[dict[str, Any]]:
        """The ``entities`` field (empty when unset)."""
        return self._portal.run(self._core.get_entities())

    def ledger_has(self, item_key: str) -> bool:
        """Whether ``item_key`` (e.g. ``fact:<id>``, ``skill:<id>``) was injected in this conversation."""
        return self._portal.run(self._core.ledger_has(item_key))

    def ledger_mark(self, item_key: str, value: str = "1") -> None:
        """Record that ``item_key`` was injected (``value``: a marker such as ``"injected"``)."""
        self._portal.run(self._core.ledger_mark(item_key, value))

    def ledger_mark_many(self, item_keys: Sequence[str], value: str = "1") -> None:
        """Record that each of ``item_keys`` was injected, in one write."""
        self._portal.run(self._core.ledger_mark_many(item_keys, value))

    def ledger_evict(self, item_key: str) -> bool:
        """Forget that ``item_key`` was injected (it may be injected again); True if it was in the ledger."""
        return self._portal.run(self._core.ledger_evict(item_key))

    def ledger_get(self) -> dict[str, str]:
        """Everything injected in this conversation: item key → marker; refreshes the ledger's expiry."""
        return self._portal.run(self._core.ledger_get())

    def working_state(self) -> WorkingState:
        """The conversation's scratchpad and entities (spec 000's hash fields, in one read that refreshes its
        expiry), as :meth:`MemoryBundle.to_prompt` shows them (``to_prompt(working=...)``). A field holding another
        type than the helpers write (a scratchpad that is not text, entities that are not a list of mappings) is
        left out."""
        return self._portal.run(self._core.working_state())

    def inject(self, bundle: MemoryBundle, max_tokens: int = 1500, *, include_working: bool = True) -> str:
        """The prompt block of ``bundle`` (:meth:`MemoryBundle.to_prompt`) without what this conversation's ledger
        says was injected already, and the items it shows marked as injected: across the turns of a conversation,
        no memory is put in the prompt twice. Empty when everything was injected before.

        With ``include_working`` (the default) the block also holds this conversation's working-memory state
        (:meth:`working_state`: scratchpad and entities, seed 000's context assembly), right after the rules; like a
        memory it is shown once, and again when it changes."""
        return self._portal.run(self._core.inject(bundle, max_tokens, include_working=include_working))
    # END GENERATED from WorkingMemory


class SyncMemoryRouter:
    """The tier router of one session with blocking methods: the twin of :class:`~agentx_memory.router.MemoryRouter`
    that :meth:`AgentMemory.tiers` returns."""

    def __init__(self, core: MemoryRouter, portal: _Portal):
        self._core = core
        self._portal = portal

    @property
    def core(self) -> MemoryRouter:
        """The async router this view drives."""
        return self._core

    @property
    def user_id(self) -> str:
        """The session's user."""
        return self._core.user_id

    @property
    def session_id(self) -> str:
        """The session."""
        return self._core.session_id

    # BEGIN GENERATED from MemoryRouter by scripts/gen_sync_facade.py: do not edit, rerun the script

    def read(self, key: str, tier: str | None = None) -> Any:
        """The value of ``key`` in ``tier``, or — without a tier — in the first tier that has it: working memory,
        then short-term, then long-term. ``None`` when no tier has it (a stored ``None`` reads the same)."""
        return self._portal.run(self._core.read(key, tier))

    def write(self, key: str, value: Any, tier: str = "working", *, memory_type: str = "task_context",
              ttl_seconds: int | None = None) -> None:
        """Store ``value`` under ``key`` in one tier: ``working`` (expiring after ``ttl_seconds``, default
        ``working.ttl_seconds``), ``short_term`` (an entry of ``memory_type``, default TTL
        ``short_term.default_ttl_seconds``) or ``long_term`` (a fact in the global channel, claim ``"key: value"``,
        the value and the session in its metadata, as a promotion makes it; ``ttl_seconds`` does not apply)."""
        self._portal.run(self._core.write(key, value, tier, memory_type=memory_type, ttl_seconds=ttl_seconds))

    def stats(self) -> dict[str, Any]:
        """Figures per tier: ``working_memory`` (``keys``: context values, ``recent_turns``, ``bytes``: the values
        as JSON plus the conversation hash), ``short_term`` (this session's
        :meth:`~agentx_memory.short_term.ShortTermStore.statistics`), ``long_term`` (the user's ``facts``,
        ``entities`` and ``turns`` in the graph) and ``shared`` (``pools`` and ``bytes`` of the user's live shared
        pools, or of those the router's agent may read)."""
        return self._portal.run(self._core.stats())
    # END GENERATED from MemoryRouter


class AgentMemory:
    """The synchronous API: the same methods as :class:`AsyncAgentMemory`, blocking.

    >>> with AgentMemory(user_id="alice") as memory:   # doctest: +SKIP
    ...     memory.store_turn(Turn(conversation_id="c1", user_id="alice", content="I live in Lisbon"))

    Opening, closing and :meth:`working` are written here; every other method is a generated twin of the
    ``AsyncAgentMemory`` coroutine of the same name (see the module docstring).
    """

    def __init__(self, settings: Settings | None = None, *, user_id: str | None = None,
                 embedder: Embedder | None = None, agent_id: str | None = None):
        self._portal = _Portal()
        self._view = False
        try:
            self._core = self._portal.run(AsyncAgentMemory.open(settings, user_id=user_id, embedder=embedder,
                                                                agent_id=agent_id))
        except BaseException:
            self._portal.stop()
            raise
        self._portal.deadline = self._core.settings.limits.call_timeout_seconds

    @classmethod
    def open(cls, settings: Settings | None = None, *, user_id: str | None = None,
             embedder: Embedder | None = None, agent_id: str | None = None) -> AgentMemory:
        """Open a memory (embedded default when ``settings`` configure no services)."""
        return cls(settings, user_id=user_id, embedder=embedder, agent_id=agent_id)

    def for_agent(self, agent_id: str) -> AgentMemory:
        """This memory acting as one agent of the user, on the same connections (see
        :meth:`AsyncAgentMemory.for_agent`). Closing the view closes only the view."""
        view = copy.copy(self)
        view._core = self._core.for_agent(agent_id)
        view._view = True
        return view

    def as_admin(self, admin_key: str | SecretStr) -> AgentMemory:
        """This memory as the installation's administrator, on the same connections (see
        :meth:`AsyncAgentMemory.as_admin`). Closing the view closes only the view."""
        view = copy.copy(self)
        view._core = self._core.as_admin(admin_key)
        view._view = True
        return view

    @property
    def is_admin(self) -> bool:
        """True on a view of :meth:`as_admin`."""
        return self._core.is_admin

    @property
    def agent_id(self) -> str | None:
        """The agent this memory acts as (None: the user)."""
        return self._core.agent_id

    @property
    def core(self) -> AsyncAgentMemory:
        """The async core this facade drives."""
        return self._core

    @property
    def settings(self) -> Settings:
        """The settings in use."""
        return self._core.settings

    def working(self, user_id: str | None, conversation_id: str, channel: str = GLOBAL_CHANNEL) -> SyncWorkingMemory:
        """The working memory of one session, with blocking methods."""
        return SyncWorkingMemory(self._core.working(user_id, conversation_id, channel), self._portal)

    def tiers(self, session_id: str, user_id: str | None = None, *, conversation_id: str | None = None,
              agent_id: str | None = None, channel: str = GLOBAL_CHANNEL) -> SyncMemoryRouter:
        """The tier router of one session, with blocking methods (see :meth:`AsyncAgentMemory.tiers`)."""
        return SyncMemoryRouter(self._core.tiers(session_id, user_id, conversation_id=conversation_id,
                                                 agent_id=agent_id, channel=channel), self._portal)

    def context_window(self, max_tokens: int = 4096, *, strategy: PruneStrategy | str = PruneStrategy.FIFO,
                       keep_recent: int = 10, goal: str | None = None) -> SyncContextWindow:
        """A context window with blocking methods (see :meth:`AsyncAgentMemory.context_window`)."""
        return SyncContextWindow(self._core.context_window(max_tokens, strategy=strategy, keep_recent=keep_recent,
                                                           goal=goal), self._portal)

    @property
    def closed(self) -> bool:
        """True once :meth:`close` was called: every other method then raises
        :class:`~agentx_memory.errors.ClosedError`."""
        return self._portal.loop.is_closed() or self._core.closed

    def close(self) -> None:
        """Close connections and stop the background loop (on a view of :meth:`for_agent`: only the view)."""
        if self._portal.loop.is_closed():
            return
        if self._view:
            self._portal.run(self._core.close())
            return
        try:
            self._portal.run(self._core.close())
        finally:
            self._portal.stop()

    def __enter__(self) -> AgentMemory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # BEGIN GENERATED from AsyncAgentMemory by scripts/gen_sync_facade.py: do not edit, rerun the script

    def store_turn(self, turn: Turn, channel: str | None = None) -> Turn:
        """Store one conversation turn: durable log, graph, working memory, timeline, audit. Returns it as stored."""
        return self._portal.run(self._core.store_turn(turn, channel))

    def store_turns(self, turns: Sequence[Turn], channel: str | None = None) -> list[Turn]:
        """Store many turns with one embedding batch and one transaction per store."""
        return self._portal.run(self._core.store_turns(turns, channel))

    def get_conversation(self, conversation_id: str, user_id: str | None = None) -> list[Turn]:
        """Every turn of one of the user's conversations, in order."""
        return self._portal.run(self._core.get_conversation(conversation_id, user_id))

    def get_recent_turns(self, user_id: str | None = None, channels: Sequence[str] | str | None = None,
                         hours: float = 24, limit: int = 50) -> list[Turn]:
        """The user's turns of the last ``hours`` in ``channels`` (always with ``_global``), newest first."""
        return self._portal.run(self._core.get_recent_turns(user_id, channels, hours, limit))

    def reconcile(self, *, full: bool = False) -> ReconcileResult:
        """Project every durable-log turn that the graph (or the timeline) is missing.

        A turn that cannot be projected is quarantined (why is recorded in its log row; later runs skip it) instead
        of blocking the others. Logged tool invocations the graph is missing are projected after the turns. The
        result says how many turns were projected, which were quarantined by this run, how many are in quarantine
        in all, and how many tool invocations were projected (``int(result)`` is the number of turns projected).

        A run projects what is queued: what a write could not project, and what a restore or the migrations queued.
        ``full`` first compares the whole log with the graph and queues every logged turn and tool invocation
        whose node is missing (after restoring the graph from a backup older than the log); it reads every log
        row, so it takes time in proportion to the log (``requeued`` and ``invocations_requeued`` say what it
        found)."""
        return self._portal.run(self._core.reconcile(full=full))

    def upsert_entity(self, entity: Entity, channel: str | None = None) -> Entity:
        """Create or merge an entity (by normalized name + type + user + channel); aliases are merged.

        The graph write is the write: an error means nothing was stored; once it succeeded the entity is returned
        even if PostgreSQL then fails (its timeline row / audit entry is missing and logged at WARNING)."""
        return self._portal.run(self._core.upsert_entity(entity, channel))

    def get_entity(self, entity_id: str, user_id: str | None = None) -> Entity:
        """One of the user's entities."""
        return self._portal.run(self._core.get_entity(entity_id, user_id))

    def learn_fact(self, fact: Fact, channel: str | None = None) -> Fact:
        """Store a fact, linked DERIVED_FROM its source turn and ABOUT its entities.

        The graph write is the write: an error means nothing was stored; once it succeeded the fact is returned even
        if PostgreSQL then fails (its timeline row / audit entry is missing and logged at WARNING)."""
        return self._portal.run(self._core.learn_fact(fact, channel))

    def store_fact(self, fact: Fact, channel: str | None = None) -> Fact:
        """Same as :meth:`learn_fact` (spec 003's name)."""
        return self._portal.run(self._core.store_fact(fact, channel))

    def get_fact(self, fact_id: str, user_id: str | None = None) -> Fact:
        """One of the user's facts."""
        return self._portal.run(self._core.get_fact(fact_id, user_id))

    def create_relationship(self, source_id: str, target_id: str, rel_type: str,
                            properties: dict[str, Any] | None = None, user_id: str | None = None) -> Relationship:
        """Link two entities: RELATED_TO, PART_OF, LOCATED_IN, WORKS_FOR, KNOWS, CREATED_BY or REFERENCES."""
        return self._portal.run(self._core.create_relationship(source_id, target_id, rel_type, properties, user_id))

    def get_entity_graph(self, entity_ids: Sequence[str], depth: int = 2, user_id: str | None = None,
                         limit: int | None = None) -> EntityGraph:
        """Entities within ``depth`` (1-3) hops, the edges among them and facts about them; at most ``limit``
        neighbours and ``limit`` facts (default retrieval.graph_expansion_limit): past it, the newest facts about
        ``entity_ids`` are kept before their neighbours'."""
        return self._portal.run(self._core.get_entity_graph(entity_ids, depth, user_id, limit))

    def promote_to_global(self, fact_id: str, reason: str, user_id: str | None = None) -> Fact:
        """Promote a project fact to ``_global`` (PROMOTED_FROM link + audit entry); returns the global fact."""
        return self._portal.run(self._core.promote_to_global(fact_id, reason, user_id))

    def extract_conversation(self, conversation_id: str, user_id: str | None = None, *, dry_run: bool = False,
                             force: bool = False) -> ExtractionReport:
        """Turn one conversation into entities, facts and relationships (``extraction.extractor``: the LLM of
        ``llm.extraction_model`` or the offline rules), one extraction call per batch of turns, written through this
        memory idempotently: a batch already extracted (same extractor, prompt and turns) is skipped without a call
        unless ``force``, and a forced re-run adds nothing twice. ``dry_run`` writes nothing and returns what would
        be written in ``report.found``. A token budget or LLM failure stops the run between batches (the report's
        ``stopped`` says why); usage and cost are in the report and the audit log."""
        return self._portal.run(self._core.extract_conversation(conversation_id, user_id, dry_run=dry_run, force=force))

    def apply_decay(self, *, now: datetime | None = None, dry_run: bool = False,
                    user_id: str | None = None) -> DecayReport:
        """Decay idle entities' salience and inferred facts' confidence as of ``now`` (default: the current time):
        ``base * decay.rate ** days since the last access`` (:mod:`agentx_memory.decay`), for every user or only
        ``user_id``. Idempotent for a given ``now``. The worker's ``decay`` job: a recorded run (``report.run_id``)
        that :meth:`undo_run` reverses; ``dry_run`` computes the values without writing or recording."""
        return self._portal.run(self._core.apply_decay(now=now, dry_run=dry_run, user_id=user_id))

    def cleanup(self, *, now: datetime | None = None, dry_run: bool = False,
                user_id: str | None = None) -> CleanupReport:
        """Delete the entities (of every user, or only ``user_id``) whose salience fell below
        ``retention.entity_min_salience`` and that were not accessed for ``retention.entity_days``, with their edges
        and timeline rows; each deletion audited with what was deleted (deletions are not undoable). With
        :meth:`archive_conversations`, the worker's ``cleanup`` job; ``dry_run`` lists what would be deleted."""
        return self._portal.run(self._core.cleanup(now=now, dry_run=dry_run, user_id=user_id))

    def archive_conversations(self, *, now: datetime | None = None, dry_run: bool = False,
                              user_id: str | None = None) -> ArchiveReport:
        """Archive the conversations (of every user, or only ``user_id``) whose last turn is older than
        ``retention.conversation_days`` as of ``now``: their turns leave default recall (``recall.include_archived``
        brings them back) and stay in the log; nothing is deleted. A recorded run that :meth:`undo_run` reverses;
        ``dry_run`` lists what would be archived (:mod:`agentx_memory.archive`)."""
        return self._portal.run(self._core.archive_conversations(now=now, dry_run=dry_run, user_id=user_id))

    def expire_facts(self, *, now: datetime | None = None, dry_run: bool = False,
                     user_id: str | None = None) -> FactExpiryReport:
        """Expire the facts (of every user, or only ``user_id``) neither stated again nor accessed for
        ``retention.fact_days``: they leave recall and stay for as-of reads (:mod:`agentx_memory.fact_retention`).
        Part of the worker's ``cleanup`` job: a recorded run that :meth:`undo_run` reverses; ``dry_run`` lists them."""
        return self._portal.run(self._core.expire_facts(now=now, dry_run=dry_run, user_id=user_id))

    def promote_prominent_facts(self, *, dry_run: bool = False, user_id: str | None = None) -> PromotionReport:
        """Promote the project facts (of every user, or only ``user_id``) that meet ``promotion.*`` (confidence >=
        0.85, accessed >= 5 times, from >= 2 conversations by default) to ``_global``; ``report.promoted`` holds
        the global copies. The worker's ``promote`` job: a recorded run that :meth:`undo_run` reverses; ``dry_run``
        lists the candidates without copying."""
        return self._portal.run(self._core.promote_prominent_facts(dry_run=dry_run, user_id=user_id))

    def consolidate(self, *, now: datetime | None = None, dry_run: bool = False,
                    user_id: str | None = None) -> ConsolidationReport:
        """Extract every conversation that has gone quiet (last turn older than ``worker.consolidate_quiet_minutes``,
        newer than its last consolidation), of every user or only ``user_id``, at most
        ``worker.consolidate_max_conversations`` per call, each under its Redis lock; mark each consolidated and
        report its lag, then summarize it (:meth:`summarize_conversation`). The worker's ``consolidate`` job (a
        recorded run); ``dry_run`` lists the due conversations without extracting. ``now`` (default: the current
        time) decides what is quiet."""
        return self._portal.run(self._core.consolidate(now=now, dry_run=dry_run, user_id=user_id))

    def dedup(self, *, dry_run: bool = False, user_id: str | None = None) -> DedupReport:
        """Merge duplicate entities and facts (of every user, or only ``user_id``; never across users or channels):
        entities with name or alias evidence, facts with the same content words, each pair with vectors at cosine
        >= ``dedup.similarity`` (:mod:`agentx_memory.dedup`). Every alias, edge and provenance link is kept on the
        survivor. The worker's ``dedup`` job: a recorded run that :meth:`undo_run` reverses; ``dry_run`` lists the
        pairs that would merge."""
        return self._portal.run(self._core.dedup(dry_run=dry_run, user_id=user_id))

    def detect_patterns(self, *, now: datetime | None = None, dry_run: bool = False,
                        user_id: str | None = None) -> PatternReport:
        """Learn strategies from the conversations (of every user, or only ``user_id``) that used tools and went
        quiet as of ``now``: the tool sequence, the task type and the outcome of the last call that reported one
        (:mod:`agentx_memory.patterns`). Each conversation is learned from once. The worker's ``patterns`` job (a
        recorded run); ``dry_run`` lists what would be learned."""
        return self._portal.run(self._core.detect_patterns(now=now, dry_run=dry_run, user_id=user_id))

    def undo_run(self, run_id: str) -> dict[str, Any]:
        """Reverse a recorded run of ``decay``, ``promote``, ``archive``, ``expire_facts``, ``dedup``,
        ``short_term`` or ``context_rot`` (see
        :mod:`agentx_memory.runs`):
        what it changed goes back, except values changed again since (``skipped``). Returns what the undo did. A run
        is undone once; an unknown run is :class:`NotFoundError`, a job without undo :class:`ValidationError`."""
        return self._portal.run(self._core.undo_run(run_id))

    def worker_runs(self, *, limit: int = 20, latest_per_job: bool = False) -> list[dict[str, Any]]:
        """Recorded maintenance runs, newest first (``run_id``, ``job``, ``user_id``, ``started_at``,
        ``finished_at``, ``status``, ``summary``, ``undone_at``, ``undo_summary``): the ``limit`` latest, or the
        latest of each job (``worker status``)."""
        return self._portal.run(self._core.worker_runs(limit=limit, latest_per_job=latest_per_job))

    def facts_as_of(self, at: datetime, user_id: str | None = None, channel: str = GLOBAL_CHANNEL, *,
                    entity_ids: Sequence[str] = (), limit: int = 100) -> list[Fact]:
        """The user's facts as they stood at ``at``, newest first, in ``channel`` and ``_global``: said by then and
        not yet replaced (a fact superseded since is returned with its ``status``; a rejected one never held).
        ``entity_ids`` keeps those ABOUT one of them."""
        return self._portal.run(self._core.facts_as_of(at, user_id, channel, entity_ids=entity_ids, limit=limit))

    def facts_for_review(self, user_id: str | None = None, limit: int = 100) -> list[tuple[Fact, list[str]]]:
        """Facts flagged as contradicting another (``extraction.contradiction_policy = "flag_review"``), oldest
        first, each with the ids of the facts it conflicts with."""
        return self._portal.run(self._core.facts_for_review(user_id, limit))

    def upsert_entities(self, entities: Sequence[Entity], channel: str | None = None) -> list[Entity]:
        """:meth:`upsert_entity` for many entities in a few round trips; returns them as stored, in item order.

        Every item is checked first: one invalid item (the error names it, ``entities[3].name``) or more than
        ``limits.max_batch_items`` items refuse the whole batch before anything is written. Items that merge into one
        entity (same user, channel, type and normalized name) leave what upserting them in order would, and each gets
        the merged entity. Missing vectors are embedded in one call."""
        return self._portal.run(self._core.upsert_entities(entities, channel))

    def learn_facts(self, facts: Sequence[Fact], channel: str | None = None) -> list[Fact]:
        """:meth:`learn_fact` for many facts in a few round trips; returns them as stored, in item order.

        Every item, and every entity, source turn and stored fact id the items name, is checked first: one invalid
        item (``facts[3].claim``), unknown reference (``facts[3].entity_ids``), another user's id or conversation, a
        fact id stored in another channel, or more than ``limits.max_batch_items`` items refuse the whole batch
        before anything is written. Items with one id leave what learning them in order would. Missing vectors are
        embedded in one call."""
        return self._portal.run(self._core.learn_facts(facts, channel))

    def store_facts(self, facts: Sequence[Fact], channel: str | None = None) -> list[Fact]:
        """Same as :meth:`learn_facts` (beside :meth:`store_fact`)."""
        return self._portal.run(self._core.store_facts(facts, channel))

    def create_relationships(self, relationships: Sequence[Relationship | tuple[Any, ...]],
                             user_id: str | None = None) -> list[Relationship]:
        """:meth:`create_relationship` for many relationships in a few round trips; returns them as stored.

        An item is a :class:`~agentx_memory.models.Relationship` (its ``user_id``, else the call's user) or a
        ``(source_id, target_id, rel_type[, properties])`` tuple (the call's user: ``user_id``, else the memory's
        default user). Every item and both of its entities are checked first: one invalid item
        (``relationships[3].rel_type``), unknown entity (``relationships[3].target_id``) or more than
        ``limits.max_batch_items`` items refuse the whole batch before anything is written."""
        return self._portal.run(self._core.create_relationships(relationships, user_id))

    def record_invocation(self, conversation_id: str, turn_id: str | None, tool_name: str, tool_input: Any,
                          tool_output: Any, success: bool | None, latency_ms: int | None, channel: str = GLOBAL_CHANNEL,
                          *, user_id: str | None = None, task_type: str | None = None, error_message: str | None = None,
                          invocation_id: str | None = None, timestamp: datetime | None = None) -> ToolInvocation:
        """Record a tool call (PostgreSQL tool_invocations + graph Tool/ToolInvocation). Pass ``invocation_id`` to
        make retries of the same call idempotent."""
        return self._portal.run(self._core.record_invocation(conversation_id, turn_id, tool_name, tool_input,
                                                             tool_output, success, latency_ms, channel, user_id=user_id,
                                                             task_type=task_type, error_message=error_message,
                                                             invocation_id=invocation_id, timestamp=timestamp))

    def learn_strategy(self, description: str, context_pattern: str = "", tool_sequence: Sequence[str] = (),
                       from_conversation_id: str | None = None, success: bool = True, channel: str = GLOBAL_CHANNEL,
                       user_id: str | None = None, *, steps: Sequence[str] = (), trigger_conditions: Sequence[str] = (),
                       task_type: str | None = None) -> Strategy:
        """Record a strategy (seed 001's procedural memory: optional ordered ``steps`` and ``trigger_conditions``;
        spec 003's ``task_type`` it is for), or reinforce it if the user already has the same one in the channel."""
        return self._portal.run(self._core.learn_strategy(description, context_pattern, tool_sequence,
                                                          from_conversation_id, success, channel, user_id, steps=steps,
                                                          trigger_conditions=trigger_conditions, task_type=task_type))

    def find_procedures(self, situation: str, channels: Sequence[str] | str | None = None, top_k: int = 5,
                        user_id: str | None = None, *, task_type: str | None = None) -> list[StrategyMatch]:
        """Procedures whose trigger conditions (and description) match ``situation`` (seed 001's "procedures
        matching a trigger"): :meth:`find_strategies` over vectors that include each strategy's triggers."""
        return self._portal.run(self._core.find_procedures(situation, channels, top_k, user_id, task_type=task_type))

    def find_strategies(self, task_description: str, channels: Sequence[str] | str | None = None, top_k: int = 5,
                        user_id: str | None = None, *, task_type: str | None = None) -> list[StrategyMatch]:
        """Strategies for a task, ranked by similarity and success rate; ``task_type`` keeps those learned for it."""
        return self._portal.run(self._core.find_strategies(task_description, channels, top_k, user_id,
                                                           task_type=task_type))

    def reinforce_strategy(self, strategy_id: str, success: bool, user_id: str | None = None) -> Strategy:
        """Count a success or failure of a strategy."""
        return self._portal.run(self._core.reinforce_strategy(strategy_id, success, user_id))

    def get_tool_stats(self, task_type: str | None = None, channel: str | None = None,
                       user_id: str | None = None) -> list[dict[str, Any]]:
        """Per-tool usage, success rate and latency for the user (optionally one task type / channel)."""
        return self._portal.run(self._core.get_tool_stats(task_type, channel, user_id))

    def add_goal(self, goal: Goal, channel: str | None = None) -> Goal:
        """Store a goal (with optional parent_id → SUBGOAL_OF and blocked_by → BLOCKED_BY).

        The graph write is the write: an error means nothing was stored; once it succeeded the goal is returned even
        if PostgreSQL then fails (its timeline row / audit entry is missing and logged at WARNING)."""
        return self._portal.run(self._core.add_goal(goal, channel))

    def get_goal(self, goal_id: str, user_id: str | None = None) -> Goal:
        """A goal with its parent id and blockers."""
        return self._portal.run(self._core.get_goal(goal_id, user_id))

    def complete_goal(self, goal_id: str, status: str = "completed", result: str | None = None,
                      user_id: str | None = None) -> Goal:
        """Finish a goal: sets status, completed_at and result."""
        return self._portal.run(self._core.complete_goal(goal_id, status, result, user_id))

    def block_goal(self, goal_id: str, blocker_id: str, user_id: str | None = None) -> Goal:
        """Record that a goal is BLOCKED_BY another."""
        return self._portal.run(self._core.block_goal(goal_id, blocker_id, user_id))

    def list_goals(self, user_id: str | None = None, status: str | None = None,
                   channels: Sequence[str] | str | None = None) -> list[Goal]:
        """The user's goals (optionally of one status) in ``channels`` plus ``_global``."""
        return self._portal.run(self._core.list_goals(user_id, status, channels))

    def remember(self, query: str, user_id: str | None = None, channel: str = GLOBAL_CHANNEL, top_k: int = 10,
                 time_window_hours: float | None = None, include_episodic: bool = True, include_semantic: bool = True,
                 include_procedural: bool = True, reference_time: datetime | None = None,
                 recall: RecallSettings | dict[str, Any] | None = None, memory_types: Sequence[str] | None = None, *,
                 session_id: str | None = None) -> MemoryBundle:
        """Recall what is relevant to ``query``: scored turns, facts, entities (with their neighbourhood),
        strategies and the rules (control memories) closest to it, from ``channel`` and ``_global``, plus active
        goals and the user's profile.

        ``reference_time`` is the "now" for time phrases and recency (default: now); ``recall`` overrides RecallLayer
        settings for this call, e.g. ``recall={"hybrid": False}``; ``memory_types`` keeps only some kinds
        (``episodic``, ``semantic``, ``procedural``, ``control``); ``session_id`` (e.g. the conversation asking) is
        recorded in the recall's audit entry. See :class:`MemoryBundle` (``explain()``, ``to_prompt(max_tokens)``:
        rules first).

        With ``limits.remember_rate_limit`` set, each user (each agent of a user, for a memory acting as one) may
        call this that many times per ``limits.remember_rate_window_seconds``; a call past it raises
        :class:`~agentx_memory.errors.RateLimitedError` (429, ``retry_after`` seconds) and recalls nothing.
        """
        return self._portal.run(self._core.remember(query, user_id, channel, top_k, time_window_hours, include_episodic,
                                                    include_semantic, include_procedural, reference_time, recall,
                                                    memory_types, session_id=session_id))

    def forget_user(self, user_id: str, *, requested_by: str = "api") -> ForgetReceipt:
        """Remove everything of ``user_id`` from every store — graph, conversation log, timeline, tool log,
        profile, summaries, run records, memory pools, working memory — and strip their audit entries of content;
        return the receipt per store (:mod:`agentx_memory.forget`). One audit entry keeps that it happened and
        ``requested_by``. Idempotent. The user's memory does it, not an agent's view
        (:class:`PermissionDeniedError`)."""
        return self._portal.run(self._core.forget_user(user_id, requested_by=requested_by))

    def forget(self, ids: Sequence[str] = (), user_id: str | None = None, *, conversation_id: str | None = None,
               channel: str | None = None, before: datetime | None = None, after: datetime | None = None,
               memory_types: Sequence[str] | None = None, cascade: bool = True,
               requested_by: str = "api") -> ForgetReceipt:
        """Remove chosen memories of the user from every store and return the receipt per store
        (:mod:`agentx_memory.forget`).

        Either ``ids`` (turn, fact, entity, goal, strategy, control or tool-invocation ids, or conversation ids: all
        their turns) or a filter: ``conversation_id``, ``channel``, ``before`` (exclusive) / ``after`` (inclusive)
        the memory's own time, ``memory_types`` (episodic, semantic, procedural, control, goal); every criterion
        given must hold. With ``cascade`` (default) what is derived goes too: facts whose every source turn goes,
        the summary of a conversation that loses a turn, dedup redirects to a forgotten entity. Cached copies in
        working memory and the content of audit entries and run records naming them go; one audit entry keeps who
        asked (``requested_by``), the ids and the counts. Idempotent. An agent's view forgets by ids only: a filter
        would reach every agent's memories (:class:`PermissionDeniedError`; the user's memory does it); and only
        what it may read (global memories and its own): another agent's private ids come back in ``not_found``.
        """
        return self._portal.run(self._core.forget(ids, user_id, conversation_id=conversation_id, channel=channel,
                                                  before=before, after=after, memory_types=memory_types,
                                                  cascade=cascade, requested_by=requested_by))

    def create_snapshot(self, user_id: str | None = None) -> SnapshotInfo:
        """Snapshot the user's memory — graph, PostgreSQL memory tables, working memory — at this moment into the
        engine's snapshot directory (``snapshots.dir``); its ``snapshot_id`` restores it (docs/snapshots.md). On an
        agent's view (:meth:`for_agent`), the snapshot holds what that agent wrote: its turns, facts and control
        memories, its timeline and short-term rows."""
        return self._portal.run(self._core.create_snapshot(user_id))

    def list_snapshots(self, user_id: str | None = None) -> list[SnapshotInfo]:
        """The user's kept snapshots, oldest first (on an agent's view: that agent's)."""
        return self._portal.run(self._core.list_snapshots(user_id))

    def restore_from_snapshot(self, snapshot_id: str, user_id: str | None = None) -> dict[str, int]:
        """Put the memory a kept snapshot holds back as it was: the user's (what they have now is replaced; their
        kept snapshots stay), or for a snapshot of one agent what that agent wrote (the rest of the user's memory
        stays); return the records written per store. An agent's view restores only its own snapshots. Audited."""
        return self._portal.run(self._core.restore_from_snapshot(snapshot_id, user_id))

    def export_memory(self, path: str | Path, user_id: str | None = None, *,
                      progress: Progress | None = None) -> SnapshotInfo:
        """Write the user's memory to a portable snapshot file at ``path`` (JSON lines; gzip when it ends in
        ``.gz``), for :meth:`import_memory` here or on another installation. ``progress(stage, count)`` is called
        as it goes."""
        return self._portal.run(self._core.export_memory(path, user_id, progress=progress))

    def import_memory(self, path: str | Path, user_id: str | None = None, *,
                      progress: Progress | None = None) -> dict[str, int]:
        """Load a snapshot file into ``user_id`` (default: the file's user), who must have no memory yet; return the
        records written per store. Refused before any write for another format, another embedding model, a user
        with memory (``ConflictError``) or ids another user holds; a failed load removes what it wrote."""
        return self._portal.run(self._core.import_memory(path, user_id, progress=progress))

    def reembed(self, model: str, dimension: int, *, batch_size: int = 256,
                progress: Progress | None = None) -> ReembedReport:
        """Re-embed every stored vector with ``model`` / ``dimension`` online, then switch the stores to the new
        vectors (docs/reembed.md); return the counts per label and table. Recall keeps using the old vectors until
        the switch; a rerun after an interruption resumes where it stopped. ``progress(stage, count)`` is called
        after each batch. Afterwards open the memory again with the new model: this one still embeds with the old
        one, which the stores now refuse (EmbeddingDimensionMismatchError)."""
        return self._portal.run(self._core.reembed(model, dimension, batch_size=batch_size, progress=progress))

    def add_control(self, control: ControlMemory, channel: str | None = None) -> ControlMemory:
        """Store a rule, constraint or error pattern (seed 001's control memory; default scope ``_global``), or
        update it when its id is stored; recall puts the closest rules first in ``to_prompt()``. A rule of scope
        ``system`` is every user's: only an admin view (:meth:`as_admin`) stores one (see :meth:`add_system_control`),
        any other memory raises :class:`~agentx_memory.errors.AdminKeyError`."""
        return self._portal.run(self._core.add_control(control, channel))

    def get_control(self, control_id: str, user_id: str | None = None) -> ControlMemory:
        """One of the user's control memories or a system rule, or :class:`NotFoundError`."""
        return self._portal.run(self._core.get_control(control_id, user_id))

    def list_controls(self, user_id: str | None = None, channel: str = GLOBAL_CHANNEL, *,
                      error_pattern: str | None = None, limit: int = 100) -> list[ControlMemory]:
        """The user's control memories in ``channel`` and ``_global`` and the system rules, newest first,
        optionally of one error pattern."""
        return self._portal.run(self._core.list_controls(user_id, channel, error_pattern=error_pattern, limit=limit))

    def find_controls(self, query: str, user_id: str | None = None, channel: str = GLOBAL_CHANNEL,
                      top_k: int = 5) -> list[ControlMatch]:
        """The rules closest to ``query`` among the user's and the system rules (cosine, most severe first among
        equals), with their similarity."""
        return self._portal.run(self._core.find_controls(query, user_id, channel, top_k))

    def delete_control(self, control_id: str, user_id: str | None = None) -> bool:
        """Delete one of the user's control memories; True when it existed (an agent deletes only what it may
        read; a system rule is deleted only by :meth:`delete_system_control`)."""
        return self._portal.run(self._core.delete_control(control_id, user_id))

    def create_pool(self, pool_id: str, *, agent_id: str | None = None, pool_type: str = "shared",
                    scope: str = "account", ttl_seconds: int | None = None, public_read: bool = False,
                    data: dict[str, Any] | None = None, user_id: str | None = None) -> Pool:
        """Create a pool of the user owned by ``agent_id`` (read, write, grant), at version 1, holding ``data``;
        ``pool_type``: shared, agent_private, team_shared or task_scoped; ``scope``: global, account, team, agent or
        task; it expires after ``ttl_seconds`` (never when None); ``public_read`` lets every agent of the user read.
        An id in use is a ConflictError (:mod:`agentx_memory.pools`)."""
        return self._portal.run(self._core.create_pool(pool_id, agent_id=agent_id, pool_type=pool_type, scope=scope,
                                                       ttl_seconds=ttl_seconds, public_read=public_read, data=data,
                                                       user_id=user_id))

    def get_pool(self, pool_id: str, *, agent_id: str | None = None, user_id: str | None = None) -> Pool:
        """The pool (without its data) when ``agent_id`` may read it; PermissionDeniedError (audited) when not,
        NotFoundError when the user has no such live pool."""
        return self._portal.run(self._core.get_pool(pool_id, agent_id=agent_id, user_id=user_id))

    def list_pools(self, *, agent_id: str | None = None, user_id: str | None = None, limit: int = 1000) -> list[Pool]:
        """The user's live pools ``agent_id`` may read (owned, granted or public_read), by id."""
        return self._portal.run(self._core.list_pools(agent_id=agent_id, user_id=user_id, limit=limit))

    def grant_pool_access(self, pool_id: str, agent_id: str, level: str, *, by_agent: str | None = None,
                          user_id: str | None = None) -> Pool:
        """Set ``agent_id``'s access to ``level`` (``read``, or ``write`` which implies read); only the owner
        ``by_agent`` grants, and an agent_private pool refuses (PermissionDeniedError). Returns the pool after."""
        return self._portal.run(self._core.grant_pool_access(pool_id, agent_id, level, by_agent=by_agent,
                                                             user_id=user_id))

    def revoke_pool_access(self, pool_id: str, agent_id: str, *, by_agent: str | None = None,
                           user_id: str | None = None) -> Pool:
        """Take ``agent_id``'s read and write grants away (owner ``by_agent`` only); returns the pool after."""
        return self._portal.run(self._core.revoke_pool_access(pool_id, agent_id, by_agent=by_agent, user_id=user_id))

    def pool_accessible_by(self, pool_id: str, agent_id: str, level: str = "read", *,
                           user_id: str | None = None) -> bool:
        """Whether ``agent_id`` may ``read`` or ``write`` the pool now (a question, not an access: not audited)."""
        return self._portal.run(self._core.pool_accessible_by(pool_id, agent_id, level, user_id=user_id))

    def read_pool_data(self, pool_id: str, *, agent_id: str | None = None,
                       user_id: str | None = None) -> tuple[dict[str, Any], int]:
        """``(data, version)`` of the pool when ``agent_id`` may read it; pass the version to the next write."""
        return self._portal.run(self._core.read_pool_data(pool_id, agent_id=agent_id, user_id=user_id))

    def write_pool_data(self, pool_id: str, data: dict[str, Any], *, expected_version: int, agent_id: str | None = None,
                        user_id: str | None = None) -> int:
        """Replace the pool's data (a JSON object of at most ``pools.max_data_bytes``) when ``agent_id`` may write
        and the pool is still at ``expected_version``; returns the new version. A stale version is
        StaleVersionError (409) and nothing is written."""
        return self._portal.run(self._core.write_pool_data(pool_id, data, expected_version=expected_version,
                                                           agent_id=agent_id, user_id=user_id))

    def merge_pool_data(self, pool_id: str, patch: dict[str, Any], *, expected_version: int,
                        agent_id: str | None = None, user_id: str | None = None) -> int:
        """Merge ``patch`` into the pool's data key by key (a ``None`` value removes the key), versioned as
        :meth:`write_pool_data`; returns the new version."""
        return self._portal.run(self._core.merge_pool_data(pool_id, patch, expected_version=expected_version,
                                                           agent_id=agent_id, user_id=user_id))

    def share_memory(self, pool_id: str, memory_id: str, *, expected_version: int, agent_id: str | None = None,
                     memory_type: str | None = None, user_id: str | None = None,
                     channels: Sequence[str] | None = None) -> int:
        """Copy one of the user's facts, entities, controls, strategies or goals into the pool's data under
        ``"memory:<memory_id>"`` (type, text, source id, channel, who shared it and when), versioned as
        :meth:`write_pool_data`; returns the new version. The agent shares only what it may read (not another
        agent's private fact or rule), and with ``channels`` only a memory of one of them or of ``_global``:
        :class:`NotFoundError` otherwise."""
        return self._portal.run(self._core.share_memory(pool_id, memory_id, expected_version=expected_version,
                                                        agent_id=agent_id, memory_type=memory_type, user_id=user_id,
                                                        channels=channels))

    def pool_statistics(self, pool_id: str, *, agent_id: str | None = None,
                        user_id: str | None = None) -> PoolStatistics:
        """Entries, bytes, version, reads, writes, last access and grants of the pool, when ``agent_id`` may
        read it."""
        return self._portal.run(self._core.pool_statistics(pool_id, agent_id=agent_id, user_id=user_id))

    def delete_pool(self, pool_id: str, *, by_agent: str | None = None, user_id: str | None = None) -> bool:
        """Delete the pool (its owner ``by_agent`` only); True when it did, False when there is no such live
        pool."""
        return self._portal.run(self._core.delete_pool(pool_id, by_agent=by_agent, user_id=user_id))

    def expire_pools(self, *, now: datetime | None = None, dry_run: bool = False,
                     user_id: str | None = None) -> PoolSweepReport:
        """Delete the pools (of every user, or only ``user_id``) past their expiry as of ``now`` (default: the
        database's clock), each audited; part of the worker's ``cleanup`` job (a recorded run, not undoable);
        ``dry_run`` lists them."""
        return self._portal.run(self._core.expire_pools(now=now, dry_run=dry_run, user_id=user_id))

    def expire_items(self, *, now: datetime | None = None, dry_run: bool = False,
                     user_id: str | None = None) -> ItemSweepReport:
        """Delete the namespaced items (of every user, or only ``user_id``) whose TTL ran out as of ``now`` (default:
        the current time), each audited; part of the worker's ``cleanup`` job (a recorded run, not undoable: an
        expired item was already gone for readers); ``dry_run`` lists them."""
        return self._portal.run(self._core.expire_items(now=now, dry_run=dry_run, user_id=user_id))

    def drain(self) -> None:
        """Wait for background writes that follow a recall (reinforcement, audit)."""
        self._portal.run(self._core.drain())

    def summarize_conversation(self, conversation_id: str, user_id: str | None = None) -> EpisodicSummary:
        """Summarize one conversation (spec 000's episodic memory): the text, key decisions, entities mentioned and
        tools called — by ``llm.query_model`` when set, extractive otherwise — embedded and stored, replacing an
        earlier summary (:mod:`agentx_memory.summaries`). The consolidation job does this for every conversation it
        consolidates. An agent's view may not summarize a conversation holding another agent's private turns
        (:class:`NotFoundError`)."""
        return self._portal.run(self._core.summarize_conversation(conversation_id, user_id))

    def get_conversation_summary(self, conversation_id: str, user_id: str | None = None) -> EpisodicSummary:
        """The stored summary of one conversation; :class:`NotFoundError` when it was not summarized (or, for an
        agent, when the conversation holds another agent's private turns: the summary would tell what they say)."""
        return self._portal.run(self._core.get_conversation_summary(conversation_id, user_id))

    def similar_conversations(self, query: str, user_id: str | None = None, channel: str = GLOBAL_CHANNEL,
                              top_k: int = 3, *, exclude: Sequence[str] = ()) -> list[dict[str, Any]]:
        """The ``top_k`` (3) past conversations whose summaries are most similar to ``query``, in ``channel`` and
        ``_global``, best first: ``{"summary": EpisodicSummary, "similarity": float}``; ``exclude`` leaves out
        conversations (the current one)."""
        return self._portal.run(self._core.similar_conversations(query, user_id, channel, top_k, exclude=exclude))

    def write_short_term(self, session_id: str, key: str, value: Any, *, memory_type: str,
                         ttl_seconds: int | None = None, agent_id: str | None = None, user_id: str | None = None,
                         now: datetime | None = None) -> ShortTermEntry:
        """Store ``value`` (any JSON value, at most ``limits.max_metadata_bytes``) under ``key`` of the user's session
        in the short-term tier, as ``memory_type`` (``task_context``, ``conversation``, ``tool_result``,
        ``reflection``, ``observation``), expiring ``ttl_seconds`` (default ``short_term.default_ttl_seconds``, 1 h)
        after ``now``. Overwriting an entry keeps its access count and starts its expiry again
        (:mod:`agentx_memory.short_term`). Bad input is a :class:`ValidationError` naming the field; nothing is
        written then."""
        return self._portal.run(self._core.write_short_term(session_id, key, value, memory_type=memory_type,
                                                            ttl_seconds=ttl_seconds, agent_id=agent_id, user_id=user_id,
                                                            now=now))

    def read_short_term(self, session_id: str, key: str, user_id: str | None = None, *,
                        now: datetime | None = None) -> ShortTermEntry | None:
        """The short-term entry, counting the read (access count + 1, last access); ``None`` when absent or
        expired."""
        return self._portal.run(self._core.read_short_term(session_id, key, user_id, now=now))

    def touch_short_term(self, session_id: str, key: str, user_id: str | None = None, *,
                         now: datetime | None = None) -> int | None:
        """Count one use of a short-term entry without reading it; its access count after that, or ``None`` when
        absent or expired."""
        return self._portal.run(self._core.touch_short_term(session_id, key, user_id, now=now))

    def refresh_short_term_ttl(self, session_id: str, key: str, ttl_seconds: int | None = None,
                               user_id: str | None = None, *, now: datetime | None = None) -> ShortTermEntry | None:
        """Let a live short-term entry expire ``ttl_seconds`` (default: its own TTL) from ``now``; ``None`` when
        absent or already expired."""
        return self._portal.run(self._core.refresh_short_term_ttl(session_id, key, ttl_seconds, user_id, now=now))

    def delete_short_term(self, session_id: str, key: str, user_id: str | None = None, *,
                          now: datetime | None = None) -> bool:
        """Remove a short-term entry; True when a live one was there."""
        return self._portal.run(self._core.delete_short_term(session_id, key, user_id, now=now))

    def list_short_term(self, session_id: str, user_id: str | None = None, *,
                        now: datetime | None = None) -> list[ShortTermEntry]:
        """The live short-term entries of the user's session, by key (reads are not counted)."""
        return self._portal.run(self._core.list_short_term(session_id, user_id, now=now))

    def short_term_statistics(self, session_id: str | None = None, user_id: str | None = None, *,
                              now: datetime | None = None) -> dict[str, Any]:
        """The short-term tier of one session (or all the user's): ``entries`` (live), ``expired`` (waiting for the
        ``short_term`` job), ``by_type``, ``mean_access_count`` and ``bytes``."""
        return self._portal.run(self._core.short_term_statistics(session_id, user_id, now=now))

    def consolidate_short_term(self, *, now: datetime | None = None, dry_run: bool = False,
                               user_id: str | None = None) -> ShortTermReport:
        """Consolidate the short-term tier (of every user, or only ``user_id``) as of ``now``: entries read at least
        ``short_term.promote_access_count`` (3) times become long-term facts (recallable by :meth:`remember`) and
        leave the tier; expired entries read less are dropped (:mod:`agentx_memory.short_term_consolidation`).
        The worker's ``short_term`` job: a recorded run that :meth:`undo_run` reverses; ``dry_run`` lists what
        would be promoted and dropped."""
        return self._portal.run(self._core.consolidate_short_term(now=now, dry_run=dry_run, user_id=user_id))

    def get_profile(self, user_id: str | None = None) -> UserProfile:
        """The user's profile (empty when nothing was stored)."""
        return self._portal.run(self._core.get_profile(user_id))

    def update_profile(self, user_id: str | None = None, *, preferences: dict[str, Any] | None = None,
                       expertise_areas: list[Any] | None = None, communication_style: dict[str, Any] | None = None,
                       metadata: dict[str, Any] | None = None) -> UserProfile:
        """Merge into the user's profile (dicts key by key, expertise areas as a set)."""
        return self._portal.run(self._core.update_profile(user_id, preferences=preferences,
                                                          expertise_areas=expertise_areas,
                                                          communication_style=communication_style, metadata=metadata))

    def set_preference(self, key: str, value: Any, user_id: str | None = None) -> None:
        """Set one of the user's preferences (any JSON value; spec 004's PreferenceStore on the profile). Recall
        shows preferences in the prompt block's profile section."""
        self._portal.run(self._core.set_preference(key, value, user_id))

    def get_preference(self, key: str, user_id: str | None = None) -> Any:
        """One of the user's preferences, or None when it is not set."""
        return self._portal.run(self._core.get_preference(key, user_id))

    def get_all_preferences(self, user_id: str | None = None) -> dict[str, Any]:
        """Every preference of the user."""
        return self._portal.run(self._core.get_all_preferences(user_id))

    def delete_preference(self, key: str, user_id: str | None = None) -> bool:
        """Remove one of the user's preferences; True when it was set."""
        return self._portal.run(self._core.delete_preference(key, user_id))

    def goals_from_plan(self, plan_steps: Sequence[str | Mapping[str, Any]], *, parent_description: str | None = None,
                        channel: str | None = None, user_id: str | None = None, ordered: bool = True) -> list[Goal]:
        """Store an agent's plan as goals: a parent goal and one sub-goal per step (SUBGOAL_OF it; when ``ordered``,
        each BLOCKED_BY the step before). A step is a description or a mapping with ``description`` and optionally
        ``id``, ``priority``, ``deadline``, ``metadata``. Returns ``[parent, *steps]`` (see ``docs/goals.md``)."""
        return self._portal.run(self._core.goals_from_plan(plan_steps, parent_description=parent_description,
                                                           channel=channel, user_id=user_id, ordered=ordered))

    def complete_goals_from_run(self, goal_ids_or_results: Mapping[str, str | Mapping[str, Any] | None], *,
                                status: str = "completed", user_id: str | None = None) -> list[Goal]:
        """Set goals from a run's results: goal id → result text (or None), each taking ``status``, or goal id →
        ``{"status": "abandoned" | "blocked" | ..., "result": ...}`` for a step of its own status. A plan goal whose
        steps are then all completed is completed too. Returns the goals set (see ``docs/goals.md``)."""
        return self._portal.run(self._core.complete_goals_from_run(goal_ids_or_results, status=status, user_id=user_id))

    def timeline(self, user_id: str | None = None, *, since: datetime | None = None, until: datetime | None = None,
                 memory_types: Sequence[str] | None = None, channels: Sequence[str] | None = None,
                 include_archived: bool = False, limit: int = 100) -> list[dict[str, Any]]:
        """The user's ``memory_timeline``, newest first: every memory (turn, fact, entity, goal) with
        ``since <= event_time < until`` (None: unbounded), at most ``limit`` (1 to 10,000), optionally only some
        memory types (episodic, fact, entity, goal) and channels (None: all). Each entry: ``memory_type``,
        ``node_id``, ``channel``, ``event_time``, ``summary``, ``importance``, ``access_count`` and
        ``last_accessed`` (how often and when recall last returned it), ``archived``, ``has_embedding``,
        ``metadata``, ``agent_id``, ``scope``. Turns of archived conversations are left out unless
        ``include_archived``."""
        return self._portal.run(self._core.timeline(user_id, since=since, until=until, memory_types=memory_types,
                                                    channels=channels, include_archived=include_archived, limit=limit))

    def put_item(self, namespace: Sequence[str], key: str, value: Mapping[str, Any], *, text: str | None = None,
                 ttl_minutes: float | None = None, channel: str | None = None, agent_id: str | None = None,
                 user_id: str | None = None, now: datetime | None = None) -> StoredItem:
        """Store a JSON object under ``key`` of a ``namespace`` path (a tuple of labels, possibly empty) of the
        user, replacing the item there; with ``text``, the engine's embedder makes it searchable by meaning
        (:meth:`search_items`). It expires ``ttl_minutes`` after its last write or refreshing read (None: never);
        ``agent_id`` is the agent it belongs to (default: this view's; None: the user's), ``channel`` what it is
        filed under (default ``_global``). Items are durable rows, not facts: no decay, dedup or retention touches
        them. Overwriting another agent's item raises :class:`~agentx_memory.errors.ConflictError`; bad input a
        :class:`~agentx_memory.errors.ValidationError` naming the field. Returns the item as stored."""
        return self._portal.run(self._core.put_item(namespace, key, value, text=text, ttl_minutes=ttl_minutes,
                                                    channel=channel, agent_id=agent_id, user_id=user_id, now=now))

    def get_item(self, namespace: Sequence[str], key: str, *, refresh_ttl: bool = True, user_id: str | None = None,
                 now: datetime | None = None) -> StoredItem | None:
        """The user's live item under ``key`` of ``namespace`` (its TTL started again when ``refresh_ttl``), or
        None."""
        return self._portal.run(self._core.get_item(namespace, key, refresh_ttl=refresh_ttl, user_id=user_id, now=now))

    def delete_item(self, namespace: Sequence[str], key: str, *, user_id: str | None = None,
                    now: datetime | None = None) -> bool:
        """Remove the user's item under ``key`` of ``namespace``; True when a live one was there."""
        return self._portal.run(self._core.delete_item(namespace, key, user_id=user_id, now=now))

    def search_items(self, namespace_prefix: Sequence[str] = (), *, query: str | None = None,
                     filter: Mapping[str, Any] | None = None, limit: int = 10, offset: int = 0,
                     refresh_ttl: bool = True, user_id: str | None = None,
                     now: datetime | None = None) -> list[StoredItem]:
        """One page (``limit`` from ``offset``) of the user's live items whose namespace starts with
        ``namespace_prefix`` and whose value passes ``filter`` (``{"field": value}``, ``{"field": {"$gte": 3}}``
        with ``$eq $ne $gt $gte $lt $lte``, nested objects key by key). With ``query`` they are ranked by meaning
        (cosine similarity of the engine's vectors, in ``score``; items without text come last), else newest
        first. Returned items' TTLs start again when ``refresh_ttl``."""
        return self._portal.run(self._core.search_items(namespace_prefix, query=query, filter=filter, limit=limit,
                                                        offset=offset, refresh_ttl=refresh_ttl, user_id=user_id,
                                                        now=now))

    def list_item_namespaces(self, prefix: Sequence[str | None] = (), *, max_depth: int | None = None, limit: int = 100,
                             offset: int = 0, user_id: str | None = None,
                             now: datetime | None = None) -> list[tuple[str, ...]]:
        """The user's distinct namespaces holding live items that start with ``prefix`` (a None label matches any
        label), cut to ``max_depth`` labels, sorted, ``limit`` of them from ``offset``."""
        return self._portal.run(self._core.list_item_namespaces(prefix, max_depth=max_depth, limit=limit, offset=offset,
                                                                user_id=user_id, now=now))

    def archive_stale(self, *, now: datetime | None = None, dry_run: bool = False,
                      user_id: str | None = None) -> ContextRotReport:
        """Archive the facts and entities (of every user, or only ``user_id``) whose staleness as of ``now`` reaches
        ``context_rot.threshold`` (0.9): staleness grows with idle time and fades slower for memories used often
        or salient (:mod:`agentx_memory.context_rot` gives the formula). Archived memories leave recall and stay
        readable; ``timeline(include_archived=True)`` lists them, :meth:`unarchive` or :meth:`undo_run` brings them
        back. The worker's daily ``context_rot`` job (a recorded run); ``dry_run`` lists what would be archived, with
        each one's staleness."""
        return self._portal.run(self._core.archive_stale(now=now, dry_run=dry_run, user_id=user_id))

    def unarchive(self, ids: Sequence[str], user_id: str | None = None) -> dict[str, int]:
        """Bring archived facts and entities of the user back into recall (archived by :meth:`archive_stale`):
        ``{"restored": n, "skipped": m}``; an id that is not an archived fact or entity of the user is skipped.
        Audited."""
        return self._portal.run(self._core.unarchive(ids, user_id))

    def get_tool_invocations(self, conversation_id: str, user_id: str | None = None, *,
                             limit: int = 1000) -> list[ToolInvocation]:
        """The user's recorded tool calls of one conversation, in call order, with input, output and error message
        in plaintext: decrypted when they were stored encrypted (``security.encryption_key_id``), which raises
        :class:`~agentx_memory.errors.EncryptionKeyError` when the row's key is not configured or is another key."""
        return self._portal.run(self._core.get_tool_invocations(conversation_id, user_id, limit=limit))

    def reencrypt_tool_invocations(self, *, batch_size: int = 500) -> ReencryptReport:
        """Bring every stored tool-call payload (of every user) to the active key, ``security.encryption_key_id``:
        rows sealed with an older key are sealed again, plaintext rows are sealed; with encryption off, sealed rows
        become plaintext. Run it after a key rotation, then the old key can leave ``security.encryption_keys``
        (docs/encryption.md). Audited."""
        return self._portal.run(self._core.reencrypt_tool_invocations(batch_size=batch_size))

    def add_system_control(self, content: str, *, severity: str = "medium", error_pattern: str | None = None,
                           control_id: str | None = None, metadata: Mapping[str, Any] | None = None,
                           source_trajectory_id: str | None = None) -> ControlMemory:
        """Store a rule that holds for every user of the installation (scope ``system``), or change it when
        ``control_id`` is stored already; admin views only (:meth:`as_admin`), audited without a user. Every user's
        recall, ``list_controls``, ``find_controls`` and ``get_control`` read it; no user's ``delete_control``,
        ``forget``, ``forget_user``, export or snapshot touches it. Returns it as stored (its ``user_id`` is
        ``agentx_memory.admin.SYSTEM_USER_ID``, which no user id can be)."""
        return self._portal.run(self._core.add_system_control(content, severity=severity, error_pattern=error_pattern,
                                                              control_id=control_id, metadata=metadata,
                                                              source_trajectory_id=source_trajectory_id))

    def delete_system_control(self, control_id: str) -> bool:
        """Delete a system rule; True when it existed. Admin views only (:meth:`as_admin`); audited."""
        return self._portal.run(self._core.delete_system_control(control_id))

    def list_system_controls(self, *, error_pattern: str | None = None, limit: int = 100) -> list[ControlMemory]:
        """The system rules (they hold for every user), newest first; any memory may read them."""
        return self._portal.run(self._core.list_system_controls(error_pattern=error_pattern, limit=limit))

    def list_users(self, *, after: str | None = None, limit: int = 100) -> list[str]:
        """Ids of the users that have memory (turns or timeline entries: facts, entities, goals), in order, the
        first ``limit`` (1 to 500) after ``after`` (the last id of the previous page). Every user's: a service
        offers this to an administrator only."""
        return self._portal.run(self._core.list_users(after=after, limit=limit))

    def memory_overview(self, user_id: str | None = None) -> dict[str, int]:
        """How much memory the user has: ``conversations``, ``turns`` (those this memory may read),
        ``tool_invocations``, ``entities``, ``facts``, ``active_facts``, ``goals``, ``strategies``, ``controls``."""
        return self._portal.run(self._core.memory_overview(user_id))

    def list_conversations(self, user_id: str | None = None, *, limit: int = 50,
                           offset: int = 0) -> list[ConversationInfo]:
        """The user's conversations, the latest first: id, channel, turn count, first and last turn time, archived;
        ``limit`` (1 to 500) of them from ``offset`` (up to 100,000)."""
        return self._portal.run(self._core.list_conversations(user_id, limit=limit, offset=offset))

    def conversation_turns(self, conversation_id: str, user_id: str | None = None, *, from_index: int = 0,
                           limit: int = 50) -> list[Turn]:
        """A page of one of the user's conversations: up to ``limit`` (1 to 500) turns with an index from
        ``from_index`` on, in order (the next page starts after the last turn's ``index``)."""
        return self._portal.run(self._core.conversation_turns(conversation_id, user_id, from_index=from_index,
                                                              limit=limit))

    def get_turns(self, turn_ids: Sequence[str], user_id: str | None = None) -> list[Turn]:
        """The user's turns with these ids (at most 500), by conversation and index; unknown ids are left out."""
        return self._portal.run(self._core.get_turns(turn_ids, user_id))

    def list_entities(self, user_id: str | None = None, *, limit: int = 50, offset: int = 0) -> list[Entity]:
        """A page of the user's entities, the most salient first: ``limit`` (1 to 500) from ``offset``."""
        return self._portal.run(self._core.list_entities(user_id, limit=limit, offset=offset))

    def entity_map(self, user_id: str | None = None, *, limit: int = 50) -> EntityGraph:
        """The user's ``limit`` (1 to 500) most salient entities and the relationships among them, without facts
        (:meth:`get_entity_graph` gives one entity's neighbourhood with its facts)."""
        return self._portal.run(self._core.entity_map(user_id, limit=limit))

    def list_facts(self, user_id: str | None = None, *, status: str | None = None, limit: int = 50,
                   offset: int = 0) -> list[FactRecord]:
        """A page of the user's facts of every status (superseded, rejected, expired ... too) or of ``status``,
        the newest first, each with its provenance: the turns it was derived from and the facts it superseded."""
        return self._portal.run(self._core.list_facts(user_id, status=status, limit=limit, offset=offset))

    def fact_record(self, fact_id: str, user_id: str | None = None) -> FactRecord:
        """One of the user's facts, of any status, with its provenance (see :meth:`list_facts`)."""
        return self._portal.run(self._core.fact_record(fact_id, user_id))

    def goal_tree(self, user_id: str | None = None, *, limit: int = 500) -> list[Goal]:
        """The user's goals in every channel and of every status, oldest first, at most ``limit`` (1 to 10,000);
        ``parent_id`` and ``blocked_by`` make the tree."""
        return self._portal.run(self._core.goal_tree(user_id, limit=limit))

    def audit_trail(self, user_id: str | None = None, *, operation: str | None = None, before: datetime | None = None,
                    before_id: int | None = None, limit: int = 50) -> list[dict[str, Any]]:
        """The user's audit entries, newest first, optionally only of one ``operation`` (``store``, ``retrieve``,
        ...): ``limit`` (1 to 500) of them older than the entry (``before``, ``before_id``), the last one of the
        previous page. Each: ``id``, ``timestamp``, ``operation``, ``memory_type``, ``session_id``,
        ``conversation_id``, ``source_channel``, ``target_channels``, ``query_text``, ``result_count``,
        ``latency_ms``, ``success``, ``error_message``, ``affected_ids``, ``result_ids``. The user's memory reads it,
        not an agent's view: the entries hold every agent's queries and results (:class:`PermissionDeniedError`)."""
        return self._portal.run(self._core.audit_trail(user_id, operation=operation, before=before, before_id=before_id,
                                                       limit=limit))

    def audit_operations(self, user_id: str | None = None, *, days: int = 30) -> list[str]:
        """The operations of the user's audit entries of the last ``days`` days, in order (the user's memory only, as
        :meth:`audit_trail`)."""
        return self._portal.run(self._core.audit_operations(user_id, days=days))

    def create_api_key(self, user_id: str, *, agent_id: str | None = None, channels: Sequence[str] = (),
                       name: str = "") -> NewApiKey:
        """Make an API key of the REST service for ``user_id``, acting as ``agent_id`` (None: the user) and limited
        to ``channels`` (empty: every channel). Only its hash is stored: the returned ``token`` cannot be shown
        again (:mod:`agentx_memory.api_keys`)."""
        return self._portal.run(self._core.create_api_key(user_id, agent_id=agent_id, channels=channels, name=name))

    def resolve_api_key(self, token: str) -> ApiKey | None:
        """The live API key ``token`` is, or None (malformed, unknown, revoked, wrong secret); compared in constant
        time."""
        return self._portal.run(self._core.resolve_api_key(token))

    def revoke_api_key(self, key_id: str) -> bool:
        """Revoke an API key (requests with it are refused from now on); True when it was live."""
        return self._portal.run(self._core.revoke_api_key(key_id))

    def list_api_keys(self, user_id: str | None = None, *, include_revoked: bool = False,
                      limit: int = 1000) -> list[ApiKey]:
        """The API keys of ``user_id`` (None: of every user), oldest first, without their tokens."""
        return self._portal.run(self._core.list_api_keys(user_id, include_revoked=include_revoked, limit=limit))

    def hit_rate_limit(self, operation: str, *, caller: str, limit: int, window_seconds: float,
                       user_id: str | None = None) -> None:
        """Count one ``operation`` call of ``caller`` (an API key id) of the user against ``limit`` calls per
        sliding ``window_seconds``, in Redis across processes; past it raise
        :class:`~agentx_memory.errors.RateLimitedError` (429, ``retry_after`` seconds)."""
        self._portal.run(self._core.hit_rate_limit(operation, caller=caller, limit=limit, window_seconds=window_seconds,
                                                   user_id=user_id))

    def store_health(self, *, timeout: float = 2.0) -> dict[str, dict[str, Any]]:
        """Probe graph, PostgreSQL and Redis concurrently: ``{store: {"status": "up" | "down", "latency_ms": ...,
        "error": <class name when down>}}``; a store that does not answer in ``timeout`` seconds is down."""
        return self._portal.run(self._core.store_health(timeout=timeout))

    def audit_entries(self, user_id: str | None = None, *, since: datetime | None = None, until: datetime | None = None,
                      operation: str | None = None, memory_type: str | None = None, session_id: str | None = None,
                      conversation_id: str | None = None, reads: bool | None = None,
                      limit: int = 100) -> list[dict[str, Any]]:
        """The user's audit trail (docs/audit-queries.md), newest first, in ``[since, until)``, optionally of one
        ``operation``, ``memory_type``, ``session_id`` or ``conversation_id``; ``reads`` True keeps only reads (the
        entries with a query), False only writes."""
        return self._portal.run(self._core.audit_entries(user_id, since=since, until=until, operation=operation,
                                                         memory_type=memory_type, session_id=session_id,
                                                         conversation_id=conversation_id, reads=reads, limit=limit))

    def maintain_audit_partitions(self) -> dict[str, int]:
        """Keep the audit log's day partitions in shape: create those for today and the next
        ``audit.partitions_ahead_days`` days, drop those older than ``retention.audit_days``.

        Returns ``{"created": n, "dropped": m}``. Idempotent: the worker runs it every
        ``worker.audit_partitions_minutes`` (``agentx-memory worker``); call it yourself where no worker runs.
        """
        return self._portal.run(self._core.maintain_audit_partitions())

    def compact_vector_indexes(self, *, dry_run: bool = False, wait_seconds: float = 0.0) -> dict[str, dict[str, Any]]:
        """Rebuild the graph's vector indexes whose share of dead vectors (kept by FalkorDB for nodes since updated
        or deleted) has reached ``worker.compact_dead_share`` and that hold ``worker.compact_min_dead`` dead vectors
        or more; ``dry_run`` only reports. Returns, per label, its ``live`` and ``entries`` counts, ``dead_share``,
        ``building`` and ``rebuilt`` (:func:`~agentx_memory.index_compaction.compact_vector_indexes`). The worker
        runs it every ``worker.compact_indexes_minutes``; on Neo4j there is nothing to compact and it returns ``{}``.
        The database rebuilds in the background (searches scan meanwhile); ``wait_seconds`` > 0 returns only once no
        vector index is being built, and raises :class:`~agentx_memory.polling.WaitTimeoutError` after that long."""
        return self._portal.run(self._core.compact_vector_indexes(dry_run=dry_run, wait_seconds=wait_seconds))

    def memory_stats(self) -> MemoryStats:
        """How big the memory is and how far consolidation lags, for every user (spec 003's monitoring list): graph
        nodes per label and relationships per type, PostgreSQL live rows per table, the Redis server's memory, and
        the conversations not consolidated yet with the last turn of the one that has waited longest
        (``consolidation_lag_seconds``). Cheap: counts come from the databases' own counters, only the
        conversations are scanned (:mod:`agentx_memory.stats`). The ``observability`` metrics publish it as gauges."""
        return self._portal.run(self._core.memory_stats())
    # END GENERATED from AsyncAgentMemory
